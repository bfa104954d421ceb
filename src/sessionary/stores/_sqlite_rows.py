"""SQLite rows and records: the SQL the engine shares, row decoding, and error mapping."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from sessionary.errors import InvalidQuery, SessionaryError, StoreError, StoreUnavailable
from sessionary.model import Message, decode_body, from_micros
from sessionary.records import SessionInfo
from sessionary.stores._common import gc_paused

__all__ = [
    "FOREVER",
    "APPEND_AT_HEAD_SQL",
    "INSERT_SQL",
    "LINEAR_PATH_SQL",
    "MESSAGE_SQL",
    "PATH_SQL",
    "SESSION_COLUMNS",
    "first",
    "decode_rows",
    "message_from_row",
    "now_us",
    "session_from_row",
    "store_error",
    "stored_copy",
]

FOREVER = 1 << 62
SESSION_COLUMNS = (
    "pk, id, name, parent_session_id, model, source, metadata, created_us, updated_us, "
    "ended_us, end_reason, input_tokens, output_tokens, cost, "
    "head_id, message_count, version"
)
PATH_SQL = """
WITH RECURSIVE path (n, parent_seq, id, role, created_us, data, parent_id) AS (
    SELECT 1, parent_seq, id, role, created_us, data, parent_id FROM messages WHERE seq = ?
    UNION ALL
    SELECT path.n + 1, m.parent_seq, m.id, m.role, m.created_us, m.data, m.parent_id
    FROM messages AS m JOIN path ON m.seq = path.parent_seq
    WHERE path.n < ?
)
SELECT n, id, role, created_us, data, parent_id FROM path
"""
LINEAR_PATH_SQL = """
SELECT m.id, m.role, m.created_us, m.data, m.parent_id
FROM sessions AS s JOIN messages AS m
    ON m.session_pk = s.pk AND m.depth BETWEEN max(0, s.head_depth - ? + 1) AND s.head_depth
WHERE s.tenant = ? AND s.user_id = ? AND s.id = ? AND s.message_count = s.head_depth + 1
ORDER BY m.depth
"""
"""The head's path in one statement, for a session that is one chain (else no rows)."""
MESSAGE_SQL = "SELECT m.id, m.role, m.created_us, m.data, m.parent_id FROM messages AS m "
INSERT_SQL = (
    "INSERT INTO messages "
    "(session_pk, id, parent_seq, parent_id, depth, role, created_us, data, text) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_pk, id) DO NOTHING"
)
APPEND_AT_HEAD_SQL = """
INSERT INTO messages (session_pk, id, parent_seq, parent_id, depth, role, created_us, data, text)
SELECT pk, ?, head_seq, head_id, head_depth + 1, ?, ?, ?, ? FROM sessions
WHERE tenant = ? AND user_id = ? AND id = ?
ON CONFLICT (session_pk, id) DO NOTHING
RETURNING seq, session_pk, depth, parent_id
"""
"""One message after the head, reading the head inside the insert (no rows: missing
session or an id already stored)."""


def now_us() -> int:
    """Return the time now in microseconds since the Unix epoch."""
    return time.time_ns() // 1000


def stored_copy(message: Message, parent_id: str | None) -> Message:
    """Return a shallow copy of `message` that records its parent (cheaper than copy.copy)."""
    stored = object.__new__(Message)
    stored.__dict__.update(message.__dict__)
    stored.parent_id = parent_id
    return stored


def first(row: Sequence[Any]) -> Any:
    """Return a row's first column (a sort key)."""
    return row[0]


def message_from_row(row: Sequence[Any]) -> Message:
    """Decode a (id, role, created_us, data, parent id) row."""
    return decode_body(row[0], row[1], row[2], row[3], row[4])


def decode_rows(rows: Sequence[Sequence[Any]]) -> list[Message]:
    """Decode many (id, role, created_us, data, parent id) rows, the collector paused."""
    with gc_paused():
        return [decode_body(r[0], r[1], r[2], r[3], r[4]) for r in rows]


def session_from_row(row: Sequence[Any]) -> SessionInfo:
    """Decode a row of `SESSION_COLUMNS`."""
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


def store_error(path: str, exc: sqlite3.Error) -> SessionaryError:
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
