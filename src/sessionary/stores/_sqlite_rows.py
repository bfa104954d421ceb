"""The SQL the SQLite engine shares between its layers, and its one error mapping."""

from __future__ import annotations

import sqlite3

from sessionary.errors import InvalidQuery, SessionaryError, StoreError, StoreUnavailable

__all__ = [
    "APPEND_AT_HEAD_SQL",
    "INSERT_SQL",
    "LINEAR_PATH_SQL",
    "MESSAGE_SQL",
    "PATH_SQL",
    "store_error",
]

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
