"""The PostgreSQL drivers: `postgresql://` through psycopg 3 and its connection pool.

`AsyncPostgresDriver` and `PostgresDriver` are a hand-written pair with identical method
names; `AsyncSQLStore` / `SQLStore` (stores/sql.py and its generated twin) do the rest.
Connections run in autocommit mode and every unit of work is an explicit transaction at
READ COMMITTED; `store_error` is the one place psycopg's exceptions become sessionary's.

The pool opens on first use: a first connection migrates the schema (see
`PostgresDialect`), then the pool fills. Install with `pip install 'sessionary[postgres]'`.

Waits are bounded (see `_waits`): libpq's `connect_timeout` covers connecting (whole
seconds, at least 2); pooled connections run with `statement_timeout` (lock waits
included) and `idle_in_transaction_session_timeout` at the store's `timeout`, so a
writer never queues longer on a session's row, nor holds it while it stalls; TCP
keepalives and `tcp_user_timeout` notice a server or network that went away; and since
psycopg has no read timeout, a watch (`_waits.Watch`) hangs up a connection whose
answer is `GRACE` seconds past `timeout` (a server or proxy that stopped answering),
which then raises `StoreUnavailable` and is never reused. Those settings (and the
schema's search path) are set by a statement on each new connection, not in its startup
packet, which a connection pooler such as PgBouncer refuses. Behind a pooler in
transaction mode (`pgbouncer=true`), which runs each transaction on any of its server
connections, nothing is kept on a connection: psycopg prepares no statement and the
settings are not made, so the role's own search path and `statement_timeout` apply (the
URL's `schema=` is refused there); the watch still bounds the client's wait.

A caller waits for a busy pool at most `POOL_WAIT` seconds; once the pool's attempt to
make a connection has failed, it fails at once with that attempt's error (`_Attempts`).

Unlocking early (`run_alone(..., unlock_early=True)`, the store's appends to a session
that other writers append to as well): a transaction that commits with
`synchronous_commit = on` keeps its row locks until the WAL is flushed past its commit
record, so writers queued on one row get one commit per flush, where writers on distinct
rows share each flush. So such a statement's transaction turns `synchronous_commit` off
for itself (`set_config(..., true)`, which its commit reads and which then reverts, so
the connection is left as it was whatever happens): it commits, makes its changes visible
and releases its locks as soon as it has run, with no wait for the flush nor for the
client. (Set by a statement of its own in the same transaction, in pipeline mode, the
setting left the row locked while the server waited for the client's Sync, which a busy
client sends late.) A later transaction then writes a transactional WAL message (an xid
and a record, so that its commit waits for the flush; `pg_logical_emit_message`, which
every role may run unless it was revoked: checked when the pool starts, `unlocks_early`)
and commits it under the connection's own `synchronous_commit`, so it ends once the WAL
is flushed (and, with synchronous replication, confirmed) past that commit, which comes
before it in the one linear WAL. The store's append is a CALL of a procedure that does
both in one round trip (`PostgresDialect.unlocked_append_sql`): its answer comes after
its second commit. Any other statement gets the flush as a second round trip. The flush
also runs after a statement that failed (what it read may not have been flushed yet);
the call answers only if it succeeded. A write that builds on the statement's (an append
under the new head) commits after it, so it cannot survive a crash without it. Until the
flush another reader can see the change, which a server crash could still remove: its
writer has not been answered yet.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import Any, ClassVar, Self, TypeVar, cast

import psycopg
import psycopg_pool
from psycopg import errors as pg_errors

from sessionary.errors import (
    AlreadyExists,
    Closed,
    PayloadTooLarge,
    SessionaryError,
    StoreError,
    StoreUnavailable,
)
from sessionary.stores._postgres_sql import FLUSH_MESSAGE
from sessionary.stores._sql_common import redact
from sessionary.stores._waits import GRACE, IDLE_LOOK, AsyncWatch, Watch, said_goodbye
from sessionary.stores.urls import CONNECT_TIMEOUT, REQUEST_TIMEOUT

__all__ = [
    "AsyncPostgresDriver",
    "PostgresDriver",
    "connection_options",
    "pool_options",
    "session_settings",
    "store_error",
]

Row = tuple[Any, ...]

POOL_WAIT = 30.0
"""Seconds a caller waits for a pooled connection when every one is busy."""
_LOOK = 1.0
"""Seconds between looks, while a caller waits for a pooled connection, at whether the
pool could connect (see `_Attempts`)."""

_BUSY = (
    pg_errors.LockNotAvailable,
    pg_errors.QueryCanceled,
    pg_errors.DeadlockDetected,
    pg_errors.SerializationFailure,
)


def store_error(where: str, exc: psycopg.Error, overdue: bool = False) -> SessionaryError:
    """Map one of psycopg's exceptions onto the error tree; the only place that does.

    Args:
        where: The server's URL, its password masked, to start the message with.
        exc: What psycopg raised.
        overdue: Whether the connection was hung up for an overdue answer.
    """
    if overdue:
        return StoreUnavailable(f"{where}: the server did not answer in time")
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, psycopg_pool.PoolClosed):
        return Closed(f"{where}: the store is closed")
    if isinstance(exc, pg_errors.UniqueViolation):
        return AlreadyExists(f"{where}: {text}")
    if isinstance(exc, _BUSY):
        return StoreError(f"{where}: the server gave up waiting: {text}")
    if isinstance(exc, pg_errors.ProgramLimitExceeded):
        # A value over one of the server's own limits (a row, a tsvector, an index
        # entry): the statement failed, the server and the connection are fine.
        return PayloadTooLarge(f"{where}: {text}")
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return StoreUnavailable(f"{where}: {text}")
    return StoreError(f"{where}: {text}")


def connection_options(connect_timeout: float, pgbouncer: bool = False) -> dict[str, Any]:
    """Keyword arguments for every connection: autocommit, and libpq's connect timeout.

    libpq counts `connect_timeout` in whole seconds, at least 2. Nothing goes in the
    startup packet's `options`: a connection pooler (PgBouncer) refuses a connection
    that carries any; the session's settings are a statement of their own
    (`session_settings`). With `pgbouncer` (a pooler in transaction mode, which runs
    each transaction on any server connection), psycopg prepares no statement: a
    prepared statement lives on one server connection.
    """
    options: dict[str, Any] = {
        "autocommit": True,
        "connect_timeout": max(2, math.ceil(connect_timeout)),
    }
    if pgbouncer:
        options["prepare_threshold"] = None
    return options


def pool_options(connect_timeout: float, timeout: float, pgbouncer: bool = False) -> dict[str, Any]:
    """`connection_options`, with the TCP bounds of pooled connections (see the module)."""
    options = connection_options(connect_timeout, pgbouncer)
    millis = max(1, math.ceil(timeout * 1000))
    probe = max(1, math.ceil(timeout / 3))  # a silent peer is probed after a third ...
    options.update(
        keepalives=1,
        keepalives_idle=probe,
        keepalives_interval=probe,  # ... then twice more, a third apart
        keepalives_count=2,
        tcp_user_timeout=millis,  # and unacknowledged data gives up at `timeout`
    )
    return options


def _unless_given(conninfo: str, options: dict[str, Any]) -> dict[str, Any]:
    """`options` but those the URL gives itself (its keepalives, say): the URL's win."""
    given = psycopg.conninfo.conninfo_to_dict(conninfo)
    return {key: value for key, value in options.items() if key not in given}


def session_settings(schema: str | None, timeout: float | None) -> tuple[str, tuple[str, ...]]:
    """The statement (and its values) that sets a new connection up, run once on it.

    The search path is the schema, quoted (so a name in capitals is that name, as
    `CREATE SCHEMA` made it); with `timeout` (pooled connections, not the migrations'),
    `statement_timeout` and `idle_in_transaction_session_timeout` too (see the module).
    `set_config(..., false)` lasts for the session.
    """
    settings: list[tuple[str, str]] = []
    if schema is not None:
        settings.append(("search_path", '"' + schema.replace('"', '""') + '"'))
    if timeout is not None:
        millis = str(max(1, math.ceil(timeout * 1000)))
        settings += [("statement_timeout", millis), ("idle_in_transaction_session_timeout", millis)]
    calls = ", ".join(["set_config(%s, %s, false)"] * len(settings))
    return f"SELECT {calls}", tuple(value for pair in settings for value in pair)


class _AsyncTransaction:
    """A transaction's statements; each first renews the watch on its answer."""

    __slots__ = ("_conn", "_cursor", "_pipeline", "_renew")

    def __init__(
        self,
        conn: psycopg.AsyncConnection[Row],
        renew: Callable[[], None],
        pipeline: psycopg.AsyncPipeline | None = None,
    ) -> None:
        self._conn = conn
        self._cursor = conn.cursor()
        self._renew = renew
        self._pipeline = pipeline

    async def fetch_each(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[list[Row]]:
        # One cursor per statement, all sent before any is read: one round trip when pipelined.
        self._renew()
        cursors = [self._conn.cursor() for _ in statements]
        for cursor, (sql, params) in zip(cursors, statements, strict=True):
            await cursor.execute(sql, params or None)
        return [await cursor.fetchall() for cursor in cursors]

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        self._renew()
        await self._cursor.execute(sql, params or None)
        return self._cursor.rowcount

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        self._renew()
        await self._cursor.execute(sql, params or None)
        if self._pipeline is not None:  # the statement's result (its description) arrives
            await self._pipeline.sync()
        return await self._cursor.fetchone() if _rows(self._cursor) else None

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        self._renew()
        await self._cursor.execute(sql, params or None)
        return await self._cursor.fetchall()

    async def insert(self, sql: str, params: Sequence[Any], key: str) -> int:
        self._renew()
        await self._cursor.execute(f"{sql} RETURNING {key}", params)
        row = await self._cursor.fetchone()
        assert row is not None
        return int(row[0])


_CAN_FLUSH = (
    "SELECT has_function_privilege("
    "'pg_catalog.pg_logical_emit_message(boolean, text, text)', 'EXECUTE') AND coalesce("
    "has_function_privilege(to_regproc('sessionary_append')::oid, 'EXECUTE'), true)"
)
"""Whether this role may flush (and CALL the store's procedure, where it is there)."""
_FLUSH = f"SELECT {FLUSH_MESSAGE}"
_TUPLES_OK = psycopg.pq.ExecStatus.TUPLES_OK


def _flushes_itself(sql: str) -> bool:
    """Whether a statement run with `unlock_early` flushes before it answers.

    A CALL does: the store's procedures end with a synchronous commit after their early
    one (`PostgresDialect.unlocked_append_sql`).
    """
    return sql.startswith("CALL ")


def _unbounded() -> None:
    """Migrations run without the request bound (see `_waits`)."""


def _rows(cursor: psycopg.Cursor[Row] | psycopg.AsyncCursor[Row]) -> bool:
    """Whether the cursor's statement returned rows (its `description` builds columns)."""
    result = cursor.pgresult
    return result is not None and result.status == _TUPLES_OK


class _Attempts:
    """How the pool's latest attempt to connect ended: None if it connected, else its error.

    Each driver's pool makes its connections through a class of its own (`_own`),
    which records here; a caller that has waited `_LOOK` seconds for a connection
    fails at once with the recorded error (`_waited`), since the pool has not been
    able to make one. psycopg's pool retries in the background, and would otherwise
    keep every caller waiting `POOL_WAIT` for a server that does not answer.
    """

    __slots__ = ("failed",)

    def __init__(self) -> None:
        self.failed: psycopg.Error | None = None


C = TypeVar("C")


def _own(base: type[C], attempts: _Attempts) -> type[C]:
    """A subclass of `base` for one driver's pool: its connection attempts go to `attempts`."""
    return cast("type[C]", type(base.__name__, (base,), {"attempts": attempts}))


def _waited(where: str, attempts: _Attempts, since: float) -> SessionaryError | None:
    """After a wait of `_LOOK` for a pooled connection: the error to raise, or None to wait on.

    Raises the error of the pool's latest attempt to connect, if that failed; a
    `StoreError` once every connection has stayed busy for `POOL_WAIT` seconds.
    """
    if attempts.failed is not None:
        text = " ".join(str(attempts.failed).split()) or type(attempts.failed).__name__
        return StoreUnavailable(f"{where}: cannot connect: {text}")
    if time.monotonic() - since >= POOL_WAIT:
        return StoreError(f"{where}: every pooled connection stayed busy for {POOL_WAIT:g} s")
    return None


def _gone(conn: _Connection | _AsyncConnection) -> bool:
    """Whether the server closed a pooled connection while it sat idle (see `_waits`)."""
    return time.monotonic() - conn.idle_since > IDLE_LOOK and said_goodbye(conn.fileno())


class _AsyncConnection(psycopg.AsyncConnection[Row]):
    """A pooled connection, with the watch on its answers for its life."""

    watch: AsyncWatch
    idle_since: float
    """When it was last given back to the pool (or made)."""
    attempts: ClassVar[_Attempts] = _Attempts()
    """Where its driver's pool records its attempts to connect (see `_own`)."""

    @classmethod
    async def connect(cls, conninfo: str = "", **kwargs: Any) -> Self:
        try:
            conn = await super().connect(conninfo, **kwargs)
        except psycopg.Error as exc:
            cls.attempts.failed = exc
            raise
        cls.attempts.failed = None
        return conn


class AsyncPostgresDriver:
    """A psycopg `AsyncConnectionPool` on one database (and schema).

    Args:
        conninfo: A libpq URL or connection string.
        schema: The schema to work in; None for the server's default search path.
        pool_size: The most connections the pool opens.
        connect_timeout: Seconds to wait for a connection.
        timeout: Seconds one request may wait for its answer (see the module).
        pgbouncer: Whether the server is behind a pooler in transaction mode (see the
            module): no prepared statements, and no settings kept on a connection.
    """

    def __init__(
        self,
        conninfo: str,
        *,
        schema: str | None = None,
        pool_size: int = 10,
        connect_timeout: float = CONNECT_TIMEOUT,
        timeout: float = REQUEST_TIMEOUT,
        pgbouncer: bool = False,
    ) -> None:
        self._conninfo = conninfo
        self._where = redact(conninfo)
        self._options = connection_options(connect_timeout, pgbouncer)
        self._schema = schema
        self._settings = None if pgbouncer else session_settings(schema, timeout)
        self._timeout = connect_timeout
        self._wait = timeout + GRACE
        self._attempts = _Attempts()
        self._pool = psycopg_pool.AsyncConnectionPool[_AsyncConnection](
            conninfo,
            connection_class=_own(_AsyncConnection, self._attempts),
            configure=self._configure,
            min_size=1,
            max_size=max(1, pool_size),
            kwargs=_unless_given(conninfo, pool_options(connect_timeout, timeout, pgbouncer)),
            open=False,
            name="sessionary",
        )
        self._lock = asyncio.Lock()
        self._started = False
        self.unlocks_early = False

    async def _configure(self, conn: _AsyncConnection) -> None:
        if self._settings is not None:
            await conn.execute(*self._settings)
        conn.watch = AsyncWatch(conn.fileno(), self._wait)
        conn.idle_since = time.monotonic()

    async def start(self, setup: Callable[[_AsyncTransaction], Awaitable[None]]) -> None:
        """Run `setup` (the migrations) on a first connection, then open the pool."""
        async with self._lock:
            if self._started:
                return
            try:
                conn = await psycopg.AsyncConnection.connect(self._conninfo, **self._options)
                try:
                    if self._schema is not None:
                        await conn.execute(*session_settings(self._schema, None))
                    async with conn.transaction():
                        await setup(_AsyncTransaction(conn, _unbounded))
                        cursor = await conn.execute(_CAN_FLUSH)
                        self.unlocks_early = await cursor.fetchone() == (True,)
                finally:
                    await conn.close()
                await self._pool.open(wait=True, timeout=self._timeout)
            except psycopg.Error as exc:
                raise store_error(self._where, exc) from exc
            self._started = True

    async def _take(self) -> _AsyncConnection:
        """A pooled connection, its watch renewed for the first answer.

        The pool's `getconn` and `putconn` (`_give`) rather than its `connection()`:
        `putconn` rolls back, or closes, what it is given back in a transaction or in
        the middle of a statement, as that context manager's exit would. One the server
        closed while it sat idle is closed here and another taken (`_gone`).
        """
        since = time.monotonic()
        while True:
            try:
                conn = await self._pool.getconn(_LOOK)
            except psycopg_pool.PoolTimeout as exc:
                if (error := _waited(self._where, self._attempts, since)) is not None:
                    raise error from exc
                continue
            except psycopg.Error as exc:
                raise store_error(self._where, exc) from exc
            if not _gone(conn):
                break
            await conn.close()  # the pool makes another in its place
            await self._pool.putconn(conn)
        conn.watch.renew()
        return conn

    async def _give(self, conn: _AsyncConnection) -> bool:
        """Give the connection back (closed if hung up); return whether it was hung up."""
        overdue = conn.watch.stop()
        if overdue:
            await conn.close()  # hung up: the pool must not hand it out again
        conn.idle_since = time.monotonic()
        await self._pool.putconn(conn)
        return overdue

    async def run_alone(
        self, sql: str, params: Sequence[Any], unlock_early: bool = False
    ) -> tuple[list[Row], int]:
        """Run one statement in autocommit mode (its own transaction).

        Returns its rows (none if it returns none) and the rows it changed. With
        `unlock_early` (where the driver `unlocks_early`: the role may write a WAL
        message), it returns once the flush covers the statement's commit, which need
        not have waited for it (one more round trip, see the module).
        """
        conn = await self._take()
        try:
            cursor = conn.cursor()
            try:
                await cursor.execute(sql, params)
            except psycopg.Error:
                if unlock_early and not conn.closed:  # what it read, flushed before the error
                    with suppress(psycopg.Error):
                        await conn.execute(_FLUSH)
                raise
            if unlock_early and not _flushes_itself(sql):
                await conn.execute(_FLUSH)
            found = (await cursor.fetchall(), 0) if _rows(cursor) else ([], cursor.rowcount)
        except psycopg.Error as exc:
            raise store_error(self._where, exc, await self._give(conn)) from exc
        except BaseException:
            await self._give(conn)
            raise
        await self._give(conn)
        return found

    @asynccontextmanager
    async def transaction(self, batched: bool = False) -> AsyncIterator[_AsyncTransaction]:
        """One transaction on a pooled connection: commit on success, else roll back.

        `batched` runs it in pipeline mode: statements go out together (with `BEGIN`, and
        the last ones with `COMMIT`) until a result is read, so `execute` returns -1.
        """
        conn = await self._take()
        watch = conn.watch
        try:
            if not batched:
                async with conn.transaction():
                    yield _AsyncTransaction(conn, watch.renew)
                    watch.renew()  # for the COMMIT
            else:
                async with conn.pipeline() as pipeline, conn.transaction():
                    yield _AsyncTransaction(conn, watch.renew, pipeline)
                    watch.renew()
        except psycopg.Error as exc:
            raise store_error(self._where, exc, await self._give(conn)) from exc
        except BaseException:
            await self._give(conn)
            raise
        await self._give(conn)

    async def close(self) -> None:
        """Close the pool and its connections."""
        await self._pool.close()


class _Transaction:
    """A transaction's statements; each first renews the watch on its answer."""

    __slots__ = ("_conn", "_cursor", "_pipeline", "_renew")

    def __init__(
        self,
        conn: psycopg.Connection[Row],
        renew: Callable[[], None],
        pipeline: psycopg.Pipeline | None = None,
    ) -> None:
        self._conn = conn
        self._cursor = conn.cursor()
        self._renew = renew
        self._pipeline = pipeline

    def fetch_each(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[list[Row]]:
        # One cursor per statement, all sent before any is read: one round trip when pipelined.
        self._renew()
        cursors = [self._conn.cursor() for _ in statements]
        for cursor, (sql, params) in zip(cursors, statements, strict=True):
            cursor.execute(sql, params or None)
        return [cursor.fetchall() for cursor in cursors]

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        self._renew()
        self._cursor.execute(sql, params or None)
        return self._cursor.rowcount

    def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        self._renew()
        self._cursor.execute(sql, params or None)
        if self._pipeline is not None:  # the statement's result (its description) arrives
            self._pipeline.sync()
        return self._cursor.fetchone() if _rows(self._cursor) else None

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        self._renew()
        self._cursor.execute(sql, params or None)
        return self._cursor.fetchall()

    def insert(self, sql: str, params: Sequence[Any], key: str) -> int:
        self._renew()
        self._cursor.execute(f"{sql} RETURNING {key}", params)
        row = self._cursor.fetchone()
        assert row is not None
        return int(row[0])


class _Connection(psycopg.Connection[Row]):
    """A pooled connection, with the watch on its answers for its life."""

    watch: Watch
    idle_since: float
    """When it was last given back to the pool (or made)."""
    attempts: ClassVar[_Attempts] = _Attempts()
    """Where its driver's pool records its attempts to connect (see `_own`)."""

    @classmethod
    def connect(cls, conninfo: str = "", **kwargs: Any) -> Self:
        try:
            conn = super().connect(conninfo, **kwargs)
        except psycopg.Error as exc:
            cls.attempts.failed = exc
            raise
        cls.attempts.failed = None
        return conn


class PostgresDriver:
    """A psycopg `ConnectionPool` on one database (and schema); see `AsyncPostgresDriver`."""

    def __init__(
        self,
        conninfo: str,
        *,
        schema: str | None = None,
        pool_size: int = 10,
        connect_timeout: float = CONNECT_TIMEOUT,
        timeout: float = REQUEST_TIMEOUT,
        pgbouncer: bool = False,
    ) -> None:
        self._conninfo = conninfo
        self._where = redact(conninfo)
        self._options = connection_options(connect_timeout, pgbouncer)
        self._schema = schema
        self._settings = None if pgbouncer else session_settings(schema, timeout)
        self._timeout = connect_timeout
        self._wait = timeout + GRACE
        self._attempts = _Attempts()
        self._pool = psycopg_pool.ConnectionPool[_Connection](
            conninfo,
            connection_class=_own(_Connection, self._attempts),
            configure=self._configure,
            min_size=1,
            max_size=max(1, pool_size),
            kwargs=_unless_given(conninfo, pool_options(connect_timeout, timeout, pgbouncer)),
            open=False,
            name="sessionary",
        )
        self._lock = threading.Lock()
        self._started = False
        self.unlocks_early = False

    def _configure(self, conn: _Connection) -> None:
        if self._settings is not None:
            conn.execute(*self._settings)
        conn.watch = Watch(conn.fileno(), self._wait)
        conn.idle_since = time.monotonic()

    def start(self, setup: Callable[[_Transaction], None]) -> None:
        """Run `setup` (the migrations) on a first connection, then open the pool."""
        with self._lock:
            if self._started:
                return
            try:
                connection = psycopg.Connection.connect(self._conninfo, **self._options)
                with connection as conn:
                    if self._schema is not None:
                        conn.execute(*session_settings(self._schema, None))
                    with conn.transaction():
                        setup(_Transaction(conn, _unbounded))
                    self.unlocks_early = conn.execute(_CAN_FLUSH).fetchone() == (True,)
                self._pool.open(wait=True, timeout=self._timeout)
            except psycopg.Error as exc:
                raise store_error(self._where, exc) from exc
            self._started = True

    def _take(self) -> _Connection:
        """A pooled connection, its watch renewed for the first answer.

        The pool's `getconn` and `putconn` (`_give`) rather than its `connection()`:
        `putconn` rolls back, or closes, what it is given back in a transaction or in
        the middle of a statement, as that context manager's exit would. One the server
        closed while it sat idle is closed here and another taken (`_gone`).
        """
        since = time.monotonic()
        while True:
            try:
                conn = self._pool.getconn(_LOOK)
            except psycopg_pool.PoolTimeout as exc:
                if (error := _waited(self._where, self._attempts, since)) is not None:
                    raise error from exc
                continue
            except psycopg.Error as exc:
                raise store_error(self._where, exc) from exc
            if not _gone(conn):
                break
            conn.close()  # the pool makes another in its place
            self._pool.putconn(conn)
        conn.watch.renew()
        return conn

    def _give(self, conn: _Connection) -> bool:
        """Give the connection back (closed if hung up); return whether it was hung up."""
        overdue = conn.watch.stop()
        if overdue:
            conn.close()  # hung up: the pool must not hand it out again
        conn.idle_since = time.monotonic()
        self._pool.putconn(conn)
        return overdue

    def run_alone(
        self, sql: str, params: Sequence[Any], unlock_early: bool = False
    ) -> tuple[list[Row], int]:
        """Run one statement in autocommit mode; see `AsyncPostgresDriver.run_alone`."""
        conn = self._take()
        try:
            cursor = conn.cursor()
            try:
                cursor.execute(sql, params)
            except psycopg.Error:
                if unlock_early and not conn.closed:
                    with suppress(psycopg.Error):
                        conn.execute(_FLUSH)
                raise
            if unlock_early and not _flushes_itself(sql):
                conn.execute(_FLUSH)
            found = (cursor.fetchall(), 0) if _rows(cursor) else ([], cursor.rowcount)
        except psycopg.Error as exc:
            raise store_error(self._where, exc, self._give(conn)) from exc
        except BaseException:
            self._give(conn)
            raise
        self._give(conn)
        return found

    @contextmanager
    def transaction(self, batched: bool = False) -> Iterator[_Transaction]:
        """One transaction on a pooled connection; see `AsyncPostgresDriver.transaction`."""
        conn = self._take()
        watch = conn.watch
        try:
            if not batched:
                with conn.transaction():
                    yield _Transaction(conn, watch.renew)
                    watch.renew()
            else:
                with conn.pipeline() as pipeline, conn.transaction():
                    yield _Transaction(conn, watch.renew, pipeline)
                    watch.renew()
        except psycopg.Error as exc:
            raise store_error(self._where, exc, self._give(conn)) from exc
        except BaseException:
            self._give(conn)
            raise
        self._give(conn)

    def close(self) -> None:
        """Close the pool and its connections."""
        self._pool.close()
