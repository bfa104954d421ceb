"""The SQL the SQLite engine shares between its layers, its row decoding, its error mapping.

A message that is one bare text part is stored with an empty `data` body and its text in
`text` (which the search index reads anyway), so it is neither encoded as JSON on append
nor parsed on read. Every other message keeps its JSON body in `data`; rows written
before this layout (a JSON body for every message) read back unchanged. Messages read
back decode their bodies on first use (`decode_lazy`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from sessionary.errors import (
    Closed,
    InvalidQuery,
    SessionaryError,
    StoreError,
    StoreUnavailable,
)
from sessionary.model import Message, decode_lazy, decode_lazy_chain
from sessionary.stores._common import gc_paused

__all__ = [
    "FOLLOW_SQL",
    "INSERT_SQL",
    "LINEAR_PATH_SQL",
    "MESSAGE_COLUMNS",
    "MESSAGE_SQL",
    "PATH_SQL",
    "PLACE_HEAD_SQL",
    "STATE_SQL",
    "decode_chain",
    "decode_rows",
    "message_from_row",
    "store_error",
]

PATH_SQL = """
WITH RECURSIVE path (n, parent_seq, id, role, created_us, data, parent_id, plain) AS (
    SELECT 1, parent_seq, id, role, created_us, data, parent_id, iif(data = '', text, NULL)
    FROM messages WHERE seq = ?
    UNION ALL
    SELECT path.n + 1, m.parent_seq, m.id, m.role, m.created_us, m.data, m.parent_id,
        iif(m.data = '', m.text, NULL)
    FROM messages AS m JOIN path ON m.seq = path.parent_seq
    WHERE path.n < ?
)
SELECT n, id, role, created_us, data, parent_id, plain FROM path
"""
MESSAGE_COLUMNS = "m.id, m.role, m.created_us, m.data, m.parent_id, iif(m.data = '', m.text, NULL)"
"""A message row as `message_from_row` decodes it; the last column is a plain message's text."""
LINEAR_PATH_SQL = """
SELECT m.id, m.role, m.created_us, m.data, iif(m.data = '', m.text, NULL) FROM messages AS m
WHERE m.session_pk = (
    SELECT pk FROM sessions_now
    WHERE tenant = ?1 AND user_id = ?2 AND id = ?3 AND message_count = head_depth + 1
        AND ttl_us IS NULL
)
AND m.depth BETWEEN (
    SELECT max(0, head_depth - ?4) FROM sessions_now
    WHERE tenant = ?1 AND user_id = ?2 AND id = ?3
) AND (SELECT head_depth FROM sessions_now WHERE tenant = ?1 AND user_id = ?2 AND id = ?3)
ORDER BY m.depth
"""
"""The head's last `?4 + 1` messages in one statement, for a session that is one chain (else
no rows; so is a session with a TTL, read by the path that checks expiry). The rows
leave out the parent: in a chain it is the message before, and the
extra first row (when there is one) only gives the first returned message its parent."""
MESSAGE_SQL = f"SELECT {MESSAGE_COLUMNS} FROM messages AS m "
INSERT_SQL = (
    "INSERT INTO messages (session_pk, id, parent_seq, parent_id, depth, role, created_us, "
    "data, text, stored_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (session_pk, id) DO NOTHING"
)
NEWEST = (
    "(SELECT m.seq FROM messages AS m WHERE m.session_pk = {pk} "
    "ORDER BY m.depth DESC, m.seq DESC LIMIT 1)"
)
"""The seq of a session's deepest message, the newest of those: its end of `messages_depth`."""
STATE_SQL = """
SELECT n.pk, n.head_seq, n.head_depth, n.head_id, n.message_count, n.updated_us,
    n.head_follows AND n.ttl_us IS NULL AND NOT EXISTS (
        SELECT 1 FROM sessions AS o WHERE o.tenant = n.tenant AND o.user_id = n.user_id
            AND (o.active_us, o.id) > (n.active_us, n.id)
    ),
    n.ttl_us, n.ttl_sliding, n.created_us
FROM sessions_now AS n WHERE n.tenant = ? AND n.user_id = ? AND n.id = ?
"""
"""A session's pk, head (seq, depth, id), message count and time, and whether the next
append after its head may take `FOLLOW_SQL` (its head follows, it is first in its scope and
it has no TTL), then its TTL, whether it slides, and its creation time."""
FOLLOW_SQL = """
INSERT OR IGNORE INTO messages (session_pk, id, parent_seq, parent_id, depth, role, created_us,
    data, text, stored_us)
VALUES ((
    SELECT s.pk FROM sessions AS s
    WHERE s.pk = ?10 AND s.tenant = ?11 AND s.user_id = ?12 AND s.id = ?13
        AND s.head_follows AND s.ttl_us IS NULL AND ?9 >= s.active_us
        AND (
            SELECT m.seq, m.depth, m.id FROM messages AS m WHERE m.session_pk = ?10
            ORDER BY m.depth DESC, m.seq DESC LIMIT 1
        ) IS (?2, ?4, ?3)
        AND NOT EXISTS (
            SELECT 1 FROM sessions AS o WHERE o.tenant = s.tenant AND o.user_id = s.user_id
                AND (o.active_us, o.id) > (s.active_us, s.id)
        )
), ?1, ?2, ?3, ?4 + 1, ?5, ?6, ?7, ?8, ?9)
"""
"""One message after the head, written in one statement that touches no session row: only
if the session's head follows its newest message, that message is still the one given
(seq, depth, id), the session is first in its scope (so its rank cannot change) and the
clock has not gone back past its rank. Else (or for an id already stored) no row.

The guard is the value of `session_pk`: NULL when it fails, which `OR IGNORE` turns into
no row, as it does a duplicate id (`messages` has no other constraint to ignore). It is
not an `INSERT ... SELECT` because SQLite first copies a SELECT that reads the table it
inserts into to a temporary table, which cost more CPU than the rest of the statement."""
PLACE_HEAD_SQL = f"""
UPDATE sessions SET head_seq = ?1, head_depth = ?2, head_id = ?3, message_count = ?4,
    updated_us = ?5, head_follows = ?1 IS {NEWEST.format(pk="?6")}
WHERE pk = ?6
"""
"""Write a session's head, count and time as they now are; its head follows new appends
from now on if it is the session's newest message (or the session has none)."""


def store_error(path: str, exc: sqlite3.Error) -> SessionaryError:
    """Map one of sqlite3's exceptions onto the error tree; the only place that does."""
    text = str(exc)
    if isinstance(exc, sqlite3.ProgrammingError) and "closed database" in text:
        return Closed(f"{path}: the store is closed")
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


def message_from_row(row: Sequence[Any]) -> Message:
    """Decode a row of `MESSAGE_COLUMNS` (its body on first use)."""
    return decode_lazy(row[0], row[1], row[2], row[3], row[4], row[5])


def decode_chain(rows: Iterable[Sequence[Any]], parent_id: str | None) -> list[Message]:
    """Decode `LINEAR_PATH_SQL` rows: each message's parent is the one before it.

    The cycle collector is paused meanwhile (see `gc_paused`): each message is one object
    it tracks, and a whole history set off collections that cost a tenth of the read.
    """
    with gc_paused():
        return decode_lazy_chain(rows, parent_id)


def decode_rows(rows: Sequence[Sequence[Any]]) -> list[Message]:
    """Decode many rows of `MESSAGE_COLUMNS` (each body on first use), as `decode_chain`."""
    with gc_paused():
        return [decode_lazy(r[0], r[1], r[2], r[3], r[4], r[5]) for r in rows]
