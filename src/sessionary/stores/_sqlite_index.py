"""The SQLite search index: an FTS5 table kept in step with `messages` in batches.

The index is external-content FTS5 over `messages.text`. Appends do not touch it; a
watermark (`search_progress.indexed_upto`) records how far it has caught up, and
`catch_up` indexes everything above it. The engine catches up every `INDEX_BATCH`
messages inside the append that crosses the boundary, and always before a search runs,
so search is complete without an FTS write in every append transaction. Updates and
deletes of messages below the watermark remove (and re-add) their index rows at once.

The index only finds candidates: each is checked, ranked and given its snippet in Python
(`stores._textmatch`), as on every store. (FTS5's own `snippet()` and `highlight()` take
time quadratic in a row's hits: about 4 seconds for a text holding a word 20,000 times.)
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

__all__ = [
    "INDEX_BATCH",
    "catch_up",
    "index_pending",
    "lower_watermark",
    "reindex",
    "unindex_where",
]

INDEX_BATCH = 256
"""The search index catches up whenever a message's seq is a multiple of this."""


def catch_up(db: sqlite3.Connection) -> None:
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


def unindex_where(db: sqlite3.Connection, where: str, params: Sequence[Any]) -> None:
    """Remove already indexed messages matching `where` from the search index."""
    db.execute(
        "INSERT INTO messages_fts (messages_fts, rowid, text) "
        f"SELECT 'delete', seq, text FROM messages WHERE {where} AND text != '' "
        "AND seq <= (SELECT indexed_upto FROM search_progress)",
        tuple(params),
    )


def lower_watermark(db: sqlite3.Connection) -> None:
    """After a delete, keep the watermark at or below the highest remaining seq.

    A new message takes seq = max(seq) + 1, which may reuse a deleted one; keeping
    the watermark at or below max(seq) means that message is still above it and
    will be indexed.
    """
    db.execute(
        "UPDATE search_progress SET indexed_upto = "
        "min(indexed_upto, (SELECT coalesce(max(seq), 0) FROM messages))"
    )


def reindex(db: sqlite3.Connection, seq: int, text: str) -> None:
    """Index a message's new text again, if the index had reached it."""
    if text:
        db.execute(
            "INSERT INTO messages_fts (rowid, text) SELECT ?, ? "
            "WHERE ? <= (SELECT indexed_upto FROM search_progress)",
            (seq, text, seq),
        )


def index_pending(db: sqlite3.Connection) -> bool:
    """Whether messages were added since the search index last caught up."""
    (upto,) = db.execute("SELECT indexed_upto FROM search_progress").fetchone()
    (top,) = db.execute("SELECT coalesce(max(seq), 0) FROM messages").fetchone()
    return bool(top > upto)
