"""The SQLite engine, the default store: `sqlite:///relative.db`, `sqlite:////abs/path.db`.

Durability: the file runs in WAL mode with `synchronous=FULL` by default, so every
acknowledged write has reached the disk. `?durability=normal` keeps the database
consistent after any crash but may lose the last writes on power loss (not on a process
crash) in exchange for several times the write rate.

Concurrency: every write is one `BEGIN IMMEDIATE` transaction, so writers in any number
of threads and processes are serialised by SQLite's own lock, and an append reads the
head it builds on inside that lock: appends never interleave or build on a stale head.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from sessionary.errors import (
    AlreadyExists,
    HeadConflict,
    InvalidInput,
    InvalidQuery,
    MessageNotFound,
    SchemaError,
    SessionaryError,
    SessionNotFound,
    StoreError,
    StoreUnavailable,
    VersionConflict,
)
from sessionary.model import Message, decode_body, from_micros, to_micros
from sessionary.query import Query, to_fts5
from sessionary.records import (
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
    StateLevel,
    check_patch,
    decode_cursor,
    encode_cursor,
    merge_patch,
)
from sessionary.stores._common import (
    DEFAULT_MAX_MESSAGE_BYTES,
    HIGHLIGHT,
    Prepared,
    check_label,
    check_limit,
    check_session_fields,
    check_totals,
    empty_state,
    encode_json,
    gc_paused,
    prepare_messages,
    state_owner,
)
from sessionary.stores._sqlite_schema import MIGRATIONS
from sessionary.stores.base import SEARCH

__all__ = ["SQLiteEngine"]

INDEX_BATCH = 256
"""The search index catches up whenever a message's seq is a multiple of this."""

_FOREVER = 1 << 62
_SESSION_COLUMNS = (
    "pk, id, name, parent_session_id, model, source, metadata, created_us, updated_us, "
    "ended_us, end_reason, input_tokens, output_tokens, cost, "
    "head_id, message_count, version"
)
_PATH_SQL = """
WITH RECURSIVE path (n, parent_seq, id, role, created_us, data) AS (
    SELECT 1, parent_seq, id, role, created_us, data FROM messages WHERE seq = ?
    UNION ALL
    SELECT path.n + 1, m.parent_seq, m.id, m.role, m.created_us, m.data
    FROM messages AS m JOIN path ON m.seq = path.parent_seq
    WHERE path.n < ?
)
SELECT n, parent_seq, id, role, created_us, data FROM path
"""
_MESSAGE_SQL = """
SELECT m.id, m.role, m.created_us, m.data, p.id
FROM messages AS m LEFT JOIN messages AS p ON p.seq = m.parent_seq
"""
_INSERT_SQL = (
    "INSERT INTO messages (session_pk, id, parent_seq, depth, role, created_us, data, text) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_pk, id) DO NOTHING"
)


def _now_us() -> int:
    return time.time_ns() // 1000


def _stored_copy(message: Message, parent_id: str | None) -> Message:
    """Return a shallow copy of `message` that records its parent (cheaper than copy.copy)."""
    stored = object.__new__(Message)
    stored.__dict__.update(message.__dict__)
    stored.parent_id = parent_id
    return stored


def _first(row: Sequence[Any]) -> Any:
    return row[0]


def _message(row: Sequence[Any]) -> Message:
    return decode_body(row[0], row[1], row[2], row[3], row[4])


def _info(row: Sequence[Any]) -> SessionInfo:
    return SessionInfo(
        id=row[1],
        name=row[2],
        parent_session_id=row[3],
        model=row[4],
        source=row[5],
        metadata=json.loads(row[6]),
        created_at=from_micros(row[7]),
        updated_at=from_micros(row[8]),
        ended_at=from_micros(row[9]) if row[9] is not None else None,
        end_reason=row[10],
        input_tokens=row[11],
        output_tokens=row[12],
        cost=row[13],
        head_id=row[14],
        message_count=row[15],
        version=row[16],
    )


def _store_error(path: str, exc: sqlite3.Error) -> SessionaryError:
    """Map one of sqlite3's exceptions onto the error tree; the only place that does."""
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError):
        if "fts5" in text:
            return InvalidQuery(f"the search query could not be run: {text}")
        if "locked" in text or "busy" in text:
            return StoreError(f"{path}: the database stayed locked by another writer: {text}")
        if "unable to open" in text or "disk I/O" in text or "readonly" in text:
            return StoreUnavailable(f"{path}: {text}")
        return StoreError(f"{path}: {text}")
    if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.IntegrityError):
        return StoreUnavailable(f"{path}: {exc}")
    return StoreError(f"{path}: {exc}")


class SQLiteEngine:
    """Stores sessions in one SQLite file through the standard library's sqlite3."""

    blocking = True
    capabilities = frozenset({SEARCH})

    def __init__(
        self,
        path: str,
        *,
        durability: str = "full",
        busy_timeout: float = 30.0,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        if durability not in ("full", "normal"):
            raise InvalidInput(f"durability must be 'full' or 'normal', not {durability!r}")
        self.path = path
        self.max_message_bytes = max_message_bytes
        self._lock = threading.RLock()
        try:
            self._db = sqlite3.connect(
                path,
                isolation_level=None,
                check_same_thread=False,
                timeout=busy_timeout,
                cached_statements=256,
            )
        except sqlite3.Error as exc:
            raise _store_error(path, exc) from exc
        try:
            self._configure(durability)
            self._migrate()
        except sqlite3.Error as exc:
            self._db.close()
            raise _store_error(path, exc) from exc
        except BaseException:
            self._db.close()
            raise

    # ------------------------------------------------------------------ plumbing

    def _configure(self, durability: str) -> None:
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute(f"PRAGMA synchronous = {durability.upper()}")
        self._db.execute("PRAGMA foreign_keys = OFF")

    def _migrate(self) -> None:
        with self._write() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_us INTEGER NOT NULL)"
            )
            (current,) = db.execute(
                "SELECT coalesce(max(version), 0) FROM schema_migrations"
            ).fetchone()
            latest = MIGRATIONS[-1][0]
            if current > latest:
                raise SchemaError(
                    f"{self.path} has schema version {current}, newer than this sessionary "
                    f"understands ({latest}); upgrade sessionary"
                )
            for version, name, sql in MIGRATIONS:
                if version <= current:
                    continue
                for statement in sql.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(
                    "INSERT INTO schema_migrations (version, name, applied_us) VALUES (?, ?, ?)",
                    (version, name, _now_us()),
                )

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, holding SQLite's write lock from its first statement.

        Anything that fails, the COMMIT included, rolls the whole transaction back.
        """
        with self._lock:
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
                try:
                    yield db
                    db.execute("COMMIT")
                except BaseException:
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise _store_error(self.path, exc) from exc

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: every statement in it sees the same snapshot."""
        with self._lock:
            db = self._db
            try:
                db.execute("BEGIN")
                try:
                    yield db
                finally:
                    if db.in_transaction:
                        db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise _store_error(self.path, exc) from exc

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()

    # ------------------------------------------------------------------ sessions

    def _session_pk(self, db: sqlite3.Connection, scope: Scope, session_id: str) -> int:
        row = db.execute(
            "SELECT pk FROM sessions WHERE tenant = ? AND user_id = ? AND id = ?",
            (scope.tenant, scope.user, session_id),
        ).fetchone()
        if row is None:
            raise SessionNotFound(f"no session {session_id!r} in this scope")
        return int(row[0])

    def _session_info(self, db: sqlite3.Connection, pk: int) -> SessionInfo:
        row = db.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE pk = ?", (pk,)).fetchone()
        return _info(row)

    def _insert_session(self, db: sqlite3.Connection, scope: Scope, info: SessionInfo) -> int:
        check_session_fields(info)
        metadata = encode_json(info.metadata, "session metadata", self.max_message_bytes)
        now = _now_us()
        created = to_micros(info.created_at) if info.created_at else now
        cur = db.execute(
            "INSERT INTO sessions (tenant, user_id, id, name, parent_session_id, model, source, "
            "metadata, created_us, updated_us, ended_us, end_reason, input_tokens, "
            "output_tokens, cost, version) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (tenant, user_id, id) DO NOTHING",
            (
                scope.tenant,
                scope.user,
                info.id,
                info.name,
                info.parent_session_id,
                info.model,
                info.source,
                metadata,
                created,
                to_micros(info.updated_at) if info.updated_at else created,
                to_micros(info.ended_at) if info.ended_at else None,
                info.end_reason,
                info.input_tokens,
                info.output_tokens,
                info.cost,
                info.version,
            ),
        )
        if cur.rowcount != 1:
            raise AlreadyExists(f"session {info.id!r} already exists")
        return int(cur.lastrowid or 0)

    def create_session(self, scope: Scope, info: SessionInfo) -> SessionInfo:
        with self._write() as db:
            pk = self._insert_session(db, scope, info)
            return self._session_info(db, pk)

    def get_session(self, scope: Scope, session_id: str) -> SessionInfo | None:
        with self._read() as db:
            row = db.execute(
                f"SELECT {_SESSION_COLUMNS} FROM sessions "
                "WHERE tenant = ? AND user_id = ? AND id = ?",
                (scope.tenant, scope.user, session_id),
            ).fetchone()
            return None if row is None else _info(row)

    def list_sessions(
        self, scope: Scope, where: SessionFilter, limit: int, cursor: str | None
    ) -> Page[SessionInfo]:
        check_limit(limit)
        clauses = ["tenant = ?", "user_id = ?"]
        params: list[Any] = [scope.tenant, scope.user]
        for column in ("name", "model", "source", "parent_session_id"):
            value = getattr(where, column)
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if where.ended is not None:
            clauses.append("end_reason IS NOT NULL" if where.ended else "end_reason IS NULL")
        if cursor is not None:
            after_us, after_id = decode_cursor(cursor, int, str)
            clauses.append("(updated_us, id) < (?, ?)")
            params.extend([after_us, after_id])
        sql = (
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE {' AND '.join(clauses)} "
            "ORDER BY updated_us DESC, id DESC LIMIT ?"
        )
        with self._read() as db:
            rows = db.execute(sql, (*params, limit + 1)).fetchall()
        items = [_info(r) for r in rows[:limit]]
        last = items[-1] if items else None
        more = len(rows) > limit and last is not None and last.updated_at is not None
        next_cursor = encode_cursor(to_micros(last.updated_at), last.id) if more else None  # type: ignore[union-attr,arg-type]
        return Page(items, next_cursor)

    def update_session(self, scope: Scope, session_id: str, update: SessionUpdate) -> SessionInfo:
        check_label(update.name, "name")
        check_label(update.end_reason, "end_reason")
        metadata = None
        if update.metadata is not None:
            metadata = encode_json(update.metadata, "session metadata", self.max_message_bytes)
        ended = to_micros(update.ended_at or datetime.now(UTC)) if update.end_reason else None
        with self._write() as db:
            pk = self._session_pk(db, scope, session_id)
            totals = db.execute(
                "SELECT input_tokens, output_tokens, cost FROM sessions WHERE pk = ?", (pk,)
            ).fetchone()
            check_totals(totals[0], totals[1], totals[2], update)
            db.execute(
                "UPDATE sessions SET name = coalesce(?, name), metadata = coalesce(?, metadata), "
                "end_reason = coalesce(?, end_reason), ended_us = coalesce(?, ended_us), "
                "input_tokens = input_tokens + ?, output_tokens = output_tokens + ?, "
                "cost = cost + ?, version = version + 1, updated_us = ? WHERE pk = ?",
                (
                    update.name,
                    metadata,
                    update.end_reason,
                    ended,
                    update.add_input_tokens,
                    update.add_output_tokens,
                    update.add_cost,
                    _now_us(),
                    pk,
                ),
            )
            return self._session_info(db, pk)

    def delete_session(self, scope: Scope, session_id: str) -> bool:
        with self._write() as db:
            try:
                pk = self._session_pk(db, scope, session_id)
            except SessionNotFound:
                return False
            self._unindex_where(db, "session_pk = ?", (pk,))
            db.execute("DELETE FROM messages WHERE session_pk = ?", (pk,))
            db.execute(
                "DELETE FROM states WHERE level = 'session' AND tenant = ? AND user_id = ? "
                "AND owner = ?",
                (scope.tenant, scope.user, session_id),
            )
            db.execute("DELETE FROM sessions WHERE pk = ?", (pk,))
            self._lower_watermark(db)
            return True

    # ------------------------------------------------------------------ appends

    def append(
        self,
        scope: Scope,
        session_id: str,
        messages: Sequence[Message],
        parent: Parent,
        expected_head: Expected,
    ) -> list[Message]:
        prepared = prepare_messages(messages, self.max_message_bytes)
        with self._write() as db:
            row = db.execute(
                "SELECT pk, head_seq, head_depth, head_id FROM sessions "
                "WHERE tenant = ? AND user_id = ? AND id = ?",
                (scope.tenant, scope.user, session_id),
            ).fetchone()
            if row is None:
                raise SessionNotFound(f"no session {session_id!r} in this scope")
            pk = row[0]
            if (
                expected_head is not Head.ANY
                and expected_head != row[3]
                and not self._all_stored(db, pk, prepared)
            ):
                raise HeadConflict(
                    f"session {session_id!r} head is {row[3]!r}, not {expected_head!r}"
                )
            head = (row[1], row[2], row[3])
            at = head if parent is Head.HEAD else self._resolve_parent(db, pk, parent)
            out, last, inserted = self._insert_chain(db, pk, prepared, at)
            if inserted:
                db.execute(
                    "UPDATE sessions SET head_seq = ?, head_depth = ?, head_id = ?, "
                    "message_count = message_count + ?, updated_us = ? WHERE pk = ?",
                    (*last, inserted, _now_us(), pk),
                )
            return out

    def _all_stored(self, db: sqlite3.Connection, pk: int, prepared: list[Prepared]) -> bool:
        """Whether every message of a batch is stored already (a retry of an acked append)."""
        ids = [item.message.id for item in prepared]
        marks = ",".join("?" * len(ids))
        (found,) = db.execute(
            f"SELECT count(*) FROM messages WHERE session_pk = ? AND id IN ({marks})", (pk, *ids)
        ).fetchone()
        return bool(found == len(ids))

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
    ) -> tuple[list[Message], tuple[int | None, int, str | None], int]:
        """Insert messages as a chain under `at`; existing ids are kept and chained through."""
        parent_seq, depth, parent_id = at
        out: list[Message] = []
        inserted = 0
        index_due = False
        for item in prepared:
            msg = item.message
            cur = db.execute(
                _INSERT_SQL,
                (
                    pk,
                    msg.id,
                    parent_seq,
                    depth + 1,
                    msg.role,
                    item.created_us,
                    item.body,
                    item.text,
                ),
            )
            if cur.rowcount == 1:
                seq = int(cur.lastrowid or 0)
                stored = _stored_copy(msg, parent_id)
                parent_seq, depth, parent_id = seq, depth + 1, msg.id
                inserted += 1
                index_due = index_due or seq % INDEX_BATCH == 0
            else:
                found = db.execute(
                    "SELECT seq, depth FROM messages WHERE session_pk = ? AND id = ?", (pk, msg.id)
                ).fetchone()
                stored = _message(
                    db.execute(_MESSAGE_SQL + "WHERE m.seq = ?", (found[0],)).fetchone()
                )
                parent_seq, depth, parent_id = found[0], found[1], msg.id
            out.append(stored)
        if index_due:
            self._catch_up(db)
        return out, (parent_seq, depth, parent_id), inserted

    # ------------------------------------------------------------------ other writes

    def update_message(self, scope: Scope, session_id: str, message: Message) -> Message:
        (item,) = prepare_messages([message], self.max_message_bytes)
        with self._write() as db:
            pk = self._session_pk(db, scope, session_id)
            row = db.execute(
                "SELECT seq, role FROM messages WHERE session_pk = ? AND id = ?", (pk, message.id)
            ).fetchone()
            if row is None:
                raise MessageNotFound(f"no message {message.id!r} in session {session_id!r}")
            if row[1] != message.role:
                raise InvalidInput(f"a message's role cannot change ({row[1]} -> {message.role})")
            self._unindex_where(db, "seq = ?", (row[0],))
            db.execute(
                "UPDATE messages SET data = ?, text = ? WHERE seq = ?",
                (item.body, item.text, row[0]),
            )
            self._reindex(db, row[0], item.text)
            db.execute("UPDATE sessions SET updated_us = ? WHERE pk = ?", (_now_us(), pk))
            return _message(db.execute(_MESSAGE_SQL + "WHERE m.seq = ?", (row[0],)).fetchone())

    def delete_message(self, scope: Scope, session_id: str, message_id: str) -> list[str]:
        with self._write() as db:
            pk = self._session_pk(db, scope, session_id)
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
            for start in range(0, len(seqs), 500):
                chunk = seqs[start : start + 500]
                marks = ",".join("?" * len(chunk))
                self._unindex_where(db, f"seq IN ({marks})", chunk)
                db.execute(f"DELETE FROM messages WHERE seq IN ({marks})", chunk)
            (head_seq,) = db.execute("SELECT head_seq FROM sessions WHERE pk = ?", (pk,)).fetchone()
            if head_seq in set(seqs):
                parent_id = None
                if root[1] is not None:
                    parent_id = db.execute(
                        "SELECT id FROM messages WHERE seq = ?", (root[1],)
                    ).fetchone()[0]
                self._set_head_row(db, pk, (root[1], root[2] - 1, parent_id))
            self._lower_watermark(db)
            db.execute(
                "UPDATE sessions SET message_count = message_count - ?, updated_us = ? "
                "WHERE pk = ?",
                (len(seqs), _now_us(), pk),
            )
            return [r[1] for r in doomed]

    def clear_messages(self, scope: Scope, session_id: str) -> int:
        with self._write() as db:
            pk = self._session_pk(db, scope, session_id)
            self._unindex_where(db, "session_pk = ?", (pk,))
            count = db.execute("DELETE FROM messages WHERE session_pk = ?", (pk,)).rowcount
            db.execute(
                "UPDATE sessions SET head_seq = NULL, head_depth = -1, head_id = NULL, "
                "message_count = 0, updated_us = ? WHERE pk = ?",
                (_now_us(), pk),
            )
            self._lower_watermark(db)
            return int(count)

    def set_head(self, scope: Scope, session_id: str, message_id: str | None) -> None:
        with self._write() as db:
            pk = self._session_pk(db, scope, session_id)
            head: tuple[int | None, int, str | None] = (None, -1, None)
            if message_id is not None:
                row = db.execute(
                    "SELECT seq, depth, id FROM messages WHERE session_pk = ? AND id = ?",
                    (pk, message_id),
                ).fetchone()
                if row is None:
                    raise MessageNotFound(f"no message {message_id!r} in session {session_id!r}")
                head = row
            self._set_head_row(db, pk, head)

    def _set_head_row(self, db: sqlite3.Connection, pk: int, head: Sequence[Any]) -> None:
        db.execute(
            "UPDATE sessions SET head_seq = ?, head_depth = ?, head_id = ? WHERE pk = ?",
            (*head, pk),
        )

    # ------------------------------------------------------------------ reads

    def get_message(self, scope: Scope, session_id: str, message_id: str) -> Message | None:
        with self._read() as db:
            pk = self._session_pk(db, scope, session_id)
            row = db.execute(
                _MESSAGE_SQL + "WHERE m.session_pk = ? AND m.id = ?", (pk, message_id)
            ).fetchone()
            return None if row is None else _message(row)

    def _leaf(
        self, db: sqlite3.Connection, scope: Scope, session_id: str, leaf: str | None
    ) -> tuple[int | None, int, bool]:
        """Return (seq, depth) of `leaf` (the head when None) and whether the session is linear.

        A session is linear when it is one chain: its head is its deepest message and
        every message lies on the head's path, so a path is a range of the depth index.
        """
        row = db.execute(
            "SELECT pk, head_seq, head_depth, message_count = head_depth + 1 FROM sessions "
            "WHERE tenant = ? AND user_id = ? AND id = ?",
            (scope.tenant, scope.user, session_id),
        ).fetchone()
        if row is None:
            raise SessionNotFound(f"no session {session_id!r} in this scope")
        if leaf is None:
            return row[1], row[2], bool(row[3])
        found = db.execute(
            "SELECT seq, depth FROM messages WHERE session_pk = ? AND id = ?", (row[0], leaf)
        ).fetchone()
        if found is None:
            raise MessageNotFound(f"no message {leaf!r} in session {session_id!r}")
        return found[0], found[1], bool(row[3])

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
        with self._read() as db:
            seq, depth, linear = self._leaf(db, scope, session_id, leaf)
            if seq is None:
                return []
            if linear:
                rows = self._linear_path(db, seq, depth, limit)
            else:
                rows = db.execute(_PATH_SQL, (seq, limit or _FOREVER)).fetchall()
                rows.sort(key=_first)  # the walk yields leaf first
            top = rows[-1][1]
            parent_id = None
            if top is not None:
                parent_id = db.execute("SELECT id FROM messages WHERE seq = ?", (top,)).fetchone()[
                    0
                ]
        out: list[Message] = []
        with gc_paused():
            for _, _, mid, role, created_us, data in reversed(rows):
                out.append(decode_body(mid, role, created_us, data, parent_id))
                parent_id = mid
        return out

    def _linear_path(
        self, db: sqlite3.Connection, seq: int, depth: int, limit: int | None
    ) -> list[Any]:
        """The path of a session that is one chain: a range of its depth index, no walk."""
        low = 0 if limit is None else max(0, depth - limit + 1)
        return db.execute(
            "SELECT -depth, parent_seq, id, role, created_us, data FROM messages "
            "WHERE session_pk = (SELECT session_pk FROM messages WHERE seq = ?) "
            "AND depth BETWEEN ? AND ? ORDER BY depth DESC",
            (seq, low, depth),
        ).fetchall()

    def get_children(self, scope: Scope, session_id: str, message_id: str) -> list[Message]:
        with self._read() as db:
            seq, depth = self._leaf_seq(db, scope, session_id, message_id)
            pk = self._session_pk(db, scope, session_id)
            rows = db.execute(
                _MESSAGE_SQL
                + "WHERE m.session_pk = ? AND m.depth = ? AND m.parent_seq = ? ORDER BY m.seq",
                (pk, depth + 1, seq),
            ).fetchall()
        return [_message(r) for r in rows]

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
                "SELECT m.id, m.role, m.created_us, m.data, p.id, m.depth, m.seq "
                "FROM messages AS m LEFT JOIN messages AS p ON p.seq = m.parent_seq "
                "WHERE m.session_pk = ? AND (m.depth, m.seq) > (?, ?) "
                "ORDER BY m.depth, m.seq LIMIT ?",
                (pk, depth, seq, limit),
            ).fetchall()
        next_cursor = encode_cursor(rows[-1][5], rows[-1][6]) if len(rows) == limit else None
        with gc_paused():
            return [_message(r) for r in rows], next_cursor

    # ------------------------------------------------------------------ search

    def _catch_up(self, db: sqlite3.Connection) -> None:
        """Index every message added since the last catch-up (inside a write transaction)."""
        (upto,) = db.execute("SELECT indexed_upto FROM search_progress").fetchone()
        (top,) = db.execute("SELECT coalesce(max(seq), 0) FROM messages").fetchone()
        if top > upto:
            db.execute(
                "INSERT INTO messages_fts (rowid, text) SELECT seq, text FROM messages "
                "WHERE seq > ? AND seq <= ? AND text != ''",
                (upto, top),
            )
            db.execute("UPDATE search_progress SET indexed_upto = ?", (top,))

    def _unindex_where(self, db: sqlite3.Connection, where: str, params: Sequence[Any]) -> None:
        """Remove already indexed messages matching `where` from the search index."""
        db.execute(
            "INSERT INTO messages_fts (messages_fts, rowid, text) "
            f"SELECT 'delete', seq, text FROM messages WHERE {where} AND text != '' "
            "AND seq <= (SELECT indexed_upto FROM search_progress)",
            tuple(params),
        )

    def _lower_watermark(self, db: sqlite3.Connection) -> None:
        """After a delete, keep the watermark at or below the highest remaining seq.

        A new message takes seq = max(seq) + 1, which may reuse a deleted one; keeping
        the watermark at or below max(seq) means that message is still above it and
        will be indexed.
        """
        db.execute(
            "UPDATE search_progress SET indexed_upto = "
            "min(indexed_upto, (SELECT coalesce(max(seq), 0) FROM messages))"
        )

    def _reindex(self, db: sqlite3.Connection, seq: int, text: str) -> None:
        if text:
            db.execute(
                "INSERT INTO messages_fts (rowid, text) SELECT ?, ? "
                "WHERE ? <= (SELECT indexed_upto FROM search_progress)",
                (seq, text, seq),
            )

    def _index_pending(self) -> bool:
        with self._read() as db:
            (upto,) = db.execute("SELECT indexed_upto FROM search_progress").fetchone()
            (top,) = db.execute("SELECT coalesce(max(seq), 0) FROM messages").fetchone()
            return bool(top > upto)

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
        if self._index_pending():
            with self._write() as db:
                self._catch_up(db)
        sql = (
            "SELECT s.id, m.id, m.role, m.created_us, "
            "snippet(messages_fts, 0, ?, ?, '…', 16), bm25(messages_fts) "
            "FROM messages_fts JOIN messages AS m ON m.seq = messages_fts.rowid "
            "JOIN sessions AS s ON s.pk = m.session_pk "
            "WHERE messages_fts MATCH ? AND s.tenant = ? AND s.user_id = ?"
        )
        params: list[Any] = [*HIGHLIGHT, expression, scope.tenant, scope.user]
        if session_id is not None:
            sql += " AND s.id = ?"
            params.append(session_id)
        if role is not None:
            sql += " AND m.role = ?"
            params.append(role)
        sql += " ORDER BY bm25(messages_fts), m.seq LIMIT ?"
        with self._read() as db:
            if session_id is not None:
                self._session_pk(db, scope, session_id)
            rows = db.execute(sql, (*params, limit)).fetchall()
        return [SearchHit(r[0], r[1], r[2], r[4], -float(r[5]), from_micros(r[3])) for r in rows]

    # ------------------------------------------------------------------ state

    def _state_key(
        self, db: sqlite3.Connection, scope: Scope, level: StateLevel, session_id: str | None
    ) -> tuple[str, str, str, str]:
        owner = state_owner(level, session_id)
        if level == "session":
            self._session_pk(db, scope, owner)
        return (level, scope.tenant, scope.user if level != "app" else "", owner)

    def get_state(self, scope: Scope, level: StateLevel, session_id: str | None) -> State:
        with self._read() as db:
            key = self._state_key(db, scope, level, session_id)
            row = db.execute(
                "SELECT data, version FROM states "
                "WHERE level = ? AND tenant = ? AND user_id = ? AND owner = ?",
                key,
            ).fetchone()
        return empty_state() if row is None else State(json.loads(row[0]), row[1])

    def update_state(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        patch: dict[str, Any],
        expected_version: int | None,
    ) -> State:
        patch = check_patch(patch)
        with self._write() as db:
            key = self._state_key(db, scope, level, session_id)
            row = db.execute(
                "SELECT data, version FROM states "
                "WHERE level = ? AND tenant = ? AND user_id = ? AND owner = ?",
                key,
            ).fetchone()
            current = empty_state() if row is None else State(json.loads(row[0]), row[1])
            if expected_version is not None and expected_version != current.version:
                raise VersionConflict(
                    f"{level} state is at version {current.version}, not {expected_version}"
                )
            data = merge_patch(current.data, patch)
            text = encode_json(data, f"{level} state", self.max_message_bytes)
            db.execute(
                "INSERT INTO states (level, tenant, user_id, owner, data, version) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (level, tenant, user_id, owner) "
                "DO UPDATE SET data = excluded.data, version = excluded.version",
                (*key, text, current.version + 1),
            )
            return State(data, current.version + 1)

    # ------------------------------------------------------------------ whole sessions

    def import_session(
        self,
        scope: Scope,
        info: SessionInfo,
        messages: Sequence[Message],
        state: State | None,
    ) -> SessionInfo:
        prepared = prepare_messages(messages, self.max_message_bytes)
        state_text = None
        if state is not None and state.version:
            state_text = encode_json(state.data, "session state", self.max_message_bytes)
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
                self._insert_chain(db, pk, [item], at)
            if info.head_id is not None:
                head = db.execute(
                    "SELECT seq, depth, id FROM messages WHERE session_pk = ? AND id = ?",
                    (pk, info.head_id),
                ).fetchone()
                if head is None:
                    raise InvalidInput(f"head {info.head_id!r} is not among the imported messages")
                self._set_head_row(db, pk, head)
            db.execute(
                "UPDATE sessions SET message_count = (SELECT count(*) FROM messages "
                "WHERE session_pk = ?) WHERE pk = ?",
                (pk, pk),
            )
            if state_text is not None and state is not None:
                db.execute(
                    "INSERT INTO states (level, tenant, user_id, owner, data, version) "
                    "VALUES ('session', ?, ?, ?, ?, ?)",
                    (scope.tenant, scope.user, info.id, state_text, state.version),
                )
            return self._session_info(db, pk)
