"""Benchmark sessionary's server backends against each raw driver; write BENCHMARKS-servers.md.

    python bench/servers.py --out BENCHMARKS-servers.md   # the full run (~4 minutes)
    python bench/servers.py --quick                       # smoke run (~20 s), report to stdout

Per backend (PostgreSQL, MariaDB/MySQL, Redis), in one run and interleaved in rounds:

- append throughput with 1 writer, 8 writers on 8 distinct sessions, and 8 writers on one
  shared session: sessionary's sync API beside the raw driver doing the equivalent single
  insert (psycopg ``INSERT`` + ``COMMIT``, PyMySQL likewise, a Redis ``RPUSH``);
- ``history(limit=20)`` at depth 10,000 beside the raw ``SELECT … ORDER BY … LIMIT 20``
  (Redis: ``LRANGE -20 -1``).

Redis runs ``IncrementalSessionManager`` twice: ``snapshot_frequency=25`` and with roll-ups
effectively disabled. Every schema, database and key the run creates is removed at the end.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import threading
import time
import traceback
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from statistics import median
from typing import Any, ClassVar
from urllib.parse import unquote, urlsplit, urlunsplit

if __package__ in (None, ""):  # run as a script: make `bench` importable from the repo root
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import facts
from bench.workload import Turn, conversation, text_lengths

POSTGRES_URL = os.environ.get(
    "SESSIONARY_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test"
)
MYSQL_URL = os.environ.get("SESSIONARY_TEST_MYSQL", "mysql://root@127.0.0.1:3306/test")
REDIS_URL = os.environ.get("SESSIONARY_TEST_REDIS", "redis://127.0.0.1:6379/0")

RECENT = 20
WRITERS = 8
NO_ROLLUPS = 10**9  # a snapshot_frequency no run reaches: roll-ups effectively disabled
TARGET = 50.0  # % of the raw driver's rate, single-session appends
# (writers, mode): one writer has one session; eight share one or have one each.
SHAPES = ((1, "single"), (WRITERS, "distinct"), (WRITERS, "shared"))
SHAPE_NAMES = {
    "single": "1 writer",
    "distinct": f"{WRITERS} writers, distinct sessions",
    "shared": f"{WRITERS} writers, one shared session",
}


@dataclass(frozen=True)
class Plan:
    depth: int  # messages in the session history(limit=20) reads
    rounds: int  # append rounds; each gives every cell one block
    block_seconds: float  # wall time of one append block
    read_rounds: int
    read_block: int  # reads per cell per round
    read_budget: float  # seconds one read cell may spend in all


FULL = Plan(depth=10_000, rounds=4, block_seconds=1.5, read_rounds=10, read_block=50, read_budget=8)
QUICK = Plan(depth=500, rounds=1, block_seconds=0.3, read_rounds=2, read_block=10, read_budget=1)


# --------------------------------------------------------------------------- measurements


@dataclass
class Cell:
    """One library, one writer shape: its writers and what their blocks measured."""

    backend: str
    lib: str
    label: str
    writers: int
    mode: str
    is_raw: bool
    handles: list[Writer] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    error: str = ""
    events: dict[str, int] = field(default_factory=dict)

    @property
    def rate(self) -> float | None:
        wall = sum(self.walls)
        return sum(self.counts) / wall if wall and not self.error else None

    def spread(self) -> str:
        rates = sorted(c / w for c, w in zip(self.counts, self.walls, strict=True) if w)
        return f"{rates[0]:,.0f}-{rates[-1]:,.0f}" if rates else "-"

    def cpu_share(self) -> str:
        wall = sum(self.walls)
        return f"{100 * sum(self.cpus) / wall:.0f}%" if wall else "-"


@dataclass
class ReadCell:
    backend: str
    lib: str
    label: str
    is_raw: bool
    read: Callable[[], int]
    samples: list[float] = field(default_factory=list)
    spent: float = 0.0
    error: str = ""

    @property
    def median_us(self) -> float | None:
        return median(self.samples) * 1e6 if self.samples and not self.error else None


class Writer(ABC):
    """One thread's connection; ``append`` stores one message in one call/transaction."""

    def __init__(self) -> None:
        self.index = 0  # position in the benchmark conversation

    def next_turn(self) -> Turn:
        turn = conversation(self.index, 1)[0]
        self.index += 1
        return turn

    @abstractmethod
    def append(self) -> None: ...

    @abstractmethod
    def close(self) -> None: ...


def _run_block(cell: Cell, seconds: float) -> None:
    """Every writer of the cell appends in its own thread until the block's deadline."""
    counts = [0] * len(cell.handles)
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(cell.handles) + 1)
    deadline = [0.0]

    def work(slot: int, writer: Writer) -> None:
        barrier.wait()
        try:
            while time.perf_counter() < deadline[0]:
                writer.append()
                counts[slot] += 1
        except BaseException as exc:  # reported in the cell, not lost in the thread
            errors.append(exc)

    threads = [
        threading.Thread(target=work, args=(i, w), daemon=True) for i, w in enumerate(cell.handles)
    ]
    for thread in threads:
        thread.start()
    gc.collect()
    cpu0 = time.process_time()
    start = time.perf_counter()
    deadline[0] = start + seconds
    barrier.wait()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    cell.cpus.append(time.process_time() - cpu0)
    cell.counts.append(sum(counts))
    cell.walls.append(wall)
    if errors:
        exc = errors[0]
        cell.error = f"{type(exc).__name__}: {exc}"
        traceback.print_exception(exc, file=sys.stderr)


def _run_reads(cell: ReadCell, count: int, budget: float) -> None:
    expected = RECENT
    start = time.perf_counter()
    try:
        for _ in range(count):
            t0 = time.perf_counter()
            got = cell.read()
            cell.samples.append(time.perf_counter() - t0)
            if got != expected:
                raise AssertionError(f"{cell.label}: read {got} messages, expected {expected}")
            if cell.spent + time.perf_counter() - start > budget:
                break
    except Exception as exc:
        cell.error = f"{type(exc).__name__}: {exc}"
        traceback.print_exc(file=sys.stderr)
    cell.spent += time.perf_counter() - start


# --------------------------------------------------------------------------- backends


def _message(turn: Turn) -> Any:
    from sessionary import Message

    return Message.user(turn.text) if turn.role == "user" else Message.assistant(turn.text)


def _body(turn: Turn) -> str:
    return json.dumps({"role": turn.role, "content": turn.text})


def _new_id() -> str:
    """Time-ordered, like sessionary's UUIDv7 ids: nanoseconds then 64 random bits."""
    return f"{time.time_ns():016x}{os.urandom(8).hex()}"


class Backend(ABC):
    name: str
    title: str
    libs: tuple[tuple[str, str, bool], ...]  # (key, label, is_raw)

    def __init__(self) -> None:
        self.tag = f"bench_{uuid.uuid4().hex[:12]}"
        self.closers: list[Callable[[], None]] = []

    @abstractmethod
    def problem(self) -> str | None:
        """Why the server cannot be used, or None."""

    @abstractmethod
    def setup(self) -> None: ...

    @abstractmethod
    def teardown(self) -> None:
        """Drop everything the run created."""

    @abstractmethod
    def settings(self) -> dict[str, str]: ...

    @abstractmethod
    def new_session(self, lib: str) -> Any:
        """Create a session for ``lib``; return what its writers need to reach it."""

    @abstractmethod
    def writer(self, lib: str, session: Any) -> Writer: ...

    @abstractmethod
    def reader(self, lib: str, depth: int) -> Callable[[], int]:
        """Build a session of ``depth`` messages; return a history(limit=20) read of it."""

    def counters(self) -> dict[str, int]:
        """Server-wide lock counters, read around each append block (outside its timing)."""
        return {}

    def close_all(self) -> None:
        for close in reversed(self.closers):
            try:
                close()
            except Exception:
                traceback.print_exc(file=sys.stderr)
        self.closers.clear()


class _SessionaryWriter(Writer):
    def __init__(self, url: str, session_id: str) -> None:
        super().__init__()
        from sessionary import SessionManager

        self.manager = SessionManager(url)
        self.session = self.manager.session(session_id)

    def append(self) -> None:
        self.session.append(_message(self.next_turn()))

    def close(self) -> None:
        self.manager.close()


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
        msg_id = _new_id()
        row = (self.session_pk, msg_id, self.parent, turn.role, time.time_ns() // 1000, _body(turn))
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
            _SessionaryWriter(self.url, session)
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
                session.append_all([_message(turn) for turn in turns])
            return lambda: len(session.history(limit=RECENT))
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
                msg_id = _new_id()
                rows.append((pk, msg_id, parent, turn.role, time.time_ns() // 1000, _body(turn)))
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

    def connect(self) -> Any:
        import psycopg

        return psycopg.connect(POSTGRES_URL)

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

    def teardown(self) -> None:
        conn = _mysql_connect(None, True)
        try:
            with conn.cursor() as cur:
                cur.execute(f"DROP DATABASE IF EXISTS `{self.tag}`")
        finally:
            conn.close()


class _KVWriter(Writer):
    def __init__(self, manager: Any, session_id: str) -> None:
        super().__init__()
        self.manager = manager
        self.session_id = session_id

    def append(self) -> None:
        self.manager.append_message(self.session_id, _message(self.next_turn()))

    def close(self) -> None:
        self.manager.driver.close()


class _RpushWriter(Writer):
    def __init__(self, client: Any, key: str) -> None:
        super().__init__()
        self.client = client
        self.key = key

    def append(self) -> None:
        self.client.rpush(self.key, _body(self.next_turn()))

    def close(self) -> None:
        self.client.close()


class Redis(Backend):
    name = "redis"
    title = "Redis"
    libs = (
        ("kv25", "IncrementalSessionManager (snapshot_frequency=25)", False),
        ("kvoff", "IncrementalSessionManager (roll-ups off)", False),
        ("raw", "raw redis-py RPUSH", True),
    )
    frequency: ClassVar[dict[str, int]] = {"kv25": 25, "kvoff": NO_ROLLUPS}

    def problem(self) -> str | None:
        try:
            import redis
        except ImportError as exc:
            return f"redis-py is not installed: {exc}"
        try:
            redis.Redis.from_url(REDIS_URL, socket_connect_timeout=5).ping()
        except redis.RedisError as exc:
            return f"Redis at {REDIS_URL} is unreachable: {exc}"
        return None

    def setup(self) -> None:
        import redis

        self.client = redis.Redis.from_url(REDIS_URL)
        self.closers.append(self.client.close)

    def _manager(self, lib: str) -> Any:
        from sessionary.kv import IncrementalSessionManager, RedisDriver

        driver = RedisDriver(REDIS_URL, namespace=f"{self.tag}_{lib}")
        return IncrementalSessionManager(driver, snapshot_frequency=self.frequency[lib])

    def new_session(self, lib: str) -> Any:
        from sessionary import new_id

        return new_id() if lib != "raw" else f"{self.tag}_raw:{uuid.uuid4().hex}"

    def writer(self, lib: str, session: Any) -> Writer:
        import redis

        made: Writer = (
            _RpushWriter(redis.Redis.from_url(REDIS_URL), session)
            if lib == "raw"
            else _KVWriter(self._manager(lib), session)
        )
        self.closers.append(made.close)
        return made

    def reader(self, lib: str, depth: int) -> Callable[[], int]:
        session = self.new_session(lib)
        if lib == "raw":
            for start in range(0, depth, 1000):
                turns = conversation(start, min(1000, depth - start))
                self.client.rpush(session, *[_body(turn) for turn in turns])
            client = self.client
            return lambda: len([json.loads(v) for v in client.lrange(session, -RECENT, -1)])
        manager = self._manager(lib)
        self.closers.append(manager.driver.close)
        for start in range(0, depth, 1000):
            turns = conversation(start, min(1000, depth - start))
            manager.append_messages(session, [_message(turn) for turn in turns])
        return lambda: len(manager.get_history(session, RECENT))

    def settings(self) -> dict[str, str]:
        info = self.client.info()
        found = {"version": str(info.get("redis_version", "?"))}
        for name in ("appendonly", "appendfsync", "save"):
            found[name] = str(self.client.config_get(name).get(name, "?"))
        return found

    def teardown(self) -> None:
        keys = list(self.client.scan_iter(match=f"{self.tag}*", count=1000))
        for start in range(0, len(keys), 1000):
            self.client.delete(*keys[start : start + 1000])


BACKENDS: dict[str, type[Backend]] = {"postgres": Postgres, "mysql": MySQL, "redis": Redis}


# --------------------------------------------------------------------------- the run


@dataclass
class Outcome:
    backend: Backend
    status: str = "ok"  # ok | unavailable | failed
    reason: str = ""
    settings: dict[str, str] = field(default_factory=dict)
    cells: list[Cell] = field(default_factory=list)
    reads: list[ReadCell] = field(default_factory=list)
    cleaned: str = ""


def measure(backend: Backend, plan: Plan, log: Callable[[str], None]) -> Outcome:
    out = Outcome(backend)
    problem = backend.problem()
    if problem is not None:
        out.status, out.reason = "unavailable", problem
        log(f"{backend.title}: unavailable: {problem}")
        return out
    try:
        backend.setup()
        out.settings = backend.settings()
        out.cells = _append_cells(backend)
        _time_appends(backend, plan, out.cells, log)
        log(f"{backend.title}: building depth {plan.depth:,} for history reads")
        out.reads = [
            ReadCell(backend.name, key, label, raw, backend.reader(key, plan.depth))
            for key, label, raw in backend.libs
        ]
        _time_reads(backend, plan, out.reads)
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
            _run_block(cell, plan.block_seconds)
            for name, value in backend.counters().items():
                cell.events[name] = cell.events.get(name, 0) + value - before[name]


def _time_reads(backend: Backend, plan: Plan, reads: list[ReadCell]) -> None:
    order = random.Random(f"{backend.name}-recent")
    for _ in range(plan.read_rounds):
        for cell in order.sample(reads, len(reads)):
            if not cell.error and cell.spent < plan.read_budget:
                _run_reads(cell, plan.read_block, plan.read_budget)


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


# --------------------------------------------------------------------------- the report


def _raw_cell(out: Outcome, cell: Cell) -> Cell | None:
    return next(
        (c for c in out.cells if c.is_raw and c.writers == cell.writers and c.mode == cell.mode),
        None,
    )


def _ratio(value: float | None, base: float | None) -> str:
    if value is None or not base:
        return "-"
    return f"{100 * value / base:.0f}%"


def _percent(value: float) -> str:
    return f"{value:.0f}%" if value >= 10 else f"{value:.1f}%" if value >= 0.1 else f"{value:.2f}%"


def _rate(cell: Cell) -> str:
    if cell.error:
        return f"failed ({cell.error[:80]})"
    return f"{cell.rate:,.0f}" if cell.rate is not None else "-"


def _append_table(out: Outcome) -> Iterator[str]:
    names = sorted({name for cell in out.cells for name in cell.events})
    yield (
        "| library | writers | appends/s | % of raw | per-block range /s | client CPU "
        "| messages per session at end |" + "".join(f" server {name} |" for name in names)
    )
    yield "|---|---|---:|---:|---:|---:|---:|" + "---:|" * len(names)
    for cell in out.cells:
        raw = _raw_cell(out, cell)
        share = "—" if cell.is_raw else _ratio(cell.rate, raw.rate if raw else None)
        yield (
            f"| {cell.label} | {SHAPE_NAMES[cell.mode]} | {_rate(cell)} | {share} "
            f"| {cell.spread()} | {cell.cpu_share()} "
            f"| {sum(cell.counts) // (cell.writers if cell.mode == 'distinct' else 1):,} |"
            + "".join(f" {cell.events.get(name, 0):,} |" for name in names)
        )


def _read_table(out: Outcome, depth: int) -> Iterator[str]:
    raw = next((c for c in out.reads if c.is_raw), None)
    yield f"| library | median µs at depth {depth:,} | p90 µs | n | raw's time over this |"
    yield "|---|---:|---:|---:|---:|"
    for cell in out.reads:
        value = cell.median_us
        if value is None:
            yield f"| {cell.label} | {cell.error or 'no sample'} | | | |"
            continue
        p90 = sorted(cell.samples)[int(0.9 * (len(cell.samples) - 1))] * 1e6
        base = raw.median_us if raw else None
        share = "—" if cell.is_raw or base is None else _percent(100 * base / value)
        yield f"| {cell.label} | {value:,.0f} | {p90:,.0f} | {len(cell.samples)} | {share} |"


def verdicts(outcomes: list[Outcome]) -> list[str]:
    lines = []
    for out in outcomes:
        if out.status != "ok":
            lines.append(f"- **SKIP** {out.backend.title}: {out.status} ({out.reason})")
            continue
        for cell in out.cells:
            if cell.is_raw or cell.writers != 1:
                continue
            raw = _raw_cell(out, cell)
            goal = (
                f"{out.backend.title}, {cell.label}: single-session append rate ≥ "
                f"{TARGET:.0f}% of {raw.label if raw else 'raw'}"
            )
            if cell.rate is None or raw is None or not raw.rate:
                lines.append(f"- **SKIP** {goal}: not measured")
                continue
            share = 100 * cell.rate / raw.rate
            verdict = "PASS" if share >= TARGET else "FAIL"
            lines.append(
                f"- **{verdict}** {goal}: {share:.0f}% ({cell.rate:,.0f} vs {raw.rate:,.0f}/s)"
            )
    return lines


def render(outcomes: list[Outcome], plan: Plan, machine: dict[str, str], threads_note: str) -> str:
    shortest, longest = text_lengths()
    parts = [
        "# sessionary server benchmarks",
        "",
        "Generated by `bench/servers.py` from a single run; do not edit by hand, re-run instead.",
        "",
        "| | |",
        "|---|---|",
        *(f"| {name} | {value} |" for name, value in machine.items()),
        "",
        "## Servers and their durability settings",
        "",
        "| backend | server | settings read from the server | scratch space |",
        "|---|---|---|---|",
    ]
    for out in outcomes:
        found = dict(out.settings)
        version = found.pop("version", "-")
        shown = ", ".join(f"`{k}={v}`" for k, v in found.items()) or out.reason or "-"
        parts.append(f"| {out.backend.title} | {version} | {shown} | {out.cleaned or '-'} |")
    parts += ["", "## Targets", "", *verdicts(outcomes), ""]
    for out in outcomes:
        parts += [f"## {out.backend.title}", ""]
        if out.status != "ok":
            parts += [f"Not measured: {out.status} ({out.reason}).", ""]
            if not out.cells:
                continue
        parts += [
            "### Append throughput",
            "",
            "Messages stored per second of wall time, all writers together; `% of raw` is "
            "this rate over the raw driver's rate with the same writers and session sharing.",
            "",
            *_append_table(out),
            "",
            f"### `history(limit={RECENT})` at depth {plan.depth:,}",
            "",
            *_read_table(out, plan.depth),
            "",
        ]
    parts += ["## Notes", "", *_notes(plan, shortest, longest, threads_note), ""]
    return "\n".join(parts)


def _notes(plan: Plan, shortest: int, longest: int, threads_note: str) -> Iterator[str]:
    yield (
        f"- Appends: each cell (library and writer shape) holds its writers' connections for the "
        f"whole run; {plan.rounds} round(s) give every cell one {plan.block_seconds} s block each, "
        f"in a new random order per round, so sessionary and the raw driver share the machine's "
        f"noise. The rate is all messages over all block time; the range is per block. "
        f"Messages are alternating user/assistant texts of {shortest}-{longest} characters; "
        f"each append builds its message (sessionary `Message`, raw JSON body) inside the loop."
    )
    yield f"- Concurrency: {threads_note}"
    yield (
        "- sessionary: every writer has its own sync `SessionManager` (its own connection "
        "pool) and calls `session.append(message)`; the shared-session cells all append to one "
        "session created beforehand. Raw SQL: one `INSERT` of a row shaped like sessionary's "
        "(session key, time-ordered text id, parent id, role, time, JSON body) into a table "
        "with a primary key and a unique `(session_pk, id)` index, then `COMMIT`, over one "
        "driver connection per writer. sessionary's tables carry more indexes (the path "
        "indexes and the full-text index), which the raw table does not: that is part of "
        "what the ratio measures."
    )
    yield (
        "- Redis: `IncrementalSessionManager(RedisDriver(url, namespace=…))`, one per writer; "
        "an append reads the session's meta key and commits with one Lua compare-and-set "
        "script, and every `snapshot_frequency` messages rolls the loose entries into the "
        f"snapshot. `roll-ups off` is `snapshot_frequency={NO_ROLLUPS:,}`. Raw: one `RPUSH` "
        "of the JSON body per message."
    )
    yield (
        f"- Reads: a separate session per library is built to {plan.depth:,} messages in "
        f"batches of 1,000, then `history(limit={RECENT})` (`get_history(id, {RECENT})` on "
        f"Redis) is timed in blocks of {plan.read_block}, interleaved over "
        f"{plan.read_rounds} round(s), at most {plan.read_budget:.0f} s per library. Raw SQL "
        f"reads `SELECT data … WHERE session_pk = %s ORDER BY seq DESC LIMIT {RECENT}` and "
        f"`json.loads` each body; raw Redis reads `LRANGE key -{RECENT} -1`. `raw's time over "
        f"this` is the raw median over the library's (100% = as fast as raw)."
    )
    yield (
        "- Client CPU is this process's CPU time over the block's wall time (100% = one core "
        "busy); near 100% means the Python client, not the server, set the pace. The server "
        "columns are the server-wide deadlock (and, on MariaDB, row-lock wait) counters' "
        "increase over the cell's blocks: they count every client of the server, not only "
        "this run's. `messages per session at end` is how long the cell's session(s) grew "
        "(every cell starts from an empty session); with roll-ups on, an append's cost grows "
        "with it, since each roll-up rewrites the whole snapshot."
    )
    yield (
        "- The servers run on the same machine as the client, so client and server compete "
        "for the same cores."
    )


THREADS_NOTE = (
    f"the {WRITERS}-writer cells run {WRITERS} threads in one process. An append spends most of "
    "its time waiting on the server (a commit's log flush, a network round trip), and psycopg, "
    "PyMySQL's socket reads and redis-py all release the GIL while they wait, so threads do "
    "overlap their server time; the Python work around each call (building and encoding the "
    "message, SQL or Lua arguments) is serialised by the GIL, for sessionary and for the raw "
    "driver alike. Processes were not used: on a 2-core machine that also hosts the servers "
    "they would add little parallelism, and the issue asks for the sync API from threads. "
    "Where the client CPU column nears 100%, the GIL (one core) is the limit, not the server."
)


def _settings_line(outcomes: list[Outcome]) -> str:
    return ", ".join(f"{o.backend.title} {o.settings.get('version', o.status)}" for o in outcomes)


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
    machine["packages"] = _versions(("sessionary",))
    machine["servers"] = _settings_line(outcomes)
    machine["client drivers"] = _versions(("psycopg", "psycopg-pool", "PyMySQL", "redis"))
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


def _versions(names: tuple[str, ...]) -> str:
    from importlib import metadata

    found = []
    for name in names:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return ", ".join(found) or "none"


def _command(argv: list[str] | None) -> str:
    words = sys.argv[1:] if argv is None else argv
    return " ".join(["python bench/servers.py", *words])


def _log(message: str) -> None:
    print(f"[bench-servers {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
