"""The async runner that hands a blocking engine's calls to its worker thread.

A call's outcome crosses back as it was (a result, or the engine's own typed error); a
cancelled caller's call still runs whole; the worker holds nothing of a call once it has
handed its outcome back; after `close` (any number of times) calls raise `Closed`; one
runner serves any event loop.
"""

from __future__ import annotations

import asyncio
import threading
import weakref

import pytest

from sessionary.errors import Closed, SessionNotFound
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
