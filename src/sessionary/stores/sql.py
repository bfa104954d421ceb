"""The SQL server store: every store method once, for PostgreSQL and MySQL/MariaDB alike.

`AsyncSQLStore` speaks to its server through a driver (`AsyncPostgresDriver`,
`AsyncMySQLDriver`: a connection pool, transactions, and the mapping of the driver's
exceptions onto sessionary's) and a `Dialect` (the SQL that differs). The sync twin,
`SQLStore`, is generated from this module; the drivers are hand-written pairs.

Concurrency: every write to a session runs in one transaction that first locks the
session's row (`SELECT ... FOR UPDATE`), so writers on any connection, process or
machine queue on that row, and the head they build on cannot move before they commit.
The one exception is cheaper, not looser: an append after the head this store's own
last append left (`_heads`) starts with an UPDATE of that row guarded by the pk, head
and depth it remembers, which takes the same lock and checks the same head in one
statement; if the head moved, nothing is written and the locking path runs. Where
other writers keep moving a session's head (`_moved`), its appends take the locking path
at once and, where the driver can flush after a commit that did not wait for it
(`unlocks_early`), release the row before the flush (`unlocked_append_sql`,
`unlock_early`): the next writer in the queue goes on while this one waits for the
flush, instead of one append per flush.
State documents are locked the same way, their row created first if missing. Reads are
single statements wherever consistency depends on it (a path), so they never mix two
moments under READ COMMITTED.

The schema is migrated on first use, in one transaction under a lock where the server
allows (see each dialect), and recorded in `sessionary_migrations`. With `migrate=False`
(the URL's `migrate=false`) nothing is created or changed: the first use only checks
that the schema is there at this code's version, so a database role with no right to
create tables can run the store once the schema was applied by hand
(`sessionary schema --print`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

from sessionary.errors import (
    AlreadyExists,
    HeadConflict,
    InvalidInput,
    MessageNotFound,
    PayloadTooLarge,
    SchemaError,
    SessionNotFound,
)
from sessionary.model import Message, to_micros
from sessionary.query import Query
from sessionary.records import (
    ANY,
    Document,
    Expected,
    Head,
    Page,
    Parent,
    Scope,
    SearchHit,
    SessionFilter,
    SessionInfo,
    SessionUpdate,
    State,
    encode_cursor,
)
from sessionary.retention import Clock, clock_us, is_expired, system_clock, ttl_micros
from sessionary.stores import _sql_common as shared
from sessionary.stores._common import (
    DEFAULT_MAX_MESSAGE_BYTES,
    Prepared,
    check_delete,
    check_document_ref,
    check_filter,
    check_head,
    check_label,
    check_limit,
    check_session_fields,
    check_stored_prefix,
    check_totals,
    check_ttl_update,
    encode_imported_state,
    encode_json,
    prepare_messages,
    scopes_from_rows,
    surviving_ancestor,
)
from sessionary.stores._documents import key_hash
from sessionary.stores._rows import (
    FOREVER,
    decode_rows,
    list_sql,
    message_from_row,
    session_from_row,
    session_page,
    stored_copy,
)
from sessionary.stores._sql_common import (
    CHUNK,
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
    Dialect,
    decode_cursor_pair,
    expired_row,
    import_rows,
    plan_chain,
)
from sessionary.stores._sql_documents import AsyncSQLDocuments
from sessionary.stores._sql_driver import AsyncDriver, AsyncTransaction
from sessionary.stores._sql_governance import AsyncSQLGovernance
from sessionary.stores._sql_state import AsyncSQLState
from sessionary.stores.base import DOCUMENT_SEARCH, DOCUMENTS, SEARCH

__all__ = ["AsyncDriver", "AsyncSQLStore", "AsyncTransaction"]

_INDEX_EVERY = 256
"""Where the search index catches up in batches, a store catches it up before every
this many messages it appends."""

_INDEX_WAIT = 10
"""Seconds a search waits for another client's catch-up of the search index."""

_EXPIRY_OF_S = ", ".join(f"s.{column}" for column in shared.EXPIRY_COLUMNS.split(", "))

_HEADS_KEPT = 4096
"""The most session heads a store remembers; it forgets them all when full."""


def _located(
    row: Sequence[Any] | None, session_id: str, message_id: str | None, now: int
) -> tuple[int, str | None, int, int | None]:
    """(pk, head id, head depth, depth of `message_id` or None) from a `LOCATE_SQL` row.

    A session expired by `now` is not found.
    """
    if row is None or expired_row(row[4:], now):
        raise SessionNotFound(f"no session {session_id!r} in this scope")
    if message_id is not None and row[3] is None:
        raise MessageNotFound(f"no message {message_id!r} in session {session_id!r}")
    return int(row[0]), row[1], int(row[2]), row[3]


@asynccontextmanager
async def _released(tx: AsyncTransaction, unlock: Sequence[str]) -> AsyncIterator[None]:
    """Run the body, then `unlock` (giving a named lock back), also after it failed.

    Not after a cancellation: aiomysql closes a connection cancelled mid-statement, and
    the server releases its named locks with it; a statement there would only fail, and
    its error would take the cancellation's place (wait_for would raise a StoreError).
    """
    try:
        yield
    except Exception:
        for statement in unlock:
            await tx.execute(statement)
        raise
    for statement in unlock:
        await tx.execute(statement)


class AsyncSQLStore(AsyncSQLState, AsyncSQLDocuments, AsyncSQLGovernance):
    """A store on an SQL server, through a driver and a dialect.

    The state methods come from `AsyncSQLState` (in `_sql_state`), the document methods
    from `AsyncSQLDocuments` (in `_sql_documents`), erasure and retention from
    `AsyncSQLGovernance` (in `_sql_governance`).

    Args:
        driver: The connection pool (e.g. `AsyncPostgresDriver`).
        dialect: The server's SQL (e.g. `PostgresDialect`).
        max_message_bytes: The largest encoded message (and state or document) accepted.
        migrate: Create or upgrade the schema on first use; False only checks its version.
        clock: The time now, for what it writes and for expiry (see `sessionary.retention`).
    """

    capabilities = frozenset({SEARCH, DOCUMENTS, DOCUMENT_SEARCH})

    def __init__(
        self,
        driver: AsyncDriver,
        dialect: Dialect,
        *,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        migrate: bool = True,
        clock: Clock = system_clock,
    ) -> None:
        self.max_message_bytes = max_message_bytes
        self.clock = clock
        self._driver = driver
        self._dialect = dialect
        self._setup = self._migrate if migrate else self._check_schema
        self._ready = False
        self._unindexed = _INDEX_EVERY
        """Messages appended since this store last caught the search index up. It starts
        full, so that a store's first append catches up too: stores that each append
        fewer than `_INDEX_EVERY` messages cannot grow the backlog without bound."""
        self._heads: dict[tuple[str, str, str], tuple[int, str | None, int]] = {}
        """Per session key, (pk, head id, head depth) as this store last wrote them.

        Only a hint: an append after a remembered head checks on the server that the
        head is still there, and falls back to locking the row if not.
        """
        self._moved: set[tuple[str, str, str]] = set()
        """Sessions whose head another writer moved between this store's last two appends.

        Their appends lock the row at once (`append_sql`), unlocking early, rather than
        first try a remembered head that other writers keep moving; a locked append that
        finds the head where this store left it takes the session off the set.
        """

    async def __aenter__(self) -> AsyncSQLStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the store's connections."""
        await self._driver.close()

    @asynccontextmanager
    async def _begin(self, batched: bool = False) -> AsyncIterator[AsyncTransaction]:
        if not self._ready:
            await self._driver.start(self._setup)
            self._ready = True
        async with self._driver.transaction(batched) as tx:
            yield tx

    async def _read_alone(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """Run one query as a transaction of its own: one round trip, one snapshot.

        A read that is a single statement needs no `BEGIN` and `COMMIT` around it.
        """
        if not self._ready:
            await self._driver.start(self._setup)
            self._ready = True
        return (await self._driver.run_alone(sql, params))[0]

    async def _migrate(self, tx: AsyncTransaction) -> None:
        """Apply pending migrations in order, under the dialect's migration lock."""
        dialect = self._dialect
        for statement in dialect.migration_lock():
            locked = await tx.fetchone(statement)
            if locked is not None and locked[0] == 0:
                raise SchemaError(f"{dialect.name}: timed out waiting for another migration")
        async with _released(tx, dialect.migration_unlock()):
            await tx.execute(dialect.migrations_table)
            row = await tx.fetchone("SELECT coalesce(max(version), 0) FROM sessionary_migrations")
            current = row[0] if row is not None else 0
            latest = dialect.migrations[-1][0]
            if current > latest:
                raise SchemaError(
                    f"the {dialect.name} schema is at version {current}, newer than this "
                    f"sessionary understands ({latest}); upgrade sessionary"
                )
            for version, name, statements in dialect.migrations:
                if version > current:
                    for statement in statements:
                        await tx.execute(statement)
                    await tx.execute(
                        "INSERT INTO sessionary_migrations (version, name) VALUES (%s, %s)",
                        (version, name),
                    )

    async def _check_schema(self, tx: AsyncTransaction) -> None:
        """Refuse, changing nothing, a schema that is missing or not at this code's version."""
        dialect = self._dialect
        found = await tx.fetchone(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = "
            f"{dialect.current_schema} AND table_name = 'sessionary_migrations'"
        )
        latest = dialect.migrations[-1][0]
        current = 0
        if found is not None and found[0]:
            row = await tx.fetchone("SELECT coalesce(max(version), 0) FROM sessionary_migrations")
            current = row[0] if row is not None else 0
        if current == latest:
            return
        hint = (
            "migrate=false leaves the schema alone: apply `sessionary schema --print` with a "
            "role that may create tables, or open it once without migrate=false"
        )
        if current > latest:
            hint = "upgrade sessionary"
        state = f"is at version {current}" if current else "has no sessionary tables"
        raise SchemaError(
            f"the {dialect.name} schema {state}, and this sessionary needs version {latest}; "
            + hint
        )

    # ------------------------------------------------------------------ sessions

    async def _session_info(self, tx: AsyncTransaction, pk: int) -> SessionInfo:
        row = await tx.fetchone(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE pk = %s", (pk,))
        assert row is not None
        return session_from_row(row)

    def _now_us(self) -> int:
        """The store's clock now, in microseconds (what writes stamp, what expiry checks)."""
        return clock_us(self.clock)

    async def _session_pk(self, tx: AsyncTransaction, scope: Scope, session_id: str) -> int:
        """A live session's pk (an expired one counts as missing)."""
        row = await tx.fetchone(
            f"SELECT pk, {shared.EXPIRY_COLUMNS} FROM sessions WHERE {shared.SCOPED}",
            (scope.tenant, scope.user, session_id),
        )
        if row is None or expired_row(row[1:], self._now_us()):
            raise SessionNotFound(f"no session {session_id!r} in this scope")
        return int(row[0])

    async def _lock(
        self, tx: AsyncTransaction, scope: Scope, session_id: str, live: bool = True
    ) -> tuple[int, str | None, int]:
        """Lock a session's row until the transaction ends; return (pk, head id, depth).

        An expired session counts as missing, unless `live` is False.
        """
        row = await tx.fetchone(shared.LOCK_SQL, (scope.tenant, scope.user, session_id))
        if row is None or (live and expired_row(row[3:], self._now_us())):
            raise SessionNotFound(f"no session {session_id!r} in this scope")
        return int(row[0]), row[1], int(row[2])

    async def _insert_session(
        self, tx: AsyncTransaction, scope: Scope, info: SessionInfo, head: Sequence[Any]
    ) -> int:
        """Insert a session row with `head` = (head id, head depth, message count)."""
        metadata = encode_json(info.metadata, "session metadata", self.max_message_bytes)
        row = shared.session_row(scope, info, metadata, head, self._now_us())
        return await tx.insert(shared.INSERT_SESSION, row, "pk")

    async def create_session(self, scope: Scope, info: SessionInfo) -> SessionInfo:
        check_session_fields(info)
        try:
            async with self._begin() as tx:
                row = replace(info, version=1)
                pk = await self._insert_session(tx, scope, row, (None, -1, 0))
                return await self._session_info(tx, pk)
        except AlreadyExists:
            raise AlreadyExists(f"session {info.id!r} already exists") from None

    async def get_session(self, scope: Scope, session_id: str) -> SessionInfo | None:
        rows = await self._read_alone(
            f"SELECT {SESSION_COLUMNS} FROM sessions WHERE {shared.SCOPED}",
            (scope.tenant, scope.user, session_id),
        )
        info = session_from_row(rows[0]) if rows else None
        return None if info is None or is_expired(info, self._now_us()) else info

    async def list_sessions(
        self, scope: Scope, where: SessionFilter, limit: int, cursor: str | None
    ) -> Page[SessionInfo]:
        check_limit(limit)
        check_filter(where)
        bucket = self._dialect.activity_bucket
        sql, params = list_sql(scope, where, limit, cursor, now_us=self._now_us(), bucket=bucket)
        async with self._begin() as tx:
            rows = await tx.fetchall(sql, params)
        return session_page(rows, limit)

    async def update_session(
        self, scope: Scope, session_id: str, update: SessionUpdate
    ) -> SessionInfo:
        check_label(update.name, "name")
        check_label(update.end_reason, "end_reason")
        check_ttl_update(update)
        metadata = None
        if update.metadata is not None:
            metadata = encode_json(update.metadata, "session metadata", self.max_message_bytes)
        now = self._now_us()
        ended = None
        if update.end_reason:
            ended = to_micros(update.ended_at) if update.ended_at else now
        async with self._begin() as tx:
            pk = (await self._lock(tx, scope, session_id))[0]
            totals = await tx.fetchone(
                "SELECT input_tokens, output_tokens, cost FROM sessions WHERE pk = %s", (pk,)
            )
            assert totals is not None
            check_totals(totals[0], totals[1], totals[2], update)
            await tx.execute(
                "UPDATE sessions SET name = coalesce(%s, name), "
                "metadata = coalesce(%s, metadata), end_reason = coalesce(%s, end_reason), "
                "ended_us = coalesce(%s, ended_us), input_tokens = input_tokens + %s, "
                "output_tokens = output_tokens + %s, cost = cost + %s, version = version + 1, "
                "updated_us = %s, ttl_us = CASE WHEN %s = 1 THEN %s ELSE ttl_us END, "
                "ttl_sliding = coalesce(%s, ttl_sliding) WHERE pk = %s",
                (
                    update.name, metadata, update.end_reason, ended, update.add_input_tokens,
                    update.add_output_tokens, update.add_cost, now,
                    0 if update.ttl is None else 1, ttl_micros(update.ttl or None),
                    None if update.ttl_sliding is None else int(update.ttl_sliding), pk,
                ),
            )  # fmt: skip
            return await self._session_info(tx, pk)

    async def delete_session(self, scope: Scope, session_id: str) -> bool:
        async with self._begin() as tx:
            try:
                pk = (await self._lock(tx, scope, session_id, live=False))[0]
            except SessionNotFound:
                return False
            await tx.execute("DELETE FROM messages WHERE session_pk = %s", (pk,))
            await tx.execute(
                f"DELETE FROM states WHERE {shared.STATE_KEY}",
                ("session", scope.tenant, scope.user, session_id),
            )
            await self._delete_session_documents(tx, scope, session_id)
            await tx.execute("DELETE FROM sessions WHERE pk = %s", (pk,))
            return True

    # ------------------------------------------------------------------ appends

    async def append(
        self,
        scope: Scope,
        session_id: str,
        messages: Sequence[Message],
        parent: Parent,
        expected_head: Expected,
    ) -> list[Message]:
        prepared = prepare_messages(messages, self.max_message_bytes)
        if self._dialect.pending_sql is not None:
            # Keep the search backlog short, so that no search has a long one to index.
            self._unindexed += len(prepared)
            if self._unindexed >= _INDEX_EVERY:
                self._unindexed = 0
                await self._catch_up_search(wait=False)
        if parent is Head.HEAD and len(prepared) <= CHUNK:
            done = await self._append_alone(scope, session_id, prepared, expected_head)
            if done is not None:
                return done
        # Batched: BEGIN, the lock and the look-up of the batch's ids go out in one round
        # trip, the INSERT, the head's UPDATE and COMMIT in a second.
        async with self._begin(batched=True) as tx:
            pk, head_id, head_depth, existing = await self._lock_and_find(
                tx, scope, session_id, prepared
            )
            # A batch wrong whatever the head says so first (`plan_chain` checks it too).
            check_stored_prefix(prepared, existing)
            stale = expected_head is not Head.ANY and expected_head != head_id
            if stale and len(existing) < len(prepared):
                raise HeadConflict(
                    f"session {session_id!r} head is {head_id!r}, not {expected_head!r}"
                )
            at = (head_id, head_depth) if parent is Head.HEAD else await self._at(tx, pk, parent)
            index = self._dialect.index_text
            out, rows, last = plan_chain(pk, prepared, at, existing, index)
            if rows:
                await self._insert_messages(tx, rows)
                await tx.execute(
                    "UPDATE sessions SET head_id = %s, head_depth = %s, "
                    "message_count = message_count + %s, updated_us = %s WHERE pk = %s",
                    (*last, len(rows), self._now_us(), pk),
                )
        if rows:
            self._saw_head((scope.tenant, scope.user, session_id), pk, last)
        return out

    async def _append_alone(
        self, scope: Scope, session_id: str, prepared: Sequence[Prepared], expected: Expected
    ) -> list[Message] | None:
        """Append after the head in one round trip, where the dialect has a script for it.

        Where this store saw the session's head last (its own last append), it appends
        after that head if the head has not moved since (`append_after_sql`); else it
        locks, checks and appends (`append_sql`), unlocking early where other writers
        moved the head (see the module). Returns None where it did not append
        (no such session, a stale head, an id already stored, no script, rows too large
        for one statement): the general path then does what those cases need.
        """
        dialect = self._dialect
        if not dialect.appends_alone:
            return None
        if not self._ready:
            await self._driver.start(self._setup)
            self._ready = True
        key = (scope.tenant, scope.user, session_id)
        seen = self._heads.get(key)
        at = (0, None, -1) if seen is None else seen
        out, rows, last = plan_chain(at[0], prepared, at[1:], {}, dialect.index_text)
        now = self._now_us()
        try:
            if seen is not None and key not in self._moved and expected in (Head.ANY, seen[1]):
                params = dialect.append_after_params(seen, rows, now)
                sql = dialect.append_after_sql(len(rows))
                if (await self._driver.run_alone(sql, params))[1]:
                    self._saw_head(key, seen[0], last)
                    return out
                self._moved.add(key)
            params = dialect.append_params(key, expected, rows, now)
            contended = key in self._moved and self._driver.unlocks_early
            sql = (dialect.unlocked_append_sql if contended else dialect.append_sql)(len(rows))
            found = (await self._driver.run_alone(sql, params, unlock_early=contended))[0]
        except AlreadyExists:
            self._heads.pop(key, None)
            return None
        except PayloadTooLarge:  # one script cannot carry the rows; statements of their own can
            return None
        if not found or not found[0][1]:
            self._heads.pop(key, None)
            return None
        parent_id, _, pk, depth = found[0]
        if seen is not None and parent_id != seen[1]:
            self._moved.add(key)
        else:
            self._moved.discard(key)
        out = []
        for item in prepared:
            out.append(stored_copy(item.message, parent_id))
            parent_id = item.message.id
        self._saw_head(key, int(pk), (parent_id, int(depth) + len(prepared)))
        return out

    def _saw_head(self, key: tuple[str, str, str], pk: int, head: tuple[str | None, int]) -> None:
        """Remember a session's head as this store's last write left it (see `_heads`)."""
        if len(self._heads) >= _HEADS_KEPT:
            self._heads.clear()
            self._moved.clear()
        self._heads[key] = (pk, *head)

    async def _lock_and_find(
        self, tx: AsyncTransaction, scope: Scope, session_id: str, prepared: Sequence[Prepared]
    ) -> tuple[int, str | None, int, dict[str, tuple[Any, ...]]]:
        """Lock the session's row; return (pk, head id, depth) and the batch's stored rows.

        The look-ups name the session by its scope, not its key, so that they can go out
        with the lock; they run after it, so they see every append committed before it.
        """
        key = (scope.tenant, scope.user, session_id)
        ids = [item.message.id for item in prepared]
        statements: list[tuple[str, Sequence[Any]]] = [(shared.LOCK_SQL, key)]
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start : start + CHUNK]
            marks = ", ".join(["%s"] * len(chunk))
            statements.append((f"{shared.FIND_SQL} AND m.id IN ({marks})", (*key, *chunk)))
        lock, *found = await tx.fetch_each(statements)
        if not lock or expired_row(lock[0][3:], self._now_us()):
            raise SessionNotFound(f"no session {session_id!r} in this scope")
        pk, head_id, head_depth = lock[0][:3]
        existing = {row[0]: row for rows in found for row in rows}
        return int(pk), head_id, int(head_depth), existing

    async def _at(self, tx: AsyncTransaction, pk: int, parent: Parent) -> tuple[str | None, int]:
        """Return (id, depth) of an explicit parent; (None, -1) for a new root."""
        if parent is None:
            return None, -1
        if isinstance(parent, str):
            row = await tx.fetchone(
                "SELECT depth FROM messages WHERE session_pk = %s AND id = %s", (pk, parent)
            )
            if row is not None:
                return parent, int(row[0])
        raise MessageNotFound(f"parent message {parent!r} is not in this session")

    async def _insert_messages(self, tx: AsyncTransaction, rows: Sequence[Sequence[Any]]) -> None:
        for chunk in shared.insert_chunks(rows):
            await self._insert_chunk(tx, chunk)

    async def _insert_chunk(self, tx: AsyncTransaction, rows: Sequence[Sequence[Any]]) -> None:
        """Insert rows in one statement, or in halves where the driver refuses it as too large.

        (MySQL's statements must fit the server's `max_allowed_packet`; its driver refuses
        one that does not before sending it, so the transaction goes on.)
        """
        try:
            await tx.execute(*shared.insert_statement(rows))
        except PayloadTooLarge as exc:
            if len(rows) == 1:
                message = f"message {rows[0][1]} does not fit in one statement: {exc}"
                raise PayloadTooLarge(message) from None
            half = len(rows) // 2
            await self._insert_chunk(tx, rows[:half])
            await self._insert_chunk(tx, rows[half:])

    # ------------------------------------------------------------------ other writes

    async def update_message(self, scope: Scope, session_id: str, message: Message) -> Message:
        (item,) = prepare_messages([message], self.max_message_bytes)
        async with self._begin() as tx:
            pk = (await self._lock(tx, scope, session_id))[0]
            row = await tx.fetchone(
                "SELECT role FROM messages WHERE session_pk = %s AND id = %s", (pk, message.id)
            )
            if row is None:
                raise MessageNotFound(f"no message {message.id!r} in session {session_id!r}")
            if row[0] != message.role:
                raise InvalidInput(f"a message's role cannot change ({row[0]} -> {message.role})")
            await tx.execute(
                "UPDATE messages SET data = %s, text = %s WHERE session_pk = %s AND id = %s",
                (item.body, self._dialect.index_text(item.text), pk, message.id),
            )
            await tx.execute(
                "UPDATE sessions SET updated_us = %s WHERE pk = %s", (self._now_us(), pk)
            )
            stored = await tx.fetchone(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_pk = %s AND id = %s",
                (pk, message.id),
            )
        assert stored is not None
        return message_from_row(stored)

    async def delete_message(self, scope: Scope, session_id: str, message_id: str) -> list[str]:
        async with self._begin() as tx:
            pk, head_id, _ = await self._lock(tx, scope, session_id)
            root = await tx.fetchone(
                "SELECT parent_id, depth FROM messages WHERE session_pk = %s AND id = %s",
                (pk, message_id),
            )
            if root is None:
                raise MessageNotFound(f"no message {message_id!r} in session {session_id!r}")
            doomed = [r[0] for r in await tx.fetchall(shared.SUBTREE_SQL, (pk, message_id, pk))]
            await self._delete_rows(tx, pk, doomed)
            if head_id in doomed:
                await self._set_head_row(tx, pk, root[0], root[1] - 1)
            await tx.execute(
                "UPDATE sessions SET message_count = message_count - %s, updated_us = %s "
                "WHERE pk = %s",
                (len(doomed), self._now_us(), pk),
            )
            return doomed

    async def delete_messages(
        self, scope: Scope, session_id: str, message_ids: Sequence[str]
    ) -> list[str]:
        async with self._begin() as tx:
            pk, head_id, _ = await self._lock(tx, scope, session_id)
            parents: dict[str, str | None] = {}
            children: list[tuple[str, str]] = []
            for start in range(0, len(message_ids), CHUNK):
                chunk = message_ids[start : start + CHUNK]
                marks = ", ".join(["%s"] * len(chunk))
                for row in await tx.fetchall(
                    f"SELECT id, parent_id FROM messages WHERE session_pk = %s AND id IN ({marks})",
                    (pk, *chunk),
                ):
                    parents[row[0]] = row[1]
                children += await tx.fetchall(
                    "SELECT parent_id, id FROM messages WHERE session_pk = %s "
                    f"AND parent_id IN ({marks})",
                    (pk, *chunk),
                )
            check_delete(session_id, message_ids, parents, children)
            await self._delete_rows(tx, pk, message_ids)
            if head_id in parents:
                kept = surviving_ancestor(head_id, parents)
                depth = await tx.fetchone(
                    "SELECT depth FROM messages WHERE session_pk = %s AND id = %s", (pk, kept)
                )
                await self._set_head_row(tx, pk, kept, -1 if depth is None else int(depth[0]))
            if message_ids:
                await tx.execute(
                    "UPDATE sessions SET message_count = message_count - %s, updated_us = %s "
                    "WHERE pk = %s",
                    (len(message_ids), self._now_us(), pk),
                )
            return list(message_ids)

    async def _delete_rows(self, tx: AsyncTransaction, pk: int, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start : start + CHUNK]
            await tx.execute(
                "DELETE FROM messages WHERE session_pk = %s "
                f"AND id IN ({', '.join(['%s'] * len(chunk))})",
                (pk, *chunk),
            )

    async def clear_messages(self, scope: Scope, session_id: str) -> int:
        async with self._begin() as tx:
            pk = (await self._lock(tx, scope, session_id))[0]
            count = await tx.execute("DELETE FROM messages WHERE session_pk = %s", (pk,))
            await tx.execute(
                "UPDATE sessions SET head_id = NULL, head_depth = -1, message_count = 0, "
                "updated_us = %s WHERE pk = %s",
                (self._now_us(), pk),
            )
            return count

    async def set_head(
        self, scope: Scope, session_id: str, message_id: str | None, expected_head: Expected = ANY
    ) -> None:
        async with self._begin() as tx:
            pk, head_id, _ = await self._lock(tx, scope, session_id)
            check_head(session_id, head_id, expected_head)
            depth = -1
            if message_id is not None:
                row = await tx.fetchone(
                    "SELECT depth FROM messages WHERE session_pk = %s AND id = %s",
                    (pk, message_id),
                )
                if row is None:
                    raise MessageNotFound(f"no message {message_id!r} in session {session_id!r}")
                depth = int(row[0])
            await self._set_head_row(tx, pk, message_id, depth)

    async def _set_head_row(
        self, tx: AsyncTransaction, pk: int, head_id: str | None, depth: int
    ) -> None:
        await tx.execute(
            "UPDATE sessions SET head_id = %s, head_depth = %s WHERE pk = %s",
            (head_id, depth, pk),
        )

    # ------------------------------------------------------------------ reads

    async def _locate(
        self, tx: AsyncTransaction, scope: Scope, session_id: str, message_id: str | None
    ) -> tuple[int, str | None, int, int | None]:
        """Return (pk, head id, head depth, depth of `message_id` or None) in one read."""
        row = await tx.fetchone(
            shared.LOCATE_SQL, (message_id, scope.tenant, scope.user, session_id)
        )
        return _located(row, session_id, message_id, self._now_us())

    async def get_message(self, scope: Scope, session_id: str, message_id: str) -> Message | None:
        rows = await self._read_alone(
            f"SELECT s.pk, m.{MESSAGE_COLUMNS.replace(', ', ', m.')}, {_EXPIRY_OF_S} "
            "FROM sessions AS s "
            "LEFT JOIN messages AS m ON m.session_pk = s.pk AND m.id = %s "
            "WHERE s.tenant = %s AND s.user_id = %s AND s.id = %s",
            (message_id, scope.tenant, scope.user, session_id),
        )
        if not rows or expired_row(rows[0][6:], self._now_us()):
            raise SessionNotFound(f"no session {session_id!r} in this scope")
        row = rows[0]
        return None if row[1] is None else message_from_row(row[1:6])

    async def get_path(
        self, scope: Scope, session_id: str, leaf: str | None, limit: int | None
    ) -> list[Message]:
        check_limit(limit)
        steps = limit or FOREVER
        if leaf is None:
            # The common read (a one-chain session's latest messages) in one statement.
            rows = await self._read_alone(
                shared.LINEAR_HEAD_SQL, (steps, scope.tenant, scope.user, session_id)
            )
            if rows:
                return decode_rows(rows)
        return await self._walked_path(scope, session_id, leaf, steps)

    async def _walked_path(
        self, scope: Scope, session_id: str, leaf: str | None, steps: int
    ) -> list[Message]:
        """The last `steps` messages of the path to `leaf` (None: the head), walked up."""
        async with self._begin() as tx:
            pk, head_id, _, _ = await self._locate(tx, scope, session_id, leaf)
            start = head_id if leaf is None else leaf
            if start is None:
                return []
            rows = await tx.fetchall(shared.PATH_SQL, (pk, start, pk, steps))
        return decode_rows(rows)

    async def get_path_and_document(
        self,
        scope: Scope,
        session_id: str,
        leaf: str | None,
        limit: int | None,
        namespace: str,
        key: str,
    ) -> tuple[list[Message], Document | None]:
        """`get_path` and a session document: one statement for a live one-chain session.

        (On MySQL, a second one reads the document, if the first found it: see
        `MySQLDialect.head_and_document_read`.)
        """
        check_limit(limit)
        check_document_ref(namespace, key)
        steps = limit or FOREVER
        if leaf is None:
            live = (scope.tenant, scope.user, session_id, self._now_us())
            read = self._dialect.head_and_document_read(steps, live, namespace, key_hash(key))
            rows = await self._read_alone(*read)
            if rows:
                path, doc = self._dialect.head_and_document(rows, namespace, key)
                if isinstance(doc, int):  # its version as the read found it (immutable)
                    doc = await self.get_document(scope, "session", session_id, namespace, key, doc)
                return path, doc
        path = await self._walked_path(scope, session_id, leaf, steps)
        return path, await self.get_document(scope, "session", session_id, namespace, key, None)

    async def get_children(self, scope: Scope, session_id: str, message_id: str) -> list[Message]:
        async with self._begin() as tx:
            pk = (await self._locate(tx, scope, session_id, message_id))[0]
            rows = await tx.fetchall(
                f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_pk = %s "
                "AND parent_id = %s ORDER BY seq",
                (pk, message_id),
            )
        return decode_rows(rows)

    async def get_path_length(self, scope: Scope, session_id: str, leaf: str | None) -> int:
        rows = await self._read_alone(
            shared.LOCATE_SQL, (leaf, scope.tenant, scope.user, session_id)
        )
        found = rows[0] if rows else None
        _, head_id, head_depth, depth = _located(found, session_id, leaf, self._now_us())
        if leaf is not None:
            return int(depth or 0) + 1
        return 0 if head_id is None else head_depth + 1

    async def page_messages(
        self, scope: Scope, session_id: str, cursor: str | None, limit: int
    ) -> tuple[list[Message], str | None]:
        check_limit(limit)
        depth, seq = decode_cursor_pair(cursor)
        async with self._begin() as tx:
            pk = await self._session_pk(tx, scope, session_id)
            rows = await tx.fetchall(
                f"SELECT {MESSAGE_COLUMNS}, depth, seq FROM messages WHERE session_pk = %s "
                "AND (depth > %s OR (depth = %s AND seq > %s)) ORDER BY depth, seq LIMIT %s",
                (pk, depth, depth, seq, limit),
            )
        next_cursor = encode_cursor(rows[-1][5], rows[-1][6]) if len(rows) == limit else None
        return decode_rows(rows), next_cursor

    # ------------------------------------------------------------------ search

    async def search(
        self,
        scope: Scope,
        query: Query,
        limit: int,
        session_id: str | None,
        role: str | None,
    ) -> list[SearchHit]:
        check_limit(limit)
        sql, params = self._dialect.search_sql(
            scope, query, limit, session_id, role, self._now_us()
        )
        await self._catch_up_search()
        async with self._begin() as tx:
            if session_id is not None:
                await self._session_pk(tx, scope, session_id)
            rows = await tx.fetchall(sql, params)
        return self._dialect.search_hits(rows, query, limit)

    async def _catch_up_search(self, wait: bool = True) -> None:
        """Index every message the search index has yet to take in (see `pending_sql`).

        Catch-ups take turns under the dialect's lock. Without `wait`, this returns at
        once if another is under way; with it, it waits up to `_INDEX_WAIT` seconds,
        then goes ahead anyway (the statements stay correct, only a deadlock gets
        likelier).
        """
        dialect = self._dialect
        if dialect.pending_sql is None:
            return
        while True:
            async with self._begin() as tx:
                if dialect.index_lock:
                    taken = await tx.fetchone(dialect.index_lock, (_INDEX_WAIT if wait else 0,))
                    if not wait and (taken is None or taken[0] != 1):
                        return
                unlock = [dialect.index_unlock] if dialect.index_unlock else []
                async with _released(tx, unlock):
                    pending = await tx.fetchall(dialect.pending_sql)
                    if pending:
                        for statement, params in dialect.index_pending(pending):
                            await tx.execute(statement, params)
            # A batch short of full was the whole queue as it stood: nothing is left that
            # was committed before this catch-up began.
            if not pending or len(pending) < dialect.pending_batch:
                return

    # ------------------------------------------------------------------ whole stores

    async def list_scopes(self) -> list[Scope]:
        async with self._begin() as tx:
            rows = await tx.fetchall(
                "SELECT tenant, user_id FROM sessions UNION SELECT tenant, user_id FROM states "
                "WHERE level IN ('user', 'app') AND version > 0 "
                "UNION SELECT tenant, user_id FROM documents "
                "WHERE level IN ('user', 'app') AND version > 0"
            )
        return scopes_from_rows(rows)

    # ------------------------------------------------------------------ whole sessions

    async def import_session(
        self,
        scope: Scope,
        info: SessionInfo,
        messages: Sequence[Message],
        state: State | None,
    ) -> SessionInfo:
        prepared = prepare_messages(messages, self.max_message_bytes)
        check_session_fields(info)
        state_text = encode_imported_state(state, self.max_message_bytes)
        rows, head = import_rows(info, prepared, self._dialect.index_text)
        try:
            async with self._begin() as tx:
                pk = await self._insert_session(tx, scope, info, head)
                await self._insert_messages(tx, [(pk, *row) for row in rows])
                if state_text is not None and state is not None:
                    await tx.execute(
                        f"INSERT INTO states ({', '.join(shared.STATE_COLUMNS)}) "
                        "VALUES (%s, %s, %s, %s, %s, %s)",
                        ("session", scope.tenant, scope.user, info.id, state_text, state.version),
                    )
                return await self._session_info(tx, pk)
        except AlreadyExists:
            raise AlreadyExists(f"session {info.id!r} already exists") from None
