"""The SQLite schema, as ordered migrations applied in place inside one transaction.

Design notes:

- `messages.seq` is the rowid: it orders messages by insertion across the whole file.
  It is not AUTOINCREMENT (that costs an extra page write per append); instead every
  delete lowers the search watermark to the highest remaining seq, so a reused seq is
  always above the watermark and gets indexed.
- A message points at its parent by `parent_seq` and knows its `depth`, so a path is a
  walk of rowid lookups that stops after `limit` steps, and its length is one lookup.
  It also keeps its parent's id, so reads never join a message to its parent.
- A session row holds its head (`head_seq`, `head_depth`, `head_id`), `message_count`
  and `updated_us` as of its last write. While `head_follows` is set, the head is instead
  the session's newest deepest message (the end of `messages_depth`), and the messages
  past the stored head, all appended one after another at the head, add to the count and
  bring their `stored_us` time. `sessions_now` is the view that works this out; every
  read of a head, a count or a session's time goes through it. So the common append (one
  message after a head that follows, to the session first in its scope) is one `INSERT`
  that writes no session row: one b-tree page fewer in every commit, and no trigger
  (running one costs SQLite more than a statement). Every other write that moves a head
  stores it, with the count and time, and sets `head_follows` again when the head is
  the newest message. Up to version 3 a trigger moved the head in every insert.
- `messages_depth (session_pk, depth)` (with the implied rowid) serves three reads: a
  message's children (same session, depth + 1, then filtered by parent), export in
  (depth, seq) order, which puts parents first and is the same again after an import,
  and a session's newest deepest message (its last entry), where a following head is.
- Sessions list newest activity first by `active_us`, not `updated_us`: an append moves
  `updated_us` every time, and an index on it would be rewritten by every append (one
  more page in every commit). `active_us` follows `updated_us` (a trigger), except while a
  session is already first in its scope and its time only moves forward: then the order
  cannot change, and it stays. A session's activity since its rank was set all happened
  while it was first, before any other session's later activity, so `active_us <=
  updated_us` and ordering by `(active_us, id)` is ordering by activity, with a cursor
  that stays exact. Successive appends to the session in use, the common case, touch no
  index of `sessions`.
- `messages_fts` is an FTS5 index of the words of `messages.text`. It is filled in
  batches (see `search_progress`), not by a trigger in every append transaction. Since
  version 6 both FTS5 indexes hold words unstemmed (`unicode61`, no `porter`). Since
  version 7 the message index merges its segments 16 at a time (`automerge`, 4 by
  default): an index filled in batches is otherwise rewritten level after level, which
  cost about a fifth of the bytes a bulk append writes and an eighth of its CPU.
- Since version 8 both indexes are given a text's words as `sessionary.query.words`
  finds them (`_sqlite_index.index_text`), not the text as written: `unicode61` knows
  Unicode 6.1, takes every codepoint assigned since (most emoji, skin tones) for a
  letter and a combining mark for part of a word, so "robot🤖" was one word that
  `robot` never found, and "postgres 🙂 ready" no phrase "postgres ready". The tokenizer
  (`TOKENIZER`) splits none of the words it is given, and folds each. The message index
  is contentless (`content = ''`): the words are worked out from `messages.text` (the
  SQL function `sessionary_words`) when a message is indexed and again when it is
  removed. A document's words are kept in `documents.search`, which `documents_fts`
  indexes by triggers as before; `search_version` is the version whose text they are
  the words of.
- A session with a TTL keeps it in `ttl_us`, with `ttl_sliding` (count from the last
  activity, the view's `updated_us`, or from `created_us`); reads hide it once expired,
  and `sessions_ttl` (only rows with a TTL) is what the sweeper scans. Such sessions
  never take the one-statement append or path read, which skip the session's row.
- `documents` holds one row per document (its owner, latest version number and text);
  `document_versions` one row per version (body, text, author, time). The row of a
  document is what `documents_fts` indexes, by triggers: documents are written far less
  often than messages are appended, and their index is then always current. Deleting a
  document's row deletes its versions (a trigger) so no version outlives its document.

Migration 8 rebuilds both indexes from the stored text, every message included (the
watermark ends at the newest), inside its one transaction: interrupted, it leaves the
file at version 7 as it was, and the next open runs it again. It holds the write lock
meanwhile, as migration 6 did: 100,000 messages of 300 characters (a quarter of them
not ASCII) took 6 seconds, so a file of a million keeps other writers waiting about a
minute, longer than their `busy_timeout` (30 seconds by default). It needs
`sessionary_words`, so its fill is SQL of its own (`FILLS`), which only the engine
runs; on a new file, the only kind `sessionary schema --print` is for, there is
nothing to fill.

A process of release 7 still running against the file after the upgrade (one started
after it refuses the newer schema) keeps working, and what it writes stays searchable.
Its catch-ups index the raw text of the messages they reach, split by `unicode61` as
release 7 did: those messages keep that release's blind spot (words next to a new
emoji or a combining mark) and no other, since for any other text the raw text and
its words give the index the same words at the same positions. Its searches find what
this release indexed as well as what it did. Where one release removes (edits,
deletes) a message the other indexed and the two disagree on its words, the words the
remover does not know of stay in the index: they only hand the Python check
(`stores._textmatch`) a candidate that it drops. A document it writes sets `text`
alone, leaving `search_version` behind, and a trigger (`documents_text`) then indexes
that text as release 7 did.
"""

from __future__ import annotations

import sqlite3

__all__ = ["FILLS", "MIGRATIONS", "TOKENIZER", "statements"]

_LETTERS_61_SEPARATES = "".join(map(chr, [*range(0x19B0, 0x19C1), 0x19C8, 0x19C9, 0x1CF2, 0x1CF3]))
"""Letters to Python's `unicodedata` (since Unicode 8 and 10; marks before) that
unicode61's Unicode 6.1 tables take for separators: New Tai Lue vowel signs and tone
marks, two Vedic signs. Every other letter, digit or private-use character is part of a
word to it (tests/test_sqlite_words.py checks every codepoint)."""

TOKENIZER = f"unicode61 remove_diacritics 2 tokenchars '{_LETTERS_61_SEPARATES}'"
"""The FTS5 tokenizer of both indexes since version 8. It keeps every letter, digit and
private-use character in a word, so given a text's words (`_sqlite_index.index_text`)
it splits none of them, and folds each one's case and accents."""

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

_V4 = """
DROP TRIGGER messages_move_head;
ALTER TABLE messages ADD COLUMN stored_us INTEGER;
ALTER TABLE sessions ADD COLUMN head_follows INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET head_follows = head_seq IS (
    SELECT m.seq FROM messages AS m WHERE m.session_pk = sessions.pk
    ORDER BY m.depth DESC, m.seq DESC LIMIT 1
);
CREATE VIEW sessions_now AS
SELECT s.pk, s.tenant, s.user_id, s.id, s.name, s.parent_session_id, s.model, s.source,
    s.metadata, s.created_us, max(s.updated_us, coalesce(h.stored_us, 0)) AS updated_us,
    s.ended_us, s.end_reason, s.input_tokens, s.output_tokens, s.cost,
    coalesce(h.seq, s.head_seq) AS head_seq, coalesce(h.depth, s.head_depth) AS head_depth,
    coalesce(h.id, s.head_id) AS head_id,
    s.message_count + coalesce(h.depth - s.head_depth, 0) AS message_count,
    s.version, s.active_us, s.head_follows
FROM sessions AS s LEFT JOIN messages AS h ON s.head_follows AND h.seq = (
    SELECT m.seq FROM messages AS m WHERE m.session_pk = s.pk
    ORDER BY m.depth DESC, m.seq DESC LIMIT 1
)
"""

_V5 = """
ALTER TABLE sessions ADD COLUMN ttl_us INTEGER;
ALTER TABLE sessions ADD COLUMN ttl_sliding INTEGER NOT NULL DEFAULT 1;
CREATE INDEX sessions_ttl ON sessions (ttl_us) WHERE ttl_us IS NOT NULL;
DROP VIEW sessions_now;
CREATE VIEW sessions_now AS
SELECT s.pk, s.tenant, s.user_id, s.id, s.name, s.parent_session_id, s.model, s.source,
    s.metadata, s.created_us, max(s.updated_us, coalesce(h.stored_us, 0)) AS updated_us,
    s.ended_us, s.end_reason, s.input_tokens, s.output_tokens, s.cost,
    coalesce(h.seq, s.head_seq) AS head_seq, coalesce(h.depth, s.head_depth) AS head_depth,
    coalesce(h.id, s.head_id) AS head_id,
    s.message_count + coalesce(h.depth - s.head_depth, 0) AS message_count,
    s.version, s.active_us, s.head_follows, s.ttl_us, s.ttl_sliding
FROM sessions AS s LEFT JOIN messages AS h ON s.head_follows AND h.seq = (
    SELECT m.seq FROM messages AS m WHERE m.session_pk = s.pk
    ORDER BY m.depth DESC, m.seq DESC LIMIT 1
)
"""

# Search matches whole words, never stems (see `stores._textmatch`): the indexes hold the
# words as unicode61 folds them, without the porter stemmer, so a prefix is a prefix of a
# word as written. The message index is rebuilt up to its watermark, where it was.
_V6 = """
DROP TABLE messages_fts;
CREATE VIRTUAL TABLE messages_fts USING fts5 (
    text, content = 'messages', content_rowid = 'seq', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO messages_fts (rowid, text) SELECT seq, text FROM messages
WHERE text != '' AND seq <= (SELECT indexed_upto FROM search_progress);
DROP TABLE documents_fts;
CREATE VIRTUAL TABLE documents_fts USING fts5 (
    text, content = 'documents', content_rowid = 'pk', tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO documents_fts (documents_fts) VALUES ('rebuild');
"""

# FTS5 keeps the setting in the index's own config table; its segments merge when 16 of a
# level are there, not 4, so fewer merges rewrite what catch-ups wrote. Searches read
# up to 16 segments a level instead of 4, at 100,000 messages no slower than before.
_V7 = """
INSERT INTO messages_fts (messages_fts, rank) VALUES ('automerge', 16);
"""

# Both indexes over the words (see the module docstring): the message index is emptied
# here and filled by `FILLS`; a document's words start as its text (an index that SQL
# alone can build, for `schema --print`) and are then replaced by `FILLS`.
_V8 = f"""
DROP TABLE messages_fts;
CREATE VIRTUAL TABLE messages_fts USING fts5 (
    text, content = '', tokenize = "{TOKENIZER}"
);
INSERT INTO messages_fts (messages_fts, rank) VALUES ('automerge', 16);
UPDATE search_progress SET indexed_upto = 0;
DROP TRIGGER documents_index;
DROP TRIGGER documents_reindex;
DROP TRIGGER documents_drop;
DROP TABLE documents_fts;
ALTER TABLE documents ADD COLUMN search TEXT NOT NULL DEFAULT '';
ALTER TABLE documents ADD COLUMN search_version INTEGER NOT NULL DEFAULT 0;
UPDATE documents SET search = text, search_version = version;
CREATE VIRTUAL TABLE documents_fts USING fts5 (
    search, content = 'documents', content_rowid = 'pk', tokenize = "{TOKENIZER}"
);
INSERT INTO documents_fts (documents_fts) VALUES ('rebuild');
CREATE TRIGGER documents_index AFTER INSERT ON documents BEGIN
    INSERT INTO documents_fts (rowid, search) VALUES (new.pk, new.search);
END;
CREATE TRIGGER documents_reindex AFTER UPDATE OF search ON documents BEGIN
    INSERT INTO documents_fts (documents_fts, rowid, search)
    VALUES ('delete', old.pk, old.search);
    INSERT INTO documents_fts (rowid, search) VALUES (new.pk, new.search);
END;
CREATE TRIGGER documents_text AFTER UPDATE OF text ON documents
WHEN new.search_version != new.version BEGIN
    UPDATE documents SET search = new.text, search_version = new.version WHERE pk = new.pk;
END;
CREATE TRIGGER documents_drop AFTER DELETE ON documents BEGIN
    INSERT INTO documents_fts (documents_fts, rowid, search)
    VALUES ('delete', old.pk, old.search);
    DELETE FROM document_versions WHERE document_pk = old.pk;
END
"""

MIGRATIONS: list[tuple[int, str, str]] = [
    (1, "sessions, messages, search index and state", _V1),
    (2, "versioned documents with a search index", _V2),
    (3, "list order by an activity rank that appends to the newest session leave alone", _V3),
    (4, "a head that follows appends without a write to its session row", _V4),
    (5, "a TTL per session (retention), sliding or fixed", _V5),
    (6, "search indexes of whole words, unstemmed", _V6),
    (7, "the message search index merges its segments 16 at a time", _V7),
    (8, "search indexes of the words as queries split them, emoji and all", _V8),
]
"""(version, name, SQL) in order; statements end with semicolons (triggers may hold more)."""

FILLS: dict[int, str] = {
    8: """
UPDATE documents SET search = sessionary_words(text) WHERE search != sessionary_words(text);
INSERT INTO messages_fts (rowid, text)
SELECT seq, sessionary_words(text) FROM messages WHERE text != '';
UPDATE search_progress SET indexed_upto = (SELECT coalesce(max(seq), 0) FROM messages);
""",
}
"""SQL a migration runs after its own, in its transaction, to fill what it made from the
rows already stored. It calls `sessionary_words`, which the engine registers on its
connections (`_sqlite_index.register_words`) and no other client has."""


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
