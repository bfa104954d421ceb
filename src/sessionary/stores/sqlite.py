"""The SQLite engine, the default store: `sqlite:///relative.db`, `sqlite:////abs/path.db`.

This module holds messages: appends, the tree, reads and search. The engine is built in
four layers: `_sqlite_base` (the connection, durability, migrations, transactions),
`_sqlite_registry` (session rows and state documents), `_sqlite_documents` (versioned
documents), and this one. An append checks the head it builds on under SQLite's write
lock (inside its `BEGIN IMMEDIATE` transaction, or inside the one `INSERT` of the common
case), so appends from any number of threads and processes never interleave or build on a
stale head.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, cast

from sessionary.errors import (
    InvalidInput,
    MessageNotFound,
    SessionNotFound,
)
from sessionary.model import Message, to_micros
from sessionary.query import Query, to_fts5
from sessionary.records import (
    ANY,
    HEAD,
    Document,
    Expected,
    Parent,
    Scope,
    SearchHit,
    SessionInfo,
    State,
    decode_cursor,
    encode_cursor,
)
from sessionary.retention import Clock, live_sql, system_clock
from sessionary.stores._common import (
    DEFAULT_MAX_MESSAGE_BYTES,
    Prepared,
    check_delete,
    check_head,
    check_limit,
    check_stored_prefix,
    encode_imported_state,
    gc_paused,
    path_and_document,
    prepare_messages,
    stored_after_new,
    surviving_ancestor,
)
from sessionary.stores._rows import FOREVER, first, stored_copy
from sessionary.stores._sqlite_documents import SQLiteDocuments
from sessionary.stores._sqlite_index import (
    INDEX_BATCH,
    catch_up,
    index_pending,
    lower_watermark,
    reindex,
    unindex_where,
)
from sessionary.stores._sqlite_rows import (
    FOLLOW_SQL,
    INSERT_SQL,
    LINEAR_PATH_SQL,
    MESSAGE_COLUMNS,
    MESSAGE_SQL,
    PATH_SQL,
    PLACE_HEAD_SQL,
    STATE_SQL,
    decode_chain,
    decode_rows,
    message_from_row,
    store_error,
)
from sessionary.stores._textmatch import message_hits, pool_size
from sessionary.stores.base import DOCUMENT_SEARCH, DOCUMENTS, SEARCH

__all__ = ["SQLiteEngine"]

_HeadState = tuple[int, int | None, int, str | None]
"""A session's pk and its head's (seq, depth, id), as an append after the head needs them."""
_HEADS_KEPT = 1024
"""Sessions whose head one engine remembers between appends (the oldest is forgotten)."""


def _insert_row(
    pk: int, item: Prepared, parent_seq: int | None, depth: int, parent_id: str | None
) -> tuple[Any, ...]:
    """The parameters of `INSERT_SQL` for a message under a parent at `depth`."""
    msg = item.message
    row = (pk, msg.id, parent_seq, parent_id, depth + 1, msg.role)
    return (*row, item.created_us, item.body, item.text)


def _delete_rows(db: sqlite3.Connection, seqs: Sequence[int]) -> None:
    """Delete messages by seq, with their rows of the search index."""
    for start in range(0, len(seqs), 500):
        chunk = seqs[start : start + 500]
        marks = ",".join("?" * len(chunk))
        unindex_where(db, f"seq IN ({marks})", chunk)
        db.execute(f"DELETE FROM messages WHERE seq IN ({marks})", chunk)


class SQLiteEngine(SQLiteDocuments):
    """Stores sessions in one SQLite file through the standard library's sqlite3."""

    blocking = True
    capabilities = frozenset({SEARCH, DOCUMENTS, DOCUMENT_SEARCH})

    def __init__(
        self,
        path: str,
        *,
        durability: str = "full",
        busy_timeout: float = 30.0,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        readonly: bool = False,
        migrate: bool = True,
        clock: Clock = system_clock,
    ) -> None:
        """Open (creating and migrating if needed) the file at `path`; see `SQLiteBase`."""
        super().__init__(
            path,
            durability=durability,
            busy_timeout=busy_timeout,
            max_message_bytes=max_message_bytes,
            readonly=readonly,
            migrate=migrate,
            clock=clock,
        )
        # The heads this engine last committed, by (tenant, user, session id): a hint that
        # saves a read per append, checked by the statement that relies on it.
        self._heads: dict[tuple[str, str, str], _HeadState] = {}
        # The common append's own cursor, used under `_lock`: `Connection.execute` makes
        # a new cursor per call, which the one-statement append would otherwise pay for.
        self._appender = self._db.cursor()

    def _reconnected(self) -> None:
        self._heads.clear()
        self._appender = self._db.cursor()

    # ------------------------------------------------------------------ appends

    def append(
        self,
        scope: Scope,
        session_id: str,
        messages: Sequence[Message],
        parent: Parent,
        expected_head: Expected,
    ) -> list[Message]:
        prepared = prepare_messages(messages, self.max_message_bytes, plain=True)
        if parent is HEAD and expected_head is ANY and len(prepared) == 1:
            stored = self._append_at_head(scope, session_id, prepared[0])
            if stored is not None:
                return [stored]
        # A batch allocates a few tracked objects per message and none that form a cycle:
        # collecting meanwhile cost ~4% of a 1,000-message append (see `gc_paused`).
        with self._lock, gc_paused():
            self._heads.pop((scope.tenant, scope.user, session_id), None)
            with self._write() as db:
                return self._append_chain(db, scope, session_id, prepared, parent, expected_head)

    def _append_at_head(self, scope: Scope, session_id: str, item: Prepared) -> Message | None:
        """The common case in one statement; None means "take the general path".

        It builds on the head this engine last wrote (or reads it, if the session may take
        this path at all), and `FOLLOW_SQL` inserts only if that is still the head, under
        SQLite's write lock (a write statement takes it before it reads, retrying through
        the busy handler). A head moved by anyone else, a duplicate id or a missing session
        insert nothing.
        """
        msg = item.message
        key = (scope.tenant, scope.user, session_id)
        with self._lock:
            try:
                head = self._heads.get(key) or self._followed_head(key)
                if head is None:
                    return None
                pk, parent_seq, depth, parent_id = head
                row = (msg.id, parent_seq, parent_id, depth, msg.role, item.created_us, item.body)
                cur = self._appender.execute(
                    FOLLOW_SQL, (*row, item.text, self._now_us(), pk, *key)
                )
                seq = cur.lastrowid
                if cur.rowcount != 1 or seq is None:
                    self._heads.pop(key, None)
                    return None
                self._remember(key, (pk, seq, depth + 1, msg.id))
                if seq % INDEX_BATCH == 0:
                    with self._write() as db:
                        catch_up(db)
            except sqlite3.Error as exc:
                raise store_error(self.path, exc) from exc
        return stored_copy(msg, parent_id)

    def _followed_head(self, key: tuple[str, str, str]) -> _HeadState | None:
        """A session's pk and head, if its next append after the head may be `FOLLOW_SQL`."""
        row = self._db.execute(STATE_SQL, key).fetchone()
        if row is None or not row[6]:
            return None
        return row[0], row[1], row[2], row[3]

    def _remember(self, key: tuple[str, str, str], head: _HeadState) -> None:
        """Keep the head a commit just wrote, for the next append to this session."""
        heads = self._heads
        if key not in heads and len(heads) >= _HEADS_KEPT:
            del heads[next(iter(heads))]  # the oldest remembered session
        heads[key] = head

    def _append_chain(
        self,
        db: sqlite3.Connection,
        scope: Scope,
        session_id: str,
        prepared: list[Prepared],
        parent: Parent,
        expected_head: Expected,
    ) -> list[Message]:
        row = self._state(db, scope, session_id)
        pk = row[0]
        if expected_head is not ANY:
            # A batch wrong whatever the head says so first; a retry of an acked append
            # (every id stored) is not held to the head it was sent against.
            stored = self._stored_ids(db, pk, prepared)
            check_stored_prefix(prepared, stored)
            if len(stored) < len(prepared):
                check_head(session_id, row[3], expected_head)
        head = (row[1], row[2], row[3])
        at = head if parent is HEAD else self._resolve_parent(db, pk, parent)
        now = self._now_us()
        out, last, inserted = self._insert_chain(db, pk, prepared, at, now)
        if inserted:
            # The last message of the batch becomes the head, even one already stored.
            self._place_head(db, pk, last, row[4] + inserted, now)
        return out

    def _state(self, db: sqlite3.Connection, scope: Scope, session_id: str) -> Sequence[Any]:
        """A session's `STATE_SQL` row: pk, head (seq, depth, id), count, time, ...

        Raises:
            SessionNotFound: If there is no such session in `scope`.
        """
        row = db.execute(STATE_SQL, (scope.tenant, scope.user, session_id)).fetchone()
        if row is None or (row[7] is not None and self._expired(db, (row[0], *row[7:]))):
            raise SessionNotFound(f"no session {session_id!r} in this scope")
        return cast(Sequence[Any], row)

    def _place_head(
        self, db: sqlite3.Connection, pk: int, head: Sequence[Any], count: int, updated_us: int
    ) -> None:
        """Store a session's head, message count and time (see `PLACE_HEAD_SQL`)."""
        db.execute(PLACE_HEAD_SQL, (*head, count, updated_us, pk))

    def _stored_ids(self, db: sqlite3.Connection, pk: int, prepared: list[Prepared]) -> set[str]:
        """The ids of a batch that are stored in the session already."""
        ids = [item.message.id for item in prepared]
        marks = ",".join("?" * len(ids))
        rows = db.execute(
            f"SELECT id FROM messages WHERE session_pk = ? AND id IN ({marks})", (pk, *ids)
        )
        return {row[0] for row in rows}

    def _resolve_parent(
        self, db: sqlite3.Connection, pk: int, parent: str | None
    ) -> tuple[int | None, int, str | None]:
        """Return (seq, depth, id) of an explicit parent; (None, -1, None) for a new root."""
        if parent is None:
            return None, -1, None
        row = None
        if isinstance(parent, str):
            row = db.execute(
                "SELECT seq, depth FROM messages WHERE session_pk = ? AND id = ?", (pk, parent)
            ).fetchone()
        if row is None:
            raise MessageNotFound(f"parent message {parent!r} is not in this session")
        return row[0], row[1], parent

    def _insert_chain(
        self,
        db: sqlite3.Connection,
        pk: int,
        prepared: list[Prepared],
        at: tuple[int | None, int, str | None],
        stored_us: int | None,
    ) -> tuple[list[Message], tuple[int | None, int, str | None], int]:
        """Insert messages as a chain under `at`; existing ids are kept and chained through.

        `stored_us` is the time of an append (None for an import, which keeps its times).
        Stored ids may only come before every new one (see `check_stored_prefix`); the
        INSERT finds them, so a stored id after a new one raises, and the caller's
        transaction rolls back what the batch inserted.

        Raises:
            InvalidMessage: If a stored message follows a new one.
        """
        parent_seq, depth, parent_id = at
        out: list[Message] = []
        inserted = 0
        index_due = False
        for item in prepared:
            msg = item.message
            row = _insert_row(pk, item, parent_seq, depth, parent_id)
            cur = db.execute(INSERT_SQL, (*row, stored_us))
            if cur.rowcount == 1:
                seq = int(cur.lastrowid or 0)
                stored = stored_copy(msg, parent_id)
                parent_seq, depth, parent_id = seq, depth + 1, msg.id
                inserted += 1
                index_due = index_due or seq % INDEX_BATCH == 0
            elif inserted:
                raise stored_after_new(msg.id, str(parent_id))
            else:
                found = db.execute(
                    "SELECT seq, depth FROM messages WHERE session_pk = ? AND id = ?", (pk, msg.id)
                ).fetchone()
                stored = message_from_row(
                    db.execute(MESSAGE_SQL + "WHERE m.seq = ?", (found[0],)).fetchone()
                )
                parent_seq, depth, parent_id = found[0], found[1], msg.id
            out.append(stored)
        if index_due:
            catch_up(db)
        return out, (parent_seq, depth, parent_id), inserted

    # ------------------------------------------------------------------ other writes

    def update_message(self, scope: Scope, session_id: str, message: Message) -> Message:
        (item,) = prepare_messages([message], self.max_message_bytes, plain=True)
        with self._write() as db:
            pk = self._session_pk(db, scope, session_id)
            row = db.execute(
                "SELECT seq, role FROM messages WHERE session_pk = ? AND id = ?", (pk, message.id)
            ).fetchone()
            if row is None:
                raise MessageNotFound(f"no message {message.id!r} in session {session_id!r}")
            if row[1] != message.role:
                raise InvalidInput(f"a message's role cannot change ({row[1]} -> {message.role})")
            unindex_where(db, "seq = ?", (row[0],))
            db.execute(
                "UPDATE messages SET data = ?, text = ? WHERE seq = ?",
                (item.body, item.text, row[0]),
            )
            reindex(db, row[0], item.text)
            db.execute("UPDATE sessions SET updated_us = ? WHERE pk = ?", (self._now_us(), pk))
            return message_from_row(
                db.execute(MESSAGE_SQL + "WHERE m.seq = ?", (row[0],)).fetchone()
            )

    def delete_message(self, scope: Scope, session_id: str, message_id: str) -> list[str]:
        with self._write() as db:
            state = self._state(db, scope, session_id)
            pk = state[0]
            root = db.execute(
                "SELECT seq, parent_seq, depth FROM messages WHERE session_pk = ? AND id = ?",
                (pk, message_id),
            ).fetchone()
            if root is None:
                raise MessageNotFound(f"no message {message_id!r} in session {session_id!r}")
            doomed = db.execute(
                "WITH RECURSIVE sub (seq, depth) AS (SELECT ?, ? UNION ALL "
                "SELECT m.seq, m.depth FROM messages AS m JOIN sub ON m.session_pk = ? "
                "AND m.depth = sub.depth + 1 AND m.parent_seq = sub.seq) "
                "SELECT m.seq, m.id FROM sub JOIN messages AS m ON m.seq = sub.seq",
                (root[0], root[2], pk),
            ).fetchall()
            seqs = [r[0] for r in doomed]
            _delete_rows(db, seqs)
            head = state[1:4]
            if head[0] in set(seqs):
                parent_id = None
                if root[1] is not None:
                    parent_id = db.execute(
                        "SELECT id FROM messages WHERE seq = ?", (root[1],)
                    ).fetchone()[0]
                head = (root[1], root[2] - 1, parent_id)
            lower_watermark(db)
            self._place_head(db, pk, head, state[4] - len(seqs), self._now_us())
            return [r[1] for r in doomed]

    def delete_messages(
        self, scope: Scope, session_id: str, message_ids: Sequence[str]
    ) -> list[str]:
        with self._write() as db:
            state = self._state(db, scope, session_id)
            pk = state[0]
            found: list[Any] = []  # (seq, id, parent id)
            children: list[tuple[str, str]] = []
            for start in range(0, len(message_ids), 500):
                chunk = message_ids[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = db.execute(
                    "SELECT seq, id, parent_id FROM messages "
                    f"WHERE session_pk = ? AND id IN ({marks})",
                    (pk, *chunk),
                ).fetchall()
                found += rows
                if not rows:
                    continue
                children += db.execute(
                    "SELECT p.id, c.id FROM messages AS p JOIN messages AS c "
                    "ON c.session_pk = p.session_pk AND c.depth = p.depth + 1 "
                    f"AND c.parent_seq = p.seq WHERE p.seq IN ({','.join('?' * len(rows))})",
                    [r[0] for r in rows],
                ).fetchall()
            parents = {r[1]: r[2] for r in found}
            check_delete(session_id, message_ids, parents, children)
            seqs = [r[0] for r in found]
            _delete_rows(db, seqs)
            head: Sequence[Any] = state[1:4]
            if head[2] in parents:
                kept = surviving_ancestor(head[2], parents)
                row = db.execute(
                    "SELECT seq, depth, id FROM messages WHERE session_pk = ? AND id = ?",
                    (pk, kept),
                ).fetchone()
                head = row if row is not None else (None, -1, None)
            if seqs:
                lower_watermark(db)
                self._place_head(db, pk, head, state[4] - len(seqs), self._now_us())
            return list(message_ids)

    def clear_messages(self, scope: Scope, session_id: str) -> int:
        with self._write() as db:
            pk = self._session_pk(db, scope, session_id)
            unindex_where(db, "session_pk = ?", (pk,))
            count = db.execute("DELETE FROM messages WHERE session_pk = ?", (pk,)).rowcount
            self._place_head(db, pk, (None, -1, None), 0, self._now_us())
            lower_watermark(db)
            return int(count)

    def set_head(
        self, scope: Scope, session_id: str, message_id: str | None, expected_head: Expected = ANY
    ) -> None:
        with self._write() as db:
            state = self._state(db, scope, session_id)
            check_head(session_id, state[3], expected_head)
            head: Sequence[Any] = (None, -1, None)
            if message_id is not None:
                row = db.execute(
                    "SELECT seq, depth, id FROM messages WHERE session_pk = ? AND id = ?",
                    (state[0], message_id),
                ).fetchone()
                if row is None:
                    raise MessageNotFound(f"no message {message_id!r} in session {session_id!r}")
                head = row
            # Moving the head is not activity: the session keeps its count and time.
            self._place_head(db, state[0], head, state[4], state[5])

    # ------------------------------------------------------------------ reads

    def get_message(self, scope: Scope, session_id: str, message_id: str) -> Message | None:
        with self._read() as db:
            pk = self._session_pk(db, scope, session_id)
            row = db.execute(
                MESSAGE_SQL + "WHERE m.session_pk = ? AND m.id = ?", (pk, message_id)
            ).fetchone()
            return None if row is None else message_from_row(row)

    def _leaf(
        self, db: sqlite3.Connection, scope: Scope, session_id: str, leaf: str | None
    ) -> tuple[int | None, int, bool]:
        """Return (seq, depth) of `leaf` (the head when None) and whether the session is linear.

        A session is linear when it is one chain: its head is its deepest message and
        every message lies on the head's path, so a path is a range of the depth index.
        """
        row = self._state(db, scope, session_id)
        linear = row[4] == row[2] + 1
        if leaf is None:
            return row[1], row[2], linear
        found = db.execute(
            "SELECT seq, depth FROM messages WHERE session_pk = ? AND id = ?", (row[0], leaf)
        ).fetchone()
        if found is None:
            raise MessageNotFound(f"no message {leaf!r} in session {session_id!r}")
        return found[0], found[1], linear

    def _leaf_seq(
        self, db: sqlite3.Connection, scope: Scope, session_id: str, leaf: str | None
    ) -> tuple[int | None, int]:
        """Return (seq, depth) of `leaf`, or of the head when `leaf` is None."""
        seq, depth, _ = self._leaf(db, scope, session_id, leaf)
        return seq, depth

    def get_path(
        self, scope: Scope, session_id: str, leaf: str | None, limit: int | None
    ) -> list[Message]:
        check_limit(limit)
        if leaf is None and (fast := self._head_path(scope, session_id, limit)):
            return fast
        with self._read() as db:
            seq, depth, linear = self._leaf(db, scope, session_id, leaf)
            if seq is None:
                return []
            if linear:
                rows = self._linear_path(db, seq, depth, limit)
            else:
                found = db.execute(PATH_SQL, (seq, limit or FOREVER)).fetchall()
                found.sort(key=first, reverse=True)  # the walk yields the leaf first
                rows = [r[1:] for r in found]
        return decode_rows(rows)

    def _head_path(self, scope: Scope, session_id: str, limit: int | None) -> list[Message]:
        """The head's path in one statement, if the session is one chain (else [])."""
        with self._lock:
            try:
                rows = self._db.execute(
                    LINEAR_PATH_SQL, (scope.tenant, scope.user, session_id, limit or FOREVER)
                )
                if limit is None:
                    # A whole history is decoded as its rows arrive: no list of every row
                    # first, and each row's tuple is freed (and reused) once it is read.
                    return decode_chain(rows, None)
                found = rows.fetchall()
            except sqlite3.Error as exc:
                raise store_error(self.path, exc) from exc
        if len(found) > limit:
            return decode_chain(found[1:], found[0][0])
        return decode_chain(found, None)

    def _linear_path(
        self, db: sqlite3.Connection, seq: int, depth: int, limit: int | None
    ) -> list[Any]:
        """The path of a session that is one chain: a range of its depth index, no walk."""
        low = 0 if limit is None else max(0, depth - limit + 1)
        return db.execute(
            MESSAGE_SQL + "WHERE m.session_pk = (SELECT session_pk FROM messages WHERE seq = ?) "
            "AND m.depth BETWEEN ? AND ? ORDER BY m.depth",
            (seq, low, depth),
        ).fetchall()

    def get_path_and_document(
        self,
        scope: Scope,
        session_id: str,
        leaf: str | None,
        limit: int | None,
        namespace: str,
        key: str,
    ) -> tuple[list[Message], Document | None]:
        return path_and_document(self, scope, session_id, leaf, limit, namespace, key)

    def get_children(self, scope: Scope, session_id: str, message_id: str) -> list[Message]:
        with self._read() as db:
            seq, depth = self._leaf_seq(db, scope, session_id, message_id)
            pk = self._session_pk(db, scope, session_id)
            rows = db.execute(
                MESSAGE_SQL
                + "WHERE m.session_pk = ? AND m.depth = ? AND m.parent_seq = ? ORDER BY m.seq",
                (pk, depth + 1, seq),
            ).fetchall()
        return [message_from_row(r) for r in rows]

    def get_path_length(self, scope: Scope, session_id: str, leaf: str | None) -> int:
        with self._read() as db:
            seq, depth = self._leaf_seq(db, scope, session_id, leaf)
            return 0 if seq is None else depth + 1

    def page_messages(
        self, scope: Scope, session_id: str, cursor: str | None, limit: int
    ) -> tuple[list[Message], str | None]:
        check_limit(limit)
        depth, seq = decode_cursor(cursor, int, int) if cursor is not None else (-1, 0)
        with self._read() as db:
            pk = self._session_pk(db, scope, session_id)
            rows = db.execute(
                f"SELECT {MESSAGE_COLUMNS}, m.depth, m.seq FROM messages AS m "
                "WHERE m.session_pk = ? AND (m.depth, m.seq) > (?, ?) "
                "ORDER BY m.depth, m.seq LIMIT ?",
                (pk, depth, seq, limit),
            ).fetchall()
        next_cursor = encode_cursor(rows[-1][6], rows[-1][7]) if len(rows) == limit else None
        return decode_rows(rows), next_cursor

    # ------------------------------------------------------------------ search

    def search(
        self,
        scope: Scope,
        query: Query,
        limit: int,
        session_id: str | None,
        role: str | None,
    ) -> list[SearchHit]:
        check_limit(limit)
        expression = to_fts5(query)
        with self._read() as db:
            pending = index_pending(db)
        if pending:
            with self._write() as db:
                catch_up(db)
        sql = (
            "SELECT s.id, m.id, m.role, m.created_us, m.text "
            "FROM messages_fts JOIN messages AS m ON m.seq = messages_fts.rowid "
            "JOIN sessions AS s ON s.pk = m.session_pk "
            "WHERE messages_fts MATCH ? AND s.tenant = ? AND s.user_id = ? AND (s.ttl_us IS NULL "
            f"OR s.pk IN (SELECT pk FROM sessions_now WHERE pk = s.pk AND {live_sql('?')}))"
        )
        params: list[Any] = [expression, scope.tenant, scope.user, self._now_us()]
        if session_id is not None:
            sql += " AND s.id = ?"
            params.append(session_id)
        if role is not None:
            sql += " AND m.role = ?"
            params.append(role)
        # The newest candidates (rowid is seq), which FTS5 streams in that order.
        sql += " ORDER BY messages_fts.rowid DESC LIMIT ?"
        with self._read() as db:
            if session_id is not None:
                self._session_pk(db, scope, session_id)
            rows = db.execute(sql, (*params, pool_size(limit))).fetchall()
        return message_hits(query, rows, limit)

    # ------------------------------------------------------------------ whole sessions

    def import_session(
        self,
        scope: Scope,
        info: SessionInfo,
        messages: Sequence[Message],
        state: State | None,
    ) -> SessionInfo:
        prepared = prepare_messages(messages, self.max_message_bytes, plain=True)
        state_text = encode_imported_state(state, self.max_message_bytes)
        with self._write() as db:
            pk = self._insert_session(db, scope, info)
            for item in prepared:
                try:
                    at = self._resolve_parent(db, pk, item.message.parent_id)
                except MessageNotFound:
                    raise InvalidInput(
                        f"message {item.message.id!r} names parent {item.message.parent_id!r}, "
                        "which is not earlier in the import"
                    ) from None
                self._insert_chain(db, pk, [item], at, None)
            if info.head_id is not None:
                head = db.execute(
                    "SELECT seq, depth, id FROM messages WHERE session_pk = ? AND id = ?",
                    (pk, info.head_id),
                ).fetchone()
                if head is None:
                    raise InvalidInput(f"head {info.head_id!r} is not among the imported messages")
            else:
                head = (None, -1, None)
            # Count what the import stored; the session keeps the imported row's time.
            count, created = db.execute(
                "SELECT (SELECT count(*) FROM messages WHERE session_pk = ?1), created_us "
                "FROM sessions WHERE pk = ?1",
                (pk,),
            ).fetchone()
            updated = created if info.updated_at is None else to_micros(info.updated_at)
            self._place_head(db, pk, head, count, updated)
            if state_text is not None and state is not None:
                db.execute(
                    "INSERT INTO states (level, tenant, user_id, owner, data, version) "
                    "VALUES ('session', ?, ?, ?, ?, ?)",
                    (scope.tenant, scope.user, info.id, state_text, state.version),
                )
            return self._session_info(db, pk)
