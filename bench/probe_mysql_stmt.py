"""Where a MariaDB append's server CPU goes, statement by statement.

    python bench/probe_mysql_stmt.py [appends per block] [rounds] [variant,...]

One connection per variant, one session each, appends one at a time; the server's CPU
is that of the connection's own thread (`information_schema.PROCESSLIST.TID`, read from
`/proc/<mariadbd>/task/<tid>/schedstat`), so it leaves out InnoDB's background threads
(the log writer's fsync among them). Variants, each a scratch database of its own:

- `raw`: bench/srv_sql.py's raw writer: an INSERT into a bare table, then COMMIT.
- `script`: sessionary's `append_after_sql` as the driver sends it (`BEGIN NOT ATOMIC`).
- `multi`: the same script as plain multi-statements (no compound statement).
- `split`: its statements one round trip each (START TRANSACTION, UPDATE, INSERT, COMMIT).
- `proc`: the same statements as a stored procedure, `CALL`ed with the parameters.
- `notrigger`: `script` on a database without the messages' insert trigger.
- `noactivity`: `script` on a database without the `sessions_activity` index.
- `bare`: `script` with neither.
- `proc2`: `proc` with the INSERT as `IF ... THEN INSERT ... VALUES` after a read of the
  head (a simple insert, which takes no table-level AUTO-INC lock), instead of
  `INSERT ... SELECT`.
- `rowcount`: `proc` guarding a plain `INSERT ... VALUES` on the UPDATE's `ROW_COUNT()`,
  as migration 6's `sessionary_append_after_seen` does.
- `rowcountpk`: `rowcount` with its UPDATE hinted to the primary key (`FORCE INDEX`).
- `insert`, `update`: the script's INSERT (as `VALUES`), or its UPDATE, alone in a
  transaction of three round trips (START TRANSACTION, the statement, COMMIT).
- `rawtext`: `raw` with the search tokens appended to the body (as wide as our rows).

Prints per variant the server's CPU per append (all blocks; the median and least of the
blocks, since a loaded machine only inflates it), the client's (this process), and the
Handler_* counters per append. `proc` does what migration 5's `sessionary_append_after`
does, in a procedure of the probe's own.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.probe_mysql_cpu import _server_pid
from bench.srv_common import MYSQL_URL, task_ns
from bench.srv_sql import _mysql_connect
from bench.workload import conversation

VARIANTS = (
    "raw",
    "script",
    "multi",
    "split",
    "proc",
    "notrigger",
    "noactivity",
    "bare",
    "insert",
    "update",
    "rawtext",
    "proc2",
    "rowcount",
    "rowcountpk",
)


def _cpu(tid: int) -> int:
    spent = task_ns(tid)
    if spent is None:
        raise SystemExit(f"no server thread {tid} in this /proc")
    return spent


def _tid(conn: Any) -> int:
    with conn.cursor() as cur:
        cur.execute("SELECT TID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()")
        return int(cur.fetchone()[0])


def _handlers(conn: Any) -> dict[str, int]:
    with conn.cursor() as cur:
        cur.execute("SHOW SESSION STATUS WHERE Variable_name LIKE 'Handler%%'")
        return {str(k): int(v) for k, v in cur.fetchall()}


_INSERT = "INSERT INTO messages (session_pk, id, parent_id, depth, role, created_us, data, text)"
_PROCEDURES = {
    "proc": f"{_INSERT} SELECT p_pk, p_id, p_seen, p_depth, p_role, p_created, p_data, p_text"
    " FROM sessions WHERE pk = p_pk AND head_id = p_id",
    "proc2": "SELECT head_id = p_id INTO v_ok FROM sessions WHERE pk = p_pk; IF v_ok THEN"
    f" {_INSERT} VALUES (p_pk, p_id, p_seen, p_depth, p_role, p_created, p_data, p_text);"
    " END IF",
    "rowcount": f"IF ROW_COUNT() > 0 THEN {_INSERT} VALUES (p_pk, p_id, p_seen, p_depth,"
    " p_role, p_created, p_data, p_text); END IF",
}
"""Per procedure variant, what follows the head's UPDATE (see `_procedure`)."""
_PROCEDURES["rowcountpk"] = _PROCEDURES["rowcount"]


def _procedure(name: str) -> str:
    """The probe's own procedure for a variant: the head's UPDATE, then the variant's insert."""
    hint = " FORCE INDEX (PRIMARY)" if name == "rowcountpk" else ""
    return (
        "CREATE PROCEDURE probe_append(p_head VARCHAR(128), p_depth INT, p_n INT,"
        " p_now BIGINT, p_pk BIGINT, p_seen VARCHAR(128), p_seen_depth INT,"
        " p_id VARCHAR(128), p_role VARCHAR(64), p_created BIGINT,"
        " p_data LONGTEXT, p_text LONGTEXT) MODIFIES SQL DATA BEGIN "
        "DECLARE v_ok BOOLEAN DEFAULT FALSE; "
        "START TRANSACTION; "
        f"UPDATE sessions{hint} SET head_id = p_head, head_depth = p_depth,"
        " message_count = message_count + p_n, updated_us = p_now"
        " WHERE pk = p_pk AND head_id <=> p_seen AND head_depth = p_seen_depth"
        f" AND ttl_us IS NULL; {_PROCEDURES[name]}; COMMIT; END"
    )


class Variant:
    def __init__(self, name: str) -> None:
        from urllib.parse import unquote, urlsplit, urlunsplit

        import pymysql

        from sessionary import SessionManager
        from sessionary.stores._mysql_sql import MySQLDialect

        self.name = name
        self.db = f"probe_{uuid.uuid4().hex[:10]}"
        admin = _mysql_connect(None, True)
        with admin.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{self.db}` CHARACTER SET utf8mb4")
        admin.close()
        url = urlunsplit(urlsplit(MYSQL_URL)._replace(path=f"/{self.db}"))
        with SessionManager(url) as manager:
            self.session_id = manager.create(name="probe").id
        parts = urlsplit(MYSQL_URL)
        self.conn = pymysql.connect(
            host=parts.hostname or "localhost",
            port=parts.port or 3306,
            user=unquote(parts.username or "root"),
            password=unquote(parts.password or ""),
            database=self.db,
            charset="utf8mb4",
            autocommit=name == "proc" or name not in ("raw",),
            client_flag=pymysql.constants.CLIENT.MULTI_STATEMENTS,
        )
        self.dialect = MySQLDialect()
        with self.conn.cursor() as cur:
            cur.execute("SET SESSION tx_isolation = 'READ-COMMITTED'")
            if name in ("raw", "rawtext"):
                cur.execute(
                    "CREATE TABLE raw_messages (seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,"
                    " session_pk BIGINT NOT NULL,"
                    " id VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,"
                    " parent_id VARCHAR(128) NULL, role VARCHAR(64) NOT NULL,"
                    " created_us BIGINT NOT NULL, data LONGTEXT NOT NULL,"
                    " UNIQUE KEY raw_id (session_pk, id)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
                )
            if name in ("notrigger", "bare"):
                cur.execute("DROP TRIGGER messages_search_insert")
            if name in ("noactivity", "bare"):
                cur.execute("ALTER TABLE sessions DROP INDEX sessions_activity")
            cur.execute("SELECT pk FROM sessions WHERE id = %s", (self.session_id,))
            self.pk = int(cur.fetchone()[0])
            if name in _PROCEDURES:
                cur.execute(_procedure(name))
        self.head: str | None = None
        self.depth = -1
        self.turns = iter(())
        self.served = 0
        self.client = 0.0
        self.count = 0
        self.blocks: list[float] = []
        self.handlers: dict[str, int] = {}
        self.tid = _tid(self.conn)

    def _turn(self) -> Any:
        for turn in self.turns:
            return turn
        self.turns = iter(conversation(random.randrange(1000), 200))
        return next(self.turns)

    def append(self) -> None:
        from sessionary.stores.mysql import _one_statement

        turn = self._turn()
        msg_id = f"{time.time_ns():016x}{os.urandom(8).hex()}"
        data = json.dumps({"role": turn.role, "content": turn.text})
        now = time.time_ns() // 1000
        cur = self.conn.cursor()
        if self.name in ("raw", "rawtext"):
            if self.name == "rawtext":
                data = data + self.dialect.index_text(turn.text)
            cur.execute(
                "INSERT INTO raw_messages (session_pk, id, parent_id, role, created_us, data)"
                " VALUES (%s, %s, %s, %s, %s, %s)",
                (self.pk, msg_id, self.head, turn.role, now, data),
            )
            self.conn.commit()
        else:
            row = (self.pk, msg_id, self.head, self.depth + 1, turn.role, now, data,
                   self.dialect.index_text(turn.text))  # fmt: skip
            seen = (self.pk, self.head, self.depth)
            params = self.dialect.append_after_params(seen, [row], now)
            sql = self.dialect.append_after_sql(1)
            if self.name in _PROCEDURES:
                cur.execute(
                    "CALL probe_append(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (msg_id, self.depth + 1, 1, now, self.pk, self.head, self.depth,
                     msg_id, turn.role, now, data, row[7]),
                )  # fmt: skip
            elif self.name == "insert":
                cur.execute("START TRANSACTION")
                cur.execute(
                    "INSERT INTO messages (session_pk, id, parent_id, depth, role, created_us,"
                    " data, text) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                    row,
                )
                cur.execute("COMMIT")
            elif self.name == "update":
                cur.execute("START TRANSACTION")
                cur.execute(sql.split(";\n")[1], params[:7])
                cur.execute("COMMIT")
            elif self.name == "split":
                statements = [s for s in sql.split(";\n")]
                cur.execute(statements[0])
                n = statements[1].count("%s")
                cur.execute(statements[1], params[:n])
                cur.execute(statements[2], params[n:])
                cur.execute(statements[3])
            else:
                script = sql if self.name == "multi" else _one_statement(sql, "mariadb")
                cur.execute(script, params)
                while cur.nextset():
                    pass
        cur.close()
        self.head, self.depth = msg_id, self.depth + 1

    def block(self, appends: int) -> None:
        before_h = _handlers(self.conn)
        server0 = _cpu(self.tid)
        client0 = time.process_time()
        for _ in range(appends):
            self.append()
        self.client += time.process_time() - client0
        spent = _cpu(self.tid) - server0
        self.served += spent
        self.blocks.append(spent / appends / 1e3)
        after_h = _handlers(self.conn)
        for key, value in after_h.items():
            self.handlers[key] = (
                self.handlers.get(key, 0)
                + value
                - before_h.get(key, 0)
                - (1 if key == "Handler_read_rnd_next" else 0)
            )
        self.count += appends

    def close(self) -> None:
        self.conn.close()
        admin = _mysql_connect(None, True)
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{self.db}`")
        admin.close()


def main() -> None:
    appends = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    names = sys.argv[3].split(",") if len(sys.argv) > 3 else list(VARIANTS)
    if _server_pid() is None:
        raise SystemExit("mariadbd does not run on this machine")
    variants = [Variant(name) for name in names]
    try:
        order = random.Random("stmt")
        for variant in variants:
            variant.block(50)  # warm up
            variant.served = variant.count = 0
            variant.client = 0.0
            variant.handlers = {}
            variant.blocks = []
        for _ in range(rounds):
            for variant in order.sample(variants, len(variants)):
                variant.block(appends)
        for v in variants:
            hs = " ".join(
                f"{k.removeprefix('Handler_')}={val / v.count:.1f}"
                for k, val in sorted(v.handlers.items())
                if val / v.count >= 0.05
            )
            print(
                f"{v.name:10} server {v.served / v.count / 1e3:6.1f} us "
                f"(median {statistics.median(v.blocks):6.1f}, least {min(v.blocks):6.1f})  "
                f"client {1e6 * v.client / v.count:6.1f} us  {hs}"
            )
    finally:
        for variant in variants:
            variant.close()


if __name__ == "__main__":
    main()
