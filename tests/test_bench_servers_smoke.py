"""The server benchmark still runs end to end (a smoke run: no timing is asserted here).

Each server the benchmark needs must be reachable; an unreachable one skips the test with the
reason shown, or fails it when SESSIONARY_REQUIRE_BACKENDS=1 (as in tests/conftest.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import servers  # noqa: E402

REQUIRE_BACKENDS = os.environ.get("SESSIONARY_REQUIRE_BACKENDS", "") not in ("", "0")


def backend_unavailable(reason: str) -> None:
    """Skip for a missing server locally; fail in CI, where every backend must run."""
    if REQUIRE_BACKENDS:
        pytest.fail(f"backend required but unavailable: {reason}")
    pytest.skip(reason)


@pytest.mark.slow
def test_quick_server_benchmark_writes_a_report(tmp_path: Path) -> None:
    problems = [
        f"{name}: {problem}"
        for name, cls in servers.BACKENDS.items()
        if (problem := cls().problem()) is not None
    ]
    if problems:
        backend_unavailable("; ".join(problems))
    out = tmp_path / "report.md"
    env = {**os.environ, "SESSIONARY_BENCH_COMMAND": "smoke"}
    result = subprocess.run(
        [sys.executable, "bench/servers.py", "--quick", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    report = out.read_text()
    for title in ("## PostgreSQL", "## MariaDB / MySQL", "## Redis"):
        assert title in report
    assert report.count("### Append throughput") == 3
    assert report.count("### `history(limit=20)`") == 3
    assert "synchronous_commit=" in report and "innodb_flush_log_at_trx_commit=" in report
    assert "raw psycopg" in report and "raw PyMySQL" in report and "RPUSH" in report
    assert "snapshot_frequency=25" in report and "roll-ups off" in report
    assert "sessionary redis:// store (snapshot_frequency=25)" in report
    assert "sessionary redis:// store (roll-ups off)" in report
    assert "IncrementalSessionManager (snapshot_frequency=25)" in report
    assert "8 writers, one shared session" in report
    verdicts = [line for line in report.splitlines() if line.startswith("- **")]
    # Per sessionary library (PostgreSQL, MariaDB, four on Redis): one per writer shape and
    # one for `history(limit=20)`.
    assert len(verdicts) == 6 * 4 and all("PASS" in v or "FAIL" in v for v in verdicts)
    assert sum("history(limit=20)" in v for v in verdicts) == 6
    assert "dropped" in report and "FAILED" not in report
