"""Memory and time of reading one long session, and memory per open session, against raw.

Builds one SQLite file holding a session of `--depth` messages (default 100,000; the
benchmark conversation of `bench/workload.py`) through sessionary, a raw sqlite3 table
with the same turns, and `--sessions` short sessions (default 1,000). Then, each in a
fresh process (so nothing read before is still cached), it opens the store and measures
the resident set size (`/proc/self/statm`) before and after the work, while its result
is still held, and the work's wall time:

- sessionary `history(limit=20)` and `history()` (the whole session as `Message`s);
- raw sqlite3 selecting the same rows (the newest 20, or all) and decoding each one's
  JSON into a dict: the ratios compare with these;
- sessionary holding a handle on each short session after appending one message to it:
  the memory an application pays per session it keeps open and writes to.

Each case runs `--runs` times (default 3) in turn; the tables show medians. `bench/run.py`
puts the tables in the generated report; run alone, this prints them.

    .venv/bin/python bench/read_rss.py [--depth 100000] [--runs 3] [--sessions 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable from the repo root
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.workload import conversation

__all__ = ["Memory", "measure", "render"]

BATCH = 1000

_CHILD = r"""
import json, os, sqlite3, sys, time
page = os.sysconf("SC_PAGE_SIZE")
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * page
case, path = sys.argv[1], sys.argv[2]
opened = 0
if case.startswith("raw"):
    conn = sqlite3.connect(path)
    conn.execute("SELECT data FROM raw_messages ORDER BY seq DESC LIMIT 1").fetchall()
    before = rss()
    start = time.perf_counter()
    if case == "raw-recent":
        rows = conn.execute("SELECT data FROM raw_messages ORDER BY seq DESC LIMIT 20").fetchall()
        rows.reverse()
    else:
        rows = conn.execute("SELECT data FROM raw_messages ORDER BY seq").fetchall()
    held = [json.loads(data) for (data,) in rows]
    del rows
    took = time.perf_counter() - start
else:
    from sessionary import Message, SessionManager
    imported = rss()
    manager = SessionManager(f"sqlite:///{path}?durability=normal")
    session = manager.session(sys.argv[3])
    session.history(limit=1)  # the connection, its caches and the code paths warmed up
    if case == "sessions":
        ids = json.loads(sys.argv[4])
        manager.session(ids[0]).append(Message.user("warm-up"))
        ids = ids[1:]
    before = rss()
    opened = before - imported
    start = time.perf_counter()
    if case == "sessions":
        held = []
        for sid in ids:
            handle = manager.session(sid)
            handle.append(Message.user("one more turn"))
            held.append(handle)
    else:
        held = session.history(limit=20 if case == "recent" else None)
    took = time.perf_counter() - start
after = rss()
print(json.dumps({"count": len(held), "before": before, "after": after, "seconds": took,
                  "opened": opened}))
"""

READS = {
    "recent": ("`history(limit=20)`", "raw-recent"),
    "whole": ("`history()`, the whole session", "raw-whole"),
}
"""sessionary's read cases: their label and the raw case they are compared with."""


@dataclass(frozen=True)
class Case:
    """One case's medians over its runs."""

    count: int  # messages returned, or sessions held
    growth: float  # bytes of RSS growth, the result still held
    seconds: float

    @property
    def per_item(self) -> float:
        return self.growth / self.count if self.count else 0.0


@dataclass(frozen=True)
class Memory:
    """What `measure` found."""

    depth: int
    runs: int
    built_seconds: float
    cases: dict[str, Case]
    opened: float  # bytes opening the store and a session adds to a process


def _message(role: str, text: str) -> Any:
    from sessionary import Message

    return Message.user(text) if role == "user" else Message.assistant(text)


def build(path: Path, depth: int, sessions: int) -> tuple[str, list[str]]:
    """Write the long session, the short ones (sessionary) and the raw table into `path`.

    Returns the long session's id and the short sessions' ids.
    """
    import sqlite3

    from sessionary import SessionManager

    with SessionManager(f"sqlite:///{path}?durability=normal") as manager:
        session = manager.create(name="read-rss")
        for start in range(0, depth, BATCH):
            turns = conversation(start, min(BATCH, depth - start))
            session.append_all([_message(turn.role, turn.text) for turn in turns])
        short = []
        for turn in conversation(0, sessions):
            one = manager.create(name="open")
            one.append(_message(turn.role, turn.text))
            short.append(one.id)
        session_id = session.id
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE raw_messages (seq INTEGER PRIMARY KEY, role TEXT, data TEXT)")
        for start in range(0, depth, BATCH):
            turns = conversation(start, min(BATCH, depth - start))
            conn.executemany(
                "INSERT INTO raw_messages (role, data) VALUES (?, ?)",
                [(t.role, json.dumps({"role": t.role, "content": t.text})) for t in turns],
            )
    conn.close()
    return session_id, short


def _run_child(case: str, path: Path, session_id: str, short: list[str]) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, case, str(path), session_id, json.dumps(short)],
        check=True,
        capture_output=True,
        text=True,
    )
    found: dict[str, float] = json.loads(done.stdout)
    return found


def measure(
    depth: int = 100_000,
    runs: int = 3,
    sessions: int = 1000,
    log: Callable[[str], None] | None = None,
) -> Memory:
    """Build the file in a temporary folder, run every case `runs` times in turn."""
    cases = ["recent", "raw-recent", "whole", "raw-whole", "sessions"]
    results: dict[str, list[dict[str, float]]] = {case: [] for case in cases}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "read-rss.db"
        began = time.perf_counter()
        session_id, short = build(path, depth, sessions + 1)
        built = time.perf_counter() - began
        if log:
            log(f"memory: built {depth:,} messages and {sessions:,} sessions in {built:.1f} s")
        os.sync()
        for _ in range(runs):
            for case in cases:
                results[case].append(_run_child(case, path, session_id, short))
    medians = {
        case: Case(
            count=int(found[0]["count"]),
            growth=statistics.median(r["after"] - r["before"] for r in found),
            seconds=statistics.median(r["seconds"] for r in found),
        )
        for case, found in results.items()
    }
    opened = statistics.median(r["opened"] for r in results["recent"] + results["whole"])
    return Memory(depth, runs, built, medians, opened)


def render(memory: Memory) -> Iterator[str]:
    """The report's section body: the read table, the open-session line, how measured."""
    yield (
        f"One SQLite session of {memory.depth:,} messages (built in "
        f"{memory.built_seconds:,.0f} s), each read in a fresh process ({_runs(memory.runs)}"
        "): resident memory (RSS) before and after the read, with the result still "
        "held, and the read's wall time. Raw sqlite3 reads the same turns from its own table "
        "and decodes each row's JSON into a dict. `vs raw`: raw's figure over ours (above "
        "1.00x, we take less memory or less time; `—` where RSS, which grows in whole pages, "
        "did not grow)."
    )
    yield ""
    yield (
        "| read | messages | RSS growth | per message | raw RSS growth | memory vs raw "
        "| read time | raw read time | speed vs raw |"
    )
    yield "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    for case, (label, raw_case) in READS.items():
        ours, raw = memory.cases[case], memory.cases[raw_case]
        yield (
            f"| {label} | {ours.count:,} | {_mb(ours.growth)} | {ours.per_item:,.0f} B "
            f"| {_mb(raw.growth)} | {_times(raw.growth, ours.growth)} "
            f"| {_ms(ours.seconds)} | {_ms(raw.seconds)} | {_times(raw.seconds, ours.seconds)} |"
        )
    held = memory.cases["sessions"]
    yield ""
    yield (
        f"Open sessions: holding {held.count:,} session handles, each after appending one "
        f"message to its session (so the store also keeps its head), grows RSS by "
        f"{_mb(held.growth)}: {held.per_item / 1e3:,.1f} kB per open session. Opening the "
        f"store and a session (and reading one message) adds {_mb(memory.opened)} to a "
        "process that has imported sessionary."
    )


def _runs(runs: int) -> str:
    return "one run" if runs == 1 else f"{runs} runs, medians"


def _mb(value: float) -> str:
    return f"{value / 1e6:,.2f} MB"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.1f} ms"


def _times(raw: float, ours: float) -> str:
    # RSS grows in whole pages: a read of 20 messages may show none at all.
    return f"{raw / ours:.2f}x" if ours > 0 and raw > 0 else "—"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=1000)
    args = parser.parse_args(argv)
    print("\n".join(render(measure(args.depth, args.runs, args.sessions))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
