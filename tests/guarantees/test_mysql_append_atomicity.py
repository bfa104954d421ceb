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
import time
from pathlib import Path
from typing import Any

import pytest
from _guarantees import LINE_TIMEOUT
from _reliability import append_time, check_session

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
        # Timeouts spread over one append's duration here, so that cancellations land
        # at every point of the script on a fast machine or a loaded one.
        span = 1.5 * await append_time(session)
        acked += [m.id for m in await session.history()]
        cancelled = 0
        late: list[float] = []  # how far past its timeout an append ended unhindered
        for trial in range(CANCELLED_APPENDS):
            # An acknowledged append first: the store then knows the head, so the next
            # one takes the script after a known head.
            done = await session.append(Message.user(f"acked {trial}", id=f"t{trial}"))
            acked.append(done.id)
            unit = [f"t{trial}-u{k}" for k in range(rng.choice([1, 2, 3]))]
            units[f"trial {trial}"] = unit
            timeout = rng.uniform(0, span)
            start = time.perf_counter()
            try:
                await asyncio.wait_for(
                    session.append_all([Message.user(f"unit {i}", id=i) for i in unit]),
                    timeout=timeout,
                )
            except TimeoutError:
                cancelled += 1
            else:
                acked += unit
                if time.perf_counter() - start > timeout:
                    late.append(time.perf_counter() - start - timeout)
    # (An append that ended past its timeout without a TimeoutError means a cancellation
    # that did not land: the loop ran it to its end first, or something absorbed it.)
    assert cancelled, (
        f"no append was cancelled (seed {seed}, span {span:.4f} s; "
        f"{len(late)} ended past their timeout, by up to {max(late, default=0):.4f} s)"
    )
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
