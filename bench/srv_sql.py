"""The server benchmark's SQL backends: PostgreSQL (psycopg) and MariaDB/MySQL (PyMySQL)."""

from __future__ import annotations

import json
import os
import time
from abc import abstractmethod
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from bench.srv_common import (
    BACKGROUND,
    MYSQL_URL,
    OTHER,
    OWN,
    POSTGRES_URL,
    RECENT,
    Backend,
    Piece,
    Plan,
    SessionaryWriter,
    Writer,
    body,
    is_loopback,
    message,
    new_id,
    task_name,
)
from bench.workload import conversation, read_texts


class _RawSqlWriter(Writer):
    """One ``INSERT`` and one ``COMMIT`` per message, on a DB-API connection."""

    def __init__(self, conn: Any, table: str, session_pk: int) -> None:
        super().__init__()
        self.conn = conn
        self.session_pk = session_pk
        self.parent: str | None = None
        self.sql = (
            f"INSERT INTO {table} (session_pk, id, parent_id, role, created_us, data)"
            " VALUES (%s, %s, %s, %s, %s, %s)"
        )

    def append(self) -> None:
        turn = self.next_turn()
        msg_id = new_id()
        row = (self.session_pk, msg_id, self.parent, turn.role, time.time_ns() // 1000, body(turn))
        with self.conn.cursor() as cur:
            cur.execute(self.sql, row)
        self.conn.commit()
        self.parent = msg_id

    def close(self) -> None:
        self.conn.close()


class SqlBackend(Backend):
    driver_name: str

    def __init__(self) -> None:
        super().__init__()
        self.libs = (
            ("sessionary", "sessionary (sync)", False),
            ("raw", f"raw {self.driver_name}", True),
        )
        self.next_pk = 1

    @property
    @abstractmethod
    def raw_ddl(self) -> str: ...

    @property
    @abstractmethod
    def url(self) -> str: ...

    @abstractmethod
    def connect(self) -> Any:
        """A raw driver connection to the scratch schema/database, not autocommitting."""

    @property
    @abstractmethod
    def table(self) -> str: ...

    def setup(self) -> None:
        from sessionary import SessionManager

        self.admin = SessionManager(self.url)
        self.closers.append(self.admin.close)
        self.admin.get("warm-up")  # the first call creates sessionary's tables (and schema)
        conn = self.connect()
        try:
            with conn.cursor() as cur:
                for statement in self.raw_ddl.split(";"):
                    cur.execute(statement)
            conn.commit()
        finally:
            conn.close()

    def new_session(self, lib: str) -> Any:
        if lib == "sessionary":
            return self.admin.create(name="bench").id
        self.next_pk += 1
        return self.next_pk

    def writer(self, lib: str, session: Any) -> Writer:
        made: Writer = (
            SessionaryWriter(self.url, session)
            if lib == "sessionary"
            else _RawSqlWriter(self.connect(), self.table, session)
        )
        self.closers.append(made.close)
        return made

    def reader(self, lib: str, depth: int) -> Callable[[], int]:
        if lib == "sessionary":
            session = self.admin.session(self.new_session(lib))
            for start in range(0, depth, 1000):
                turns = conversation(start, min(1000, depth - start))
                session.append_all([message(turn) for turn in turns])
            return lambda: read_texts(session.history(limit=RECENT))
        pk = self.new_session(lib)
        conn = self.connect()
        self.closers.append(conn.close)
        insert = (
            f"INSERT INTO {self.table} (session_pk, id, parent_id, role, created_us, data)"
            " VALUES (%s, %s, %s, %s, %s, %s)"
        )
        parent = None
        for start in range(0, depth, 1000):
            rows = []
            for turn in conversation(start, min(1000, depth - start)):
                msg_id = new_id()
                rows.append((pk, msg_id, parent, turn.role, time.time_ns() // 1000, body(turn)))
                parent = msg_id
            with conn.cursor() as cur:
                cur.executemany(insert, rows)
            conn.commit()
        select = (
            f"SELECT data FROM {self.table} WHERE session_pk = %s ORDER BY seq DESC LIMIT {RECENT}"
        )

        def read() -> int:
            with conn.cursor() as cur:
                cur.execute(select, (pk,))
                rows = cur.fetchall()
            conn.commit()  # end the read transaction, as autocommit reads would
            return len([json.loads(data) for (data,) in reversed(rows)])

        return read


class Postgres(SqlBackend):
    name = "postgres"
    title = "PostgreSQL"
    driver_name = "psycopg"

    @property
    def raw_ddl(self) -> str:
        return (
            f'CREATE SCHEMA IF NOT EXISTS "{self.tag}";'
            f"CREATE TABLE {self.table} ("
            " seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
            " session_pk BIGINT NOT NULL,"
            ' id TEXT COLLATE "C" NOT NULL,'
            ' parent_id TEXT COLLATE "C",'
            " role TEXT NOT NULL,"
            " created_us BIGINT NOT NULL,"
            " data TEXT NOT NULL,"
            " UNIQUE (session_pk, id))"
        )

    @property
    def url(self) -> str:
        return f"{POSTGRES_URL}{'&' if '?' in POSTGRES_URL else '?'}schema={self.tag}"

    @property
    def table(self) -> str:
        return f'"{self.tag}".raw_messages'

    def problem(self) -> str | None:
        try:
            import psycopg
        except ImportError as exc:
            return f"psycopg is not installed: {exc}"
        try:
            psycopg.connect(POSTGRES_URL, connect_timeout=5).close()
        except psycopg.Error as exc:
            return f"PostgreSQL at {POSTGRES_URL} is unreachable: {exc}"
        return None

    def setup(self) -> None:
        # libpq names every connection opened from now on (sessionary's pools and the raw
        # writers alike) after the run, so `server_tasks` can tell its backends apart.
        self.appname = os.environ.get("PGAPPNAME")
        os.environ["PGAPPNAME"] = self.tag
        super().setup()

    def connect(self) -> Any:
        import psycopg

        return psycopg.connect(POSTGRES_URL)

    def locate_server(self) -> None:
        import psycopg

        if not is_loopback(urlsplit(POSTGRES_URL).hostname):
            self.cpu_problem = f"the server at {POSTGRES_URL} is not on this machine"
            return
        self.monitor = psycopg.connect(
            POSTGRES_URL, autocommit=True, application_name=f"{self.tag}_monitor"
        )
        self.closers.append(self.monitor.close)
        pid = self.monitor.execute("SELECT pg_backend_pid()").fetchone()[0]  # type: ignore[index]
        if task_name(pid) != "postgres":
            self.cpu_problem = f"its backend {pid} is not a `postgres` process in this /proc"
            return
        self.cpu_problem = None

    def server_tasks(self) -> dict[int, str]:
        """The run's backends, the server's background processes, other clients' backends."""
        rows = self.monitor.execute(
            "SELECT pid, backend_type, application_name FROM pg_stat_activity"
        ).fetchall()
        return {
            int(pid): BACKGROUND if kind != "client backend" else OWN if name == self.tag else OTHER
            for pid, kind, name in rows
        }

    def settings(self) -> dict[str, str]:
        import psycopg

        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            found = {"version": str(conn.execute("SHOW server_version").fetchone()[0])}  # type: ignore[index]
            for name in ("synchronous_commit", "fsync", "wal_sync_method", "commit_delay"):
                found[name] = str(conn.execute(f"SHOW {name}").fetchone()[0])  # type: ignore[index]
        return found

    def counters(self) -> dict[str, int]:
        import psycopg

        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            row = conn.execute(
                "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"
            ).fetchone()
        return {"deadlocks": int(row[0]) if row else 0}

    def teardown(self) -> None:
        import psycopg

        if self.appname is None:
            os.environ.pop("PGAPPNAME", None)
        else:
            os.environ["PGAPPNAME"] = self.appname
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{self.tag}" CASCADE')


def _mysql_connect(database: str | None, autocommit: bool) -> Any:
    import pymysql

    parts = urlsplit(MYSQL_URL)
    return pymysql.connect(
        host=parts.hostname or "localhost",
        port=parts.port or 3306,
        user=unquote(parts.username or "root"),
        password=unquote(parts.password or ""),
        database=database,
        connect_timeout=5,
        autocommit=autocommit,
        charset="utf8mb4",
    )


def _process_of(tid: int) -> int | None:
    """The process a thread id belongs to (its `Tgid`), or None if this /proc has no such id."""
    try:
        with open(f"/proc/{tid}/status") as status:
            for line in status:
                if line.startswith("Tgid:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


MYSQL_PIECES = {
    "raw": "raw PyMySQL: one INSERT into a bare table, then COMMIT",
    "seen": "`CALL sessionary_append_after_seen`, as the store sends it when it knows the head "
    "(8 writers on distinct sessions)",
    "seen-noupdate": "the same without its UPDATE of the session's row (head, count, activity)",
    "seen-missupdate": "the same with that UPDATE finding no row to change",
    "seen-notrigger": "the same without the search queue's row (the messages' insert trigger)",
    "key": "`CALL sessionary_append_by_key`, the locked path (8 writers on one shared session)",
    "key-quiet": "the same answering nothing",
}
"""The pieces of a MariaDB append `MySQL.pieces` measures, by `bench/probe_mysql_stmt.py`'s
variant name."""


class MySQL(SqlBackend):
    name = "mysql"
    title = "MariaDB / MySQL"
    driver_name = "PyMySQL"

    @property
    def raw_ddl(self) -> str:
        return (
            f"CREATE TABLE {self.table} ("
            " seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,"
            " session_pk BIGINT NOT NULL,"
            " id VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,"
            " parent_id VARCHAR(128) NULL,"
            " role VARCHAR(64) NOT NULL,"
            " created_us BIGINT NOT NULL,"
            " data LONGTEXT NOT NULL,"
            " UNIQUE KEY raw_id (session_pk, id)"
            ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
        )

    @property
    def url(self) -> str:
        return urlunsplit(urlsplit(MYSQL_URL)._replace(path=f"/{self.tag}"))

    @property
    def table(self) -> str:
        return "raw_messages"

    def problem(self) -> str | None:
        try:
            import pymysql
        except ImportError as exc:
            return f"PyMySQL is not installed: {exc}"
        try:
            _mysql_connect(None, True).close()
        except pymysql.err.Error as exc:
            return f"MySQL at {MYSQL_URL} is unreachable: {exc}"
        return None

    def setup(self) -> None:
        conn = _mysql_connect(None, True)
        try:
            with conn.cursor() as cur:
                cur.execute(f"CREATE DATABASE `{self.tag}` CHARACTER SET utf8mb4")
        finally:
            conn.close()
        super().setup()

    def connect(self) -> Any:
        return _mysql_connect(self.tag, False)

    def locate_server(self) -> None:
        if not is_loopback(urlsplit(MYSQL_URL).hostname):
            self.cpu_problem = f"the server at {MYSQL_URL} is not on this machine"
            return
        self.monitor = _mysql_connect(None, True)
        self.closers.append(self.monitor.close)
        try:
            tid = self._threads("WHERE ID = CONNECTION_ID()")[0][0]
        except Exception as exc:  # MySQL's PROCESSLIST has no TID column
            self.cpu_problem = f"the server names no thread ids: {type(exc).__name__}: {exc}"
            return
        pid = _process_of(tid)
        if pid is None or task_name(pid) not in ("mariadbd", "mysqld"):
            self.cpu_problem = f"its thread {tid} is not a `mariadbd` thread in this /proc"
            return
        self.pid, self.cpu_problem = pid, None

    def _threads(self, where: str) -> list[tuple[int, str | None]]:
        with self.monitor.cursor() as cur:
            cur.execute(f"SELECT TID, DB FROM information_schema.PROCESSLIST {where}")
            return [(int(tid), db) for tid, db in cur.fetchall() if tid]

    def server_tasks(self) -> dict[int, str]:
        """The threads of the run's connections, of other connections, and the rest of
        `mariadbd`'s threads (InnoDB's, idle ones) as its background."""
        found = dict.fromkeys(map(int, os.listdir(f"/proc/{self.pid}/task")), BACKGROUND)
        for tid, database in self._threads(""):
            found[tid] = OWN if database == self.tag else OTHER
        return found

    def settings(self) -> dict[str, str]:
        conn = _mysql_connect(None, True)
        names = ("version", "innodb_flush_log_at_trx_commit", "sync_binlog", "log_bin")
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT " + ", ".join(f"@@{name}" for name in names))
                row = cur.fetchone()
        finally:
            conn.close()
        return {name: str(value) for name, value in zip(names, row, strict=True)}

    def counters(self) -> dict[str, int]:
        conn = _mysql_connect(None, True)
        try:
            with conn.cursor() as cur:
                cur.execute(
                    "SHOW GLOBAL STATUS WHERE Variable_name IN"
                    " ('Innodb_deadlocks', 'Innodb_row_lock_waits')"
                )
                found = {str(name): int(value) for name, value in cur.fetchall()}
        finally:
            conn.close()
        return {
            "deadlocks": found.get("Innodb_deadlocks", 0),
            "lock waits": found.get("Innodb_row_lock_waits", 0),
        }

    def pieces(self, plan: Plan) -> list[Piece]:
        """An append taken apart on the server: `bench/probe_mysql_stmt.py`'s variants.

        Each runs 8 connections at once (each on a session of its own, or all on one for
        the locked path), interleaved over the plan's rounds; none where the server's
        threads cannot be read from this machine's `/proc`.
        """
        if self.cpu_problem is not None:
            return []
        from statistics import median

        from bench.probe_mysql_stmt import measure

        variants = measure(plan.piece_appends, plan.rounds, list(MYSQL_PIECES), 8)
        return [Piece(v.name, MYSQL_PIECES[v.name], median(v.blocks)) for v in variants]

    def teardown(self) -> None:
        conn = _mysql_connect(None, True)
        try:
            with conn.cursor() as cur:
                cur.execute(f"DROP DATABASE IF EXISTS `{self.tag}`")
        finally:
            conn.close()
