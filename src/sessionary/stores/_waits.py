"""How long the SQL drivers wait for a server, and the client-side bound of the async ones.

Each server store has two options: `connect_timeout`, the longest connecting may take
(TCP, the server's greeting, login, session set-up), and `timeout`, the longest one
request may wait for its answer (a statement, or a script sent as one; lock waits
included). The server enforces `timeout` where it can (PostgreSQL's
`statement_timeout`, MySQL's `innodb_lock_wait_timeout`), with its own precise error;
the client gives up `GRACE` seconds later, for a server that stops answering at all
(socket read timeouts where the driver has them; `deadline` on aiomysql's loop; a
`Watch` that hangs up an overdue connection for psycopg, which has neither).
Migrations run without the request bound: a schema change on a large table may take
longer than any one request should.

A pooled connection that has sat idle for `IDLE_LOOK` seconds is looked at before it is
handed out (`said_goodbye`): a server that restarted, failed over, or reaped idle
connections has closed it, and a call that started after that should not fail for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import select
import socket
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

__all__ = ["GRACE", "IDLE_LOOK", "AsyncWatch", "Watch", "deadline", "hang_up", "said_goodbye"]

GRACE = 1.0
"""Seconds the client waits past `timeout`, so that the server's own error comes first."""
IDLE_LOOK = 1.0
"""Seconds a pooled connection may sit idle before its socket is looked at (`said_goodbye`)
as it is handed out; one in steady use costs no system call."""


def said_goodbye(fd: int) -> bool:
    """Whether an idle connection's socket has anything to read, or has closed.

    A server sends nothing unasked to an idle connection but its goodbye: the close
    itself, often after an error (PostgreSQL's "terminating connection", MySQL 8's
    timeout): so such a connection is finished. One system call, no round trip.
    """
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(0))


@asynccontextmanager
async def deadline(seconds: float) -> AsyncIterator[Callable[[], None]]:
    """Bound the block's waits: it raises `TimeoutError` once one wait lasts `seconds`.

    The block calls the `renew` it is given before each round trip, which moves the
    deadline `seconds` past now; so a long transaction of short statements (a large
    import) is never cut short, but no single answer is waited for longer.
    """
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(seconds) as bound:
        yield lambda: bound.reschedule(loop.time() + seconds)


def hang_up(fd: int) -> None:
    """Shut a connection's socket down, so that a driver waiting for an answer reads its end.

    The descriptor stays open (its driver closes it); only the connection ends.
    """
    with contextlib.suppress(OSError):
        sock = socket.socket(fileno=os.dup(fd))
        try:
            sock.shutdown(socket.SHUT_RDWR)
        finally:
            sock.close()


class AsyncWatch:
    """Hangs up one connection when an answer takes longer than `seconds` (a loop timer).

    For drivers with no read timeout of their own (psycopg): one per connection, kept
    for its life; `renew` before each round trip, `stop` after the last; `stop` says
    whether the watch fired, in which case the connection is finished and must not be
    reused. A renewal or a stop only writes the deadline: the timer, when it comes,
    looks again (so a round trip costs no timer of its own), and a stopped watch's
    timer ends there.
    """

    __slots__ = ("_deadline", "_fd", "_handle", "_loop", "_seconds", "fired")

    def __init__(self, fd: int, seconds: float) -> None:
        self._fd = fd
        self._seconds = seconds
        self._loop = asyncio.get_running_loop()
        self._deadline = math.inf
        self._handle: asyncio.TimerHandle | None = None
        self.fired = False

    def renew(self) -> None:
        """Give the next answer `seconds` from now."""
        self._deadline = self._loop.time() + self._seconds
        if self._handle is None:
            self._handle = self._loop.call_at(self._deadline, self._check)

    def _check(self) -> None:
        if self._deadline == math.inf:  # stopped: the next renewal starts a timer
            self._handle = None
        elif self._loop.time() < self._deadline:
            self._handle = self._loop.call_at(self._deadline, self._check)
        else:
            self._handle = None
            self.fired = True
            hang_up(self._fd)

    def stop(self) -> bool:
        """Stop watching (until the next renewal); return whether the connection was hung up.

        Once hung up, a connection stays so: its owner must close it.
        """
        self._deadline = math.inf
        return self.fired


class Watch:
    """`AsyncWatch` for sync code: one per connection, kept for its life.

    A renewal and a stop only write the deadline: no lock, no call on the watchdog,
    which looks at every watch at least once every `seconds` (see `_Watchdog`) and
    hangs up a connection whose deadline passed.
    """

    __slots__ = ("__weakref__", "_fd", "deadline", "fired", "seconds")

    def __init__(self, fd: int, seconds: float) -> None:
        self._fd = fd
        self.seconds = seconds
        self.deadline = math.inf
        self.fired = False
        _WATCHDOG.watch(self)

    def renew(self) -> None:
        """Give the next answer `seconds` from now."""
        self.deadline = time.monotonic() + self.seconds

    def stop(self) -> bool:
        """Stop watching (until the next renewal); return whether the connection was hung up.

        Once hung up, a connection stays so: its owner must close it.
        """
        self.deadline = math.inf
        return self.fired

    def fire(self, now: float) -> None:
        """Hang the connection up if its answer is overdue (on the watchdog's thread).

        The owner writes the deadline, then reads `fired`; this writes `fired`, then
        reads the deadline again: so a connection is hung up only while its owner has
        not stopped the watch, and that owner then sees `fired` (and closes it). An
        owner that stopped in between may see `fired` for nothing, and closes a sound
        connection; none is ever hung up after it went back to the pool.
        """
        self.fired = True
        if self.deadline <= now:
            hang_up(self._fd)
        else:
            self.fired = False


class _Watchdog:
    """The thread that fires overdue `Watch`es; started on first use (again after a fork).

    It wakes at the earliest deadline it saw, and at least once every `seconds` of any
    watch it holds: a deadline set since its last look is at least `seconds` past that
    look, so it is never late for one (renewals only move deadlines later). It holds
    its watches weakly: a watch goes with its connection.
    """

    def __init__(self) -> None:
        self._watches: weakref.WeakSet[Watch] = weakref.WeakSet()
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None
        os.register_at_fork(after_in_child=self._after_fork)

    def watch(self, watch: Watch) -> None:
        with self._lock:
            self._watches.add(watch)
            if not self._start():
                self._lock.notify()  # it may look too seldom for this one's `seconds`

    def _start(self) -> bool:
        """Start the thread (under the lock) unless it runs; return whether it started."""
        if self._thread is not None and self._thread.is_alive():
            return False
        self._thread = threading.Thread(target=self._run, name="sessionary-watchdog", daemon=True)
        self._thread.start()
        return True

    def _run(self) -> None:
        with self._lock:
            while True:
                now = time.monotonic()
                wake = now + 3600.0
                for watch in list(self._watches):
                    if watch.fired:  # hung up: its owner closes it
                        continue
                    if watch.deadline <= now:
                        watch.fire(now)
                    if not watch.fired:
                        wake = min(wake, watch.deadline, now + watch.seconds)
                self._lock.wait(max(0.0, wake - time.monotonic()))

    def _after_fork(self) -> None:
        """In a forked child: the thread did not come along, and the lock may be held.

        The child keeps its connections (a sync store is not rebuilt), and their watches.
        """
        self._watches = weakref.WeakSet(list(self._watches))
        self._lock, self._thread = threading.Condition(), None
        if self._watches:
            with self._lock:
                self._start()


_WATCHDOG = _Watchdog()
