"""MySQL's one-round-trip append scripts commit a whole append or nothing (issue 13, defect 1).

An append after a known head is one multi-statement script ending in COMMIT. When its
client goes away mid-script (killed, or its task cancelled), the server still runs the
script, but a failed write of a statement's result resets `ROW_COUNT()`: a script whose
INSERT was guarded by `ROW_COUNT()` committed the head move without the messages. These
tests interrupt appends exactly there, many times, and then check every invariant of
the chain.
"""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _guarantees import LINE_TIMEOUT
from _reliability import append_pace, check_session, interrupted

import sessionary
from sessionary import Message

pytestmark = pytest.mark.mysql

KILLER = Path(__file__).with_name("_mysql_append_killer.py")
CANCELLED_APPENDS = 120
KILLED_CLIENTS = 40
SESSION = "atomic"


async def test_cancelled_appends_commit_all_or_nothing(mysql_url: str) -> None:
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    units: dict[str, list[str]] = {}
    acked: list[str] = []
    async with sessionary.AsyncSessionManager(mysql_url) as manager:
        session = await manager.create(id=SESSION)
        # Cut off at random points of an append's time here (a timer) or of its loop
        # turns (a cancellation: on a fast server a timer rarely lands inside the call).
        pace, turns = await append_pace(session)
        span = 1.5 * pace
        acked += [m.id for m in await session.history()]
        cancelled = 0
        for trial in range(CANCELLED_APPENDS):
            # An acknowledged append first: the store then knows the head, so the next
            # one takes the script after a known head.
            done = await session.append(Message.user(f"acked {trial}", id=f"t{trial}"))
            acked.append(done.id)
            unit = [f"t{trial}-u{k}" for k in range(rng.choice([1, 2, 3]))]
            units[f"trial {trial}"] = unit
            call = session.append_all([Message.user(f"unit {i}", id=i) for i in unit])
            if await interrupted(call, rng, span, turns) is None:
                cancelled += 1
            else:
                acked += unit
    assert cancelled, f"no append was cancelled (seed {seed}, span {span:.4f} s, {turns} turns)"
    await asyncio.to_thread(check_session, mysql_url, SESSION, acked, [*units.values()], "after")


@pytest.mark.slow
async def test_killed_clients_commit_all_or_nothing(mysql_url: str) -> None:
    seed = random.randrange(1 << 32)
    async with sessionary.AsyncSessionManager(mysql_url) as manager:
        await manager.create(id=SESSION)
    command = [sys.executable, str(KILLER), mysql_url, SESSION, str(KILLED_CLIENTS), str(seed)]
    done = subprocess.run(  # noqa: ASYNC221 - the test waits for nothing else
        command, capture_output=True, text=True, timeout=LINE_TIMEOUT, check=False
    )
    assert done.returncode == 0, f"seed {seed}: {done.stderr}"
    units: dict[str, list[str]] = {}
    acked: list[str] = []
    for line in done.stdout.splitlines():
        words: list[Any] = line.split()
        if words[0] == "unit":
            units[words[1]] = [f"{words[1]}-u{k}" for k in range(int(words[2]))]
        else:
            acked.append(words[0])
    assert len(units) == KILLED_CLIENTS, done.stdout
    await asyncio.to_thread(check_session, mysql_url, SESSION, acked, [*units.values()], "after")
