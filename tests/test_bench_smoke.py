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
