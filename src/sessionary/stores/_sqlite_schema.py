"""The SQLite schema, as ordered migrations applied in place inside one transaction.

Design notes:

- `messages.seq` is the rowid: it orders messages by insertion across the whole file.
  It is not AUTOINCREMENT (that costs an extra page write per append); instead every
  delete lowers the search watermark to the highest remaining seq, so a reused seq is
  always above the watermark and gets indexed.
- A message points at its parent by `parent_seq` and knows its `depth`, so a path is a
  walk of rowid lookups that stops after `limit` steps, and its length is one lookup.
  It also keeps its parent's id, so reads never join a message to its parent.
- A session row caches its head (`head_seq`, `head_depth`, `head_id`) and
  `message_count`; a trigger moves the head to every inserted message, so an append is
  one statement and the head can never disagree with the messages.
- `messages_depth (session_pk, depth)` (with the implied rowid) serves two reads: a
  message's children (same session, depth + 1, then filtered by parent), and export in
  (depth, seq) order, which puts parents first and is the same again after an import.
- Sessions list newest activity first by `active_us`, not `updated_us`: an append moves
  `updated_us` every time, and an index on it would be rewritten by every append (one
  more page in every commit). `active_us` follows `updated_us` (a trigger), except while a
  session is already first in its scope and its time only moves forward: then the order
  cannot change, and it stays. A session's activity since its rank was set all happened
  while it was first, before any other session's later activity, so `active_us <=
  updated_us` and ordering by `(active_us, id)` is ordering by activity, with a cursor
  that stays exact. Successive appends to the session in use, the common case, touch no
  index of `sessions`.
- `messages_fts` is an external-content FTS5 index over `messages.text`. It is filled in
  batches (see `search_progress`), not by a trigger in every append transaction.
- `documents` holds one row per document (its owner, latest version number and text);
  `document_versions` one row per version (body, text, author, time). The row of a
  document is what `documents_fts` indexes, by triggers: documents are written far less
  often than messages are appended, and their index is then always current. Deleting a
  document's row deletes its versions (a trigger) so no version outlives its document.
"""

from __future__ import annotations

import sqlite3

__all__ = ["MIGRATIONS", "statements"]

_V1 = """
CREATE TABLE sessions (
    pk INTEGER PRIMARY KEY,
    tenant TEXT NOT NULL,
    user_id TEXT NOT NULL,
    id TEXT NOT NULL,
    name TEXT,
    parent_session_id TEXT,
    model TEXT,
    source TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    created_us INTEGER NOT NULL,
    updated_us INTEGER NOT NULL,
    ended_us INTEGER,
    end_reason TEXT,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost REAL NOT NULL DEFAULT 0,
    head_seq INTEGER,
    head_depth INTEGER NOT NULL DEFAULT -1,
    head_id TEXT,
    message_count INTEGER NOT NULL DEFAULT 0,
    version INTEGER NOT NULL DEFAULT 1,
    UNIQUE (tenant, user_id, id)
);
CREATE INDEX sessions_activity ON sessions (tenant, user_id, updated_us, id);
CREATE TABLE messages (
    seq INTEGER PRIMARY KEY,
    session_pk INTEGER NOT NULL,
    id TEXT NOT NULL,
    parent_seq INTEGER,
    parent_id TEXT,
    depth INTEGER NOT NULL,
    role TEXT NOT NULL,
    created_us INTEGER NOT NULL,
    data TEXT NOT NULL,
    text TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX messages_id ON messages (session_pk, id);
CREATE TRIGGER messages_move_head AFTER INSERT ON messages BEGIN
    UPDATE sessions SET head_seq = new.seq, head_depth = new.depth, head_id = new.id,
        message_count = message_count + 1,
        updated_us = CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)
    WHERE pk = new.session_pk;
END;
CREATE INDEX messages_depth ON messages (session_pk, depth);
CREATE VIRTUAL TABLE messages_fts USING fts5 (
    text, content = 'messages', content_rowid = 'seq', tokenize = 'porter unicode61'
);
CREATE TABLE search_progress (
    only INTEGER PRIMARY KEY CHECK (only = 1),
    indexed_upto INTEGER NOT NULL
);
INSERT INTO search_progress (only, indexed_upto) VALUES (1, 0);
CREATE TABLE states (
    level TEXT NOT NULL,
    tenant TEXT NOT NULL,
    user_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    data TEXT NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (level, tenant, user_id, owner)
) WITHOUT ROWID
"""

_V2 = """
CREATE TABLE documents (
    pk INTEGER PRIMARY KEY,
    level TEXT NOT NULL,
    tenant TEXT NOT NULL,
    user_id TEXT NOT NULL,
    owner TEXT NOT NULL,
    namespace TEXT NOT NULL,
    doc_key TEXT NOT NULL,
    version INTEGER NOT NULL,
    text TEXT NOT NULL,
    UNIQUE (level, tenant, user_id, owner, namespace, doc_key)
);
CREATE TABLE document_versions (
    document_pk INTEGER NOT NULL,
    version INTEGER NOT NULL,
    body TEXT NOT NULL,
    text TEXT NOT NULL,
    author TEXT NOT NULL,
    updated_us INTEGER NOT NULL,
    PRIMARY KEY (document_pk, version)
) WITHOUT ROWID;
CREATE VIRTUAL TABLE documents_fts USING fts5 (
    text, content = 'documents', content_rowid = 'pk', tokenize = 'porter unicode61'
);
CREATE TRIGGER documents_index AFTER INSERT ON documents BEGIN
    INSERT INTO documents_fts (rowid, text) VALUES (new.pk, new.text);
END;
CREATE TRIGGER documents_reindex AFTER UPDATE OF text ON documents BEGIN
    INSERT INTO documents_fts (documents_fts, rowid, text) VALUES ('delete', old.pk, old.text);
    INSERT INTO documents_fts (rowid, text) VALUES (new.pk, new.text);
END;
CREATE TRIGGER documents_drop AFTER DELETE ON documents BEGIN
    INSERT INTO documents_fts (documents_fts, rowid, text) VALUES ('delete', old.pk, old.text);
    DELETE FROM document_versions WHERE document_pk = old.pk;
END
"""

_V3 = """
ALTER TABLE sessions ADD COLUMN active_us INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET active_us = updated_us;
DROP INDEX sessions_activity;
CREATE INDEX sessions_active ON sessions (tenant, user_id, active_us, id);
CREATE TRIGGER sessions_rank_new AFTER INSERT ON sessions BEGIN
    UPDATE sessions SET active_us = new.updated_us WHERE pk = new.pk;
END;
CREATE TRIGGER sessions_rank AFTER UPDATE OF updated_us ON sessions
WHEN new.updated_us < new.active_us OR EXISTS (
    SELECT 1 FROM sessions AS o
    WHERE o.tenant = new.tenant AND o.user_id = new.user_id
        AND (o.active_us, o.id) > (new.active_us, new.id)
)
BEGIN
    UPDATE sessions SET active_us = new.updated_us WHERE pk = new.pk;
END
"""

MIGRATIONS: list[tuple[int, str, str]] = [
    (1, "sessions, messages, search index and state", _V1),
    (2, "versioned documents with a search index", _V2),
    (3, "list order by an activity rank that appends to the newest session leave alone", _V3),
]
"""(version, name, SQL) in order; statements end with semicolons (triggers may hold more)."""


def statements(sql: str) -> list[str]:
    """Split a script into whole statements, keeping a trigger's body in one piece."""
    out: list[str] = []
    buffer = ""
    for piece in sql.split(";"):
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            if buffer.strip(" \n;"):
                out.append(buffer.strip())
            buffer = ""
    if buffer.strip(" \n;"):
        out.append(buffer.strip())
    return out
