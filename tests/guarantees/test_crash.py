"""Invariant 3: a crash at any instant loses nothing acknowledged and leaves the store whole.

A child process appends in a tight loop and prints each id only after its append
returned; the parent kills it with SIGKILL at a random moment, reopens the store, and
checks every acknowledged message, the chain, the counters, the file and search.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from _guarantees import LINE_TIMEOUT, check_chain, sqlite_file, worker_command

import sessionary
from sessionary.stores.base import SEARCH

pytestmark = pytest.mark.slow

ROUNDS = 3
SESSION = "crash"


def _acked_units(out: Path) -> list[list[str]]:
    """Return the acknowledged units (one id, or one batch's ids) the child wrote out."""
    text = out.read_text(encoding="utf-8")
    complete = text.split("\n")[:-1]  # a torn last line was never acknowledged
    return [line.split() for line in complete]


def _run_and_kill(
    tmp_path: Path, url: str, size: int, prefix: str, delay: float
) -> list[list[str]]:
    """Run an appending child, SIGKILL it `delay` seconds after its first ack; return acks."""
    out = tmp_path / f"acks-{prefix}.txt"
    err = tmp_path / f"stderr-{prefix}.txt"
    with out.open("w", encoding="utf-8") as stdout, err.open("w", encoding="utf-8") as stderr:
        child = subprocess.Popen(
            worker_command("crash", url, SESSION, size, prefix),
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
        )
        try:
            deadline = time.monotonic() + LINE_TIMEOUT
            while "\n" not in out.read_text(encoding="utf-8"):
                assert child.poll() is None, f"child died: {err.read_text(encoding='utf-8')}"
                assert time.monotonic() < deadline, "child never acknowledged an append"
                time.sleep(0.01)
            time.sleep(delay)
            os.kill(child.pid, signal.SIGKILL)
        finally:
            if child.poll() is None:
                child.kill()
            code = child.wait(LINE_TIMEOUT)
    assert code == -signal.SIGKILL, f"child exited by itself ({code}): {err.read_text()}"
    return _acked_units(out)


def _unit_ids(size: int, prefix: str, n: int) -> list[str]:
    """The ids of the child's `n`th unit (see `_worker.crash`)."""
    return [f"{prefix}-{n}"] if size == 1 else [f"{prefix}-b{n}-{k}" for k in range(size)]


def _search_word(size: int, prefix: str, n: int) -> str:
    """A word only the last message of the child's `n`th unit holds."""
    return f"{prefix}x{n}" if size == 1 else f"{prefix}x{n}x{size - 1}"


def _check_file(url: str) -> None:
    path = sqlite_file(url)
    if path is None:
        return
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        db.close()


@pytest.mark.parametrize("size", [1, 3], ids=["append", "append_all"])
def test_sigkill_loses_nothing_acknowledged(
    tmp_path: Path, shared_store_url: str, size: int
) -> None:
    seed = random.randrange(1 << 32)
    rng = random.Random(seed)
    with sessionary.SessionManager(shared_store_url) as manager:
        manager.create(id=SESSION)
    expected: list[str] = []  # the ids the path must hold, in order
    for round_ in range(ROUNDS):
        prefix = f"r{round_}"
        delay = rng.uniform(0.2, 1.0)
        units = _run_and_kill(tmp_path, shared_store_url, size, prefix, delay)
        context = f"seed {seed}, round {round_}, delay {delay:.3f}, {len(units)} acks"
        assert units, context
        # The child acknowledges its units in order: unit n holds exactly these ids.
        assert units == [_unit_ids(size, prefix, n) for n in range(len(units))], context

        _check_file(shared_store_url)
        with sessionary.SessionManager(shared_store_url) as manager:
            session = manager.session(SESSION)
            for unit in units:
                for msg_id in unit:
                    stored = session.get_message(msg_id)
                    assert stored is not None, f"acknowledged {msg_id} lost ({context})"
                    assert stored.id == msg_id
            path = session.history()
            check_chain(path, session.message_count(), len(path))
            ids = [m.id for m in path]
            acked = [msg_id for unit in units for msg_id in unit]
            assert ids[: len(expected) + len(acked)] == expected + acked, context
            # Past the acks, at most the one unit in flight at the kill, whole or absent.
            in_flight = ids[len(expected) + len(acked) :]
            assert in_flight in ([], _unit_ids(size, prefix, len(units))), (context, in_flight)
            expected += acked + in_flight

            if SEARCH not in manager.store.capabilities:
                continue
            word = _search_word(size, prefix, len(units) - 1)
            hits = session.search(word)
            assert [hit.message_id for hit in hits] == [units[-1][-1]], (context, word, hits)
            first = session.search(_search_word(size, prefix, 0))
            assert [hit.message_id for hit in first] == [units[0][-1]], context
    with sessionary.SessionManager(shared_store_url) as manager:
        assert [m.id for m in manager.session(SESSION).history()] == expected
