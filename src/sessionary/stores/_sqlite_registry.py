"""The SQLite engine's session registry and state documents."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from sessionary.errors import AlreadyExists, InvalidInput, SessionNotFound
from sessionary.model import to_micros
from sessionary.records import (
    Page,
    Scope,
    SessionFilter,
    SessionInfo,
    SessionUpdate,
    State,
    StateLevel,
    check_patch,
)
from sessionary.retention import is_expired, live_sql, ttl_micros
from sessionary.stores._common import (
    check_expected_version,
    check_filter,
    check_label,
    check_limit,
    check_restore,
    check_session_fields,
    check_totals,
    check_ttl_update,
    empty_state,
    encode_json,
    next_state,
    scopes_from_rows,
    state_owner,
)
from sessionary.stores._rows import (
    SESSION_COLUMNS,
    list_sql,
    session_from_row,
    session_page,
)
from sessionary.stores._sqlite_base import SQLiteBase
from sessionary.stores._sqlite_index import lower_watermark, unindex_where
from sessionary.stores._sqlite_rows import store_error

__all__ = ["SQLiteRegistry"]


class SQLiteRegistry(SQLiteBase):
    """Sessions' registry rows and the session, user and app state documents."""

    def _session_info(self, db: sqlite3.Connection, pk: int) -> SessionInfo:
        row = db.execute(
            f"SELECT {SESSION_COLUMNS} FROM sessions_now WHERE pk = ?", (pk,)
        ).fetchone()
        return session_from_row(row)

    def _insert_session(self, db: sqlite3.Connection, scope: Scope, info: SessionInfo) -> int:
        check_session_fields(info)
        metadata = encode_json(info.metadata, "session metadata", self.max_message_bytes)
        now = self._now_us()
        created = to_micros(info.created_at) if info.created_at else now
        cur = db.execute(
            "INSERT INTO sessions (tenant, user_id, id, name, parent_session_id, model, source, "
            "metadata, created_us, updated_us, ended_us, end_reason, input_tokens, "
            "output_tokens, cost, version, ttl_us, ttl_sliding) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
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
                ttl_micros(info.ttl),
                int(info.ttl_sliding),
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
                f"SELECT {SESSION_COLUMNS} FROM sessions_now "
                "WHERE tenant = ? AND user_id = ? AND id = ?",
                (scope.tenant, scope.user, session_id),
            ).fetchone()
        info = None if row is None else session_from_row(row)
        return None if info is None or is_expired(info, self._now_us()) else info

    def list_sessions(
        self, scope: Scope, where: SessionFilter, limit: int, cursor: str | None
    ) -> Page[SessionInfo]:
        check_limit(limit)
        check_filter(where)
        now = self._now_us()
        sql, params = list_sql(scope, where, limit, cursor, "?", "active_us", "sessions_now", now)
        with self._read() as db:
            rows = db.execute(sql, params).fetchall()
        return session_page(rows, limit)

    def update_session(self, scope: Scope, session_id: str, update: SessionUpdate) -> SessionInfo:
        check_label(update.name, "name")
        check_label(update.end_reason, "end_reason")
        check_ttl_update(update)
        metadata = None
        if update.metadata is not None:
            metadata = encode_json(update.metadata, "session metadata", self.max_message_bytes)
        now = self._now_us()
        ended = (
            (to_micros(update.ended_at) if update.ended_at else now) if update.end_reason else None
        )
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
                "cost = cost + ?, version = version + 1, updated_us = ?, "
                "ttl_us = iif(? IS NULL, ttl_us, nullif(?, 0)), "
                "ttl_sliding = coalesce(?, ttl_sliding) WHERE pk = ?",
                (
                    update.name,
                    metadata,
                    update.end_reason,
                    ended,
                    update.add_input_tokens,
                    update.add_output_tokens,
                    update.add_cost,
                    now,
                    update.ttl,
                    ttl_micros(update.ttl or None) or 0,
                    update.ttl_sliding,
                    pk,
                ),
            )
            return self._session_info(db, pk)

    def delete_session(self, scope: Scope, session_id: str) -> bool:
        with self._write() as db:
            try:
                pk = self._session_pk(db, scope, session_id, live=False)
            except SessionNotFound:
                return False
            self._delete_session_row(db, scope, session_id, pk)
            lower_watermark(db)
            return True

    def _delete_session_row(
        self, db: sqlite3.Connection, scope: Scope, session_id: str, pk: int
    ) -> None:
        """Delete a session with what it owns (in a write transaction)."""
        unindex_where(db, "session_pk = ?", (pk,))
        db.execute("DELETE FROM messages WHERE session_pk = ?", (pk,))
        owner = (scope.tenant, scope.user, session_id)
        db.execute(
            "DELETE FROM states WHERE level = 'session' AND tenant = ? AND user_id = ? "
            "AND owner = ?",
            owner,
        )
        db.execute(  # a trigger deletes their versions and index rows
            "DELETE FROM documents WHERE level = 'session' AND tenant = ? AND user_id = ? "
            "AND owner = ?",
            owner,
        )
        db.execute("DELETE FROM sessions WHERE pk = ?", (pk,))

    def sweep(self, limit: int) -> int:
        """Delete up to `limit` expired sessions of every scope; return how many."""
        check_limit(limit)
        with self._write() as db:
            rows = db.execute(
                "SELECT pk, tenant, user_id, id FROM sessions_now "
                f"WHERE ttl_us IS NOT NULL AND NOT {live_sql('?')} LIMIT ?",
                (self._now_us(), limit),
            ).fetchall()
            for pk, tenant, user, session_id in rows:
                self._delete_session_row(db, Scope(tenant, user), session_id, pk)
            lower_watermark(db)
        return len(rows)

    def erase(self, scope: Scope, whole_tenant: bool) -> int:
        """Delete everything of the scope's user (or with `whole_tenant` its tenant)."""
        where = "tenant = ?" if whole_tenant else "tenant = ? AND user_id = ?"
        params = (scope.tenant,) if whole_tenant else (scope.tenant, scope.user)
        owned = f"session_pk IN (SELECT pk FROM sessions WHERE {where})"
        with self._write() as db:
            (count,) = db.execute(f"SELECT count(*) FROM sessions WHERE {where}", params).fetchone()
            unindex_where(db, owned, params)
            db.execute(f"DELETE FROM messages WHERE {owned}", params)
            db.execute(f"DELETE FROM states WHERE {where}", params)
            # a trigger deletes the documents' versions and index rows
            db.execute(f"DELETE FROM documents WHERE {where}", params)
            db.execute(f"DELETE FROM sessions WHERE {where}", params)
            lower_watermark(db)
            # FTS5 deletes by adding tombstones; merging the segments drops the words.
            for index in ("messages_fts", "documents_fts"):
                db.execute(f"INSERT INTO {index} ({index}) VALUES ('optimize')")
        self._empty_log()
        return int(count)

    def _empty_log(self) -> None:
        """Copy the write-ahead log into the file and truncate it to nothing.

        The log keeps the pages as they were before the erasure's writes until it is
        overwritten; truncating it leaves the erased text only where `secure_delete`
        zeroed it. A reader in another process holding an old snapshot makes the
        checkpoint stop short; the log is then emptied by a later checkpoint.
        """
        with self._lock:
            try:
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            except sqlite3.Error as exc:
                raise store_error(self.path, exc) from exc

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

    def _read_state(self, db: sqlite3.Connection, key: tuple[str, str, str, str]) -> State:
        row = db.execute(
            "SELECT data, version FROM states "
            "WHERE level = ? AND tenant = ? AND user_id = ? AND owner = ?",
            key,
        ).fetchone()
        return empty_state() if row is None else State(json.loads(row[0]), row[1])

    def restore_state(
        self, scope: Scope, level: StateLevel, session_id: str | None, state: State
    ) -> State:
        with self._write() as db:
            key = self._state_key(db, scope, level, session_id)
            if not check_restore(level, self._read_state(db, key), state):
                return state
            text = encode_json(state.data, f"{level} state", self.max_message_bytes)
            db.execute(
                "INSERT INTO states (level, tenant, user_id, owner, data, version) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (level, tenant, user_id, owner) "
                "DO UPDATE SET data = excluded.data, version = excluded.version",
                (*key, text, state.version),
            )
            return State(json.loads(text), state.version)

    def list_scopes(self) -> list[Scope]:
        with self._read() as db:
            rows = db.execute(
                "SELECT tenant, user_id FROM sessions UNION SELECT tenant, user_id FROM states "
                "WHERE level IN ('user', 'app') AND version > 0 "
                "UNION SELECT tenant, user_id FROM documents "
                "WHERE level IN ('user', 'app') AND version > 0"
            ).fetchall()
        return scopes_from_rows(rows)

    def update_state(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        patch: dict[str, Any],
        expected_version: int | None,
    ) -> State:
        patch = check_patch(patch)
        expected_version = check_expected_version(expected_version, InvalidInput)
        with self._write() as db:
            key = self._state_key(db, scope, level, session_id)
            row = db.execute(
                "SELECT data, version FROM states "
                "WHERE level = ? AND tenant = ? AND user_id = ? AND owner = ?",
                key,
            ).fetchone()
            current = empty_state() if row is None else State(json.loads(row[0]), row[1])
            state, text = next_state(
                current, patch, expected_version, f"{level} state", self.max_message_bytes
            )
            db.execute(
                "INSERT INTO states (level, tenant, user_id, owner, data, version) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (level, tenant, user_id, owner) "
                "DO UPDATE SET data = excluded.data, version = excluded.version",
                (*key, text, state.version),
            )
            return state
