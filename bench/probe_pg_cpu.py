"""What one PostgreSQL append costs, per shape: client CPU, server CPU, statements, retries.

    python bench/probe_pg_cpu.py [seconds per block] [rounds] [shapes]

Builds the server benchmark's PostgreSQL cells (`bench.srv_sql.Postgres`: 8 threads, each
with its own writer) for the shapes asked (default `shared,distinct`; also `single`),
sessionary's and the raw driver's, and runs their blocks interleaved. Per cell it prints
the rate, its share of raw's with the same shape, and per append: the client's CPU (this
process, `time.process_time`), the server's CPU (the backends of this process's
connections, `utime + stime` from `/proc/<pid>/stat`: the server must run on this
machine), and for sessionary the statements `run_alone` sent (the early unlock's flush
counted apart) and how many appends after a remembered head found it moved.

Server: `$SESSIONARY_TEST_POSTGRES` (default `postgresql://postgres@127.0.0.1:5432/test`).
"""

from __future__ import annotations

import collections
import os
import random
import sys
import threading
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ["PGAPPNAME"] = f"probe_pg_cpu_{os.getpid()}"  # every connection is named so


def _app() -> str:
    """The name this process's connections carry: `Postgres.setup` renames them."""
    return os.environ["PGAPPNAME"]


import psycopg  # noqa: E402

from bench.srv_common import POSTGRES_URL, WRITERS, Cell, run_block  # noqa: E402
from bench.srv_sql import Postgres  # noqa: E402
from sessionary.stores import postgres  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
SAMPLE = (
    "SELECT coalesce(wait_event_type, 'CPU') || ':' || coalesce(wait_event, '') "
    "FROM pg_stat_activity WHERE state = 'active' AND application_name = %s "
    "AND pid <> pg_backend_pid()"
)
COUNTS: collections.Counter[str] = collections.Counter()


def _count_statements() -> None:
    run_alone = postgres.PostgresDriver.run_alone

    def counted(self: Any, sql: str, params: Any, unlock_early: bool = False) -> Any:
        out = run_alone(self, sql, params, unlock_early)
        kind = sql.lstrip()[:12]
        COUNTS["calls"] += 1
        COUNTS["unlocked"] += unlock_early
        if kind.startswith("WITH moved"):
            COUNTS["after-head"] += 1
            COUNTS["head moved"] += out[1] == 0
        elif kind.startswith("WITH s"):
            COUNTS["locking"] += 1
        return out

    postgres.PostgresDriver.run_alone = counted  # type: ignore[method-assign]


def _sample(stop: threading.Event, events: collections.Counter[str]) -> None:
    """Count this process's active backends' wait events until `stop`."""
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        while not stop.is_set():
            for (event,) in conn.execute(SAMPLE, (_app(),)):
                events[event] += 1
            events[""] += 1
            time.sleep(0.002)


def _wal(admin: psycopg.Connection[Any]) -> collections.Counter[str]:
    """The server's WAL counters (the whole server's: other clients' writes count too)."""
    row = admin.execute("SELECT wal_bytes, wal_sync FROM pg_stat_wal").fetchone()
    return (
        collections.Counter({"wal bytes": int(row[0]), "wal syncs": int(row[1])})
        if row
        else collections.Counter()
    )


def _server_ticks(admin: psycopg.Connection[Any]) -> dict[int, int]:
    pids = [
        pid
        for (pid,) in admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s "
            "AND pid <> pg_backend_pid()",
            (_app(),),
        )
    ]
    ticks = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks[pid] = int(fields[11]) + int(fields[12])  # utime, stime
    return ticks


def main(seconds: float, rounds: int, shapes: list[str]) -> None:
    _count_statements()
    backend = Postgres()
    backend.setup()
    admin = psycopg.connect(POSTGRES_URL, autocommit=True)
    cells: list[Cell] = []
    try:
        for key, label, raw in backend.libs:
            for mode in shapes:
                writers = 1 if mode == "single" else WRITERS
                cell = Cell("postgres", key, label, writers, mode, raw)
                shared = backend.new_session(key)
                for _ in range(writers):
                    session = backend.new_session(key) if mode == "distinct" else shared
                    cell.handles.append(backend.writer(key, session))
                run_block(cell, 0.2)  # warm: pools filled, statements prepared
                cell.counts.clear(), cell.walls.clear(), cell.cpus.clear()
                cells.append(cell)
        server: dict[int, float] = collections.defaultdict(float)
        counted: dict[int, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        waits: dict[int, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        order = random.Random(1)
        for _ in range(rounds):
            for cell in order.sample(cells, len(cells)):
                before, counts, wal = _server_ticks(admin), COUNTS.copy(), _wal(admin)
                stop = threading.Event()
                sampler = threading.Thread(target=_sample, args=(stop, waits[id(cell)]))
                sampler.start()
                run_block(cell, seconds)
                stop.set()
                sampler.join()
                after = _server_ticks(admin)
                spent = sum(t - before.get(pid, t) for pid, t in after.items())
                server[id(cell)] += spent / TICK
                counted[id(cell)] += COUNTS - counts
                counted[id(cell)] += _wal(admin) - wal
        for mode in shapes:
            raw = next(c for c in cells if c.is_raw and c.mode == mode)
            for cell in (c for c in cells if c.mode == mode):
                _report(cell, raw, server[id(cell)], counted[id(cell)], waits[id(cell)])
    finally:
        admin.close()
        backend.close_all()
        backend.teardown()


def _report(
    cell: Cell,
    raw: Cell,
    server: float,
    counts: collections.Counter[str],
    waits: collections.Counter[str],
) -> None:
    done = sum(cell.counts) or 1
    rate, base = cell.rate or 0.0, raw.rate or 1.0
    line = (
        f"{cell.mode:8} {cell.label:18} {rate:7,.0f}/s {100 * rate / base:4.0f}%  "
        f"client {1e6 * sum(cell.cpus) / done:4.0f} us  server {1e6 * server / done:4.0f} us"
    )
    if not cell.is_raw:
        per = {name: counts[name] / done for name in ("calls", "unlocked", "head moved")}
        line += "  " + "  ".join(f"{name} {value:.2f}" for name, value in per.items())
    print(line + (f"  {cell.error}" if cell.error else ""))
    syncs = counts["wal syncs"] or 1
    print(
        f"{'':9}WAL {counts['wal bytes'] / done:,.0f} bytes per append, "
        f"{done / syncs:.1f} appends per WAL sync (the server's whole WAL)"
    )
    samples = waits.pop("", 0) or 1
    states = ", ".join(f"{event} {n / samples:.2f}" for event, n in waits.most_common(5))
    print(f"{'':9}backends per sample: {sum(waits.values()) / samples:.2f} ({states})")


if __name__ == "__main__":
    main(
        float(sys.argv[1]) if len(sys.argv) > 1 else 1.5,
        int(sys.argv[2]) if len(sys.argv) > 2 else 3,
        sys.argv[3].split(",") if len(sys.argv) > 3 else ["shared", "distinct"],
    )
