"""Across processes: concurrent appends to one session lose, duplicate and interleave nothing."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from _kv_helpers import open_driver
from _kv_worker import FREQUENCY, batch_sizes, write

from sessionary import Message
from sessionary.kv import IncrementalSessionManager
from sessionary.kv._layout import CHUNKED, Listing, Meta, SessionKeys

pytestmark = pytest.mark.slow

WORKERS = 4
EIGHT = 8
COUNT = 100
LONG = 100_000
"""Messages a worker would append if it were not killed first."""
SHARED = [
    pytest.param("sqlite", marks=pytest.mark.sqlite),
    pytest.param("redis", marks=pytest.mark.redis),
]
WORKER = Path(__file__).with_name("_kv_worker.py")


def _start(
    kind: str, where: str, count: int, workers: int = WORKERS
) -> list[subprocess.Popen[str]]:
    args = [sys.executable, str(WORKER), kind, where]
    procs = [
        subprocess.Popen(
            [*args, str(w), str(count)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=WORKER.parent,
        )
        for w in range(workers)
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    return procs


def _run(kind: str, where: str, workers: int = WORKERS) -> None:
    procs = _start(kind, where, COUNT, workers)
    try:
        for proc in procs:
            out, _ = proc.communicate(timeout=240)
            assert proc.returncode == 0 and out.strip() == "done"
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _check(history: list[Message], complete: bool = True, workers: int = WORKERS) -> None:
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
    assert len(order) == workers
    sizes = {w: batch_sizes(w, COUNT if complete else LONG) for w in range(workers)}
    for (worker, batch), positions in batches.items():
        assert len(positions) == sizes[worker][batch]
        assert positions == list(range(positions[0], positions[0] + len(positions)))
    if complete:
        assert len(history) == workers * COUNT


def _check_layout(driver: Any, total: int) -> None:
    """The session's entries agree with its meta entry: counters, loose run, chunks, ids."""
    listing = Listing.parse(SessionKeys("shared"), driver.list_prefix("sessions:shared:"))
    meta = Meta.decode(listing.meta_text)
    assert meta is not None and meta.layout == CHUNKED
    assert meta.count == meta.next_seq == total
    seqs = [int(key.rsplit(":", 1)[1]) for key, _ in listing.loose]
    assert seqs == list(range(total - len(seqs), total))  # the newest, none missing
    assert meta.since_snapshot == len(seqs) < FREQUENCY  # the last roll-up ran
    assert sorted(listing.chunks) == list(range(meta.first_chunk, meta.next_chunk))
    rolled = sum(len(json.loads(text)) for text in listing.chunks.values())
    assert rolled - meta.skip + len(seqs) == total
    ids = driver.list_prefix("session-ids:shared:")
    assert sorted(int(seq) for _, seq in ids) == list(range(total))


@pytest.mark.parametrize("kind", SHARED)
@pytest.mark.parametrize("how", ["processes", "threads"])
def test_eight_writers_share_one_session(kind: str, place: str, how: str) -> None:
    """8 writers (processes, or threads with a manager each) lose and reorder nothing."""
    if how == "processes":
        _run(kind, place, EIGHT)
    else:
        drivers = [open_driver(kind, place) for _ in range(EIGHT)]
        errors: list[BaseException] = []

        def work(worker: int) -> None:
            try:
                manager = IncrementalSessionManager(drivers[worker], snapshot_frequency=FREQUENCY)
                write(manager, worker, COUNT)
            except BaseException as exc:  # reported below, not lost in the thread
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(w,)) for w in range(EIGHT)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for opened in drivers:
            opened.close()
        assert errors == []
    driver = open_driver(kind, place)
    try:
        manager = IncrementalSessionManager(driver, snapshot_frequency=FREQUENCY)
        _check(manager.get_history("shared"), workers=EIGHT)
        _check_layout(driver, EIGHT * COUNT)
    finally:
        driver.close()


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


def _until_every_worker_wrote(kind: str, place: str, patience: float = 120.0) -> None:
    """Wait until each worker has stored a batch (a loaded machine starts them slowly)."""
    driver = open_driver(kind, place)
    try:
        manager = IncrementalSessionManager(driver, snapshot_frequency=FREQUENCY)
        deadline = time.monotonic() + patience
        while len({m.metadata["w"] for m in manager.get_history("shared", 200)}) < WORKERS:
            assert time.monotonic() < deadline, "a worker stored nothing in time"
            time.sleep(0.05)
    finally:
        driver.close()


@pytest.mark.parametrize("kind", SHARED)
def test_writers_killed_mid_append_leave_only_whole_batches(kind: str, place: str) -> None:
    procs = _start(kind, place, LONG)
    _until_every_worker_wrote(kind, place)
    time.sleep(0.2)
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
