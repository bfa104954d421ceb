"""Where a MariaDB `history(limit=20)` read's time goes, beside raw PyMySQL's read.

    python bench/probe_mysql_read.py [rounds] [reads per block] [depth]

Builds the read cells of `bench/servers.py` (a session `depth` messages deep for sessionary's
sync API and for the raw table), then times blocks of reads, interleaved, and prints per
cell the median wall time of a read, the client's CPU per read (the reading thread), the
server's CPU per read (the threads serving this run's connections, read from
`/proc/<mariadbd>/task/<tid>/schedstat` as `bench/probe_mysql_cpu.py` does; empty where the
server is not on this machine) and the round trips per read (the COM_QUERY packets it sends,
counted by wrapping PyMySQL's `_execute_command`: a `COMMIT` counts, as a query does). The
client and server columns add up to about the wall time: on one machine the read is serial,
client then server then client.

Besides the two benchmark cells, the read is taken apart:

- `driver`: the store's one statement through its driver (`run_alone`: pool, prepared
  `EXECUTE`), its rows not decoded; `sessionary` less this is decoding the rows into
  messages, reading their text, and the store's and session's own calls.
- `bare stmt`: the same prepared statement on a bare PyMySQL connection (`EXECUTE ...
  USING`, `fetchall`): the driver's glue is `driver` less this.
- `no doc join`: that statement without its `LEFT JOIN documents` (the compaction index's
  version): what that third table costs the server.
- `msgs only`: the 20 messages alone, by a session pk and depths known in advance: the
  floor of any read of this schema (a scoped read must still find the session's row).
"""

from __future__ import annotations

import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pymysql

from bench.probe_mysql_cpu import _connection_threads, _server_pid, _thread_cpu
from bench.srv_common import RECENT
from bench.srv_sql import MySQL
from sessionary.compaction.overlays import INDEX_KEY, INDEX_NAMESPACE
from sessionary.stores._documents import key_hash
from sessionary.stores.mysql import _literal

_DOC_JOIN = re.compile(r"LEFT JOIN documents AS d .*?(?=JOIN messages)", re.DOTALL)
_MESSAGES_ONLY = (
    "SELECT concat_ws(' ', id, role, created_us, coalesce(parent_id, ''), data) "
    "FROM messages FORCE INDEX (messages_depth) "
    "WHERE session_pk = %s AND depth BETWEEN %s AND %s ORDER BY depth"
)


def _count_round_trips(read: Callable[[], int]) -> int:
    """The COM_QUERY packets one read sends (a query, a `COMMIT`: one round trip each)."""
    sent = [0]
    command = pymysql.connections.Connection._execute_command

    def counted(self: pymysql.connections.Connection, kind: int, sql: Any) -> Any:
        sent[0] += kind == pymysql.constants.COMMAND.COM_QUERY
        return command(self, kind, sql)

    pymysql.connections.Connection._execute_command = counted  # type: ignore[method-assign]
    try:
        read()
    finally:
        pymysql.connections.Connection._execute_command = command  # type: ignore[method-assign]
    return sent[0]


def _parts(backend: MySQL, session: Any) -> dict[str, Callable[[], int]]:
    """The `driver`, `bare stmt`, `no doc join` and `msgs only` cells (see the docstring)."""
    store, scope, sid = session._store, session._scope, session._id
    live = (scope.tenant, scope.user, sid)
    sql, params = store._dialect.head_and_document_read(
        RECENT, (*live, store._now_us()), INDEX_NAMESPACE, key_hash(INDEX_KEY)
    )
    conn = backend.connect()
    backend.closers.append(conn.close)
    conn.autocommit(True)
    cursor = conn.cursor()
    cursor.execute("SELECT pk, head_depth FROM sessions WHERE id = %s", (sid,))
    pk, head = cursor.fetchone()
    statements = {"bare stmt": (sql, params), "msgs only": (_MESSAGES_ONLY, ())}
    no_doc = _DOC_JOIN.sub("", sql).replace("d.version", "NULL")
    if no_doc != sql:  # its parameters: the separator, then those after the join's two
        statements["no doc join"] = (no_doc, (params[0], *params[3:]))

    def prepared(name: str, statement: str, values: tuple[Any, ...]) -> Callable[[], int]:
        cursor.execute(f"PREPARE {name} FROM %s", (statement.replace("%s", "?"),))

        def read() -> int:
            now = (*values[:-1], store._now_us()) if values else (pk, head - RECENT + 1, head)
            cursor.execute(f"EXECUTE {name} USING {', '.join(_literal(conn, v) for v in now)}")
            return len(cursor.fetchall())

        return read

    cells = {
        "driver": lambda: len(store._driver.run_alone(sql, (*params[:-1], store._now_us()))[0])
    }
    for number, (label, (statement, values)) in enumerate(statements.items()):
        cells[label] = prepared(f"probe_{number}", statement, values)
    return cells


def probe(rounds: int, reads: int, depth: int) -> None:
    backend = MySQL()
    if (problem := backend.problem()) is not None:
        print(f"mysql: {problem}")
        return
    pid = _server_pid()
    backend.setup()
    try:
        cells = {lib: backend.reader(lib, depth) for lib in ("sessionary", "raw")}
        session = cells["sessionary"].__closure__[0].cell_contents  # type: ignore[index]
        cells.update(_parts(backend, session))
        for read in cells.values():
            read()
        tids = _connection_threads(backend.tag)
        walls: dict[str, list[float]] = {lib: [] for lib in cells}
        client: dict[str, list[float]] = {lib: [] for lib in cells}
        server: dict[str, list[float]] = {lib: [] for lib in cells}
        for _ in range(rounds):
            for lib, read in cells.items():
                cpu0 = _thread_cpu(pid) if pid else {}
                start, used = time.perf_counter(), time.thread_time()
                for _ in range(reads):
                    read()
                walls[lib].append((time.perf_counter() - start) / reads)
                client[lib].append((time.thread_time() - used) / reads)
                if pid:
                    cpu1 = _thread_cpu(pid)
                    spent = sum(cpu1[t] - cpu0.get(t, cpu1[t]) for t in tids if t in cpu1)
                    server[lib].append(spent / 1e9 / reads)
        base = statistics.median(walls["raw"])
        for lib, read in cells.items():
            wall = statistics.median(walls[lib])
            served = f"{1e6 * statistics.median(server[lib]):5.0f}" if server[lib] else "    -"
            print(
                f"{lib:11} wall {1e6 * wall:6.0f} us  {100 * base / wall:4.0f}% of raw  "
                f"client {1e6 * statistics.median(client[lib]):5.0f} us  server {served} us  "
                f"round trips {_count_round_trips(read)}"
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
