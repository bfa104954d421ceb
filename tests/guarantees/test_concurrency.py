"""Invariants 4 and 5 within one process: threads and asyncio tasks appending at once.

Writers share one manager, or each open their own on the same URL (an in-process
memory store is shared by name for that). Whatever the backend, their appends must
form one chain with every message once and each writer's messages in its own order.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable

import pytest
from _guarantees import check_batches, check_chain, writer_sequences

import sessionary
from sessionary import Message

WRITERS = 8
APPENDS = 50
BATCH = 5
BATCHES = APPENDS // BATCH


def _shareable(url: str) -> str:
    """Return a URL several managers in this process can open onto the same store."""
    if url.startswith("memory://"):
        return f"memory://{uuid.uuid4().hex}"
    return url


def _message(worker: int, i: int) -> Message:
    return Message.user(f"t{worker}-{i}", metadata={"worker": worker, "i": i})


def _batch(worker: int, b: int) -> list[Message]:
    return [
        Message.user(
            f"t{worker}-b{b}-{k}",
            id=f"t{worker}-b{b}-{k}",
            metadata={"worker": worker, "batch": b, "k": k},
        )
        for k in range(BATCH)
    ]


def _in_threads(work: Callable[[int], None]) -> None:
    """Run `work(worker)` in WRITERS threads released together; re-raise any failure."""
    barrier = threading.Barrier(WRITERS)
    errors: list[BaseException] = []

    def run(worker: int) -> None:
        try:
            barrier.wait(timeout=60)
            work(worker)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
        assert not thread.is_alive(), "a writer thread hung"
    if errors:
        raise errors[0]


def _check_appends(session: sessionary.Session) -> None:
    path = session.history()
    check_chain(path, session.message_count(), WRITERS * APPENDS)
    expected = {w: list(range(APPENDS)) for w in range(WRITERS)}
    assert writer_sequences(path, "worker", "i") == expected


def _check_batches(session: sessionary.Session) -> None:
    path = session.history()
    check_chain(path, session.message_count(), WRITERS * BATCHES * BATCH)
    check_batches(path, WRITERS, BATCHES, BATCH)


# ---------------------------------------------------------------- threads


def test_threads_share_one_manager(manager: sessionary.SessionManager) -> None:
    manager.create(id="shared")

    def work(worker: int) -> None:
        session = manager.session("shared")
        for i in range(APPENDS):
            session.append(_message(worker, i))

    _in_threads(work)
    _check_appends(manager.session("shared"))


def test_threads_with_their_own_managers(store_url: str) -> None:
    url = _shareable(store_url)
    with sessionary.SessionManager(url) as manager:
        manager.create(id="shared")

        def work(worker: int) -> None:
            with sessionary.SessionManager(url) as own:
                session = own.session("shared")
                for i in range(APPENDS):
                    session.append(_message(worker, i))

        _in_threads(work)
        _check_appends(manager.session("shared"))


def test_threads_batches_never_interleave(store_url: str) -> None:
    url = _shareable(store_url)
    with sessionary.SessionManager(url) as manager:
        manager.create(id="shared")

        def work(worker: int) -> None:
            # Even writers share the manager, odd ones open their own.
            if worker % 2:
                with sessionary.SessionManager(url) as own:
                    for b in range(BATCHES):
                        own.session("shared").append_all(_batch(worker, b))
            else:
                for b in range(BATCHES):
                    manager.session("shared").append_all(_batch(worker, b))

        _in_threads(work)
        _check_batches(manager.session("shared"))


def test_threads_retrying_the_same_ids(manager: sessionary.SessionManager) -> None:
    session = manager.create(id="shared")

    def work(worker: int) -> None:
        for i in range(APPENDS):
            message = Message.user(
                f"t{worker}-{i}", id=f"t{worker}-{i}", metadata={"worker": worker, "i": i}
            )
            for _ in range(2):
                stored = session.append(message)
                assert stored.id == message.id and stored.text == message.text

    _in_threads(work)
    _check_appends(session)


# ---------------------------------------------------------------- asyncio


async def _check_appends_async(session: sessionary.AsyncSession) -> None:
    path = await session.history()
    check_chain(path, await session.message_count(), WRITERS * APPENDS)
    expected = {w: list(range(APPENDS)) for w in range(WRITERS)}
    assert writer_sequences(path, "worker", "i") == expected


async def test_tasks_share_one_manager(amanager: sessionary.AsyncSessionManager) -> None:
    await amanager.create(id="shared")

    async def work(worker: int) -> None:
        session = amanager.session("shared")
        for i in range(APPENDS):
            await session.append(_message(worker, i))

    await asyncio.gather(*(work(w) for w in range(WRITERS)))
    await _check_appends_async(amanager.session("shared"))


async def test_tasks_batches_never_interleave(amanager: sessionary.AsyncSessionManager) -> None:
    await amanager.create(id="shared")

    async def work(worker: int) -> None:
        session = amanager.session("shared")
        for b in range(BATCHES):
            await session.append_all(_batch(worker, b))

    await asyncio.gather(*(work(w) for w in range(WRITERS)))
    session = amanager.session("shared")
    path = await session.history()
    check_chain(path, await session.message_count(), WRITERS * BATCHES * BATCH)
    check_batches(path, WRITERS, BATCHES, BATCH)


async def test_tasks_with_their_own_managers(store_url: str) -> None:
    url = _shareable(store_url)
    async with sessionary.AsyncSessionManager(url) as manager:
        await manager.create(id="shared")

        async def work(worker: int) -> None:
            async with sessionary.AsyncSessionManager(url) as own:
                session = own.session("shared")
                for i in range(APPENDS):
                    await session.append(_message(worker, i))

        await asyncio.gather(*(work(w) for w in range(WRITERS)))
        await _check_appends_async(manager.session("shared"))


@pytest.mark.parametrize("writers", [2, WRITERS])
async def test_tasks_racing_on_expected_head(
    amanager: sessionary.AsyncSessionManager, writers: int
) -> None:
    """Writers that all saw the same head: exactly one wins each round, the rest conflict."""
    session = await amanager.create(id="shared")
    rounds = 10
    for r in range(rounds):
        head = await session.head()
        seen = head.id if head is not None else None

        async def attempt(worker: int, seen: str | None = seen, r: int = r) -> bool:
            try:
                await session.append(
                    Message.user(f"r{r}", id=f"r{r}-w{worker}"), expected_head=seen
                )
            except sessionary.HeadConflict:
                return False
            return True

        won = await asyncio.gather(*(attempt(w) for w in range(writers)))
        assert sum(won) == 1, (r, won)
    check_chain(await session.history(), await session.message_count(), rounds)
