"""PostgreSQL's contended appends (a CALL that unlocks early), cancelled at any point.

Every append of these stores takes the path of a session other writers move
(`tests/test_postgres_unlock.py`): one CALL that commits, unlocks, then flushes. Cut by a
timeout or a task cancellation at a random moment, each is stored whole or not at all,
and nothing acknowledged is lost (see `_reliability.cancellation_run`).
"""

from __future__ import annotations

import random

import pytest
from _reliability import cancellation_run
from test_postgres_unlock import always_contended, calls

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
