"""Where a MariaDB `history(limit=20)` read's time goes, beside raw PyMySQL's read.

    python bench/probe_mysql_read.py [rounds] [reads per block] [depth]

Builds the read cells of `bench/servers.py` (a session `depth` messages deep for sessionary's
sync API and for the raw table), then times blocks of reads, interleaved, and prints per
library the median wall time of a read, the client's CPU per read (this process), the
server's CPU per read (the threads serving this run's connections, read from
`/proc/<mariadbd>/task/<tid>/schedstat` as `bench/probe_mysql_cpu.py` does; empty where the
server is not on this machine) and the statements per read (`Questions` of the run's own
connections, from `information_schema.SESSION_STATUS` is not per connection, so counted by
wrapping PyMySQL's `Connection.query`). The client and server columns add up to about the
wall time: on one machine the read is serial, client then server then client.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pymysql

from bench.probe_mysql_cpu import _connection_threads, _server_pid, _thread_cpu
from bench.srv_sql import MySQL


def _count_queries(read: Callable[[], int]) -> int:
    """The statements (COM_QUERY packets) one read sends."""
    sent = [0]
    query = pymysql.connections.Connection.query

    def counted(self: pymysql.connections.Connection, sql: str, unbuffered: bool = False) -> int:
        sent[0] += 1
        return int(query(self, sql, unbuffered))

    pymysql.connections.Connection.query = counted  # type: ignore[method-assign]
    try:
        read()
    finally:
        pymysql.connections.Connection.query = query  # type: ignore[method-assign]
    return sent[0]


def probe(rounds: int, reads: int, depth: int) -> None:
    backend = MySQL()
    if (problem := backend.problem()) is not None:
        print(f"mysql: {problem}")
        return
    pid = _server_pid()
    backend.setup()
    try:
        cells = {lib: backend.reader(lib, depth) for lib in ("sessionary", "raw")}
        for read in cells.values():
            read()
        tids = _connection_threads(backend.tag)
        walls: dict[str, list[float]] = {lib: [] for lib in cells}
        client: dict[str, list[float]] = {lib: [] for lib in cells}
        server: dict[str, list[float]] = {lib: [] for lib in cells}
        for _ in range(rounds):
            for lib, read in cells.items():
                cpu0 = _thread_cpu(pid) if pid else {}
                start, used = time.perf_counter(), time.process_time()
                for _ in range(reads):
                    read()
                walls[lib].append((time.perf_counter() - start) / reads)
                client[lib].append((time.process_time() - used) / reads)
                if pid:
                    cpu1 = _thread_cpu(pid)
                    spent = sum(cpu1[t] - cpu0.get(t, cpu1[t]) for t in tids if t in cpu1)
                    server[lib].append(spent / 1e9 / reads)
        base = statistics.median(walls["raw"])
        for lib, read in cells.items():
            wall = statistics.median(walls[lib])
            served = f"{1e6 * statistics.median(server[lib]):5.0f}" if server[lib] else "    -"
            print(
                f"{lib:10} wall {1e6 * wall:6.0f} us  {100 * base / wall:4.0f}% of raw  "
                f"client {1e6 * statistics.median(client[lib]):5.0f} us  server {served} us  "
                f"statements {_count_queries(read)}"
            )
    finally:
        backend.close_all()
        backend.teardown()


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    reads = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    depth = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000
    probe(rounds, reads, depth)


if __name__ == "__main__":
    main()
