"""The reliability run still runs end to end and writes its report (a few trials only).

The trials themselves are the guarantee suites' (`tests/guarantees/_reliability.py`);
this checks the long-run script around them: its stores, its counts and its report.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import reliability  # noqa: E402


@pytest.mark.slow
@pytest.mark.redis
def test_reliability_run_writes_its_report(tmp_path: Path, redis_url: str) -> None:
    del redis_url  # only to skip (or fail in CI) when the Redis server is unreachable
    out = tmp_path / "RELIABILITY.md"
    args = ["--only", "sqlite-full,redis", "--sqlite-trials", "6", "--server-trials", "2"]
    code = reliability.main([*args, "--cancel-calls", "5", "--out", str(out)])
    report = out.read_text(encoding="utf-8")
    assert code == 0, report
    assert "| sqlite-full | 3 |" in report, report
    assert "| redis | 2 |" in report, report
    assert "| sqlite | 5 |" in report and "| redis | 5 |" in report, report
    assert "None: no acknowledged write lost." in report
