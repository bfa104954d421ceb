"""How a store adapter calls a synchronous engine: inline, or on the engine's own thread.

`AsyncRunner` and `Runner` are a hand-written pair with the same method names, so that
the generated synchronous adapter calls `Runner` where the asynchronous one awaits
`AsyncRunner`. (A store whose driver is bound to one event loop runs on a loop of its
own instead: see `_home_loop`.)
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import socket
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from sessionary.errors import Closed

__all__ = ["AsyncRunner", "Runner", "settle"]

T = TypeVar("T")


class AsyncRunner:
    """Runs engine calls for async code.

    A blocking engine (one that does file or network I/O) gets one worker thread of its
    own, fed through a queue (`_Jobs`), so calls keep their order and the event loop never
    blocks; a non-blocking engine (the in-memory one) is called inline. The hand-off
    leaves the call in the queue and rings the worker's bell; the hand-back leaves the
    outcome in the caller's loop's inbox (`_Inbox`) and rings that loop's. That is one
    wake-up each way, about half the cost of `run_in_executor`, yet still tens of
    microseconds: more than a short read itself costs.

    So a blocking engine may also pass its `lock` (the one every engine call holds): a
    call bound with a `quick` predicate that holds for its arguments (a read of a few
    rows, say) runs inline when that lock is free at once and no job is queued or running
    (so it never overtakes a call queued before it, one whose caller gave up included). It
    never waits for the lock, so the event loop never waits for a write, a sync or another
    process's lock; when the engine is busy the call takes the queue like any other.

    Like a store on a loop of its own, a call whose caller is cancelled still runs to its
    end on the worker, and its result is dropped. After `close` (idempotent) every call
    raises `Closed`. In a forked child, where the worker did not come along, a runner not
    closed starts a worker of its own.
    """

    def __init__(self, blocking: bool, lock: _Lock | None = None) -> None:
        self._queue: _Jobs | None = None
        self._lock = lock
        self.closed = False
        # Held while a job is queued and while closing, so no job lands behind the stop.
        self._guard = threading.Lock()
        if blocking:
            self._start()
            _workers.add(self)

    def _start(self) -> None:
        """Start the worker, with a queue of its own."""
        self._queue = _Jobs()
        self._thread = threading.Thread(
            target=_work,
            args=(self._queue, self._guard),
            name="sessionary-store",
            daemon=True,
        )
        self._thread.start()

    def _after_fork(self) -> None:
        """In a forked child: the worker did not come along; start another.

        Calls queued in the parent at the fork are the parent's and stay there.
        """
        self._guard = threading.Lock()
        if not self.closed:
            self._start()

    def bind(
        self, fn: Callable[..., T], quick: Callable[..., bool] | None = None
    ) -> Callable[..., Awaitable[T]]:
        """Return a coroutine function that runs `fn` through this runner.

        `quick(*args)` says whether a call is short enough to run inline when the engine
        is idle (only with a `lock`).
        """
        lock, submit = self._lock, self._submit
        if self._queue is None:

            async def call(*args: Any) -> T:
                if self.closed:
                    raise _closed_error()
                return fn(*args)

        elif quick is None or lock is None:

            async def call(*args: Any) -> T:
                return await submit(fn, args)

        else:

            async def call(*args: Any) -> T:
                # Only with no job queued or running: one its caller gave up on may
                # still be, and a read must not overtake it (it would see it absent,
                # then have it land).
                jobs = self._queue  # (replaced in a forked child)
                if (
                    not self.closed
                    and jobs is not None
                    and jobs.idle
                    and quick(*args)
                    and lock.acquire(blocking=False)
                ):
                    try:
                        return fn(*args)
                    finally:
                        lock.release()
                return await submit(fn, args)

        call.__name__ = call.__qualname__ = getattr(fn, "__name__", "call")
        return call

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Call `fn(*args)` and return its result."""
        if self._queue is None:
            if self.closed:
                raise _closed_error()
            return fn(*args)
        return await self._submit(fn, args)

    def _submit(self, fn: Callable[..., T], args: tuple[Any, ...]) -> asyncio.Future[T]:
        """Queue `fn(*args)` for the worker; return the future it settles.

        A plain function, not a coroutine: a bound call awaits the future itself, which
        saves a coroutine per call on the append path.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        inbox = _inboxes.get(loop) or _inbox(loop)
        with self._guard:
            if self.closed:
                raise _closed_error()
            self._queue.put((inbox, future, fn, args))  # type: ignore[union-attr]
        return future

    async def close(self, fn: Callable[[], None]) -> None:
        """Call `fn` (the engine's close) after the calls queued before, stop the worker.

        Idempotent: a second call returns at once.
        """
        with self._guard:
            if self.closed:
                return
            self.closed = True
            if self._queue is None:
                fn()
                return
            loop = asyncio.get_running_loop()
            future: asyncio.Future[None] = loop.create_future()
            self._queue.put((_inboxes.get(loop) or _inbox(loop), future, fn, ()))
            self._queue.put(None)
        await future


_workers: weakref.WeakSet[AsyncRunner] = weakref.WeakSet()
"""Every runner with a worker thread: given another in a forked child."""


def _after_fork_in_child() -> None:
    for runner in list(_workers):
        runner._after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)


class _Lock(Protocol):
    def acquire(self, blocking: bool = ..., timeout: float = ...) -> bool: ...
    def release(self) -> None: ...


class _Inbox:
    """Where the worker leaves finished calls for one event loop, and how it wakes it.

    A bell (`_Bell`) whose file descriptor the loop watches: the worker appends a call's
    outcome to `done` and rings; the loop, woken, settles every outcome left there.
    Compared with `call_soon_threadsafe` (a handle per call, the loop's own self-pipe
    drained by two reads and an exception), the loop spends about a quarter less time per
    call. One inbox serves every runner used on its loop; its bell closes when the loop
    is collected, which cannot happen while a call for it is in flight (the call's future
    holds the loop).
    """

    __slots__ = ("_bell", "_done")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._done: collections.deque[tuple[asyncio.Future[Any], Any, BaseException | None]]
        self._done = collections.deque()
        self._bell = bell = _Bell()
        try:
            loop.add_reader(bell.fileno, self._settle)
        except BaseException:
            bell.close()
            raise
        # Not at exit: a daemon worker may still ring then, and the process ends anyway.
        weakref.finalize(loop, bell.close).atexit = False

    def post(self, future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
        """On the worker: leave an outcome for the loop and wake it, unless it has closed."""
        if future.get_loop().is_closed():  # nobody is waiting; keep nothing for it
            return
        self._done.append((future, result, error))
        self._bell.ring()

    def _settle(self) -> None:
        """On the loop: settle every outcome left so far."""
        self._bell.hush()
        done = self._done
        while done:
            settle(*done.popleft())


class _Jobs:
    """The worker's queue: calls in a deque, and a bell (`_Bell`) the worker sleeps on.

    Not a `queue.SimpleQueue`: its `put` wakes the worker while the event loop still holds
    the GIL, and goes on holding it until the loop next waits; the worker, woken, then
    waits for the GIL (and is woken again) before it can start the call. A bell rings
    with the GIL let go (a system call), so the worker starts at once, and it sleeps on
    the bell in a system call too. Measured with a call that runs ~20 µs of Python, sleeps
    100 µs (as a sync would) and runs ~10 µs more, on a 2-vCPU VM: the worker sleeps
    twice per call (its wait and the sleep) instead of three to four times, and each call
    returns 25-30 µs sooner.
    """

    __slots__ = ("_bell", "_jobs", "done", "queued")

    def __init__(self) -> None:
        self._jobs: collections.deque[_Job | None] = collections.deque()
        self._bell = _Bell(blocking=True)
        self.queued = 0
        """Jobs ever queued (counted under the runner's guard, one thread at a time)."""
        self.done = 0
        """Jobs ever finished (counted by the worker alone)."""

    @property
    def idle(self) -> bool:
        """Whether every job queued has finished: none is waiting or running."""
        return self.done == self.queued

    def put(self, job: _Job | None) -> None:
        """On any thread, under the runner's guard: queue `job` and wake the worker."""
        if job is not None:
            self.queued += 1
        self._jobs.append(job)
        self._bell.ring()

    def get(self) -> _Job | None:
        """On the worker: the next job, waiting for one if none is queued.

        A job queued after the worker looked and before it sleeps has rung already, so
        the worker's wait returns at once; a ring whose job it took without sleeping
        only costs it a second look.
        """
        jobs = self._jobs
        while not jobs:
            self._bell.wait()
        return jobs.popleft()

    def close(self) -> None:
        self._bell.close()


class _SocketBell:
    """A socket pair whose reading end a loop watches; every selector loop can watch one.

    (Windows' `select` watches sockets only.) A `blocking` bell is one a thread sleeps
    on (`wait`) instead.
    """

    __slots__ = ("_receiver", "_sender", "fileno")

    def __init__(self, blocking: bool = False) -> None:
        self._receiver, self._sender = socket.socketpair()
        self._receiver.setblocking(blocking)
        self._sender.setblocking(False)
        self.fileno = self._receiver.fileno()

    def ring(self) -> None:
        """On any thread: make the reading end readable."""
        try:  # noqa: SIM105 - `contextlib.suppress` would cost a microsecond per call
            self._sender.send(b"\0")
        except OSError:  # a full buffer: the loop has a wake-up pending already
            pass

    def hush(self) -> None:
        """On the loop: take the pending rings (none, if an earlier hush took them)."""
        try:  # noqa: SIM105 - as in `ring`
            self._receiver.recv(4096)
        except OSError:
            pass

    def wait(self) -> None:
        """On a blocking bell's thread: sleep until rung, and take the pending rings."""
        self._receiver.recv(4096)

    def close(self) -> None:
        self._receiver.close()
        self._sender.close()


class _EventBell:
    """An eventfd (Linux), which a loop watches like a socket.

    A ring or a hush is one 8-byte system call: a fifth of the time a socket pair's send
    and receive take. A `blocking` bell is one a thread sleeps on (`wait`) instead.
    """

    __slots__ = ("fileno",)

    def __init__(self, blocking: bool = False) -> None:
        flags = os.EFD_CLOEXEC if blocking else os.EFD_NONBLOCK | os.EFD_CLOEXEC
        self.fileno = os.eventfd(0, flags)

    def ring(self) -> None:
        """On any thread: add one to the counter, which makes it readable."""
        os.eventfd_write(self.fileno, 1)  # cannot block: the counter would need 2**64 rings

    def hush(self) -> None:
        """On the loop: reset the counter (none pending if an earlier hush took them)."""
        try:  # noqa: SIM105 - as in `_SocketBell.ring`
            os.eventfd_read(self.fileno)
        except BlockingIOError:
            pass

    def wait(self) -> None:
        """On a blocking bell's thread: sleep until rung, and reset the counter."""
        os.eventfd_read(self.fileno)

    def close(self) -> None:
        os.close(self.fileno)


_Bell = _EventBell if hasattr(os, "eventfd") else _SocketBell


class _Hop:
    """The hand-back for a loop that cannot watch a socket (Windows' proactor loop)."""

    __slots__ = ("_loop",)

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def post(self, future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
        """On the worker: schedule the outcome on the loop, unless the loop has closed."""
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(settle, future, result, error)


_inboxes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Inbox | None]
_inboxes = weakref.WeakKeyDictionary()
"""Each event loop's inbox (None: the loop cannot have one), kept while the loop lives."""


def _inbox(loop: asyncio.AbstractEventLoop) -> _Inbox | _Hop:
    """The hand-back for `loop` (on its own thread), made at its first call."""
    if loop in _inboxes:
        return _Hop(loop)
    try:
        made: _Inbox | None = _Inbox(loop)
    except (NotImplementedError, OSError):
        made = None
    try:
        _inboxes[loop] = made
    except TypeError:  # a loop that takes no weak reference: no inbox, no leak
        if made is not None:
            loop.remove_reader(made._bell.fileno)
            made._bell.close()
        return _Hop(loop)
    return made if made is not None else _Hop(loop)


_Job = tuple["_Inbox | _Hop", "asyncio.Future[Any]", Callable[..., Any], tuple[Any, ...]]


def _closed_error() -> Closed:
    return Closed("the store is closed; open a new one")


def settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    """On the future's loop: give it its outcome, unless its awaiter gave up (cancelled)."""
    if future.cancelled():
        return
    if isinstance(error, StopIteration):  # a future refuses it; as a coroutine would (PEP 479)
        converted = RuntimeError(f"the store raised StopIteration: {error}")
        converted.__cause__ = error
        error = converted
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


def _work(jobs: _Jobs, guard: threading.Lock) -> None:
    """The worker thread: run jobs in order until told to stop, then close the queue.

    Each job runs in a call of its own (`_run`), so that the worker keeps no reference
    to a job or its result while it waits for the next one: a result (a whole history,
    say) lives only as long as its caller keeps it, and is freed where the caller drops
    it, not on this thread at the next call.
    """
    while (job := jobs.get()) is not None:
        _run(*job)
        jobs.done += 1
        job = None  # not kept alive while waiting
    # The stop is queued under the guard: once it is free, the stop's ring has returned,
    # and nothing rings the bell again (the runner is closed), so its file can go.
    with guard:
        jobs.close()


def _run(
    inbox: _Inbox | _Hop,
    future: asyncio.Future[Any],
    fn: Callable[..., Any],
    args: tuple[Any, ...],
) -> None:
    """Run one job on the worker and hand its outcome to the future's loop."""
    try:
        result, error = fn(*args), None
    except BaseException as exc:  # handed to the awaiting task, which re-raises it
        result, error = None, exc
    inbox.post(future, result, error)


class Runner:
    """Runs engine calls for sync code: always inline."""

    def __init__(self, blocking: bool, lock: _Lock | None = None) -> None:
        del blocking, lock
        self.closed = False
        self._guard = threading.Lock()

    def bind(
        self, fn: Callable[..., T], quick: Callable[..., bool] | None = None
    ) -> Callable[..., T]:
        """Return `fn` itself: sync code calls the engine directly."""
        del quick
        return fn

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Call `fn(*args)` and return its result."""
        if self.closed:
            raise _closed_error()
        return fn(*args)

    def close(self, fn: Callable[[], None]) -> None:
        """Call `fn` (the engine's close), once."""
        with self._guard:
            if self.closed:
                return
            self.closed = True
        fn()
