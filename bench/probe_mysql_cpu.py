"""Where a MariaDB append's time goes: client and server CPU per append, beside raw PyMySQL.

    python bench/probe_mysql_cpu.py [seconds per block] [rounds] [shapes] [scripts|cursor]

(shapes: any of single,distinct,shared)

With `scripts`, each shape also runs sessionary with its one-message appends sent as
scripts rather than as CALLs of their stored procedures (`stores.mysql._calls_routines`
turned off on those writers' drivers), so the two compare in the same run. With
`cursor`, the extra cells CALL the procedures but read the answer through PyMySQL's
cursor, as the driver did before it read the answer itself (`stores.mysql._Answer`).

Runs the MariaDB append cells of `bench/servers.py` (sessionary's sync API and raw PyMySQL,
1 writer, 8 writers on distinct sessions, 8 on one shared session), interleaved, and
prints per cell the rate, its share of raw's, the client's CPU per append (this
process), the server's CPU per append and the server's row-lock waits per append; then
how much of the client's CPU was the kernel's, and the process's context switches per
append (voluntary: a thread blocked, on the socket or the GIL; involuntary: preempted).
Every writer appends once before the first block, so that no block counts a store's
start (its connections, the schema check) as the cost of its appends.

The server's CPU is that of the threads serving the run's own connections (MariaDB's
`information_schema.PROCESSLIST.TID`, read from `/proc/<mariadbd>/task/<tid>/schedstat`),
so it leaves out what other clients of the same server cost, and InnoDB's background
threads (log writer, purge). It needs the server on this machine and the right to read
its `/proc` entries; elsewhere that column is empty. With 2 cores shared by client and
server, the append rate follows the sum of the two CPU columns.
"""

from __future__ import annotations

import functools
import os
import random
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.servers import _append_cells
from bench.srv_common import SHAPES, Cell, run_block, task_ns
from bench.srv_sql import MySQL, _mysql_connect


def _server_pid() -> str | None:
    found = subprocess.run(["pgrep", "-x", "mariadbd"], capture_output=True, text=True).stdout
    return found.split()[0] if found.split() else None


def _thread_cpu(pid: str) -> dict[int, int]:
    """Nanoseconds on CPU of each of the server's threads."""
    spent = {int(tid): task_ns(int(tid)) for tid in os.listdir(f"/proc/{pid}/task")}
    return {tid: ns for tid, ns in spent.items() if ns is not None}


def _connection_threads(database: str) -> list[int]:
    conn = _mysql_connect(None, True)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT TID FROM information_schema.PROCESSLIST WHERE DB = %s", (database,))
            return [int(row[0]) for row in cur.fetchall()]
    finally:
        conn.close()


def _variant_cells(backend: MySQL, shapes: list[str], variant: str) -> list[Cell]:
    """Sessionary cells whose writers send every append as a script (no procedure), or
    read a CALL's answer through the cursor (`variant`: `scripts` or `cursor`)."""
    cells = []
    for writers, mode in SHAPES:
        if mode not in shapes:
            continue
        cell = Cell(backend.name, "sessionary", f"sessionary ({variant})", writers, mode, False)
        shared = backend.new_session("sessionary")
        for _ in range(writers):
            session = shared if mode != "distinct" else backend.new_session("sessionary")
            writer: Any = backend.writer("sessionary", session)
            driver = writer.manager.store._driver
            driver.start(writer.manager.store._setup)
            writer.manager.store._ready = True
            if variant == "scripts":
                driver._routines = False
            else:
                driver._call = functools.partial(_cursor_call, driver)
            cell.handles.append(writer)
        cells.append(cell)
    return cells


def _cursor_call(driver: Any, name: str, values: Any) -> Any:
    """`MySQLDriver._call` with the answer read by PyMySQL's cursor (results, nextset)."""
    from sessionary.stores import mysql

    with driver._pool.connection() as conn:
        try:
            with conn.cursor() as cursor:
                cursor.execute(mysql._call_query(conn, name, values, driver._packet).decode())
                rows, changed = mysql._results(cursor)
        except BaseException:
            conn.rollback()
            raise
    answer = mysql._Answer()
    answer.rows, answer.changed = rows, changed
    return answer


def probe(seconds: float, rounds: int, shapes: list[str], variant: str = "") -> None:
    backend = MySQL()
    if (problem := backend.problem()) is not None:
        print(f"mysql: {problem}")
        return
    pid = _server_pid()
    backend.setup()
    try:
        cells = [cell for cell in _append_cells(backend) if cell.mode in shapes]
        if variant:
            cells += _variant_cells(backend, shapes, variant)
        server: dict[int, float] = {id(cell): 0.0 for cell in cells}
        kernel: dict[int, list[float]] = {id(cell): [0.0, 0.0, 0.0] for cell in cells}
        waits: dict[int, int] = {id(cell): 0 for cell in cells}
        order = random.Random("mysql-cpu")
        for cell in cells:  # each store starts (connects, checks the schema) untimed
            for writer in cell.handles:
                writer.append()
        for _ in range(rounds):
            for cell in order.sample(cells, len(cells)):
                before: dict[str, Any] = backend.counters()
                cpu0 = _thread_cpu(pid) if pid else {}
                use0 = resource.getrusage(resource.RUSAGE_SELF)
                run_block(cell, seconds)
                use1 = resource.getrusage(resource.RUSAGE_SELF)
                kernel[id(cell)][0] += use1.ru_stime - use0.ru_stime
                kernel[id(cell)][1] += use1.ru_nvcsw - use0.ru_nvcsw
                kernel[id(cell)][2] += use1.ru_nivcsw - use0.ru_nivcsw
                if pid:
                    cpu1 = _thread_cpu(pid)
                    tids = _connection_threads(backend.tag)
                    spent = sum(cpu1[t] - cpu0.get(t, cpu1[t]) for t in tids if t in cpu1)
                    server[id(cell)] += spent / 1e9
                waits[id(cell)] += backend.counters()["lock waits"] - before["lock waits"]
        for mode in shapes:
            raw = next(c for c in cells if c.is_raw and c.mode == mode)
            for cell in (c for c in cells if c.mode == mode):
                _report(cell, raw, server[id(cell)] if pid else None, waits[id(cell)])
                _report_kernel(cell, kernel[id(cell)])
    finally:
        backend.close_all()
        backend.teardown()


def _report(cell: Cell, raw: Cell, server: float | None, waits: int) -> None:
    count = sum(cell.counts) or 1
    rate, base = cell.rate or 0.0, raw.rate or 1.0
    served = f"{1e6 * server / count:5.0f}" if server is not None else "    -"
    print(
        f"{cell.mode:9} {cell.label:18} {rate:8,.0f}/s {100 * rate / base:4.0f}%  "
        f"client {1e6 * sum(cell.cpus) / count:4.0f} us  server {served} us  "
        f"lock waits {waits / count:.2f} per append  {cell.error}"
    )


def _report_kernel(cell: Cell, kernel: list[float]) -> None:
    """Of the client's CPU, the kernel's share, and the context switches, per append."""
    count = sum(cell.counts) or 1
    system, voluntary, involuntary = (value / count for value in kernel)
    print(
        f"{'':9} {'':18} of which system {1e6 * system:4.0f} us, context switches "
        f"{voluntary:.1f} voluntary, {involuntary:.1f} involuntary per append"
    )


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    shapes = sys.argv[3].split(",") if len(sys.argv) > 3 else [mode for _, mode in SHAPES]
    probe(seconds, rounds, shapes, sys.argv[4] if len(sys.argv) > 4 else "")


if __name__ == "__main__":
    main()
