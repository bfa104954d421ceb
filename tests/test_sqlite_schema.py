"""What only the SQLite backend has: its schema migrations, applied in place."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from _old_sqlite import OldFile

import sessionary
from sessionary import Message
from sessionary.query import parse_query
from sessionary.stores._sqlite_schema import MIGRATIONS

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
