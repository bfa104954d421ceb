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
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

__all__ = ["GRACE", "AsyncWatch", "Watch", "deadline", "hang_up"]

GRACE = 1.0
"""Seconds the client waits past `timeout`, so that the server's own error comes first."""


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

    For drivers with no read timeout of their own (psycopg): `renew` before each round
    trip, `stop` after the last; `stop` says whether the watch fired, in which case the
    connection is finished and must not be reused. A renewal only moves the deadline:
    the timer, when it comes, looks again (so a round trip costs no timer of its own).
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
        if self._loop.time() < self._deadline:
            self._handle = self._loop.call_at(self._deadline, self._check)
            return
        self.fired = True
        hang_up(self._fd)

    def stop(self) -> bool:
        """Stop watching; return whether the connection was hung up."""
        if self._handle is not None:
            self._handle.cancel()
        return self.fired


class Watch:
    """`AsyncWatch` for sync code: one watchdog thread, shared, keeps the deadlines."""

    __slots__ = ("_fd", "_seconds", "_watched", "deadline", "fired")

    def __init__(self, fd: int, seconds: float) -> None:
        self._fd = fd
        self._seconds = seconds
        self._watched = False
        self.deadline = math.inf
        self.fired = False

    def renew(self) -> None:
        """Give the next answer `seconds` from now."""
        self.deadline = time.monotonic() + self._seconds
        if not self._watched:
            self._watched = True
            _WATCHDOG.watch(self)

    def fire(self) -> None:
        """Hang the connection up (on the watchdog's thread, under its lock)."""
        self.fired = True
        hang_up(self._fd)

    def stop(self) -> bool:
        """Stop watching; return whether the connection was hung up."""
        _WATCHDOG.forget(self)
        return self.fired


class _Watchdog:
    """The thread that fires overdue `Watch`es; started on first use (again after a fork)."""

    def __init__(self) -> None:
        self._watches: set[Watch] = set()
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None
        self._wake_at = math.inf
        os.register_at_fork(after_in_child=self._after_fork)

    def watch(self, watch: Watch) -> None:
        with self._lock:
            self._watches.add(watch)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="sessionary-watchdog", daemon=True
                )
                self._thread.start()
            elif watch.deadline < self._wake_at:
                self._lock.notify()

    def forget(self, watch: Watch) -> None:
        with self._lock:
            self._watches.discard(watch)

    def _run(self) -> None:
        with self._lock:
            while True:
                now = time.monotonic()
                for watch in [w for w in self._watches if w.deadline <= now]:
                    self._watches.discard(watch)
                    watch.fire()
                # Renewals only move deadlines later, so waking early is harmless (the
                # next look finds them moved); a new watch that is due sooner notifies.
                self._wake_at = min((w.deadline for w in self._watches), default=now + 3600.0)
                self._lock.wait(self._wake_at - now)

    def _after_fork(self) -> None:
        """In a forked child: the thread did not come along, and the lock may be held."""
        self._watches, self._lock, self._thread = set(), threading.Condition(), None


_WATCHDOG = _Watchdog()
