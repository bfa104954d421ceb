"""Invariant 3: a crash at any instant loses nothing acknowledged and leaves the store whole.

A writer process appends single messages and `append_all` batches in a tight loop,
printing each call before it starts and once it has returned; it is killed with SIGKILL
at a random moment, sometimes before its first ack (while the store opens, migrates or
creates the session: the first trial on each fresh store always is). Then the parent
reopens the store and checks every acknowledged message, each batch all or nothing, the
head, the chain, the counters, search, the SQLite file, and one more append (see
`_reliability`). For a server store, the killed process is its client.

`scripts/bench-reliability` runs the same trials by the thousand into RELIABILITY.md.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from _reliability import crash_trials

pytestmark = pytest.mark.slow

TRIALS = 12
"""Kills per backend here; the long run makes 1,000 and more."""


@pytest.fixture(
    params=[
        pytest.param("sqlite-full", marks=pytest.mark.sqlite),
        pytest.param("sqlite-normal", marks=pytest.mark.sqlite),
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("mysql", marks=pytest.mark.mysql),
        pytest.param("redis", marks=pytest.mark.redis),
    ]
)
def crash_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store no process has opened yet; SQLite at each `durability`."""
    name = request.param
    if name.startswith("sqlite-"):
        return f"sqlite:///{tmp_path / 'crash.db'}?durability={name.removeprefix('sqlite-')}"
    return str(request.getfixturevalue(f"{name}_url"))


def test_sigkill_loses_nothing_acknowledged(tmp_path: Path, crash_url: str) -> None:
    seed = random.randrange(1 << 32)
    try:
        tally = crash_trials(crash_url, tmp_path, TRIALS, seed, fresh=True)
    except AssertionError as exc:
        raise AssertionError(f"seed {seed}: {exc}") from exc
    assert tally.trials == TRIALS
    assert tally.early_kills >= 1, "no kill landed before the first ack"
    assert tally.acked_messages and tally.acked_batches, tally
