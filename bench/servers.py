"""Benchmark sessionary's server backends against each raw driver; write BENCHMARKS-servers.md.

    python bench/servers.py --out BENCHMARKS-servers.md   # the full run (~4 minutes)
    python bench/servers.py --quick                       # smoke run (~20 s), report to stdout

Per backend (PostgreSQL, MariaDB/MySQL, Redis), in one run and interleaved in rounds:

- append throughput with 1 writer, 8 writers on 8 distinct sessions, and 8 writers on one
  shared session: sessionary's sync API beside the raw driver doing the equivalent single
  insert (psycopg ``INSERT`` + ``COMMIT``, PyMySQL likewise, a Redis ``RPUSH``);
- ``history(limit=20)`` at depth 10,000 beside the raw ``SELECT … ORDER BY … LIMIT 20``
  (Redis: ``LRANGE -20 -1``);
- on MariaDB, the server's CPU per append of the append's pieces: its stored procedure run
  by 8 connections at once, whole and with one piece left out (``bench/probe_mysql_stmt.py``).

Each append cell also reports this process's CPU per append and, when the server runs on
this machine, the server's (from ``/proc``), and the rate those allow on this machine's cores;
a row that misses its target says in its verdict line where its time went.

Redis runs the ``redis://`` store (``SessionManager``) and ``IncrementalSessionManager``, each
with ``snapshot_frequency=25`` and with roll-ups disabled. Every schema, database and key
the run creates is removed at the end.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` importable from the repo root
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import facts
from bench.srv_common import (
    FULL,
    QUICK,
    SHAPES,
    Backend,
    Cell,
    Outcome,
    Plan,
    ReadCell,
    add_server_cpu,
    run_block,
    run_reads,
    server_cpu,
    versions,
)
from bench.srv_redis import Redis
from bench.srv_report import THREADS_NOTE, render, settings_line, verdicts
from bench.srv_sql import MySQL, Postgres

BACKENDS: dict[str, type[Backend]] = {"postgres": Postgres, "mysql": MySQL, "redis": Redis}


# --------------------------------------------------------------------------- the run


def measure(backend: Backend, plan: Plan, log: Callable[[str], None]) -> Outcome:
    out = Outcome(backend)
    problem = backend.problem()
    if problem is not None:
        out.status, out.reason = "unavailable", problem
        log(f"{backend.title}: unavailable: {problem}")
        return out
    try:
        backend.setup()
        backend.locate_server()
        out.settings = backend.settings()
        out.cells = _append_cells(backend)
        _warm(out.cells)
        _time_appends(backend, plan, out.cells, log)
        log(f"{backend.title}: building depth {plan.depth:,} for history reads")
        out.reads = [
            ReadCell(backend.name, key, label, raw, backend.reader(key, plan.depth))
            for key, label, raw in backend.libs
        ]
        _time_reads(backend, plan, out.reads)
        log(f"{backend.title}: the server's CPU of an append's pieces")
        try:
            out.pieces = backend.pieces(plan)
        except Exception as exc:  # an extra table: its failure fails no row (MySQL 8, ...)
            log(f"{backend.title}: no piece table: {type(exc).__name__}: {exc}")
            traceback.print_exc(file=sys.stderr)
    except Exception as exc:
        out.status, out.reason = "failed", f"{type(exc).__name__}: {exc}"
        log(f"{backend.title}: FAILED: {out.reason}")
        traceback.print_exc(file=sys.stderr)
    finally:
        backend.close_all()
        try:
            backend.teardown()
            out.cleaned = f"`{backend.tag}` dropped"
        except Exception as exc:
            out.cleaned = f"cleanup of `{backend.tag}` FAILED: {type(exc).__name__}: {exc}"
            log(out.cleaned)
    return out


def _warm(cells: list[Cell]) -> None:
    """One untimed append per writer, so that no timed block opens a connection.

    The raw drivers connect when their writer is made; a sessionary manager connects on its
    first call (a PyMySQL connection alone builds a TLS context: ~65 ms of CPU).
    """
    for cell in cells:
        try:
            for writer in cell.handles:
                writer.append()
        except Exception as exc:
            cell.error = f"{type(exc).__name__}: {exc}"
            traceback.print_exc(file=sys.stderr)


def _time_appends(
    backend: Backend, plan: Plan, cells: list[Cell], log: Callable[[str], None]
) -> None:
    order = random.Random(f"{backend.name}-append")
    for round_no in range(plan.rounds):
        log(f"{backend.title}: append round {round_no + 1}/{plan.rounds}")
        for cell in order.sample(cells, len(cells)):
            if cell.error:
                continue
            before = backend.counters()
            cpu_before = server_cpu(backend)
            run_block(cell, plan.block_seconds)
            add_server_cpu(cell, cpu_before, server_cpu(backend))
            for name, value in backend.counters().items():
                cell.events[name] = cell.events.get(name, 0) + value - before[name]


def _time_reads(backend: Backend, plan: Plan, reads: list[ReadCell]) -> None:
    order = random.Random(f"{backend.name}-recent")
    for _ in range(plan.read_rounds):
        for cell in order.sample(reads, len(reads)):
            if not cell.error and cell.spent < plan.read_budget:
                run_reads(cell, plan.read_block, plan.read_budget)


def _append_cells(backend: Backend) -> list[Cell]:
    cells = []
    for key, label, raw in backend.libs:
        for writers, mode in SHAPES:
            cell = Cell(backend.name, key, label, writers, mode, raw)
            shared = backend.new_session(key)
            for _ in range(writers):
                session = shared if mode != "distinct" else backend.new_session(key)
                cell.handles.append(backend.writer(key, session))
            cells.append(cell)
    return cells


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny depth and blocks (~20 s)")
    parser.add_argument("--only", help="comma-separated backends: " + ", ".join(BACKENDS))
    parser.add_argument("--out", help="write the Markdown report here (default: stdout)")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    names = args.only.split(",") if args.only else list(BACKENDS)
    started = datetime.now(UTC)
    load_before = facts.load()
    outcomes = [measure(BACKENDS[name](), plan, _log) for name in names]
    machine = facts.collect(_command(argv), started, load_before, Path.cwd())
    machine.pop("database files", None)
    machine.pop("SQLite", None)
    machine["packages"] = versions(("sessionary",))
    machine["servers"] = settings_line(outcomes)
    machine["client drivers"] = versions(("psycopg", "psycopg-pool", "PyMySQL", "redis"))
    report = render(outcomes, plan, machine, THREADS_NOTE)
    if args.out:
        Path(args.out).write_text(report, encoding="utf-8")
        _log(f"wrote {args.out}")
    else:
        sys.stdout.write(report)
    for line in verdicts(outcomes):
        _log(line.replace("**", ""))
    failed = any(o.status == "failed" or any(c.error for c in o.cells) for o in outcomes)
    return 1 if failed else 0


def _command(argv: list[str] | None) -> str:
    words = sys.argv[1:] if argv is None else argv
    return " ".join(["python bench/servers.py", *words])


def _log(message: str) -> None:
    print(f"[bench-servers {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
