"""Where a MariaDB append's server CPU goes, statement by statement.

    python bench/probe_mysql_stmt.py [appends per block] [rounds] [variant,...] [threads]

One connection per variant (or `threads`, below), one session each, appends one at a
time; the server's CPU is that of the connections' own threads
(`information_schema.PROCESSLIST.TID`, read from `/proc/<mariadbd>/task/<tid>/schedstat`),
so it leaves out InnoDB's background threads (the log writer's fsync among them).
Variants, each a scratch database of its own:

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
- `seen`: a CALL of the schema's own `sessionary_append_after_seen`, as the store sends it.
- `seen-noparent`: `seen` on a database without the `messages_parent` index.
- `seen-notrigger`: `seen` without the messages' insert trigger (nothing queued: a floor).
- `seen-queue`: `seen`'s statements in a procedure of the probe's own that queues the
  message in `search_pending` itself, on a database without the insert trigger.
- `seen-both`: `seen-queue` without the `messages_parent` index too.
- `seen-lean`: `seen` without the insert trigger and the `messages_parent` index (the
  floor of what leaving out the queue and that index could save).
- `seen-noactivity`: `seen` without the `sessions_activity` index.
- `seen-noupdate`: `seen` without its UPDATE of the session's row (the INSERT alone in
  the procedure's transaction): what the head's move costs.
- `seen-missupdate`: `seen` whose UPDATE looks up a pk no row has (the statement's
  parse-free overhead, opening the table and planning, without changing a row), then
  inserts anyway: what of the head's move is statement overhead, not InnoDB's work.
- `seen-state`: `seen` on a database whose messages carry a `search_state` column (with
  an index on it and seq) in place of a `search_pending` row: the probe's procedure
  inserts 0 there, and the insert trigger queues only rows inserted without it (NULL),
  as older clients' would be. What a queue marker on the message row would cost instead.
- `key`: every connection appends to the ONE session they share by CALLing the schema's
  `sessionary_append_by_key` (the store's locked path, 8 writers on one session).
- `key-quiet`: `key` by a copy of the procedure that answers nothing (what the answer
  costs).
- `seen-fn`: `seen`'s UPDATE and INSERT in a stored function, `SELECT`ed with autocommit
  on (the statement is the transaction): a function runs prelocked, its tables opened
  and locked once by the SELECT rather than by each statement.

With a fourth argument `threads` > 1, every variant runs that many connections at once,
each appending to a session of its own in the variant's database (as 8 writers on
distinct sessions do; the `key` variants' all share one), and the server's CPU is the
sum over their threads.

Prints per variant the server's CPU per append (of its connections' threads: all blocks;
the median and least of the blocks, since a loaded machine only inflates it), the
client's (this process), that of the server's other threads (purge, log writer; over each
block and `SETTLE` seconds after it, less what they spend idle; other clients of the
server add noise), and the Handler_* counters per append. `proc` does what migration 5's
`sessionary_append_after` does, in a procedure of the probe's own.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import threading
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
    "seen",
    "seen-noparent",
    "seen-notrigger",
    "seen-queue",
    "seen-both",
    "seen-lean",
    "seen-noactivity",
    "seen-noupdate",
    "seen-missupdate",
    "seen-fn",
    "seen-state",
    "key",
    "key-quiet",
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


SETTLE = 0.3
"""Seconds after each block over which the server's background threads are still counted."""
IDLE = [0.0]
"""The background threads' CPU per second while no variant runs (other clients, timers)."""


def _background() -> dict[int, int]:
    """Nanoseconds on CPU of each server thread that serves no connection (purge, log...)."""
    from bench.probe_mysql_cpu import _thread_cpu

    pid = _server_pid()
    assert pid is not None
    admin = _mysql_connect(None, True)
    try:
        with admin.cursor() as cur:
            cur.execute("SELECT TID FROM information_schema.PROCESSLIST")
            serving = {int(row[0]) for row in cur.fetchall() if row[0]}
    finally:
        admin.close()
    return {tid: ns for tid, ns in _thread_cpu(pid).items() if tid not in serving}


def _idle(seconds: float) -> float:
    """`IDLE`, measured over `seconds` of doing nothing."""
    before = _background()
    time.sleep(seconds)
    spent = sum(ns - before.get(tid, ns) for tid, ns in _background().items())
    return spent / 1e9 / seconds


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
_QUEUED = ("seen-queue", "seen-both", "seen-noupdate", "seen-missupdate", "seen-fn", "seen-state")
"""Variants CALLing the probe's own copy of `sessionary_append_after_seen` that queues."""


def _procedure(name: str) -> str:
    """The probe's own procedure for a variant: the head's UPDATE, then the variant's insert."""
    if name == "key-quiet":
        from sessionary.stores import _mysql_sql

        body = next(s for s in _mysql_sql._V7 if "sessionary_append_by_key(" in s)
        body = body.replace("sessionary_append_by_key(", "probe_key(")
        start = body.index("IF v_ok THEN\n    SELECT")
        return body[:start] + "END"
    if name in _QUEUED:
        from sessionary.stores import _mysql_sql

        body = next(s for s in _mysql_sql._V6 if "sessionary_append_after_seen(" in s)
        body = body.replace("sessionary_append_after_seen(", "probe_seen(")
        if name == "seen-noupdate":
            start, end = body.index("UPDATE sessions"), body.index("INSERT INTO messages")
            return body[:start] + "IF TRUE THEN\n    " + body[end:]
        if name == "seen-fn":
            body = body.replace("CREATE PROCEDURE", "CREATE FUNCTION").replace(
                "MODIFIES SQL DATA", "RETURNS INT MODIFIES SQL DATA"
            )
            body = body.replace("START TRANSACTION;\n", "").replace("COMMIT;\n", "")
            return body.replace("END IF;", "RETURN 1;\nEND IF;\nRETURN 0;", 1)
        if name == "seen-state":
            body = body.replace("data, text)", "data, text, search_state)", 1)
            return body.replace("p_data, p_text)", "p_data, p_text, 0)", 1)
        if name == "seen-missupdate":
            body = body.replace("WHERE pk = p_pk", "WHERE pk = -p_pk")
            return body.replace("IF ROW_COUNT() > 0 THEN", "IF TRUE THEN")
        queue = "INSERT INTO search_pending (seq, n) VALUES (LAST_INSERT_ID(), 1);\nEND IF;"
        return body.replace("END IF;", queue, 1)
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


class Lane:
    """One connection appending to one session of a variant's database."""

    def __init__(self, name: str, db: str, session_id: str) -> None:
        from urllib.parse import unquote, urlsplit

        import pymysql

        parts = urlsplit(MYSQL_URL)
        self.conn = pymysql.connect(
            host=parts.hostname or "localhost",
            port=parts.port or 3306,
            user=unquote(parts.username or "root"),
            password=unquote(parts.password or ""),
            database=db,
            charset="utf8mb4",
            autocommit=name == "proc" or name not in ("raw",),
            client_flag=pymysql.constants.CLIENT.MULTI_STATEMENTS,
        )
        with self.conn.cursor() as cur:
            cur.execute("SET SESSION tx_isolation = 'READ-COMMITTED'")
            cur.execute("SELECT pk, tenant, user_id FROM sessions WHERE id = %s", (session_id,))
            pk, self.tenant, self.user = cur.fetchone()
            self.pk = int(pk)
            self.session = session_id
        self.head: str | None = None
        self.depth = -1
        self.turns: Any = iter(())
        self.tid = _tid(self.conn)


class Variant:
    def __init__(self, name: str, threads: int = 1) -> None:
        from urllib.parse import urlsplit, urlunsplit

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
            sessions = [manager.create(name="probe").id for _ in range(threads)]
        if name.startswith("key"):
            sessions = [sessions[0]] * threads
        self.lanes = [Lane(name, self.db, session_id) for session_id in sessions]
        self.conn = self.lanes[0].conn
        self.dialect = MySQLDialect()
        with self.conn.cursor() as cur:
            if name in ("raw", "rawtext"):
                cur.execute(
                    "CREATE TABLE raw_messages (seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,"
                    " session_pk BIGINT NOT NULL,"
                    " id VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,"
                    " parent_id VARCHAR(128) NULL, role VARCHAR(64) NOT NULL,"
                    " created_us BIGINT NOT NULL, data LONGTEXT NOT NULL,"
                    " UNIQUE KEY raw_id (session_pk, id)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
                )
            if name in ("notrigger", "bare", "seen-notrigger", "seen-lean", *_QUEUED[:2]):
                cur.execute("DROP TRIGGER messages_search_insert")
            if name == "seen-state":
                cur.execute(
                    "ALTER TABLE messages ADD COLUMN search_state TINYINT NULL,"
                    " ADD INDEX messages_unindexed (search_state, seq)"
                )
                cur.execute("DROP TRIGGER messages_search_insert")
                cur.execute(
                    "CREATE TRIGGER messages_search_insert AFTER INSERT ON messages FOR EACH ROW"
                    " BEGIN IF NEW.search_state IS NULL THEN INSERT INTO search_pending (seq, n)"
                    " VALUES (NEW.seq, 1); END IF; END"
                )
            if name in ("noactivity", "bare", "seen-noactivity"):
                cur.execute("ALTER TABLE sessions DROP INDEX sessions_activity")
            if name in ("seen-noparent", "seen-both", "seen-lean"):
                cur.execute("ALTER TABLE messages DROP INDEX messages_parent")
            if name in _PROCEDURES or name in _QUEUED or name == "key-quiet":
                cur.execute(_procedure(name))
        self.served = 0
        self.client = 0.0
        self.count = 0
        self.blocks: list[float] = []
        self.handlers: dict[str, int] = {}
        self.background = 0.0

    def _turn(self, lane: Lane) -> Any:
        for turn in lane.turns:
            return turn
        lane.turns = iter(conversation(random.randrange(1000), 200))
        return next(lane.turns)

    def _call(self, cur: Any, lane: Lane, row: Any, params: Any, sql: str, now: int) -> None:
        """An append by a CALL of a stored procedure (or a SELECT of a stored function)."""
        from sessionary.records import Head
        from sessionary.stores._mysql_sql import routine_call

        if self.name.startswith("key"):
            key = (lane.tenant, lane.user, lane.session)
            params = self.dialect.append_params(key, Head.ANY, [row], now)
            sql = self.dialect.append_sql(1)
        call = routine_call(sql, params)
        assert call is not None
        proc = call[0]
        if self.name == "key-quiet":
            proc = "probe_key"
        elif self.name in _QUEUED:
            proc = "probe_seen"
        marks = ", ".join(["%s"] * len(call[1]))
        verb = "SELECT" if self.name == "seen-fn" else "CALL"
        cur.execute(f"{verb} {proc}({marks})", call[1])
        cur.fetchall()
        while cur.nextset():
            pass

    def append(self, lane: Lane) -> None:
        from sessionary.stores.mysql import _one_statement

        turn = self._turn(lane)
        msg_id = f"{time.time_ns():016x}{os.urandom(8).hex()}"
        data = json.dumps({"role": turn.role, "content": turn.text})
        now = time.time_ns() // 1000
        cur = lane.conn.cursor()
        if self.name in ("raw", "rawtext"):
            if self.name == "rawtext":
                data = data + self.dialect.index_text(turn.text)
            cur.execute(
                "INSERT INTO raw_messages (session_pk, id, parent_id, role, created_us, data)"
                " VALUES (%s, %s, %s, %s, %s, %s)",
                (lane.pk, msg_id, lane.head, turn.role, now, data),
            )
            lane.conn.commit()
        else:
            row = (lane.pk, msg_id, lane.head, lane.depth + 1, turn.role, now, data,
                   self.dialect.index_text(turn.text))  # fmt: skip
            seen = (lane.pk, lane.head, lane.depth)
            params = self.dialect.append_after_params(seen, [row], now)
            sql = self.dialect.append_after_sql(1)
            if self.name.startswith(("key", "seen")):
                self._call(cur, lane, row, params, sql, now)
            elif self.name in _PROCEDURES:
                cur.execute(
                    "CALL probe_append(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (msg_id, lane.depth + 1, 1, now, lane.pk, lane.head, lane.depth,
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
        lane.head, lane.depth = msg_id, lane.depth + 1

    def block(self, appends: int) -> None:
        before_h = [_handlers(lane.conn) for lane in self.lanes]
        background0 = _background()
        server0 = sum(_cpu(lane.tid) for lane in self.lanes)
        client0 = time.process_time()
        if len(self.lanes) == 1:
            for _ in range(appends):
                self.append(self.lanes[0])
        else:
            threads = [
                threading.Thread(
                    target=lambda lane=lane: [self.append(lane) for _ in range(appends)]
                )
                for lane in self.lanes
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        self.client += time.process_time() - client0
        spent = sum(_cpu(lane.tid) for lane in self.lanes) - server0
        done = appends * len(self.lanes)
        time.sleep(SETTLE)  # the purge of what the block left behind
        self.background += (
            sum(ns - background0.get(tid, ns) for tid, ns in _background().items())
            - SETTLE * 1e9 * IDLE[0]
        )
        self.served += spent
        self.blocks.append(spent / done / 1e3)
        for lane, before in zip(self.lanes, before_h, strict=True):
            for key, value in _handlers(lane.conn).items():
                self.handlers[key] = (
                    self.handlers.get(key, 0)
                    + value
                    - before.get(key, 0)
                    - (1 if key == "Handler_read_rnd_next" else 0)
                )
        self.count += done

    def close(self) -> None:
        for lane in self.lanes:
            lane.conn.close()
        admin = _mysql_connect(None, True)
        with admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{self.db}`")
        admin.close()


def measure(appends: int, rounds: int, names: list[str], threads: int = 1) -> list[Variant]:
    """Run `names`' variants interleaved over `rounds` blocks of `appends` per connection.

    Every variant's scratch database is dropped before this returns; the variants keep
    their counts (`served`, `blocks`, `client`, `background`, `handlers`).
    """
    if _server_pid() is None:
        raise SystemExit("mariadbd does not run on this machine")
    variants: list[Variant] = []
    try:
        for name in names:
            variants.append(Variant(name, threads))
        order = random.Random("stmt")
        for variant in variants:
            variant.block(50)  # warm up
            variant.served = variant.count = 0
            variant.client = 0.0
            variant.handlers = {}
            variant.blocks = []
            variant.background = 0.0
        IDLE[0] = _idle(2.0)
        for _ in range(rounds):
            for variant in order.sample(variants, len(variants)):
                variant.block(appends)
    finally:
        for variant in variants:
            variant.close()
    return variants


def main() -> None:
    appends = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    names = sys.argv[3].split(",") if len(sys.argv) > 3 else list(VARIANTS)
    threads = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    for v in measure(appends, rounds, names, threads):
        hs = " ".join(
            f"{k.removeprefix('Handler_')}={val / v.count:.1f}"
            for k, val in sorted(v.handlers.items())
            if val / v.count >= 0.05
        )
        print(
            f"{v.name:10} server {v.served / v.count / 1e3:6.1f} us "
            f"(median {statistics.median(v.blocks):6.1f}, least {min(v.blocks):6.1f})  "
            f"client {1e6 * v.client / v.count:6.1f} us  "
            f"background {v.background / v.count / 1e3:5.1f} us  {hs}"
        )


if __name__ == "__main__":
    main()
