"""What only the SQLite backend has: its schema migrations, applied in place."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from _old_sqlite import OldFile

import sessionary
from sessionary import Message
from sessionary.query import parse_query
from sessionary.stores import _sqlite_base
from sessionary.stores._sqlite_schema import FILLS, MIGRATIONS

pytestmark = pytest.mark.sqlite


def _applied(path: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()


def test_a_version_1_file_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = OldFile(path, 1)
    old.create("kept")
    old.append("kept", Message.user("written before the upgrade"))
    old.put_user_state('{"n": 1}')
    old.close()
    assert _applied(path) == [(1, MIGRATIONS[0][1])]
    with sessionary.SessionManager(f"sqlite:///{path}") as new:
        assert [m.text for m in new.session("kept").history()] == ["written before the upgrade"]
        assert new.get_state().data == {"n": 1}
        store = new.store
        store.put_document(new.scope, "session", "kept", "block", "k", {}, "pelican", "user", 0)
        hits = store.search_documents(new.scope, "session", "kept", None, parse_query("pelican"), 5)
        assert [h.key for h in hits] == ["k"]
    assert _applied(path) == [(version, name) for version, name, _ in MIGRATIONS]


def test_a_read_only_open_migrates_nothing_and_writes_nothing(tmp_path: Path) -> None:
    from sessionary.errors import SchemaError, StoreUnavailable
    from sessionary.records import Scope, SessionInfo
    from sessionary.stores.sqlite import SQLiteEngine

    old = tmp_path / "old.db"
    OldFile(old, 1).close()
    before = old.read_bytes()
    with pytest.raises(SchemaError, match="schema version 1 and this sessionary reads"):
        SQLiteEngine(str(old), readonly=True)
    assert old.read_bytes() == before and _applied(old) == [(1, MIGRATIONS[0][1])]

    current = tmp_path / "current.db"
    sessionary.SessionManager(f"sqlite:///{current}").close()
    reader = SQLiteEngine(str(current), readonly=True)
    try:
        assert reader.get_session(Scope(), "nope") is None  # reads work
        with pytest.raises(StoreUnavailable, match="readonly"):
            reader.create_session(Scope(), SessionInfo(id="s1"))
    finally:
        reader.close()


def test_the_message_index_of_an_upgraded_file_merges_16_segments_at_a_time(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    old = OldFile(path, 6)
    old.create("kept")
    old.append("kept", Message.user("indexed before the upgrade"))
    old.close()
    with sessionary.SessionManager(f"sqlite:///{path}") as new:
        session = new.session("kept")
        for n in range(300):  # past a catch-up of the index
            session.append(Message.user(f"turn {n} about pelicans"))
        assert len(new.search("pelicans", limit=500)) == 300
        assert [h.snippet for h in new.search("upgrade")] == ["indexed before the upgrade"]
    with sqlite3.connect(path) as db:
        found = db.execute("SELECT v FROM messages_fts_config WHERE k = 'automerge'").fetchone()
    assert found == (16,)


# ---------------------------------------------------------------- migration 8: the words


EMOJI = "Thinking\U0001f914 the robot\U0001f916 said postgres \U0001f642 ready"
FOUND_BY_WORDS = ["thinking", "robot", '"postgres ready"']
"""Queries release 7 could not answer on SQLite: unicode61 glued the words to the emoji."""


def _fts_count(path: Path, table: str, expression: str) -> int:
    with sqlite3.connect(path) as db:
        sql = f"SELECT count(*) FROM {table} WHERE {table} MATCH ?"
        return int(db.execute(sql, (expression,)).fetchone()[0])


def _document_keys(manager: sessionary.SessionManager, query: str) -> list[str]:
    hits = manager.store.search_documents(manager.scope, "user", None, None, parse_query(query), 10)
    return sorted(hit.key for hit in hits)


def _version_7_file(path: Path) -> None:
    """A file as release 7 left it: an indexed message, one not yet indexed, a document."""
    old = OldFile(path, 7)
    old.create("kept")
    old.append("kept", Message.user(EMOJI, id="indexed"))
    old.catch_up()
    old.append("kept", Message.user(f"{EMOJI} again", id="pending"))
    old.put_document("k", EMOJI)
    old.close()
    assert _fts_count(path, "messages_fts", "robot") == 0  # the blind spot
    assert _fts_count(path, "documents_fts", "robot") == 0


def test_a_version_7_file_gets_indexes_of_the_words_next_to_emoji(tmp_path: Path) -> None:
    path = tmp_path / "v7.db"
    _version_7_file(path)
    with sessionary.SessionManager(f"sqlite:///{path}") as new:
        assert _applied(path) == [(version, name) for version, name, _ in MIGRATIONS]
        for query in FOUND_BY_WORDS:
            assert sorted(h.message_id for h in new.search(query)) == ["indexed", "pending"]
            assert _document_keys(new, query) == ["k"]
        new.store.put_document(new.scope, "user", None, "notes", "k", {}, "tidy🧹up", "user", None)
        assert _document_keys(new, "tidy") == ["k"] and _document_keys(new, "robot") == []
    assert _fts_count(path, "messages_fts", "robot") == 2  # indexed by the migration itself
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        db.execute("INSERT INTO documents_fts (documents_fts) VALUES ('integrity-check')")
        db.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")


def test_a_failing_migration_8_leaves_the_version_7_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v7.db"
    _version_7_file(path)
    broken = {8: FILLS[8] + ";\nSELECT * FROM no_such_table;"}
    with monkeypatch.context() as patch:
        patch.setattr(_sqlite_base, "FILLS", broken)
        with pytest.raises(sessionary.SessionaryError):
            sessionary.SessionManager(f"sqlite:///{path}")
    assert _applied(path) == [(version, name) for version, name, _ in MIGRATIONS[:7]]
    assert _fts_count(path, "messages_fts", "ready") == 1  # the old index, untouched
    with sqlite3.connect(path) as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(documents)")]
    assert "search" not in columns
    with sessionary.SessionManager(f"sqlite:///{path}") as new:  # the next open migrates
        assert sorted(h.message_id for h in new.search("robot")) == ["indexed", "pending"]


def test_what_a_release_7_process_writes_after_the_upgrade_stays_searchable(
    tmp_path: Path,
) -> None:
    """It indexes raw text: found as release 7 found it (not next to an emoji)."""
    path = tmp_path / "v7.db"
    _version_7_file(path)
    with sessionary.SessionManager(f"sqlite:///{path}") as new:
        assert len(new.search("robot")) == 2
        still = OldFile(path, 7, create=False)  # a release 7 process, running meanwhile
        still.append("kept", Message.user("written by release 7, pelican🦩", id="old-writer"))
        still.catch_up()
        still.put_document("k", "rewritten by release 7: heron")
        still.close()
        assert [h.message_id for h in new.search("written")] == ["old-writer"]
        assert _document_keys(new, "heron") == ["k"] and _document_keys(new, "robot") == []
        chat = new.session("kept")
        chat.append(Message.user("and again by this release: stork🦢"))
        assert len(new.search("stork")) == 1
        assert new.search("pelican") == []  # release 7's blind spot, for its own writes
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
