"""Export and import: JSON records that round-trip a session exactly."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import sessionary
from sessionary import (
    AlreadyExists,
    DataPart,
    InvalidInput,
    Message,
    ReasoningPart,
    SessionNotFound,
    TextPart,
    ToolCallPart,
)
from sessionary.stores.base import SEARCH

OpenScope = Callable[..., sessionary.SessionManager]
T0 = datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=UTC)


def build_rich(manager: sessionary.SessionManager, session_id: str = "rich") -> None:
    """A session using every feature an export must carry."""
    chat = manager.create(
        id=session_id,
        name="rich one",
        model="model-x",
        source="cli",
        metadata={"team": "é", "nested": {"list": [1, 2.5, None, True]}},
    )
    chat.append(Message.system("be helpful", id="sys", created_at=T0))
    chat.append(
        {
            "id": "u1",
            "role": "user",
            "parts": [
                {"type": "text", "text": "look at this", "lang": "en"},
                {
                    "type": "file",
                    "mime_type": "image/png",
                    "url": "https://x/y.png",
                    "filename": "y.png",
                    "width": 640,
                },
            ],
            "metadata": {"client": "web"},
            "created_at": (T0 + timedelta(microseconds=1)).isoformat(),
            "x_unknown_field": {"keep": ["me"]},
        }
    )
    chat.append(
        Message(
            role="assistant",
            id="a1",
            created_at=T0 + timedelta(seconds=1, microseconds=999999),
            parts=[
                ReasoningPart("thinking", signature="sig=="),
                TextPart("calling"),
                ToolCallPart(id="c1", name="lookup", arguments={"q": "y", "n": [1]}),
            ],
        )
    )
    chat.append(
        Message.tool(
            "c1", {"result": ["ok"]}, name="lookup", id="t1", created_at=T0 + timedelta(seconds=2)
        )
    )
    chat.append(Message.assistant("done", id="a2", created_at=T0 + timedelta(seconds=3)))
    # a second branch and a second root
    chat.append(Message.assistant("alternative", id="alt", created_at=T0), parent="u1")
    chat.append(
        Message(
            role="user",
            parts=[DataPart({"k": "v"}, name="d"), TextPart("root 2")],
            id="r2",
            created_at=T0 - timedelta(days=400),
        ),
        parent=None,
    )
    chat.checkout("a2")
    chat.update_state({"plan": {"step": 2}, "notes": ["a", "b"]})
    chat.update_state({"plan": {"done": False}})
    manager.add_usage(session_id, 120, 45, 0.0123)
    manager.end(session_id, "max_turns")


def records_of(manager: sessionary.SessionManager, session_id: str | None = None) -> list[dict]:
    return list(manager.export(session_id))


def test_export_records_are_json_and_ordered(manager: sessionary.SessionManager) -> None:
    build_rich(manager)
    records = records_of(manager, "rich")
    assert json.loads(json.dumps(records)) == records
    assert records[0]["type"] == "session"
    session = records[0]["session"]
    assert session["id"] == "rich"
    assert session["name"] == "rich one"
    assert session["end_reason"] == "max_turns"
    assert session["head_id"] == "a2"
    assert session["message_count"] == 7
    assert records[0]["state"]["data"] == {"plan": {"step": 2, "done": False}, "notes": ["a", "b"]}
    assert records[0]["state"]["version"] == 2
    messages = [r for r in records[1:]]
    assert all(r["type"] == "message" and r["session_id"] == "rich" for r in messages)
    assert sorted(r["message"]["id"] for r in messages) == sorted(
        ["sys", "u1", "a1", "t1", "a2", "alt", "r2"]
    )
    seen: set[str] = set()
    for r in messages:  # parents come before their children
        parent = r["message"].get("parent_id")
        assert parent is None or parent in seen
        seen.add(r["message"]["id"])


def test_export_then_import_round_trips_exactly(manager: sessionary.SessionManager) -> None:
    build_rich(manager)
    chat = manager.session("rich")
    history = chat.history()
    every = {m["message"]["id"]: Message.from_dict(m["message"]) for m in records_of(manager)[1:]}
    records = json.loads(json.dumps(records_of(manager, "rich")))
    assert manager.delete("rich") is True
    imported = manager.import_records(records)
    assert [i.id for i in imported] == ["rich"]
    assert records_of(manager, "rich") == records
    info = manager.get("rich")
    assert info is not None
    assert (
        info.created_at is not None
        and info.created_at.microsecond
        == datetime.fromisoformat(records[0]["session"]["created_at"]).microsecond
    )
    assert (info.input_tokens, info.output_tokens) == (120, 45)
    assert info.cost == pytest.approx(0.0123)
    assert info.end_reason == "max_turns"
    assert info.metadata == {"team": "é", "nested": {"list": [1, 2.5, None, True]}}
    assert chat.history() == history
    assert [m.parent_id for m in chat.history()] == [m.parent_id for m in history]
    for mid, message in every.items():
        assert chat.get_message(mid) == message, mid
    u1 = chat.get_message("u1")
    assert u1 is not None
    assert u1.extra == {"x_unknown_field": {"keep": ["me"]}}
    assert u1.parts[0].extra == {"lang": "en"}
    assert u1.parts[1].extra == {"width": 640}
    assert u1.created_at == T0 + timedelta(microseconds=1)
    assert [m.id for m in chat.branches("u1")] == ["a1", "alt"]
    assert chat.path_length() == 5
    assert chat.message_count() == 7
    assert chat.get_state() == sessionary.State(
        {"plan": {"step": 2, "done": False}, "notes": ["a", "b"]}, 2
    )
    # the imported messages are searchable, and the tree keeps working
    if SEARCH in manager.store.capabilities:
        assert {h.message_id for h in manager.search("alternative")} == {"alt"}
    nxt = chat.append(Message.user("after import"))
    assert nxt.parent_id == "a2"


def test_import_into_another_scope(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    build_rich(manager)
    records = records_of(manager, "rich")
    other = open_scope(tenant="elsewhere", user="someone")
    other.import_records(records)
    assert records_of(other, "rich") == records
    if SEARCH in other.store.capabilities:
        assert {h.message_id for h in other.search("alternative")} == {"alt"}
    # the original is untouched and still its own
    assert records_of(manager, "rich") == records
    other.session("rich").append(Message.user("only in the copy"))
    assert manager.session("rich").message_count() == 7


def test_export_of_everything_and_import_of_many(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    build_rich(manager, "first")
    manager.create(id="empty")
    second = manager.create(id="second")
    second.append_all([Message.user("hello"), Message.assistant("hi")])
    records = records_of(manager)
    starts = [r["session"]["id"] for r in records if r["type"] == "session"]
    assert sorted(starts) == ["empty", "first", "second"]
    current = None
    for r in records:
        if r["type"] == "session":
            current = r["session"]["id"]
        else:
            assert r["session_id"] == current
    assert sum(r["type"] == "message" for r in records) == 9
    target = open_scope(tenant="copy")
    imported = target.import_records(iter(records))
    assert sorted(i.id for i in imported) == ["empty", "first", "second"]
    for sid in ("empty", "first", "second"):
        assert records_of(target, sid) == records_of(manager, sid)


def test_importing_twice_raises_already_exists(manager: sessionary.SessionManager) -> None:
    build_rich(manager)
    records = records_of(manager, "rich")
    manager.create(id="other").append(Message.user("x"))
    with pytest.raises(AlreadyExists):
        manager.import_records(records)
    assert records_of(manager, "rich") == records
    manager.delete("rich")
    manager.import_records(records)
    with pytest.raises(AlreadyExists):
        manager.import_records(records)
    assert records_of(manager, "rich") == records


def test_export_of_a_missing_session(manager: sessionary.SessionManager) -> None:
    with pytest.raises(SessionNotFound):
        records_of(manager, "no-such-session")
    assert records_of(manager) == []
    assert manager.import_records([]) == []


def session_record(**fields: Any) -> dict[str, Any]:
    return {
        "type": "session",
        "session": {"id": "bad", **fields},
        "state": {"data": {}, "version": 0},
    }


def message_record(message: Any, session_id: str = "bad") -> dict[str, Any]:
    return {"type": "message", "session_id": session_id, "message": message}


GOOD_MESSAGE = {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}

MALFORMED: list[Any] = [
    pytest.param([message_record(GOOD_MESSAGE)], id="message-before-session"),
    pytest.param([{"type": "bogus"}], id="unknown-type"),
    pytest.param([{"no": "type"}], id="no-type"),
    pytest.param(["not an object"], id="record-str"),
    pytest.param([None], id="record-none"),
    pytest.param([{"type": "session"}], id="session-missing"),
    pytest.param([{"type": "session", "session": []}], id="session-list"),
    pytest.param([{"type": "session", "session": {"name": "no id"}}], id="session-no-id"),
    pytest.param([session_record(id="a/b")], id="session-id-slash"),
    pytest.param([session_record(created_at="yesterday")], id="session-bad-time"),
    pytest.param([session_record(name="two\nlines")], id="session-bad-name"),
    pytest.param([session_record(metadata="not an object")], id="session-metadata-str"),
    pytest.param(
        [{"type": "session", "session": {"id": "bad"}, "state": {"data": [1, 2]}}],
        id="state-data-list",
    ),
    pytest.param(
        [{"type": "session", "session": {"id": "bad"}, "state": {"version": "x"}}],
        id="state-version-str",
    ),
    pytest.param([{"type": "session", "session": {"id": "bad"}, "state": 5}], id="state-int"),
    pytest.param(
        [session_record(), message_record({"id": "m1", "role": "robot", "content": "x"})],
        id="message-bad-role",
    ),
    pytest.param([session_record(), message_record("hi")], id="message-str"),
    pytest.param([session_record(), {"type": "message", "session_id": "bad"}], id="message-none"),
    pytest.param([session_record(), message_record(GOOD_MESSAGE, "other")], id="message-elsewhere"),
    pytest.param(
        [session_record(), message_record(GOOD_MESSAGE), message_record(GOOD_MESSAGE)],
        id="message-twice",
    ),
    pytest.param(
        [session_record(), message_record({**GOOD_MESSAGE, "id": "a:b"})], id="message-id-colon"
    ),
    pytest.param(
        [session_record(), message_record({**GOOD_MESSAGE, "created_at": "noon"})],
        id="message-bad-time",
    ),
    pytest.param(
        [session_record(), message_record(GOOD_MESSAGE), message_record({"role": "user"})],
        id="second-message-bad",
    ),
]


@pytest.mark.parametrize("records", MALFORMED)
def test_malformed_records_raise_invalid_input_and_write_nothing(
    manager: sessionary.SessionManager, records: list[Any]
) -> None:
    manager.create(id="existing").append(Message.user("stay"))
    before = records_of(manager)
    with pytest.raises(InvalidInput):
        manager.import_records(records)
    assert manager.get("bad") is None
    assert records_of(manager) == before


REPLACEMENTS_THE_STORE_REFUSES: list[Any] = [
    pytest.param(
        [session_record(), message_record(GOOD_MESSAGE), message_record(GOOD_MESSAGE)],
        id="message-twice",
    ),
    pytest.param(
        [session_record(), message_record({**GOOD_MESSAGE, "parent_id": "nowhere"})],
        id="parent-not-earlier",
    ),
    pytest.param([session_record(head_id="nowhere")], id="head-not-imported"),
    pytest.param(
        [
            session_record(),
            {
                "type": "document",
                "session_id": "bad",
                "document": {"namespace": "n", "key": "k", "version": 2, "body": {}},
            },
        ],
        id="document-without-version-1",
    ),
]


@pytest.mark.parametrize("records", REPLACEMENTS_THE_STORE_REFUSES)
def test_a_replacement_the_store_refuses_leaves_the_session_it_would_replace(
    manager: sessionary.SessionManager, records: list[Any], capabilities: frozenset[str]
) -> None:
    if "documents" not in capabilities and records[-1]["type"] == "document":
        pytest.skip("a store without documents refuses documents up front")
    build_rich(manager, "bad")
    before = records_of(manager, "bad")
    with pytest.raises(InvalidInput):
        manager.import_records(records, existing="replace")
    assert records_of(manager, "bad") == before


@pytest.mark.parametrize(
    "records",
    [
        pytest.param(
            [session_record(), message_record({**GOOD_MESSAGE, "parent_id": "nowhere"})],
            id="parent-not-earlier",
        ),
        pytest.param([session_record(head_id="nowhere")], id="head-not-imported"),
    ],
)
def test_out_of_order_records_raise_invalid_input(
    manager: sessionary.SessionManager, records: list[Any]
) -> None:
    before = records_of(manager)
    try:
        with pytest.raises(InvalidInput):
            manager.import_records(records)
    finally:
        assert manager.get("bad") is None
        assert records_of(manager) == before


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"input_tokens": "lots"}, id="tokens-str"),
        pytest.param({"output_tokens": -5}, id="tokens-negative"),
        pytest.param({"cost": "free"}, id="cost-str"),
        pytest.param({"message_count": "x", "version": "y"}, id="counters-str"),
    ],
)
def test_session_records_with_bad_counters_are_refused(
    manager: sessionary.SessionManager, fields: dict[str, Any]
) -> None:
    try:
        with pytest.raises(InvalidInput):
            manager.import_records([session_record(**fields)])
    finally:
        assert manager.get("bad") is None


def test_imported_session_metadata_must_be_json(manager: sessionary.SessionManager) -> None:
    with pytest.raises(InvalidInput):
        manager.import_records([session_record(metadata={"s": {1, 2}})])
    assert manager.get("bad") is None


def test_export_of_a_session_longer_than_a_page(manager: sessionary.SessionManager) -> None:
    chat = manager.create(id="long")
    chat.append_all([Message.user(f"m{i}", id=f"m{i}") for i in range(700)])
    chat.append_all([Message.user(f"b{i}", id=f"b{i}") for i in range(400)], parent="m350")
    records = records_of(manager, "long")
    messages = [r["message"]["id"] for r in records[1:]]
    assert len(messages) == 1100
    assert len(set(messages)) == 1100
    seen: set[str] = set()
    for r in records[1:]:  # parents before children, across page boundaries too
        parent = r["message"].get("parent_id")
        assert parent is None or parent in seen
        seen.add(r["message"]["id"])
    manager.delete("long")
    manager.import_records(records)
    assert records_of(manager, "long") == records
    assert chat.path_length() == 751


def test_pages_of_sessions_with_the_same_activity_time(
    manager: sessionary.SessionManager,
) -> None:
    when = "2024-01-01T00:00:00.000001+00:00"
    manager.import_records(
        {
            "type": "session",
            "session": {"id": f"s{i}", "created_at": when, "updated_at": when},
            "state": {"data": {}, "version": 0},
        }
        for i in range(7)
    )
    seen: list[str] = []
    cursor = None
    while True:
        page = manager.list(limit=2, cursor=cursor)
        seen.extend(i.id for i in page)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert sorted(seen) == [f"s{i}" for i in range(7)]
    assert len(seen) == 7
    assert seen == [i.id for i in manager.list()]
    info = manager.get("s3")
    assert info is not None and info.updated_at == datetime.fromisoformat(when)
