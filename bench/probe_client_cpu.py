"""Where the client's CPU of one sync append goes: sessionary beside the raw driver.

    python bench/probe_client_cpu.py [appends per block] [rounds] [postgres,mysql,sqlite] [profile]

For each backend, one writer of sessionary's sync API (`SessionManager(url).session(id)
.append(Message)`, as the server benchmark's `SessionaryWriter`) and one raw writer
(`_RawSqlWriter`: a JSON body, one INSERT, COMMIT; for SQLite `bench.raw.RawSqlite`)
append in blocks of single appends, interleaved over `rounds` rounds, one thread. Each
block is timed twice over: its thread CPU per append as it runs, and in a second block
with stages wrapped, where that CPU went. A stage's time is its own, less that of the
stages called inside it: the driver (psycopg, its pool, PyMySQL; the SQLite engine's
C calls cannot be wrapped) and, for sessionary, the stages of its append (building the
message, checking and encoding it, its search text, its rows, the driver glue of
`run_alone`, the reading of a MariaDB CALL's answer (`_payload`, `_Answer`), the psycopg
answer watch, the search index's catch-up). The wrapped block's
shares are scaled to the unwrapped block's CPU; what no stage holds is the calls
between them (for raw: the benchmark's JSON body and id).

With `profile`, one more block of each sessionary writer runs under cProfile and its own
time is attributed: by module, and by function (the top ones). A C function's time goes
to the module that called it (`json.dumps` from `_common.encode_body` is `_common`'s),
and the driver's modules, and the C calls they make, to `driver`. cProfile inflates
Python-heavy code more than C, so its shares rank the items; the timed blocks give the
absolute CPU.

Servers: `$SESSIONARY_TEST_POSTGRES`, `$SESSIONARY_TEST_MYSQL` (see `bench.srv_common`).
"""

from __future__ import annotations

import cProfile
import functools
import pstats
import random
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import srv_common
from bench.srv_common import SessionaryWriter, Writer
from bench.srv_sql import MySQL, Postgres, SqlBackend

_DRIVER_MODULES = ("psycopg", "psycopg_pool", "pymysql", "sqlite3", "socket", "selectors", "ssl")


class _Stages:
    """Thread CPU by stage: each wrapped call's own time (less the wrapped calls inside it)."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self._inner: list[float] = []
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)
        inner = self._inner

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.thread_time()
            inner.append(0.0)
            try:
                return original(*args, **kwargs)
            finally:
                spent = time.thread_time() - start
                self.spent[label] += spent - inner.pop()
                if inner:
                    inner[-1] += spent

        setattr(owner, name, timed)
        self._undo.append(lambda: setattr(owner, name, original))

    @contextmanager
    def installed(self, backend: str, writer: Writer) -> Iterator[None]:
        """Wrap the driver's entry points, and for sessionary the stages of its append."""
        self.spent.clear()
        if backend == "postgres":
            import psycopg
            import psycopg_pool

            for name in ("execute", "fetchall", "fetchone", "close"):
                self.wrap(psycopg.Cursor, name, "driver")
            for name in ("execute", "commit", "cursor"):
                self.wrap(psycopg.Connection, name, "driver")
            for name in ("getconn", "putconn"):
                self.wrap(psycopg_pool.ConnectionPool, name, "driver: pool")
        elif backend == "mysql":
            self._pymysql(writer)
        if isinstance(writer, SessionaryWriter | _SqliteOurs):
            self._ours(writer)
        try:
            yield
        finally:
            while self._undo:
                self._undo.pop()()

    def _pymysql(self, writer: Writer) -> None:
        import pymysql

        for name in ("execute", "fetchall", "fetchone", "nextset", "close"):
            self.wrap(pymysql.cursors.Cursor, name, "driver")
        # sessionary reads a CALL's answer itself: the first packet by the driver, the
        # rest by `_payload`, parsed by `_Answer.take`.
        for name in ("commit", "rollback", "begin", "cursor", "_execute_command", "_read_packet"):
            self.wrap(pymysql.connections.Connection, name, "driver")
        from sessionary.stores import mysql

        if isinstance(writer, SessionaryWriter) and hasattr(mysql, "_Answer"):  # not before
            self.wrap(mysql, "_payload", "ours: answer's packets (mysql._payload)")
            self.wrap(mysql._Answer, "take", "ours: answer parsed (mysql._Answer)")

    def _ours(self, writer: SessionaryWriter | _SqliteOurs) -> None:
        import sessionary._sync.stores.sql as sql_store
        import sessionary.stores.sqlite as sqlite_store
        from sessionary.stores import _waits

        store = writer.manager.store
        resident = getattr(getattr(store, "_home", None), "resident", None)
        self.wrap(srv_common, "message", "ours: Message.user/assistant (new id, time)")
        for module in (sql_store, sqlite_store):
            self.wrap(module, "prepare_messages", "ours: check + encode (prepare_messages)")
        if resident is None:
            return
        self.wrap(sql_store, "plan_chain", "ours: rows (plan_chain)")
        self.wrap(type(resident._dialect), "index_text", "ours: search text (dialect.index_text)")
        self.wrap(type(resident), "_catch_up_search", "ours: search index catch-up")
        self.wrap(type(resident._driver), "run_alone", "ours: driver glue (run_alone)")
        for name in ("__init__", "renew", "stop"):
            self.wrap(_waits.Watch, name, "ours: answer watch (_waits.Watch)")


class _SqliteOurs(Writer):
    def __init__(self, url: str) -> None:
        super().__init__()
        from sessionary import SessionManager

        self.manager = SessionManager(url)
        self.session = self.manager.session(self.manager.create(name="probe").id)

    def append(self) -> None:
        self.session.append(srv_common.message(self.next_turn()))  # wrapped as a stage

    def close(self) -> None:
        self.manager.close()


class _SqliteRaw(Writer):
    def __init__(self, directory: Path) -> None:
        super().__init__()
        from bench.raw import RawSqlite

        self.subject = RawSqlite(directory, 0)
        self.subject.open()

    def append(self) -> None:
        self.subject.append(self.next_turn())

    def close(self) -> None:
        self.subject.close()


def _block(writer: Writer, count: int) -> float:
    """Thread CPU seconds per append over `count` appends."""
    start = time.thread_time()
    for _ in range(count):
        writer.append()
    return (time.thread_time() - start) / count


class _Row:
    def __init__(self, label: str) -> None:
        self.label = label
        self.totals: list[float] = []  # CPU per append, unwrapped blocks
        self.wrapped = 0.0  # CPU of the wrapped blocks, in all
        self.stages: dict[str, float] = defaultdict(float)  # of which in each stage

    def report(self, raw: _Row | None) -> list[str]:
        """The row's CPU per append, its stages scaled to the unwrapped blocks' CPU."""
        total = 1e6 * sum(self.totals) / len(self.totals)
        line = f"  {self.label:18} {total:5.0f} us/append"
        if raw is not None:
            line += f"   x{total / (1e6 * sum(raw.totals) / len(raw.totals)):.2f} of raw"
        lines = [line]
        scale = total / self.wrapped if self.wrapped else 0.0
        rest = total - scale * sum(self.stages.values())
        stages = {**self.stages, "rest (calls between stages; for raw: body, id)": rest / scale}
        for stage, spent in sorted(stages.items(), key=lambda kv: -kv[1]):
            lines.append(f"    {scale * spent:5.0f} us  {stage}")
        return lines


def _writers(name: str, scratch: Path) -> tuple[Any, Writer, Writer]:
    """(backend or None, sessionary writer, raw writer)."""
    if name == "sqlite":
        return None, _SqliteOurs(f"sqlite:///{scratch / 'ours.db'}"), _SqliteRaw(scratch)
    backend: SqlBackend = Postgres() if name == "postgres" else MySQL()
    if (problem := backend.problem()) is not None:
        raise RuntimeError(problem)
    backend.setup()
    ours = SessionaryWriter(backend.url, backend.new_session("sessionary"))
    raw = backend.writer("raw", backend.new_session("raw"))
    return backend, ours, raw


def probe(name: str, count: int, rounds: int, profile: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="probe_client_cpu") as scratch:
        try:
            backend, ours, raw = _writers(name, Path(scratch))
        except RuntimeError as exc:
            print(f"{name}: {exc}")
            return
        try:
            _measure(name, ours, raw, count, rounds, profile)
        finally:
            ours.close()
            if backend is None:
                raw.close()
            else:
                backend.close_all()  # the raw writer's connection, the set-up's manager
                backend.teardown()


def _measure(name: str, ours: Writer, raw: Writer, count: int, rounds: int, profile: bool) -> None:
    rows = {"ours": _Row("sessionary (sync)"), "raw": _Row("raw driver")}
    writers = {"ours": ours, "raw": raw}
    for writer in writers.values():
        _block(writer, min(count, 50))  # warm up: connections, schema, caches
    order = random.Random(f"client-cpu-{name}")
    stages = _Stages()
    for _ in range(rounds):
        for key in order.sample(sorted(writers), 2):
            rows[key].totals.append(_block(writers[key], count))
            with stages.installed(name, writers[key]):
                rows[key].wrapped += _block(writers[key], count)
            for stage, spent in stages.spent.items():
                rows[key].stages[stage] += spent / count
    print(f"{name}: {count} appends per block, {rounds} rounds, thread CPU per append")
    print("\n".join(rows["ours"].report(rows["raw"]) + rows["raw"].report(None)))
    if profile:
        _profile(ours, count)


def _category(filename: str, function: str) -> str:
    if filename == "~":
        return ""  # a C function: its callers' category
    path = filename.replace("\\", "/")
    if "/sessionary/" in path:
        return "sessionary." + path.rsplit("/sessionary/", 1)[1].removesuffix(".py").replace(
            "/", "."
        )
    for module in _DRIVER_MODULES:
        if f"/{module}/" in path or path.endswith(f"/{module}.py"):
            return "driver"
    if "/bench/" in path:
        return "bench"
    return "stdlib " + path.rsplit("/", 1)[-1].removesuffix(".py")


def _profile(writer: Writer, count: int) -> None:
    profiler = cProfile.Profile(time.thread_time)  # CPU, not the waits for the server
    profiler.enable()
    _block(writer, count)
    profiler.disable()
    stats: dict[Any, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    by_module: dict[str, float] = defaultdict(float)
    by_function: dict[str, float] = defaultdict(float)

    def owner(func: Any) -> str:
        category = _category(func[0], func[2])
        if category or func not in stats:
            return category or "C"
        callers = stats[func][4]
        if not callers:
            return "C"
        return owner(max(callers, key=lambda c: callers[c][2]))

    for func, (_, _, tottime, _, callers) in stats.items():
        category = _category(func[0], func[2])
        if category:
            by_module[category] += tottime
            by_function[f"{category}:{func[2]}"] += tottime
            continue
        # A C function: split its time among its callers' modules.
        for caller, (_, _, share, _) in (callers or {None: (0, 0, tottime, 0)}).items():
            where = owner(caller) if caller is not None else "C"
            by_module[where] += share
            by_function[f"{where}:{func[2]}"] += share
    total = sum(by_module.values())
    print(f"  profile of {count} sessionary appends (cProfile, {1e6 * total / count:.0f} us each):")
    for module, spent in sorted(by_module.items(), key=lambda kv: -kv[1])[:14]:
        print(f"    {100 * spent / total:5.1f}%  {module}")
    print("  top functions (own time, C calls under their caller's module):")
    for function, spent in sorted(by_function.items(), key=lambda kv: -kv[1])[:28]:
        print(f"    {100 * spent / total:5.1f}%  {function}")


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    names = sys.argv[3].split(",") if len(sys.argv) > 3 else ["postgres", "mysql", "sqlite"]
    profile = len(sys.argv) > 4 and sys.argv[4] == "profile"
    for name in names:
        probe(name, count, rounds, profile)


if __name__ == "__main__":
    main()
