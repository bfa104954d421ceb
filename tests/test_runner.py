"""The async runner that hands a blocking engine's calls to its worker thread.

A call's outcome crosses back as it was (a result, or the engine's own typed error); a
cancelled caller's call still runs whole; the worker holds nothing of a call once it has
handed its outcome back; after `close` (any number of times) calls raise `Closed`; one
runner serves any event loop.
"""

from __future__ import annotations

import asyncio
import gc
import os
import threading
import weakref
from typing import Any

import pytest

from sessionary.errors import Closed, SessionNotFound
from sessionary.stores import _runner
from sessionary.stores._runner import AsyncRunner

pytestmark = pytest.mark.sqlite


class _Result:
    """A result a weak reference can watch."""


def test_the_worker_keeps_no_result_it_has_handed_back() -> None:
    seen: list[bool] = []

    async def main() -> None:
        runner = AsyncRunner(True)
        make = runner.bind(_Result)
        result = await make()
        gone = weakref.ref(result)
        del result
        # Until this step of the task ends, the loop's handle that resumed it holds the
        # call's future (and so the result): that is the loop's, not the worker's.
        await asyncio.sleep(0)
        # Runs on the worker: nothing there may still hold the first call's result.
        await runner.run(lambda: seen.append(gone() is None))
        await runner.close(lambda: None)

    asyncio.run(main())
    assert seen == [True]


def test_a_typed_error_crosses_back_as_itself() -> None:
    def fail() -> None:
        raise SessionNotFound("no session 's' in this scope")

    async def main() -> None:
        runner = AsyncRunner(True)
        with pytest.raises(SessionNotFound, match="no session 's'"):
            await runner.bind(fail)()
        assert await runner.run(lambda: 7) == 7  # the worker lives on
        await runner.close(lambda: None)

    asyncio.run(main())


def test_a_cancelled_caller_leaves_its_call_to_run_whole() -> None:
    started, release = threading.Event(), threading.Event()
    done: list[str] = []

    def write() -> str:
        started.set()
        release.wait(10)
        done.append("written")
        return "ack"

    async def main() -> None:
        runner = AsyncRunner(True)
        task = asyncio.ensure_future(runner.bind(write)())
        await asyncio.to_thread(started.wait, 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()
        # Queued behind the cancelled call: it sees that call's write whole.
        assert await runner.run(lambda: list(done)) == ["written"]
        await runner.close(lambda: None)

    asyncio.run(main())


def test_one_runner_serves_two_loops_and_closes_twice() -> None:
    runner = AsyncRunner(True)
    answers: list[int] = []

    def in_a_thread() -> None:
        answers.append(asyncio.run(runner.run(lambda: 2)))

    answers.append(asyncio.run(runner.run(lambda: 1)))
    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join()
    closes: list[str] = []
    asyncio.run(runner.close(lambda: closes.append("closed")))
    asyncio.run(runner.close(lambda: closes.append("again")))
    assert answers == [1, 2]
    assert closes == ["closed"]

    async def after() -> None:
        with pytest.raises(Closed):
            await runner.run(lambda: 3)

    asyncio.run(after())


@pytest.mark.parametrize("bell", ["_EventBell", "_SocketBell"])
def test_calls_finishing_together_all_reach_their_callers(
    bell: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if bell == "_EventBell" and not hasattr(os, "eventfd"):
        pytest.skip("no eventfd on this platform")
    # Each loop's inbox is made at its first call: this loop's rings this bell.
    monkeypatch.setattr(_runner, "_Bell", getattr(_runner, bell))

    async def main() -> None:
        runner = AsyncRunner(True)
        square = runner.bind(lambda n: n * n)
        calls = asyncio.gather(*(square(n) for n in range(200)))
        assert await asyncio.wait_for(calls, 30) == [n * n for n in range(200)]
        await runner.close(lambda: None)

    asyncio.run(main())


class _NoReaders(asyncio.SelectorEventLoop):
    """A loop that cannot watch a socket, as Windows' proactor loop cannot."""

    def add_reader(self, *args: Any) -> None:
        raise NotImplementedError


def test_a_loop_that_cannot_watch_a_socket_is_answered_all_the_same() -> None:
    runner = AsyncRunner(True)
    loop = _NoReaders()
    try:
        assert loop.run_until_complete(runner.run(lambda: "answered")) == "answered"
        assert loop.run_until_complete(runner.run(lambda: "again")) == "again"
        loop.run_until_complete(runner.close(lambda: None))
    finally:
        loop.close()


def test_a_loop_closed_mid_call_leaves_the_runner_working_and_is_let_go() -> None:
    started, release = threading.Event(), threading.Event()
    runner = AsyncRunner(True)

    def slow() -> str:
        started.set()
        release.wait(10)
        return "late"

    loop = asyncio.new_event_loop()
    pending = loop.create_task(_call(runner, slow))
    loop.run_until_complete(asyncio.sleep(0))
    started.wait(10)
    pending.cancel()
    loop.run_until_complete(asyncio.gather(pending, return_exceptions=True))
    loop.close()
    release.set()
    assert asyncio.run(runner.run(lambda: "still here")) == "still here"
    gone = weakref.ref(loop)
    del loop, pending
    gc.collect()
    assert gone() is None  # nothing the worker left for it keeps the closed loop alive
    asyncio.run(runner.close(lambda: None))


async def _call(runner: AsyncRunner, fn: Any) -> Any:
    return await runner.run(fn)


def test_a_stop_iteration_from_the_engine_reaches_its_caller_as_an_error() -> None:
    def exhausted() -> object:
        return next(iter(()))

    async def main() -> None:
        runner = AsyncRunner(True)
        # A future refuses StopIteration: without the conversion the caller waits forever.
        with pytest.raises(RuntimeError, match="StopIteration"):
            await asyncio.wait_for(runner.run(exhausted), 30)
        await runner.close(lambda: None)

    asyncio.run(main())


def test_calls_from_many_threads_at_once_all_run_in_each_callers_order() -> None:
    runner = AsyncRunner(True)
    ran: list[tuple[int, int]] = []

    async def caller(who: int) -> None:
        record = runner.bind(lambda n: ran.append((who, n)))
        for n in range(100):  # each call awaited before the next: this caller's order
            await record(n)

    threads = [threading.Thread(target=asyncio.run, args=(caller(who),)) for who in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    asyncio.run(runner.close(lambda: None))
    assert len(ran) == 400
    for who in range(4):
        assert [n for w, n in ran if w == who] == list(range(100))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_a_closed_runner_leaves_no_file_open() -> None:
    gc.collect()
    before = set(os.listdir("/proc/self/fd"))
    runner = AsyncRunner(True)
    assert asyncio.run(runner.run(lambda: "answered")) == "answered"
    asyncio.run(runner.close(lambda: None))
    runner._thread.join(10)
    gc.collect()  # each loop's inbox closes its bell when the loop is collected
    assert set(os.listdir("/proc/self/fd")) <= before
