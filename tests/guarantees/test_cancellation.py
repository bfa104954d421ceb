"""A cancelled async append is stored whole or not at all; nothing acknowledged is lost.

Async `append` and `append_all` calls run under `asyncio.wait_for` with random small
timeouts, or their task is cancelled at a random moment. Then the manager closes (it
must return and leave no task behind), and a fresh one checks every invariant: each
call that returned is stored in order, each cancelled one whole or absent, the head,
chain, counters and search agree, and the next append links to the head (see
`_reliability`). A second round continues the same session after the reopen.

`scripts/bench-reliability` runs the same calls by the hundred into RELIABILITY.md.

A sweep or an erasure cancelled part way keeps each session whole or deletes it whole,
and the next run finishes the rest.

A compare-and-set of the head (`checkout(expected_head=)`, a leaf's deletion, the OpenAI
Agents session's `pop_item`) cut short moves the head wholly or not at all, and its
effect is settled by the caller's next call on the session: that call sees it or never
will (a call given up on in flight never lands after the next one).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from _reliability import Tally, cancellation_run

from sessionary import AsyncSessionManager

CALLS = 30
"""Calls per round here; the long run makes hundreds per backend."""


@pytest.fixture(
    params=[
        pytest.param("memory", marks=pytest.mark.memory),
        pytest.param("sqlite", marks=pytest.mark.sqlite),
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("mysql", marks=pytest.mark.mysql),
        pytest.param("redis", marks=pytest.mark.redis),
    ]
)
def cancel_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store that a second manager in this process sees too."""
    name = request.param
    if name == "memory":  # a named memory store is shared by every manager in the process
        return f"memory://cancel-{uuid.uuid4().hex}"
    if name == "sqlite":
        return f"sqlite:///{tmp_path / 'cancel.db'}"
    return str(request.getfixturevalue(f"{name}_url"))


async def test_cancelled_appends_lose_nothing_acknowledged(cancel_url: str) -> None:
    seed = random.randrange(1 << 32)
    tally = Tally()
    for round_ in range(2):
        try:
            tally.add(await cancellation_run(cancel_url, "cancel", CALLS, seed + round_))
        except AssertionError as exc:
            raise AssertionError(f"seed {seed}, round {round_}: {exc}") from exc
    assert tally.trials == 2 * CALLS
    if not cancel_url.startswith("memory://"):  # a memory call never yields: nothing to cut
        assert tally.cancelled, f"no call was cancelled (seed {seed})"
    assert tally.acked_messages, f"every call was cancelled (seed {seed})"


class _Clock:
    """A clock that stands where a test puts it (expiry without sleeps)."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


async def _fill(manager: AsyncSessionManager, session_id: str, ttl: float | None) -> None:
    session = await manager.create(id=session_id, ttl=ttl)
    await session.append_all(
        [{"role": "user", "content": f"q {session_id}"}, {"role": "assistant", "content": "a"}]
    )
    await session.update_state({"k": session_id})


async def _whole_or_gone(manager: AsyncSessionManager, session_ids: list[str]) -> list[str]:
    """The sessions still there; each must hold both its messages and its state."""
    left = []
    for session_id in session_ids:
        if await manager.get(session_id) is None:
            continue
        session = manager.session(session_id)
        texts = [m.text for m in await session.history()]
        assert texts == [f"q {session_id}", "a"], (session_id, texts)
        assert (await session.get_state()).data == {"k": session_id}, session_id
        left.append(session_id)
    return left


async def _cut(work: Callable[[], Awaitable[int]], rng: random.Random, times: int) -> None:
    """Start `work` and cancel it after a random short while, `times` times."""
    for _ in range(times):
        task = asyncio.create_task(work())
        await asyncio.sleep(rng.uniform(0, 0.02))
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_a_cancelled_sweep_or_erase_leaves_each_session_whole_or_gone(
    cancel_url: str,
) -> None:
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    start = datetime.now(UTC)
    clock = _Clock(start)
    expiring = [f"old{n}" for n in range(24)]
    erased = [f"mine{n}" for n in range(12)]
    async with AsyncSessionManager(cancel_url, clock=clock, user="ann") as manager:
        for session_id in expiring:
            await _fill(manager, session_id, ttl=5)
        await _fill(manager, "kept", ttl=None)
        bob = AsyncSessionManager(manager.store, user="bob")
        for session_id in erased:
            await _fill(bob, session_id, ttl=None)
        clock.now = start + timedelta(seconds=6)
        await _cut(lambda: manager.sweep(batch_size=2), rng, 4)
        await _cut(bob.erase_user, rng, 3)
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []

    # Seen from before the expiry, a session the sweep did not reach is whole.
    async with AsyncSessionManager(cancel_url, clock=_Clock(start), user="ann") as before:
        swept_left = await _whole_or_gone(before, expiring)
        assert await _whole_or_gone(before, ["kept"]) == ["kept"], f"seed {seed}"
        bob = AsyncSessionManager(before.store, user="bob")
        await _whole_or_gone(bob, erased)
    # Run to their end, they finish what the cancelled ones left.
    async with AsyncSessionManager(cancel_url, clock=clock, user="ann") as after:
        assert await after.sweep(batch_size=2) == len(swept_left), f"seed {seed}"
        bob = AsyncSessionManager(after.store, user="bob")
        await bob.erase_user()
        assert await _whole_or_gone(bob, erased) == [], f"seed {seed}"
        assert [info.id for info in (await after.list()).items] == ["kept"], f"seed {seed}"
        assert [m.text for m in await after.history("kept")] == ["q kept", "a"]


async def _cancelled(call: Awaitable[object], delay: float) -> bool:
    """Run `call`, cancelling it after `delay` seconds; True if it was cut short."""
    task = asyncio.ensure_future(call)
    await asyncio.sleep(delay)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        return True
    return False


async def test_a_cancelled_compare_and_set_of_the_head_moves_it_wholly_or_not(
    cancel_url: str,
) -> None:
    """`checkout(expected_head=)` and a leaf's deletion, cut at random moments."""
    rng = random.Random(seed := random.randrange(1 << 32))
    async with AsyncSessionManager(cancel_url) as manager:
        session = await manager.create()
        stored = await session.append_all(
            [{"role": "user", "content": f"turn {i}"} for i in range(24)]
        )
        ids = [m.id for m in stored]
        await session.checkout(ids[-5])
        await session.append({"role": "user", "content": "a branch"})  # so ids[-5] branches
        await session.checkout(ids[-1])
        cut = 0
        while (head := await session.head()) is not None and head.parent_id is not None:
            if await session.branches(head.id):
                call = session.checkout(head.parent_id, expected_head=head.id)
            else:
                call = session.delete_messages([head.id])
            cut += await _cancelled(call, rng.choice([0, rng.uniform(0, 0.004)]))
            now = await session.head()
            assert now is not None, seed
            assert now.id in (head.id, head.parent_id), (seed, head.id, now.id)
            if now.id == head.id:  # cut before it took effect: the store refuses nothing
                await session.checkout(head.parent_id, expected_head=head.id)
            path = [m.id for m in await session.history()]
            assert path == ids[: len(path)], seed  # an unbroken prefix of what was stored
    assert cut or cancel_url.startswith("memory://"), f"no call was cut (seed {seed})"


async def test_a_cancelled_pop_item_loses_no_other_item(cancel_url: str) -> None:
    agents_sessions = pytest.importorskip("sessionary.integrations.openai_agents")
    rng = random.Random(seed := random.randrange(1 << 32))
    async with AsyncSessionManager(cancel_url) as manager:
        session = agents_sessions.SessionarySession("popped", manager)
        items: list[Any] = [{"role": "user", "content": f"item {i}"} for i in range(30)]
        await session.add_items(items)
        left = 30
        while left:
            await _cancelled(session.pop_item(), rng.uniform(0, 0.004))
            now = await session.get_items()
            assert len(now) in (left, left - 1), (seed, left, len(now))
            assert now == items[: len(now)], seed  # only ever the newest item goes
            left = len(now)
            if rng.random() < 0.3 and left:
                assert await session.pop_item() == items[left - 1], seed
                left -= 1
