"""The benchmark still runs end to end (a smoke run: no timing is asserted here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_quick_benchmark_writes_a_report(tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    result = subprocess.run(
        [sys.executable, "bench/run.py", "--quick", "--no-peers", "--out", str(out),
         "--workdir", str(tmp_path / "work")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    report = out.read_text()
    assert "### Append one message" in report
    assert "sessionary (sync)" in report and "sessionary (async)" in report
    assert "raw sqlite3" in report
    assert "raw sqlite3 on a worker thread (async)" in report
    assert "awaited through the same worker thread, the ceiling" in report
    assert "### Memory: reading a long session, and per open session" in report
    assert "kB per open session" in report


@pytest.mark.slow
def test_read_memory_benchmark_reads_what_it_built() -> None:
    result = subprocess.run(
        [sys.executable, "bench/read_rss.py", "--depth", "1500", "--runs", "1", "--sessions", "50"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    rows = {line.split("|")[1].strip(): line for line in result.stdout.splitlines() if "|" in line}
    assert "| 20 |" in rows["`history(limit=20)`"]
    assert "| 1,500 |" in rows["`history()`, the whole session"]
    assert "holding 50 session handles" in result.stdout
