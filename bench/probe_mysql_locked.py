"""A MariaDB append that finds its session's head moved: the locked procedure, A/B.

    python bench/probe_mysql_locked.py [writers] [appends per writer per block] [rounds]

Writers (8 by default), each a sync `SessionManager` of its own, append to one shared
session, so nearly every append finds the head another writer moved and takes the
locked path (`MySQLDialect.append_sql`, CALLed as a procedure). Two cells, each on a
scratch database of its own, interleaved in rounds: `locked` CALLs migration 6's
`sessionary_append_locked` (a `SELECT ... FOR UPDATE`, then INSERT and UPDATE), `by_key`
migration 7's `sessionary_append_by_key` (the UPDATE locks, checks and moves the head,
then INSERT). Both take the same parameters and answer alike; the `locked` cell's
writers only have the procedure's name swapped in their CALL (`stores.mysql._call`).

Prints per cell the server's CPU per append (the threads serving the cell's connections,
`information_schema.PROCESSLIST.TID`, read from `/proc/<tid>/schedstat`: all blocks, and
the median and least of the blocks), this process's CPU per append (the client), the
append rate, and the session's message count against the appends made.
"""

from __future__ import annotations

import random
import resource
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.srv_common import MYSQL_URL, task_ns
from bench.srv_sql import _mysql_connect
from bench.workload import conversation

_NEW = "sessionary_append_by_key"
_OLD = "sessionary_append_locked"
_released = threading.local()
"""Set in the `locked` cell's writer threads: their CALLs name the version 6 procedure."""


def _swap_calls() -> None:
    from sessionary.stores import mysql

    call = mysql._call

    def either(conn: Any, sql: str, params: Any) -> str | None:
        found: str | None = call(conn, sql, params)
        if found is not None and getattr(_released, "old", False):
            return found.replace(f"CALL {_NEW}(", f"CALL {_OLD}(")
        return found

    mysql._call = either


class Cell:
    def __init__(self, name: str, writers: int) -> None:
        from urllib.parse import urlsplit, urlunsplit

        from sessionary import Message, SessionManager

        self.name = name
        self.db = f"probe_{uuid.uuid4().hex[:10]}"
        admin = _mysql_connect(None, True)
        with admin.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{self.db}` CHARACTER SET utf8mb4")
        self.admin = admin
        url = urlunsplit(urlsplit(MYSQL_URL)._replace(path=f"/{self.db}"))
        self.managers = [SessionManager(url) for _ in range(writers)]
        self.session_id = self.managers[0].create(name="probe").id
        self.turns = [iter(conversation(random.randrange(1000), 10_000)) for _ in self.managers]
        self.message = Message
        self._run(1)  # each store starts (connects, checks the schema) untimed
        self.server = 0
        self.client = 0.0
        self.count = 0
        self.wall = 0.0
        self.blocks: list[float] = []

    def _tids(self) -> list[int]:
        with self.admin.cursor() as cur:
            cur.execute("SELECT TID FROM information_schema.PROCESSLIST WHERE DB = %s", (self.db,))
            return [int(row[0]) for row in cur.fetchall()]

    def _run(self, appends: int) -> None:
        def write(n: int) -> None:
            _released.old = self.name == "locked"
            session = self.managers[n].session(self.session_id)
            for _ in range(appends):
                turn = next(self.turns[n])
                make = self.message.user if turn.role == "user" else self.message.assistant
                session.append(make(turn.text))

        threads = [threading.Thread(target=write, args=(n,)) for n in range(len(self.managers))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def block(self, appends: int) -> None:
        tids = self._tids()
        server0 = sum(task_ns(tid) or 0 for tid in tids)
        client0 = resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        self._run(appends)
        self.wall += time.perf_counter() - start
        client1 = resource.getrusage(resource.RUSAGE_SELF)
        spent = sum(task_ns(tid) or 0 for tid in tids) - server0
        made = appends * len(self.managers)
        self.client += (client1.ru_utime + client1.ru_stime) - (client0.ru_utime + client0.ru_stime)
        self.server += spent
        self.count += made
        self.blocks.append(spent / made / 1e3)

    def stored(self) -> int:
        info = self.managers[0].get(self.session_id)
        return 0 if info is None else info.message_count

    def close(self) -> None:
        for manager in self.managers:
            manager.close()
        with self.admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{self.db}`")
        self.admin.close()


def main() -> None:
    writers = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    appends = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 6
    _swap_calls()
    cells: list[Cell] = []
    try:
        cells = [Cell("locked", writers), Cell("by_key", writers)]
        order = random.Random("locked")
        for _ in range(rounds):
            for cell in order.sample(cells, len(cells)):
                cell.block(appends)
        for cell in cells:
            made = cell.count + writers  # and each writer's untimed first append
            print(
                f"{cell.name:7} server {cell.server / cell.count / 1e3:6.1f} us "
                f"(median {statistics.median(cell.blocks):6.1f}, least {min(cell.blocks):6.1f})"
                f"  client {1e6 * cell.client / cell.count:6.1f} us"
                f"  {cell.count / cell.wall:6.0f}/s  stored {cell.stored()} of {made}"
            )
    finally:
        for cell in cells:
            cell.close()


if __name__ == "__main__":
    main()
