"""Memory and time of reading one long session: whole, and its latest 20 messages.

Builds one SQLite file holding a session of `--depth` messages (default 100,000; the
benchmark conversation of `bench/workload.py`) through sessionary, and a raw sqlite3
table with the same turns. Then, each in a fresh process (so nothing read before is
still cached), it opens the store and measures the resident set size (`/proc/self/statm`)
before and after one read, while the result is still held, and the read's wall time:

- sessionary `history(limit=20)`, and `history()` (the whole session as `Message`s);
- raw sqlite3 selecting the same rows and decoding each one's JSON into a dict.

Each case runs `--runs` times (default 3) in turn; the table shows medians. Prints a
Markdown section.

    .venv/bin/python bench/read_rss.py [--depth 100000] [--runs 3]
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
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable from the repo root
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.workload import conversation

BATCH = 1000

_CHILD = r"""
import json, os, sqlite3, sys, time
page = os.sysconf("SC_PAGE_SIZE")
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * page
case, path = sys.argv[1], sys.argv[2]
opened = 0
if case == "raw":
    conn = sqlite3.connect(path)
    before = rss()
    start = time.perf_counter()
    rows = conn.execute("SELECT data FROM raw_messages ORDER BY seq").fetchall()
    held = [json.loads(data) for (data,) in rows]
    del rows
    took = time.perf_counter() - start
else:
    from sessionary import SessionManager
    imported = rss()
    manager = SessionManager(f"sqlite:///{path}")
    session = manager.session(sys.argv[3])
    session.history(limit=1)  # the connection, its caches and the code paths warmed up
    before = rss()
    opened = before - imported
    start = time.perf_counter()
    held = session.history(limit=20 if case == "recent" else None)
    took = time.perf_counter() - start
after = rss()
print(json.dumps({"count": len(held), "before": before, "after": after, "seconds": took,
                  "opened": opened}))
"""


def _message(role: str, text: str) -> Any:
    from sessionary import Message

    return Message.user(text) if role == "user" else Message.assistant(text)


def build(path: Path, depth: int) -> str:
    """Write the session (sessionary) and the raw table into `path`; return the session id."""
    import sqlite3

    from sessionary import SessionManager

    with SessionManager(f"sqlite:///{path}") as manager:
        session = manager.create(name="read-rss")
        for start in range(0, depth, BATCH):
            turns = conversation(start, min(BATCH, depth - start))
            session.append_all([_message(turn.role, turn.text) for turn in turns])
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
    return session_id


def measure(case: str, path: Path, session_id: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, case, str(path), session_id],
        check=True,
        capture_output=True,
        text=True,
    )
    found: dict[str, float] = json.loads(done.stdout)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    cases = {
        "recent": "sessionary `history(limit=20)`",
        "whole": "sessionary `history()`",
        "raw": "raw sqlite3, rows decoded to dicts",
    }
    results: dict[str, list[dict[str, float]]] = {case: [] for case in cases}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "read-rss.db"
        began = time.perf_counter()
        session_id = build(path, args.depth)
        built = time.perf_counter() - began
        os.sync()
        for _ in range(args.runs):
            for case in cases:
                results[case].append(measure(case, path, session_id))
    print(
        f"One SQLite session of {args.depth:,} messages (built in {built:,.0f} s), read in a "
        f"fresh process per run ({args.runs} runs each, medians): resident memory before and "
        "after the read, with the result still held, and the read's wall time.\n"
    )
    print("| read | messages returned | RSS growth | per message | read time | whole read vs raw |")
    print("|---|---:|---:|---:|---:|---:|")
    raw_seconds = statistics.median(r["seconds"] for r in results["raw"])
    for case, label in cases.items():
        runs = results[case]
        growth = statistics.median(r["after"] - r["before"] for r in runs)
        seconds = statistics.median(r["seconds"] for r in runs)
        count = int(runs[0]["count"])
        per = f"{growth / count:,.0f} B" if count else "-"
        ratio = f"{raw_seconds / seconds:.2f}x raw's speed" if case == "whole" else "—"
        print(
            f"| {label} | {count:,} | {growth / 1e6:,.2f} MB | {per} | "
            f"{seconds * 1e3:,.1f} ms | {ratio} |"
        )
    opened = statistics.median(r["opened"] for r in results["recent"] + results["whole"])
    print(
        f"\nOpening the store and the session (and reading one message) adds "
        f"{opened / 1e6:,.2f} MB to a process that has imported sessionary."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
