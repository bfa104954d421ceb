"""Benchmark sessionary's core against raw sqlite3 and two peers; write the Markdown report.

    python bench/run.py --out BENCHMARKS.md        # the full run (scripts/bench does this)
    python bench/run.py --quick --no-peers         # smoke run: depths 100 and 1,000, ~20 s

Peers are imported only if installed; scripts/bench installs them into .venv-bench.
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` importable from the repo root
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import facts, read_rss
from bench.ours import SessionaryAsync, SessionaryNormal, SessionarySync
from bench.peers import AgentsSession, LangGraphSaver
from bench.raw import RawNormal, RawOnWorker, RawSqlite
from bench.report import render
from bench.runner import Budget, Plan, Result, run
from bench.subject import Subject
from bench.targets import Table, evaluate

REPO = Path(__file__).resolve().parent.parent

LIBRARIES: tuple[type[Subject], ...] = (
    SessionarySync,
    SessionaryAsync,
    RawSqlite,
    RawOnWorker,
    AgentsSession,
    LangGraphSaver,
    SessionaryNormal,
    RawNormal,
)
PEERS = {"agents", "langgraph"}

# What must import for each library; a failure makes its column "unavailable".
REQUIREMENTS = {
    "sync": ("sessionary", "SessionManager"),
    "async": ("sessionary", "AsyncSessionManager"),
    "normal": ("sessionary", "SessionManager"),
    "raw": ("sqlite3", "connect"),
    "rawworker": ("sessionary.stores._runner", "AsyncRunner"),
    "rawnormal": ("sqlite3", "connect"),
    "agents": ("agents", "SQLiteSession"),
    "langgraph": ("langgraph.checkpoint.sqlite", "SqliteSaver"),
}

FULL = Plan(depths=(100, 10_000, 100_000), appends=500, recent_reads=1_000, budget=Budget())
QUICK = Plan(
    depths=(100, 1_000),
    appends=100,
    recent_reads=200,
    budget=Budget(build=10, append=4, recent=2, full=3),
)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    plan = _plan(args)
    libraries = [cls for cls in LIBRARIES if _selected(cls.key, args)]
    unavailable = _unavailable(libraries)
    workdir = Path(args.workdir or REPO / "bench" / "results" / f"run-{int(time.time())}")
    started = datetime.now(UTC)
    load_before = facts.load()
    try:
        results = run(plan, libraries, unavailable, workdir, _log)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    memory = None if args.no_memory else _memory(plan, args.quick)
    machine = facts.collect(_command(argv), started, load_before, workdir)
    report = render(results, plan, machine, _notes(results), memory)
    _emit(report, args.out, results)
    return 1 if any(r.status == "failed" for r in results) else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="depths 100 and 1,000, few samples")
    parser.add_argument("--no-peers", action="store_true", help="skip openai-agents and LangGraph")
    parser.add_argument("--only", help="comma-separated library keys: " + ", ".join(REQUIREMENTS))
    parser.add_argument("--depths", help="comma-separated depths, overriding the plan's")
    parser.add_argument("--appends", type=int, help="single appends timed per library and depth")
    parser.add_argument(
        "--no-memory", action="store_true", help="skip the memory tables (bench/read_rss.py)"
    )
    parser.add_argument("--out", help="write the Markdown report here (default: stdout)")
    parser.add_argument("--workdir", help="where the database files go (default: bench/results)")
    parser.add_argument("--keep", action="store_true", help="keep the database files")
    return parser


def _plan(args: argparse.Namespace) -> Plan:
    plan = QUICK if args.quick else FULL
    if args.depths:
        depths = tuple(sorted(int(d.replace("_", "")) for d in args.depths.split(",")))
        plan = replace(plan, depths=depths)
    if args.appends:
        plan = replace(plan, appends=args.appends)
    return plan


def _memory(plan: Plan, quick: bool) -> read_rss.Memory:
    """Memory of reads and open sessions at the plan's deepest depth (fresh processes)."""
    depth = plan.depths[-1]
    _log(f"measuring memory at {depth:,} ...")
    return read_rss.measure(
        depth, runs=1 if quick else 3, sessions=100 if quick else 1000, log=_log
    )


def _selected(key: str, args: argparse.Namespace) -> bool:
    if args.only:
        return key in args.only.split(",")
    return not (args.no_peers and key in PEERS)


def _unavailable(libraries: list[type[Subject]]) -> dict[str, str]:
    missing = {}
    for cls in libraries:
        module, name = REQUIREMENTS[cls.key]
        try:
            getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            hint = "; scripts/bench installs it into .venv-bench" if cls.key in PEERS else ""
            missing[cls.key] = f"{type(exc).__name__}: {exc}{hint}"
    return missing


def _command(argv: list[str] | None) -> str:
    words = sys.argv[1:] if argv is None else argv
    return " ".join(["python bench/run.py", *words])


def _notes(results: list[Result]) -> list[str]:
    notes = [facts.durability_note(results)]
    keys = {r.key for r in results}
    if "agents" in keys:
        notes.append(facts.AGENTS_NOTE)
    if "langgraph" in keys:
        notes.append(facts.LANGGRAPH_NOTE)
        notes.extend(facts.langgraph_storage_note(results))
    notes.extend([facts.READS_NOTE, facts.ASYNC_NOTE])
    return notes


def _emit(report: str, out: str | None, results: list[Result]) -> None:
    if out:
        Path(out).write_text(report, encoding="utf-8")
        _log(f"wrote {out}")
    else:
        sys.stdout.write(report)
    for outcome in evaluate(Table(results)):
        _log(outcome.line().replace("**", ""))


def _log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
