"""Erasure on SQLite leaves no byte of the erased text in the files, not only in the rows.

SQLite deletes a row by unlinking it: its bytes stay in the page's free space, in freed
pages and in the write-ahead log until something overwrites them. A user asking for
erasure expects the text gone from the disk, so the store deletes with `secure_delete`
and `erase` empties the log.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import sessionary
from sessionary.stores import _sqlite_base

MARK = b"zqxerinmark"


@pytest.fixture(autouse=True)
def _sqlite_without_secure_delete(monkeypatch: pytest.MonkeyPatch) -> None:
    """Open connections as most SQLite builds do (Debian's zero deleted content by default)."""

    original = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        db = original(*args, **kwargs)
        db.execute("PRAGMA secure_delete = OFF")
        return db

    monkeypatch.setattr(_sqlite_base.sqlite3, "connect", connect)


def _files_holding(directory: Path, mark: bytes) -> list[str]:
    return [f.name for f in sorted(directory.iterdir()) if mark in f.read_bytes().lower()]


def _fill(mgr: sessionary.SessionManager, label: str) -> None:
    for n in range(30):
        session = mgr.create(id=f"s{n}", name="kept name")
        first = session.append({"role": "user", "content": f"hello {label} number {n}"})
        session.append({"role": "assistant", "content": f"{label} " * 3000})  # overflow pages
        session.update({"id": first.id, "role": "user", "content": f"edited {label}"})
        session.update_state({"note": label})
        session.add_compaction(f"summary {label}", first.id, first.id)
    mgr.update_state({"user": label})


def test_erase_user_leaves_the_text_in_no_file(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with sessionary.SessionManager(str(path)) as manager:
        _fill(manager.for_user("erin"), MARK.decode())
        _fill(manager.for_user("otto"), "ottosdata")
    assert _files_holding(tmp_path, MARK) == ["s.db"]  # written into the file on close
    with sessionary.SessionManager(str(path)) as manager:
        assert manager.for_user("erin").erase_user() == 30

        assert _files_holding(tmp_path, MARK) == []
        assert manager.for_user("otto").search("ottosdata")
    assert _files_holding(tmp_path, MARK) == []


def test_a_deleted_state_leaves_its_text_in_no_page(tmp_path: Path) -> None:
    # State is not indexed for search: only the table's pages could hold its text.
    path = tmp_path / "s.db"
    with sessionary.SessionManager(str(path)) as manager:
        for n in range(30):
            session = manager.create(id=f"s{n}", metadata={"m": MARK.decode()})
            session.update_state({"note": MARK.decode() * 500})
    assert _files_holding(tmp_path, MARK) == ["s.db"]  # written into the file on close
    with sessionary.SessionManager(str(path)) as manager:
        for n in range(30):
            manager.delete(f"s{n}")
        manager.create(id="after").update_state({"note": "later"})
    # Closing checkpoints the log into the file: what the deletes freed is zeros there.
    assert b"later" in path.read_bytes()
    assert _files_holding(tmp_path, MARK) == []
