"""Across processes: concurrent appends to one session lose, duplicate and interleave nothing."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest
from _kv_helpers import open_driver
from _kv_worker import FREQUENCY, batch_sizes

from sessionary import Message
from sessionary.kv import IncrementalSessionManager

pytestmark = pytest.mark.slow

WORKERS = 4
COUNT = 100
LONG = 100_000
"""Messages a worker would append if it were not killed first."""
SHARED = [
    pytest.param("sqlite", marks=pytest.mark.sqlite),
    pytest.param("redis", marks=pytest.mark.redis),
]
WORKER = Path(__file__).with_name("_kv_worker.py")


def _start(kind: str, where: str, count: int) -> list[subprocess.Popen[str]]:
    args = [sys.executable, str(WORKER), kind, where]
    procs = [
        subprocess.Popen(
            [*args, str(w), str(count)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=WORKER.parent,
        )
        for w in range(WORKERS)
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    return procs


def _run(kind: str, where: str) -> None:
    procs = _start(kind, where, COUNT)
    try:
        for proc in procs:
            out, _ = proc.communicate(timeout=240)
            assert proc.returncode == 0 and out.strip() == "done"
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _check(history: list[Message], complete: bool = True) -> None:
    """Every batch whole and contiguous, each worker's order kept (all COUNT if complete)."""
    assert len({m.id for m in history}) == len(history)
    order: dict[int, list[int]] = defaultdict(list)
    batches: dict[tuple[int, int], list[int]] = defaultdict(list)
    for position, message in enumerate(history):
        worker, i, batch = (message.metadata[k] for k in ("w", "i", "b"))
        order[worker].append(i)
        batches[worker, batch].append(position)
    for seen in order.values():
        assert seen == list(range(COUNT if complete else len(seen)))
    assert len(order) == WORKERS
    sizes = {w: batch_sizes(w, COUNT if complete else LONG) for w in range(WORKERS)}
    for (worker, batch), positions in batches.items():
        assert len(positions) == sizes[worker][batch]
        assert positions == list(range(positions[0], positions[0] + len(positions)))
    if complete:
        assert len(history) == WORKERS * COUNT


@pytest.mark.parametrize("kind", SHARED)
def test_four_processes_append_to_one_session(kind: str, place: str) -> None:
    _run(kind, place)
    driver = open_driver(kind, place)
    try:
        manager = IncrementalSessionManager(driver, snapshot_frequency=FREQUENCY)
        _check(manager.get_history("shared"))
        assert len(driver.list_prefix("sessions:shared:msg:")) < FREQUENCY
        assert len(driver.list_prefix("session-ids:shared:")) == WORKERS * COUNT
    finally:
        driver.close()


@pytest.mark.parametrize("kind", SHARED)
def test_writers_killed_mid_append_leave_only_whole_batches(kind: str, place: str) -> None:
    procs = _start(kind, place, LONG)
    time.sleep(1.0)
    for proc in procs:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    driver = open_driver(kind, place)
    try:
        manager = IncrementalSessionManager(driver, snapshot_frequency=FREQUENCY)
        _check(manager.get_history("shared"), complete=False)
        manager.append_message("shared", Message.user("after", id="after"))
        assert manager.get_history("shared", 1)[0].id == "after"
    finally:
        driver.close()
