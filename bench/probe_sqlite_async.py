"""Where an async SQLite append's time goes, next to the sync API and raw sqlite3.

    python bench/probe_sqlite_async.py [depth] [appends per block] [rounds] [full reads per block]

The async store runs the SQLite engine on a worker thread of its own
(`sessionary.stores._runner`). This probe times single-message appends through
`AsyncSessionManager`, `SessionManager` and plain sqlite3 (bench/raw.py) in interleaved
blocks, and splits each async append with `perf_counter_ns` stamps taken

  t0  before `await session.append` (the loop),
  t1  when the engine's `append` starts (the worker),
  t2  when it returns (the worker),
  t3  when the call's future is settled (the loop),
  t4  after the await returns (the loop),

into loop-side work before the hand-off and the hand-off itself (t1 - t0), the engine
(t2 - t1), the hand-back (t3 - t2) and loop-side work after (t4 - t3). Medians of each
segment per block, then the median over blocks. The same for a full history read at the
depth (full reads are few: one per block). Files go to a temporary directory.
"""

from __future__ import annotations

import asyncio
import gc
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.raw import RawSqlite
from bench.workload import conversation
from sessionary import ANY, AsyncSessionManager, Message, SessionManager
from sessionary.records import HEAD
from sessionary.stores import _runner

_stamps: dict[str, int] = {}
_gc_spent: list[int] = [0, 0]  # ns spent collecting, collections; since the last reset
_gc_start: list[int] = [0]


def _on_gc(phase: str, info: dict[str, int]) -> None:
    if phase == "start":
        _gc_start[0] = time.perf_counter_ns()
    else:
        _gc_spent[0] += time.perf_counter_ns() - _gc_start[0]
        _gc_spent[1] += 1


def _stamped(fn: Any) -> Any:
    """Wrap an engine method to stamp its start and end (on whichever thread runs it)."""

    def call(*args: Any) -> Any:
        _stamps["c1"] = time.thread_time_ns()
        _stamps["t1"] = time.perf_counter_ns()
        try:
            return fn(*args)
        finally:
            _stamps["t2"] = time.perf_counter_ns()
            _stamps["c2"] = time.thread_time_ns()

    call.__name__ = fn.__name__
    return call


_settle = _runner.settle


def _settle_stamped(future: Any, result: Any, error: Any) -> None:
    _stamps["t3"] = time.perf_counter_ns()
    _settle(future, result, error)


def _message(i: int) -> Message:
    return Message.user(f"message {i} " + "x" * 200)


async def _async_block(session: Any, count: int, segs: dict[str, list[float]]) -> None:
    for i in range(count):
        msg = _message(i)
        _stamps.clear()
        t0 = time.perf_counter_ns()
        await session.append(msg)
        t4 = time.perf_counter_ns()
        s = _stamps
        if "t3" in s:  # a call that ran inline has no hand-back
            segs["before+handoff"].append((s["t1"] - t0) / 1e3)
            segs["engine"].append((s["t2"] - s["t1"]) / 1e3)
            segs["cpu"].append((s["c2"] - s["c1"]) / 1e3)
            segs["handback"].append((s["t3"] - s["t2"]) / 1e3)
            segs["after"].append((t4 - s["t3"]) / 1e3)
        segs["total"].append((t4 - t0) / 1e3)


async def _async_full(session: Any, segs: dict[str, list[float]]) -> None:
    _stamps.clear()
    _gc_spent[:] = [0, 0]
    t0 = time.perf_counter_ns()
    got = await session.history()
    t4 = time.perf_counter_ns()
    n = sum(len(m.text) for m in got)
    t5 = time.perf_counter_ns()
    del n
    s = _stamps
    if "t3" in s:
        segs["before+handoff"].append((s["t1"] - t0) / 1e3)
        segs["engine"].append((s["t2"] - s["t1"]) / 1e3)
        segs["handback"].append((s["t3"] - s["t2"]) / 1e3)
        segs["after"].append((t4 - s["t3"]) / 1e3)
    segs["total"].append((t4 - t0) / 1e3)
    segs["use"].append((t5 - t4) / 1e3)
    segs["gc"].append(_gc_spent[0] / 1e3)


async def _store_block(session: Any, count: int, segs: dict[str, list[float]]) -> None:
    """Await the async store's `append` itself: no session or compaction layer."""
    append, scope, sid = session._store.append, session._scope, session.id
    for i in range(count):
        msg = _message(i)
        t0 = time.perf_counter_ns()
        await append(scope, sid, [msg], HEAD, ANY)
        segs["total"].append((time.perf_counter_ns() - t0) / 1e3)


def _inline_block(session: Any, count: int, segs: dict[str, list[float]]) -> None:
    """The async store's engine called on this thread: the same file, no hop."""
    append, scope, sid = session._store.engine.append, session._scope, session.id
    for i in range(count):
        msg = _message(i)
        t0 = time.perf_counter_ns()
        append(scope, sid, [msg], HEAD, ANY)
        segs["total"].append((time.perf_counter_ns() - t0) / 1e3)
        segs["cpu"].append((_stamps["c2"] - _stamps["c1"]) / 1e3)


def _sync_block(session: Any, count: int, segs: dict[str, list[float]]) -> None:
    for i in range(count):
        msg = _message(i)
        _stamps.clear()
        t0 = time.perf_counter_ns()
        session.append(msg)
        t4 = time.perf_counter_ns()
        segs["engine"].append((_stamps["t2"] - _stamps["t1"]) / 1e3)
        segs["cpu"].append((_stamps["c2"] - _stamps["c1"]) / 1e3)
        segs["total"].append((t4 - t0) / 1e3)


def _sync_full(session: Any, segs: dict[str, list[float]]) -> None:
    _stamps.clear()
    _gc_spent[:] = [0, 0]
    t0 = time.perf_counter_ns()
    got = session.history()
    t4 = time.perf_counter_ns()
    n = sum(len(m.text) for m in got)
    t5 = time.perf_counter_ns()
    del n
    segs["engine"].append((_stamps["t2"] - _stamps["t1"]) / 1e3)
    segs["total"].append((t4 - t0) / 1e3)
    segs["use"].append((t5 - t4) / 1e3)
    segs["gc"].append(_gc_spent[0] / 1e3)


def _raw_block(raw: RawSqlite, count: int, segs: dict[str, list[float]]) -> None:
    for turn in conversation(raw.stored, count):
        t0 = time.perf_counter_ns()
        raw.append(turn)
        segs["total"].append((time.perf_counter_ns() - t0) / 1e3)
        raw.stored += 1


def _raw_full(raw: RawSqlite, segs: dict[str, list[float]]) -> None:
    _gc_spent[:] = [0, 0]
    t0 = time.perf_counter_ns()
    raw.full()
    segs["total"].append((time.perf_counter_ns() - t0) / 1e3)
    segs["gc"].append(_gc_spent[0] / 1e3)


def main() -> None:
    depth = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    reads = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    _runner.settle = _settle_stamped  # type: ignore[assignment]
    work = Path(tempfile.mkdtemp(prefix="probe-sqlite-"))
    loop = asyncio.new_event_loop()
    # Stamp the engine before the store binds its methods (it binds at open).
    sync = SessionManager(f"sqlite:///{work / 'sync.db'}")
    amgr = loop.run_until_complete(_open_async(f"sqlite:///{work / 'async.db'}"))
    _stamp_sync(sync)
    ssession = sync.create(name="probe")
    asession = loop.run_until_complete(amgr.create(name="probe"))
    raw = RawSqlite(work / "raw", depth)
    raw.open()
    for _ in range(depth // 1000):
        ssession.append_all([_message(i) for i in range(1000)])
        loop.run_until_complete(asession.append_all([_message(i) for i in range(1000)]))
        raw.fill(conversation(raw.stored, 1000))
        raw.stored += 1000
    gc.collect()
    gc.freeze()
    gc.callbacks.append(_on_gc)
    blocks: dict[str, Any] = {
        "async": lambda segs: loop.run_until_complete(_async_block(asession, count, segs)),
        "store": lambda segs: loop.run_until_complete(_store_block(asession, count, segs)),
        "inline": lambda segs: _inline_block(asession, count, segs),
        "sync": lambda segs: _sync_block(ssession, count, segs),
        "raw": lambda segs: _raw_block(raw, count, segs),
    }
    reading: dict[str, Any] = {
        "async": lambda segs: loop.run_until_complete(_async_full(asession, segs)),
        "sync": lambda segs: _sync_full(ssession, segs),
        "raw": lambda segs: _raw_full(raw, segs),
    }
    app, full = _rounds(blocks, reading, rounds, reads, random.Random(depth))
    print(f"depth {depth:,}, {rounds} rounds of {count} appends; load {os.getloadavg()[0]:.2f}")
    _report("append (µs, median per block, median of blocks)", app)
    _report("full read (µs)", full)
    loop.run_until_complete(amgr.close())
    sync.close()
    raw.close()
    loop.close()


Blocks = dict[str, list[dict[str, list[float]]]]


def _rounds(
    blocks: dict[str, Any], reading: dict[str, Any], rounds: int, reads: int, order: random.Random
) -> tuple[Blocks, Blocks]:
    """Run every cell's block of appends, then its full reads, in a new order each round."""
    app: Blocks = {c: [] for c in blocks}
    full: Blocks = {c: [] for c in blocks}
    for _ in range(rounds):
        for cell in order.sample(list(blocks), len(blocks)):
            gc.collect()
            os.sync()
            segs: dict[str, list[float]] = {k: [] for k in _SEGMENTS}
            blocks[cell](segs)
            app[cell].append({k: v for k, v in segs.items() if v})
            gc.collect()
            fsegs: dict[str, list[float]] = {k: [] for k in _SEGMENTS}
            for _ in range(reads if cell in reading else 0):
                reading[cell](fsegs)
            full[cell].append({k: v for k, v in fsegs.items() if v})
    return app, full


_SEGMENTS = ("before+handoff", "engine", "cpu", "handback", "after", "total", "use", "gc")


def _report(title: str, data: Blocks) -> None:
    print(title)
    raw_total = (
        statistics.median(statistics.median(b["total"]) for b in data["raw"] if "total" in b)
        if any("total" in b for b in data["raw"])
        else 1.0
    )
    for cell, every in data.items():
        blocks = [b for b in every if "total" in b]
        if not blocks:
            continue
        parts = []
        for seg in _SEGMENTS:
            if all(seg in b for b in blocks):
                value = statistics.median(statistics.median(b[seg]) for b in blocks)
                parts.append(f"{seg} {value:9.1f}")
        total = statistics.median(statistics.median(b["total"]) for b in blocks)
        print(f"  {cell:6} " + "  ".join(parts) + f"   raw/this {100 * raw_total / total:4.0f}%")


async def _open_async(url: str) -> AsyncSessionManager:
    from sessionary.stores import sqlite as sqlite_module

    cls = sqlite_module.SQLiteEngine
    original = cls.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.append = _stamped(self.append)
        self.get_path = _stamped(self.get_path)

    cls.__init__ = init  # type: ignore[method-assign]
    try:
        return AsyncSessionManager(url)
    finally:
        cls.__init__ = original  # type: ignore[method-assign]


def _stamp_sync(manager: SessionManager) -> None:
    store = manager.store
    engine = getattr(store, "engine", None)
    target = engine if engine is not None else store
    for name in ("append", "get_path"):
        stamped = _stamped(getattr(target, name))
        setattr(target, name, stamped)
        setattr(store, name, stamped)


if __name__ == "__main__":
    main()
