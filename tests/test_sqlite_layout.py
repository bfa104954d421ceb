"""The SQLite layout that keeps appends cheap: plain text rows and the activity rank.

A message that is one bare text part is stored as its text alone (an empty JSON body);
sessions list by `active_us`, which appends to the session already first in its scope
leave alone. Migration 3 brings a version 2 file to this layout in place.
"""

from __future__ import annotations

import itertools
import random
import sqlite3
import time
from pathlib import Path

import pytest
from _old_sqlite import OldFile

import sessionary
from sessionary import Message, TextPart, ToolCallPart
from sessionary.errors import PayloadTooLarge
from sessionary.model import encode_body, from_micros
from sessionary.stores import _sqlite_base
from sessionary.stores._sqlite_rows import FOLLOW_SQL
from sessionary.stores._sqlite_schema import _V3, MIGRATIONS

pytestmark = pytest.mark.sqlite


def _applied(path: Path) -> list[int]:
    with sqlite3.connect(path) as db:
        return [v for (v,) in db.execute("SELECT version FROM schema_migrations ORDER BY version")]


def _columns(path: Path, table: str) -> set[str]:
    with sqlite3.connect(path) as db:
        return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def _rows(path: Path) -> dict[str, tuple[str, str]]:
    with sqlite3.connect(path) as db:
        return {r[0]: (r[1], r[2]) for r in db.execute("SELECT id, data, text FROM messages")}


def _tick() -> None:
    time.sleep(0.003)  # SQLite's clock in the head trigger has millisecond resolution


# ---------------------------------------------------------------- plain text rows


def test_a_plain_message_is_stored_as_its_text_and_reads_back_equal(tmp_path: Path) -> None:
    path = tmp_path / "plain.db"
    with sessionary.SessionManager(f"sqlite:///{path}") as manager:
        chat = manager.create(id="s")
        plain = chat.append(Message.user('say "hi"\n\\ and 😀'))
        rich = [
            chat.append(Message.user("tagged", metadata={"k": 1})),
            chat.append(Message("user", [TextPart("a"), TextPart("b")])),
            chat.append(Message("user", [TextPart("x", extra={"cache": True})])),
            chat.append(Message.assistant("calls", tool_calls=[ToolCallPart("c1", "f", {})])),
            chat.append(Message.from_dict({"role": "user", "content": "new", "future": 1})),
            chat.append(Message("assistant", [])),
        ]
        stored = _rows(path)
        assert stored[plain.id] == ("", 'say "hi"\n\\ and 😀')
        assert all(stored[m.id][0].startswith("{") for m in rich)
        assert chat.history() == [plain, *rich]
        assert [chat.get_message(m.id) for m in (plain, *rich)] == [plain, *rich]
        assert [h.message_id for h in chat.search("hi")] == [plain.id]


def test_an_update_moves_a_message_between_the_two_forms(tmp_path: Path) -> None:
    path = tmp_path / "update.db"
    with sessionary.SessionManager(f"sqlite:///{path}") as manager:
        chat = manager.create(id="s")
        first = chat.append(Message.user("plain words"))
        richer = Message.user("richer words", id=first.id, metadata={"edited": True})
        assert chat.update(richer).metadata == {"edited": True}
        assert _rows(path)[first.id][0].startswith("{")
        assert chat.update(Message.user("plain again", id=first.id)).text == "plain again"
        assert _rows(path)[first.id] == ("", "plain again")
        assert [h.message_id for h in chat.search("again")] == [first.id]
        assert chat.search("richer") == []


def test_a_row_written_with_a_json_body_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "legacy.db"
    with sessionary.SessionManager(f"sqlite:///{path}") as manager:
        chat = manager.create(id="s")
        newer = chat.append(Message.user("newer"))
    legacy = Message.user("written by an older version", parent_id=newer.id)
    with sqlite3.connect(path) as db:  # the layout every message had before version 3
        db.execute(
            "INSERT INTO messages (session_pk, id, parent_seq, parent_id, depth, role, "
            "created_us, data, text) SELECT 1, ?, seq, id, 1, 'user', 1, ?, ? FROM messages",
            (legacy.id, encode_body(legacy), legacy.text),
        )
        db.execute("UPDATE sessions SET head_seq = 2, head_depth = 1, message_count = 2")
    with sessionary.SessionManager(f"sqlite:///{path}") as manager:
        (read,) = manager.session("s").history(limit=1)
        assert read.parts == legacy.parts and read.metadata == {} and read.extra == {}
        assert read.parent_id == newer.id


@pytest.mark.parametrize("text", ["", "plain", 'quotes " and \\ and\nnewlines \x01', "é😀" * 7])
def test_a_plain_message_has_the_size_limit_of_its_json_body(tmp_path: Path, text: str) -> None:
    message = Message.user(text)
    size = len(encode_body(message).encode())
    url = f"sqlite:///{tmp_path / 'limit.db'}?max_message_bytes="
    with sessionary.SessionManager(url + str(size - 1)) as tight:
        with pytest.raises(PayloadTooLarge):
            tight.create(id="s").append(message)
        assert tight.session("s").history() == []
    with sessionary.SessionManager(url + str(size)) as enough:
        assert enough.session("s").append(message) == message


# ---------------------------------------------------------------- activity rank


def _listed(manager: sessionary.SessionManager, limit: int) -> list[str]:
    seen: list[str] = []
    cursor = None
    while True:
        page = manager.list(limit=limit, cursor=cursor)
        seen.extend(i.id for i in page)
        times = [i.updated_at for i in page]
        assert all(a is not None and b is not None and a >= b for a, b in itertools.pairwise(times))
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor


def test_the_list_follows_activity_while_appends_to_the_first_leave_its_rank(
    tmp_path: Path,
) -> None:
    path = tmp_path / "rank.db"
    rng = random.Random(7)
    with sessionary.SessionManager(f"sqlite:///{path}") as manager:
        touched: list[str] = []  # least recently active first
        for step in range(60):
            action = rng.random()
            if action < 0.15 or not touched:
                sid = f"s{step}"
                manager.create(id=sid)
            else:
                sid = rng.choice(touched[-3:] if action < 0.7 else touched)
                if action < 0.9:
                    manager.session(sid).append(Message.user(f"turn {step}"))
                else:
                    manager.rename(sid, f"renamed {step}")
            if sid in touched:
                touched.remove(sid)
            touched.append(sid)
            _tick()
            expected = touched[::-1]
            assert _listed(manager, rng.choice([1, 2, 3, 100])) == expected
        with sqlite3.connect(path) as db:
            ranks = db.execute(
                "SELECT active_us, updated_us FROM sessions ORDER BY active_us DESC, id DESC"
            ).fetchall()
        assert all(rank <= updated for rank, updated in ranks)
        assert all(a[1] > b[1] for a, b in itertools.pairwise(ranks))
        assert any(rank < updated for rank, updated in ranks)  # some appends left it alone


def test_appends_to_the_first_session_leave_the_activity_index_alone(tmp_path: Path) -> None:
    path = tmp_path / "quiet.db"
    with sessionary.SessionManager(f"sqlite:///{path}") as manager:
        manager.create(id="other")
        _tick()
        chat = manager.create(id="first")
        _tick()
        chat.append(Message.user("one"))
        with sqlite3.connect(path) as db:
            (before,) = db.execute("SELECT active_us FROM sessions WHERE id = 'first'").fetchone()
        _tick()
        chat.append(Message.user("two"))
        with sqlite3.connect(path) as db:
            after, updated = db.execute(
                "SELECT active_us, updated_us FROM sessions WHERE id = 'first'"
            ).fetchone()
        assert after == before < updated
        assert [i.id for i in manager.list()] == ["first", "other"]


# ---------------------------------------------------------------- migration 3


def test_a_version_2_file_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    old = OldFile(path, 2)
    for sid in ("a", "b", "c"):
        old.create(sid)
        old.append(sid, Message.user(f"hello from {sid}"))
        _tick()
    old.append("a", Message.user("a again"))
    old.close()
    assert _applied(path) == [1, 2]
    assert "active_us" not in _columns(path, "sessions")
    with sqlite3.connect(path) as db:
        before = [r for (r,) in db.execute("SELECT id FROM sessions ORDER BY updated_us DESC")]
    assert before == ["a", "c", "b"]
    with sessionary.SessionManager(f"sqlite:///{path}") as new:
        assert _applied(path) == [v for v, _, _ in MIGRATIONS]
        assert [i.id for i in new.list()] == before
        assert [m.text for m in new.session("a").history()] == ["hello from a", "a again"]
        _tick()
        new.session("b").append(Message.user("b moves up"))
        assert [i.id for i in new.list(limit=1)] == ["b"]
        assert _listed(new, 1) == ["b", "a", "c"]
        assert {h.session_id for h in new.search("hello")} == {"a", "b", "c"}
    with sqlite3.connect(path) as db:
        indexes = {r for (r,) in db.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        assert "sessions_active" in indexes and "sessions_activity" not in indexes
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_failing_migration_3_leaves_the_version_2_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v2.db"
    old = OldFile(path, 2)
    old.create("kept")
    old.append("kept", Message.user("still here"))
    old.close()
    broken = (3, "broken", _V3 + ";\nSELECT * FROM no_such_table;")
    with monkeypatch.context() as patch:
        patch.setattr(_sqlite_base, "MIGRATIONS", [*MIGRATIONS[:2], broken])
        with pytest.raises(sessionary.SessionaryError):
            sessionary.SessionManager(f"sqlite:///{path}")
    assert _applied(path) == [1, 2]
    assert "active_us" not in _columns(path, "sessions")
    with sessionary.SessionManager(f"sqlite:///{path}") as new:
        assert [m.text for m in new.session("kept").history()] == ["still here"]
        assert _applied(path) == [v for v, _, _ in MIGRATIONS]


# ---------------------------------------------------------------- migration 4: a head that follows


def _session_row(path: Path, sid: str) -> tuple[int, int, str | None, int, int]:
    """The stored (head_seq, head_follows, head_id, message_count, updated_us) of a session."""
    with sqlite3.connect(path) as db:
        row = db.execute(
            "SELECT head_seq, head_follows, head_id, message_count, updated_us FROM sessions "
            "WHERE id = ?",
            (sid,),
        ).fetchone()
    return tuple(row)  # type: ignore[return-value]


def test_appends_after_a_following_head_leave_the_session_row_alone(tmp_path: Path) -> None:
    path = tmp_path / "follow.db"
    with sessionary.SessionManager(f"sqlite:///{path}") as manager:
        chat = manager.create(id="s")
        first = chat.append(Message.user("one"))
        stored = _session_row(path, "s")
        assert stored[:3] == (1, 1, first.id)
        _tick()
        later = [chat.append(Message.user(f"turn {n}")) for n in range(5)]
        assert _session_row(path, "s") == stored  # five appends, no write to the row
        info = manager.get("s")
        assert info is not None and (info.head_id, info.message_count) == (later[-1].id, 6)
        assert info.updated_at is not None and info.updated_at > from_micros(stored[4])
        assert [i.updated_at for i in manager.list()] == [info.updated_at]
        assert chat.history() == [first, *later]
        assert [m.parent_id for m in later] == [first.id] + [m.id for m in later[:-1]]


def test_a_head_moved_back_is_stored_until_it_is_the_newest_again(tmp_path: Path) -> None:
    path = tmp_path / "branch.db"
    with sessionary.SessionManager(f"sqlite:///{path}") as manager:
        chat = manager.create(id="s")
        a, b, c = (chat.append(Message.user(t)) for t in "abc")
        chat.checkout(a.id)
        assert _session_row(path, "s")[:3] == (1, 0, a.id)
        d = chat.append(Message.user("d"))  # a branch beside b: not the deepest message
        assert _session_row(path, "s")[1:4] == (0, d.id, 4)
        e = chat.append(Message.user("e"))  # as deep as c and newer: the head follows again
        assert _session_row(path, "s")[1:4] == (1, e.id, 5)
        f = chat.append(Message.user("f"))
        assert _session_row(path, "s")[2:4] == (e.id, 5)
        info = manager.get("s")
        assert info is not None and (info.head_id, info.message_count) == (f.id, 6)
        assert [m.id for m in chat.history()] == [a.id, d.id, e.id, f.id]
        assert {m.id for m in chat.branches(a.id)} == {b.id, d.id}
        chat.delete(e.id)
        assert (manager.get("s").head_id, manager.get("s").message_count) == (d.id, 4)  # type: ignore[union-attr]
        assert [m.id for m in chat.history()] == [a.id, d.id]
        assert _session_row(path, "s")[1] == 0  # c, deeper than d, is elsewhere
        assert chat.append(Message.user("g")).parent_id == d.id
    assert c.parent_id == b.id


def test_another_writer_moving_the_head_is_seen_by_the_next_append(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'two.db'}"
    with sessionary.SessionManager(url) as one, sessionary.SessionManager(url) as two:
        chat = one.create(id="s")
        a = chat.append(Message.user("a"))
        b = chat.append(Message.user("b"))  # `one` now builds on b without reading
        two.session("s").checkout(a.id)
        c = chat.append(Message.user("c"))
        assert c.parent_id == a.id
        d = two.session("s").append(Message.user("d"))
        e = chat.append(Message.user("e"))
        assert (d.parent_id, e.parent_id) == (c.id, d.id)
        assert [m.id for m in chat.history()] == [a.id, c.id, d.id, e.id]
        assert one.get("s").message_count == 5  # type: ignore[union-attr]
        two.session("s").clear()
        assert chat.append(Message.user("f")).parent_id is None
    assert b.parent_id == a.id


def _follow(db: sqlite3.Connection, **changed: object) -> int:
    """Run `FOLLOW_SQL` for a message "new" after session "s"'s head, with some values
    changed; return how many rows it inserted."""
    pk, seq, depth, head = db.execute(
        "SELECT pk, head_seq, head_depth, head_id FROM sessions_now WHERE id = 's'"
    ).fetchone()
    values: dict[str, object] = {
        "id": "new", "parent_seq": seq, "parent_id": head, "depth": depth, "role": "user",
        "created_us": 1, "data": "", "text": "new", "stored_us": time.time_ns() // 1000,
        "pk": pk, "tenant": "default", "user": "default", "session": "s",
    }  # fmt: skip
    values.update(changed)
    return int(db.execute(FOLLOW_SQL, tuple(values.values())).rowcount)


@pytest.mark.parametrize(
    "changed",
    [
        {"parent_id": "elsewhere"},  # the head moved: another message is the newest
        {"parent_seq": 1},
        {"depth": 5},
        {"id": "m0"},  # an id already stored
        {"pk": 2},  # another session's pk, or a pk reused after a delete
        {"session": "other"},
        {"tenant": "other"},
        {"stored_us": 0},  # the clock went back past the session's rank
    ],
)
def test_the_one_statement_append_writes_nothing_when_a_guard_fails(
    tmp_path: Path, changed: dict[str, object]
) -> None:
    path = tmp_path / "guard.db"
    with sessionary.SessionManager(f"sqlite:///{path}") as manager:
        chat = manager.create(id="s")
        for n in range(3):
            chat.append(Message.user(f"m{n}", id=f"m{n}"))
        manager.create(id="other")
        chat.append(Message.user("m3", id="m3"))  # first in its scope again
    with sqlite3.connect(path, isolation_level=None) as db:
        before = db.execute("SELECT count(*) FROM messages").fetchone()
        assert _follow(db, **changed) == 0
        assert db.execute("SELECT count(*) FROM messages").fetchone() == before
        assert _follow(db) == 1  # the same statement, unchanged, inserts


def test_the_one_statement_append_waits_for_a_head_that_follows_and_a_first_session(
    tmp_path: Path,
) -> None:
    path = tmp_path / "rank.db"
    with sessionary.SessionManager(f"sqlite:///{path}") as manager:
        chat = manager.create(id="s")
        chat.append(Message.user("a"))
        _tick()
        manager.create(id="later")  # now first in the scope
    with sqlite3.connect(path, isolation_level=None) as db:
        assert _follow(db) == 0
        db.execute("DELETE FROM sessions WHERE id = 'later'")
        db.execute("UPDATE sessions SET head_follows = 0 WHERE id = 's'")
        assert _follow(db) == 0
        db.execute("UPDATE sessions SET head_follows = 1 WHERE id = 's'")
        assert _follow(db) == 1


def test_a_version_3_file_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    old = OldFile(path, 3)
    old.create("linear")
    texts = [f"linear {n}" for n in range(4)]
    for text in texts:
        old.append("linear", Message.user(text))
    old.create("branched")
    root = Message.user("root")
    old.append("branched", root)
    old.append("branched", Message.user("left"))
    old.append("branched", Message.user("right"), parent_id=root.id)
    old.append("branched", Message.assistant("deeper"), parent_id=root.id)
    old.set_head("branched", root.id)
    old.close()
    with sqlite3.connect(path) as db:
        before = {
            row[0]: row[1:]
            for row in db.execute("SELECT id, head_id, message_count, updated_us FROM sessions")
        }
    with sessionary.SessionManager(f"sqlite:///{path}") as new:
        assert _applied(path) == [v for v, _, _ in MIGRATIONS]
        assert _session_row(path, "linear")[1] == 1 and _session_row(path, "branched")[1] == 0
        for sid in ("linear", "branched"):
            info = new.get(sid)
            assert info is not None
            head_id, count, updated_us = before[sid]
            assert (info.head_id, info.message_count) == (head_id, count)
            assert info.updated_at == from_micros(updated_us)
        assert [m.text for m in new.session("linear").history()] == texts
        assert [m.text for m in new.session("branched").history()] == ["root"]
        _tick()
        added = new.session("linear").append(Message.user("after the upgrade"))
        assert _session_row(path, "linear")[1:4] == (1, added.id, 5)
        more = new.session("linear").append(Message.user("and again"))
        assert new.get("linear").message_count == 6  # type: ignore[union-attr]
        assert new.session("linear").history()[-2:] == [added, more]
        assert new.session("branched").append(Message.user("new")).parent_id == root.id
        assert new.get("branched").message_count == 5  # type: ignore[union-attr]
        assert [i.id for i in new.list()] == ["branched", "linear"]
        assert {h.session_id for h in new.search("linear")} == {"linear"}
    with sqlite3.connect(path) as db:
        triggers = {r for (r,) in db.execute("SELECT name FROM sqlite_master WHERE type='trigger'")}
        assert "messages_move_head" not in triggers
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


# ---------------------------------------------------------------- migration 6: unstemmed search


def test_a_version_5_file_gets_unstemmed_search_indexes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Version 5 indexed porter stems: `deploym*` could not find "deployment"."""
    path = tmp_path / "v5.db"
    url = f"sqlite:///{path}"
    with monkeypatch.context() as patch:
        patch.setattr(_sqlite_base, "MIGRATIONS", MIGRATIONS[:5])
        with sessionary.SessionManager(url) as old:
            chat = old.create(id="old")
            chat.append(Message.user("deployment failed"))
            assert len(old.search("deployment")) == 1  # brings the index up to date
            chat.append(Message.user("indexed only at the next search"))
    # Version 5's documents, as its code wrote them (this code's need version 8's columns).
    writer = OldFile(path, 5, create=False)
    writer.put_document("k", "deployed")
    writer.close()
    assert _applied(path) == [1, 2, 3, 4, 5]
    with sqlite3.connect(path) as db:
        count = "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?"
        assert db.execute(count, ("deployments",)).fetchone() == (1,)  # both stem to deploy
        assert db.execute(count, ("deploym*",)).fetchone() == (0,)  # the prefix bug
    with sessionary.SessionManager(url) as new:
        assert _applied(path) == [v for v, _, _ in MIGRATIONS]
        assert [h.snippet for h in new.search("deploym*")] == ["deployment failed"]
        assert new.search("deploy") == []
        assert [h.snippet for h in new.search("next")] == ["indexed only at the next search"]
        query = sessionary.query.parse_query("deploy*")
        hits = new.store.search_documents(new.scope, "user", None, None, query, 5)
        assert [h.key for h in hits] == ["k"]
    with sqlite3.connect(path) as db:
        sql = db.execute("SELECT sql FROM sqlite_master WHERE name = 'messages_fts'").fetchone()
        assert "porter" not in sql[0]
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
