"""A cancelled async append is stored whole or not at all; nothing acknowledged is lost.

Async `append` and `append_all` calls run under `asyncio.wait_for` with random small
timeouts, or their task is cancelled at a random moment. Then the manager closes (it
must return and leave no task behind), and a fresh one checks every invariant: each
call that returned is stored in order, each cancelled one whole or absent, the head,
chain, counters and search agree, and the next append links to the head (see
`_reliability`). A second round continues the same session after the reopen.

`scripts/bench-reliability` runs the same calls by the hundred into RELIABILITY.md.
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import pytest
from _reliability import Tally, cancellation_run

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
