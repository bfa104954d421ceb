"""The encryption benchmark still runs end to end (a smoke run: no timing is asserted here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_quick_crypto_benchmark_writes_a_report(tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    result = subprocess.run(
        [sys.executable, "-m", "bench.crypto", "--quick", "--backends", "sqlite",
         "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    report = out.read_text()
    assert "| backend | append plain /s | append encrypted /s |" in report
    row = next(line for line in report.splitlines() if line.startswith("| sqlite |"))
    assert "failed" not in row and row.count("%") == 2
