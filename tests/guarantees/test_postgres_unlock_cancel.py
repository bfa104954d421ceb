"""PostgreSQL's contended async appends (a CALL that unlocks early): cancelled, other loops.

Every append of these stores takes the path of a session other writers move
(`tests/test_postgres_unlock.py`): one CALL that commits, unlocks, then flushes. Cut by a
timeout or a task cancellation at a random moment, each is stored whole or not at all,
and nothing acknowledged is lost (see `_reliability.cancellation_run`); one store serves
a second event loop after the first, and closes twice.
"""

from __future__ import annotations

import asyncio
import random

import pytest
from _reliability import cancellation_run
from test_postgres_unlock import always_contended, calls

from sessionary import AsyncSessionManager, Message, SessionManager
from sessionary.stores import postgres

pytestmark = pytest.mark.postgres


async def test_contended_appends_cancelled_at_any_point_lose_nothing_acknowledged(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = calls(monkeypatch, postgres.AsyncPostgresDriver)
    always_contended(monkeypatch)
    seed = random.randrange(1 << 32)
    for round_ in range(2):
        tally = await cancellation_run(postgres_url, "cancel", 30, seed + round_)
        assert tally.trials == 30, f"seed {seed}"
        assert tally.cancelled, f"seed {seed}: no append was cut short"
    assert sent and all(sql.startswith("CALL sessionary_append(") for sql in sent)


def test_contended_async_appends_from_a_second_event_loop_then_close_twice(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = calls(monkeypatch, postgres.AsyncPostgresDriver)
    always_contended(monkeypatch)
    manager = AsyncSessionManager(postgres_url)

    async def write(prefix: str) -> list[str]:
        session = await manager.get_or_create("s")
        return [(await session.append(Message.user(f"{prefix}{i}"))).id for i in range(5)]

    written = asyncio.run(write("a"))
    written += asyncio.run(write("b"))  # the same store, from another event loop
    asyncio.run(manager.close())
    asyncio.run(manager.close())
    with SessionManager(postgres_url) as check:
        history = check.session("s").history()
    assert [m.id for m in history] == written
    assert [m.parent_id for m in history] == [None, *written[:-1]]
    assert len(sent) == 10 and all(sql.startswith("CALL sessionary_append(") for sql in sent)
