"""SQLite files as older versions of sessionary wrote them, built with SQL alone.

The engine needs the newest schema, so an older file cannot be made by running it with
fewer migrations. These helpers apply the first migrations and write rows the way the code
of that version did, with that version's triggers still in place (up to version 3 a trigger
moved a session's head, count and time on every insert), for the upgrade tests to open.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from sessionary import Message
from sessionary.model import encode_body, message_text, plain_text, to_micros
from sessionary.stores._sqlite_schema import MIGRATIONS, statements

__all__ = ["OldFile"]


class OldFile:
    """A database file at schema `version`, written as that version's code wrote it."""

    def __init__(self, path: Path, version: int, *, create: bool = True) -> None:
        """Make the file at `version` (or, with `create` False, open one as its code did)."""
        self.version = version
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode = WAL")
        if not create:  # a process of that release still running against a newer file
            return
        self.db.execute(
            "CREATE TABLE schema_migrations "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_us INTEGER NOT NULL)"
        )
        for number, name, sql in MIGRATIONS[:version]:
            for statement in statements(sql):
                self.db.execute(statement)
            self.db.execute(
                "INSERT INTO schema_migrations VALUES (?, ?, ?)", (number, name, _now_us())
            )

    def create(self, session_id: str) -> None:
        """Create a session in the default scope."""
        now = _now_us()
        self.db.execute(
            "INSERT INTO sessions (tenant, user_id, id, created_us, updated_us) "
            "VALUES ('default', 'default', ?, ?, ?)",
            (session_id, now, now),
        )

    def append(self, session_id: str, message: Message, parent_id: str | None = "head") -> None:
        """Insert a message after the head (or after `parent_id`; None for a new root)."""
        body, text = encode_body(message), message_text(message)
        if self.version >= 3 and plain_text(message) is not None:
            body = ""  # version 3 stores a bare text message as its text alone
        if parent_id == "head":
            parent = "SELECT head_seq, head_depth, head_id FROM sessions WHERE id = ?"
            key = session_id
        else:
            parent, key = "SELECT seq, depth, id FROM messages WHERE id = ?", parent_id
        row = self.db.execute(parent, (key,)).fetchone() or (None, -1, None)
        values = (message.id, row[0], row[2], row[1] + 1, message.role)
        self.db.execute(
            "INSERT INTO messages (session_pk, id, parent_seq, parent_id, depth, role, "
            "created_us, data, text) SELECT pk, ?, ?, ?, ?, ?, ?, ?, ? FROM sessions WHERE id = ?",
            (*values, to_micros(message.created_at), body, text, session_id),
        )

    def set_head(self, session_id: str, message_id: str) -> None:
        """Move a session's head, as `set_head` did."""
        self.db.execute(
            "UPDATE sessions SET (head_seq, head_depth, head_id) = "
            "(SELECT seq, depth, id FROM messages WHERE id = ?) WHERE id = ?",
            (message_id, session_id),
        )

    def put_user_state(self, data: str) -> None:
        """Write the default user's state document (version 1)."""
        self.db.execute(
            "INSERT INTO states VALUES ('user', 'default', 'default', '', ?, 1)", (data,)
        )

    def catch_up(self) -> None:
        """Bring the search index up to date, as versions 1 to 7 did (the raw text)."""
        self.db.execute(
            "INSERT INTO messages_fts (rowid, text) SELECT seq, text FROM messages "
            "WHERE seq > (SELECT indexed_upto FROM search_progress) AND text != ''"
        )
        self.db.execute(
            "UPDATE search_progress SET indexed_upto = (SELECT coalesce(max(seq), 0) FROM messages)"
        )

    def put_document(self, key: str, text: str) -> None:
        """Write a new version of the default user's document `notes/key`, as 2 to 7 did."""
        owner = ("user", "default", "default", "")
        self.db.execute(
            "INSERT INTO documents (level, tenant, user_id, owner, namespace, doc_key, version, "
            "text) VALUES (?, ?, ?, ?, 'notes', ?, 0, '') "
            "ON CONFLICT (level, tenant, user_id, owner, namespace, doc_key) DO NOTHING",
            (*owner, key),
        )
        pk, version = self.db.execute(
            "SELECT pk, version + 1 FROM documents WHERE level = ? AND tenant = ? AND user_id = ? "
            "AND owner = ? AND namespace = 'notes' AND doc_key = ?",
            (*owner, key),
        ).fetchone()
        self.db.execute(
            "INSERT INTO document_versions (document_pk, version, body, text, author, "
            "updated_us) VALUES (?, ?, '{}', ?, 'user', ?)",
            (pk, version, text, _now_us()),
        )
        self.db.execute(
            "UPDATE documents SET version = ?, text = ? WHERE pk = ?", (version, text, pk)
        )

    def close(self) -> None:
        """Close the file (its WAL is folded back in)."""
        self.db.close()


def _now_us() -> int:
    return time.time_ns() // 1000
