"""A loop of its own for a store (or driver) whose connections are bound to one event loop.

asyncio drivers (psycopg's `AsyncConnectionPool`, aiomysql, redis.asyncio) tie their
connections, locks and pool workers to the event loop that first used them. A second
`asyncio.run`, or another thread running a loop of its own, then finds them on a loop
that is closed or not running, and fails ("Event loop is closed") or hangs.

`AsyncHomeLoop` gives such an object (its *resident*: a store, a key-value driver) a
home: one daemon thread running a private event loop, started at its first call. Every
call is handed to that loop, and its result handed back to the caller's loop: one hop
per call, two cross-thread wake-ups (tens of microseconds). So any loop in any thread,
and `asyncio.run` repeated, may use one store; the resident only ever sees its home
loop, and nothing is left on a loop that has gone.

Cancellation: a caller whose task is cancelled gets `CancelledError` at once, but the
call on the home loop runs on to its end (or its own timeout) and its result is dropped,
so a write is whole or absent and no connection goes back to its pool mid-protocol. A
call not yet started when its caller gave up is not started. Calls run side by side on
the home loop, so a later call could overtake one given up on: a write cancelled in
flight could land after the write its caller made next, or after the read that showed it
absent. So a call on a session (a method whose arguments begin with a `Scope` and a
session id) starts only once every call on that session given up on in flight has
ended: when its caller's next call on the session runs, the cancelled one's effect is
settled, there or not for good. Calls on other sessions wait for nothing.

Closing: `close` (from any loop or thread, any number of times) refuses new calls with
`Closed`, waits up to `CLOSE_WAIT` seconds for the calls in flight, closes the
resident on its home loop, stops the loop and joins the thread. A resident never closed
is closed at interpreter exit (and when the object that owned it is collected), so it
neither holds the interpreter up nor warns. A child process forked from one that used a
resident builds a fresh resident on a fresh loop; the parent's is never touched again.

`HomeLoop` is the synchronous counterpart: sync drivers are not bound to a loop, so it
calls the resident directly.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import functools
import inspect
import os
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Generic, TypeVar

from sessionary.errors import Closed
from sessionary.records import Scope
from sessionary.stores._runner import settle

__all__ = ["CLOSE_WAIT", "AsyncHomeLoop", "HomeLoop"]

R = TypeVar("R")

CLOSE_WAIT = 30.0
"""Seconds `close` lets calls in flight finish before it cancels them."""

_EXIT_WAIT = 10.0
"""Seconds the interpreter's exit waits for each resident still open to close."""

_homes: weakref.WeakSet[AsyncHomeLoop[Any]] = weakref.WeakSet()
"""Every home loop not yet closed: closed at exit, restarted after a fork."""


def _closed_error() -> Closed:
    return Closed("the store is closed; open a new one")


class AsyncHomeLoop(Generic[R]):
    """Runs the coroutine methods of a loop-bound resident on a loop of its own.

    Args:
        open_resident: Builds the resident (without I/O); called again in a forked child.
        own_loop: False runs calls inline on the caller's loop instead (for a resident
            whose loop the caller manages, such as a client the caller passed in).
    """

    def __init__(self, open_resident: Callable[[], R], *, own_loop: bool = True) -> None:
        self._open = open_resident
        self.resident = open_resident()
        self._own = own_loop
        self._guard = threading.RLock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._calls: set[asyncio.Task[Any]] = set()
        """The calls running on the home loop (touched on the home thread only)."""
        self._given_up: dict[object, set[asyncio.Future[Any]]] = {}
        """Per session, the calls running whose callers gave up on them (home thread)."""
        self._closed: concurrent.futures.Future[BaseException | None] | None = None
        """Set when closing begins; resolved, with the resident's close error if any,
        once the thread has stopped."""
        self._close_error: BaseException | None = None
        self._forked = False
        self._abandoned: list[object] = []
        if own_loop:
            _homes.add(self)

    @property
    def closed(self) -> bool:
        """Whether `close` has begun."""
        return self._closed is not None

    def bind(self, name: str) -> Callable[..., Awaitable[Any]]:
        """Return a coroutine function that runs the resident's method `name` at home."""

        async def call(*args: Any) -> Any:
            return await self.run(name, *args)

        call.__name__ = call.__qualname__ = name
        return call

    async def run(self, name: str, *args: Any) -> Any:
        """Run the resident's method `name` at home; return what it returns."""
        if not self._own:
            return await self._inline(name, args)
        future, call = self._submit(name, args)
        try:
            return await future
        except asyncio.CancelledError:
            if not call.take() and call.key is not None:  # running: later calls wait
                with contextlib.suppress(RuntimeError):  # a closed loop has no calls
                    call.loop.call_soon_threadsafe(self._abandon, call)
            raise

    def attribute(self, name: str) -> Any:
        """The resident's attribute `name`; a coroutine method is bound to run at home."""
        value = getattr(self.resident, name)
        return self.bind(name) if inspect.iscoroutinefunction(value) else value

    def close_with(self, owner: object) -> None:
        """Close (without waiting) when `owner`, the object that holds this, is collected."""
        if self._own:
            weakref.finalize(owner, self.stop, 0.0).atexit = False

    def _inline(self, name: str, args: tuple[Any, ...]) -> Awaitable[Any]:
        """The resident's call, on the caller's loop (a resident whose loop it manages)."""
        if self._closed is not None:
            raise _closed_error()
        coroutine: Awaitable[Any] = getattr(self.resident, name)(*args)
        return coroutine

    def _submit(self, name: str, args: tuple[Any, ...]) -> tuple[asyncio.Future[Any], _Call]:
        """Hand a call to the home loop; return the future of its outcome, and the call."""
        caller = asyncio.get_running_loop()
        future = caller.create_future()
        # Under the guard, so that no call is handed over after close's own callback.
        with self._guard:
            if self._closed is not None:
                raise _closed_error()
            loop = self._loop if self._loop is not None else self._start()
            call = _Call(loop, _session_of(args))
            loop.call_soon_threadsafe(self._begin, name, args, caller, future, call)
        return future, call

    def _start(self) -> asyncio.AbstractEventLoop:
        """Start the home loop (under the guard); after a fork, with a fresh resident."""
        if self._forked:
            # The parent's resident holds the parent's sockets: keep it, never touch it.
            self._abandoned.append(self.resident)
            self.resident = self._open()
            self._forked = False
        loop = asyncio.new_event_loop()
        thread = threading.Thread(
            target=self._serve, args=(loop,), name="sessionary-store-loop", daemon=True
        )
        self._loop, self._thread = loop, thread
        thread.start()
        return loop

    def _begin(
        self,
        name: str,
        args: tuple[Any, ...],
        caller: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
        call: _Call,
    ) -> None:
        """On the home loop: start a call, unless its caller has already given up.

        A call on a session that a given-up call is still running on starts after it.
        """
        if not call.take():
            return
        try:
            work = getattr(self.resident, name)(*args)
            ahead = self._given_up.get(call.key) if call.key is not None else None
            task = asyncio.ensure_future(_after(set(ahead), work) if ahead else work)
        except BaseException as exc:  # handed to the caller, which re-raises it
            _answer(caller, future, None, exc)
            return
        call.task = task
        self._calls.add(task)
        task.add_done_callback(functools.partial(self._end, caller, future))

    def _abandon(self, call: _Call) -> None:
        """On the home loop: a call's caller gave up on it while it ran; order later ones."""
        task, key = call.task, call.key
        if task is None or task.done() or key is None:
            return
        ahead = self._given_up.setdefault(key, set())
        ahead.add(task)

        def ended(_task: object) -> None:
            ahead.discard(task)
            if not ahead and self._given_up.get(key) is ahead:
                del self._given_up[key]

        task.add_done_callback(ended)

    def _end(
        self, caller: asyncio.AbstractEventLoop, future: asyncio.Future[Any], task: Any
    ) -> None:
        """On the home loop: hand a finished call's outcome to its caller's loop."""
        self._calls.discard(task)
        if task.cancelled():  # only `close` cancels, after its wait
            _answer(caller, future, None, Closed("the store closed before the call ended"))
            return
        error = task.exception()
        _answer(caller, future, None if error is not None else task.result(), error)

    def _serve(self, loop: asyncio.AbstractEventLoop) -> None:
        """The home thread: run the loop until closed, then tidy it up and report."""
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
            loop.run_until_complete(_tidy(loop))
        finally:
            loop.close()
            assert self._closed is not None
            self._closed.set_result(self._close_error)

    async def _shut(self) -> None:
        """On the home loop: let calls finish (bounded), close the resident, stop."""
        try:
            if self._calls:
                await asyncio.wait(set(self._calls), timeout=CLOSE_WAIT)
            if self._calls:
                for task in self._calls:
                    task.cancel()
                await asyncio.wait(set(self._calls), timeout=CLOSE_WAIT)
            await self.resident.close()  # type: ignore[attr-defined]
        except Exception as exc:  # reported to the first caller of close
            self._close_error = exc
        finally:
            asyncio.get_running_loop().stop()

    def _claim_close(self) -> tuple[bool, asyncio.AbstractEventLoop | None]:
        """Begin closing; return whether this caller was first, and the loop to stop."""
        with self._guard:
            if self._closed is not None:
                return False, None
            self._closed = concurrent.futures.Future()
            loop = self._loop
            if loop is not None:
                loop.call_soon_threadsafe(_spawn, loop, self._shut)
            return True, loop

    async def close(self) -> None:
        """Close the resident at home and stop the loop; later calls raise `Closed`.

        Idempotent, and callable from any loop or thread.
        """
        first, loop = self._claim_close()
        assert self._closed is not None
        if first and loop is None:  # never started here: nothing is bound to any loop
            _homes.discard(self)
            try:
                await self.resident.close()  # type: ignore[attr-defined]
            finally:
                self._closed.set_result(None)
            return
        error = await asyncio.wrap_future(self._closed)
        _homes.discard(self)
        if self._thread is not None:
            self._thread.join()  # it has stopped: `_closed` resolves as it ends
        if first and error is not None:
            raise error

    def stop(self, wait: float) -> None:
        """Close from sync code (at exit, or once the owner is gone), waiting up to `wait` s."""
        first, loop = self._claim_close()
        if first and loop is None:
            assert self._closed is not None
            self._closed.set_result(None)
        thread = self._thread
        if wait and thread is not None and thread is not threading.current_thread():
            thread.join(wait)

    def _after_fork(self) -> None:
        """In a forked child: the home thread did not come along; start afresh on use."""
        self._guard = threading.RLock()
        if self._loop is not None:
            self._abandoned.append(self._loop)
            self._loop, self._thread, self._forked = None, None, True
            self._calls = set()


async def _tidy(loop: asyncio.AbstractEventLoop) -> None:
    """What `asyncio.run` does after its main task: end leftover tasks, generators, executor."""
    leftover = asyncio.all_tasks(loop) - {asyncio.current_task(loop)}
    for task in leftover:
        task.cancel()
    if leftover:
        await asyncio.wait(leftover, timeout=CLOSE_WAIT)
    await loop.shutdown_asyncgens()
    await loop.shutdown_default_executor()


def _spawn(loop: asyncio.AbstractEventLoop, work: Callable[[], Coroutine[Any, Any, None]]) -> None:
    task = loop.create_task(work())
    _keep.add(task)
    task.add_done_callback(_keep.discard)


_keep: set[asyncio.Task[None]] = set()
"""Close tasks in progress (the loop keeps only weak references to its tasks)."""


class _Call:
    """A call handed to the home loop: whoever takes its start token first decides.

    The home loop takes it to start the call; a caller cancelled before that, to drop it.
    """

    __slots__ = ("_token", "key", "loop", "task")

    def __init__(self, loop: asyncio.AbstractEventLoop, key: object) -> None:
        self._token = [True]
        self.loop = loop
        self.key = key
        """The session the call is on, or None."""
        self.task: asyncio.Future[Any] | None = None
        """The running call (set on the home thread)."""

    def take(self) -> bool:
        """Take the start token; False if it was taken already (atomic: `list.pop`)."""
        try:
            return self._token.pop()
        except IndexError:
            return False


def _session_of(args: tuple[Any, ...]) -> object:
    """The session a store call is on (its first two arguments), or None."""
    if len(args) >= 2 and isinstance(args[0], Scope) and isinstance(args[1], str):
        return (args[0], args[1])
    return None


async def _after(ahead: set[asyncio.Future[Any]], work: Awaitable[R]) -> R:
    """Await `work` once every call in `ahead` (not empty) has ended."""
    try:
        await asyncio.wait(ahead)
    except BaseException:  # cancelled by `close` while waiting: `work` never starts
        if inspect.iscoroutine(work):
            work.close()
        raise
    return await work


def _answer(
    caller: asyncio.AbstractEventLoop,
    future: asyncio.Future[Any],
    result: Any,
    error: BaseException | None,
) -> None:
    # If the caller's loop has closed, nobody is waiting for the answer.
    with contextlib.suppress(RuntimeError):
        caller.call_soon_threadsafe(settle, future, result, error)


def _close_all() -> None:
    for home in list(_homes):
        home.stop(_EXIT_WAIT)


def _reset_after_fork() -> None:
    for home in list(_homes):
        home._after_fork()


atexit.register(_close_all)
os.register_at_fork(after_in_child=_reset_after_fork)


class HomeLoop(Generic[R]):
    """For sync code: calls go straight to the resident, whose drivers are not loop-bound."""

    def __init__(self, open_resident: Callable[[], R], *, own_loop: bool = True) -> None:
        del own_loop
        self.resident = open_resident()
        self._guard = threading.Lock()
        self._closed = False

    @property
    def closed(self) -> bool:
        """Whether `close` has begun."""
        return self._closed

    def bind(self, name: str) -> Callable[..., Any]:
        """Return the resident's method `name` itself: a sync call costs nothing extra."""
        method: Callable[..., Any] = getattr(self.resident, name)
        return method

    def run(self, name: str, *args: Any) -> Any:
        """Run the resident's method `name`; return what it returns."""
        return getattr(self.resident, name)(*args)

    def attribute(self, name: str) -> Any:
        """The resident's attribute `name`."""
        return getattr(self.resident, name)

    def close_with(self, owner: object) -> None:
        """Nothing to do: a sync resident runs no thread of its own."""
        del owner

    def close(self) -> None:
        """Close the resident once; later calls return at once."""
        with self._guard:
            if self._closed:
                return
            self._closed = True
        self.resident.close()  # type: ignore[attr-defined]
