"""Peak memory of `sessionary import` as the export grows: it should stay flat.

Writes two exports of the same shape (sessions of 100 messages, about 1 kB each), one
about a tenth of the size of the other (default: ~8 MB and ~80 MB), imports each into a
fresh SQLite file with the real command (`python -m sessionary import FILE`, one process
per run) and reads the process's peak resident set size from the kernel (`wait4`). For
scale it also measures the interpreter with the command line loaded and doing nothing,
and a process that only parses the large file into a list of records, which is what an
import that reads the whole file first holds. Prints a Markdown section.

    .venv/bin/python bench/import_rss.py [--megabytes 80]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

MESSAGES = 100
TEXT = "The build on main fails because setup.py lacks libfoo; " * 18  # ~1 kB


def write_export(path: Path, megabytes: float) -> tuple[int, int]:
    """Write an export of about `megabytes` MB; return its sessions and messages."""
    sessions = 0
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with path.open("w", encoding="utf-8") as out:
        while out.tell() < megabytes * 1e6:
            sid = f"s{sessions:06d}"
            ids = [f"{sid}-m{n:03d}" for n in range(MESSAGES)]
            session = {"id": sid, "name": f"session {sessions}", "head_id": ids[-1]}
            out.write(json.dumps({"type": "session", "session": session, "state": {}}) + "\n")
            for n, mid in enumerate(ids):
                message = {
                    "id": mid,
                    "role": "user" if n % 2 == 0 else "assistant",
                    "parts": [{"type": "text", "text": f"{n}: {TEXT}"}],
                    "created_at": (start + timedelta(seconds=n)).isoformat(),
                    "parent_id": ids[n - 1] if n else None,
                }
                record = {"type": "message", "session_id": sid, "message": message}
                out.write(json.dumps(record) + "\n")
            sessions += 1
    return sessions, sessions * MESSAGES


def peak_rss(command: list[str]) -> tuple[float, float]:
    """Run `command`; return its peak resident set size in MB and its wall time in s."""
    began = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - began
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"{command} failed: {child.stderr.read() if child.stderr else ''}")
    if child.stderr is not None:
        child.stderr.close()
    return usage.ru_maxrss / 1024, elapsed  # Linux reports kilobytes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=80.0)
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        idle, _ = peak_rss([sys.executable, "-c", "import sessionary.cli"])
        for megabytes in (args.megabytes / 10, args.megabytes):
            export = work / f"export-{megabytes:g}.jsonl"
            sessions, messages = write_export(export, megabytes)
            db = work / f"import-{megabytes:g}.db"
            command = [sys.executable, "-m", "sessionary", "--db", str(db), "import", str(export)]
            rss, seconds = peak_rss(command)
            rows.append((export.stat().st_size / 1e6, sessions, messages, rss, seconds))
        whole = (
            "import json, sys, sessionary.cli; rows = [json.loads(x) for x in open(sys.argv[1])]"
        )
        held, _ = peak_rss([sys.executable, "-c", whole, str(export)])
    print(
        "Peak resident memory of `python -m sessionary import FILE` (one process per run, "
        "read with `wait4`), each into a fresh SQLite file:\n"
    )
    print("| export | sessions | messages | import time | peak RSS |")
    print("|---:|---:|---:|---:|---:|")
    for size, sessions, messages, rss, seconds in rows:
        print(
            f"| {size:,.1f} MB | {sessions:,} | {messages:,} | {seconds:,.1f} s | {rss:,.1f} MB |"
        )
    print(
        f"\nFor scale: the interpreter with the command line imported peaks at {idle:,.1f} MB; "
        f"parsing the {rows[-1][0]:,.0f} MB file into a list of records (what an import that "
        f"reads the whole file first holds) peaks at {held:,.1f} MB."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
