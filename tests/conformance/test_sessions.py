"""The session registry: create, get, list, rename, metadata, end, usage, delete, fork."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import sessionary
from sessionary import (
    AlreadyExists,
    InvalidInput,
    Message,
    MessageNotFound,
    SessionNotFound,
    ToolCallPart,
)
from sessionary.stores.base import SEARCH

Snapshot = Callable[[str], list[dict[str, Any]]]


def tick() -> None:
    """Let the clock move on, so activity times are strictly ordered."""
    time.sleep(0.002)


def near_now(moment: datetime | None) -> bool:
    return moment is not None and abs(datetime.now(UTC) - moment) < timedelta(minutes=5)


# ---------------------------------------------------------------- create and get


def test_create_with_fields(manager: sessionary.SessionManager) -> None:
    chat = manager.create(
        id="s1",
        name="support",
        model="gpt-x",
        source="cli",
        metadata={"team": "a", "tags": [1, 2], "nested": {"ok": True}},
    )
    assert chat.id == "s1"
    info = chat.info()
    assert info == manager.get("s1")
    assert (info.id, info.name, info.model, info.source) == ("s1", "support", "gpt-x", "cli")
    assert info.metadata == {"team": "a", "tags": [1, 2], "nested": {"ok": True}}
    assert info.parent_session_id is None
    assert info.head_id is None
    assert info.message_count == 0
    assert (info.input_tokens, info.output_tokens, info.cost) == (0, 0, 0.0)
    assert info.ended_at is None and info.end_reason is None
    assert near_now(info.created_at)
    assert info.updated_at is not None and info.created_at is not None
    assert info.updated_at >= info.created_at
    assert info.created_at.tzinfo is not None


def test_create_without_an_id_makes_one(manager: sessionary.SessionManager) -> None:
    one, two = manager.create(), manager.create()
    assert one.id != two.id
    assert manager.get(one.id) is not None
    assert manager.get(two.id) is not None


def test_create_with_a_taken_id_changes_nothing(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat = manager.create(id="s1", name="first")
    chat.append(Message.user("hello"))
    before = snapshot("s1")
    with pytest.raises(AlreadyExists):
        manager.create(id="s1", name="second")
    assert snapshot("s1") == before
    assert len(manager.list().items) == 1


def test_get_of_a_missing_session_is_none(manager: sessionary.SessionManager) -> None:
    assert manager.get("no-such-session") is None
    with pytest.raises(SessionNotFound):
        manager.session("no-such-session").info()


def test_get_or_create_is_idempotent(manager: sessionary.SessionManager) -> None:
    first = manager.get_or_create("s1", name="original", model="m1")
    first.append(Message.user("hi"))
    second = manager.get_or_create("s1", name="ignored", model="m2")
    assert second.id == "s1"
    info = second.info()
    assert (info.name, info.model, info.message_count) == ("original", "m1", 1)
    assert len(manager.list().items) == 1


def test_session_handles_agree(manager: sessionary.SessionManager) -> None:
    chat = manager.create(id="s1")
    other = manager.session("s1")
    chat.append(Message.user("written through one handle"))
    assert [m.text for m in other.history()] == ["written through one handle"]
    assert repr(other) == "<Session 's1'>"


# ---------------------------------------------------------------- list


def test_list_is_most_recently_active_first(manager: sessionary.SessionManager) -> None:
    for i in range(1, 6):
        manager.create(id=f"s{i}")
        tick()
    assert [i.id for i in manager.list()] == ["s5", "s4", "s3", "s2", "s1"]
    manager.session("s2").append(Message.user("activity"))
    tick()
    assert [i.id for i in manager.list()] == ["s2", "s5", "s4", "s3", "s1"]
    manager.rename("s4", "renamed")
    assert next(i.id for i in manager.list()) == "s4"
    page = manager.list()
    assert page.next_cursor is None
    assert len(page) == 5
    times = [i.updated_at for i in page]
    assert all(a is not None and b is not None and a >= b for a, b in itertools.pairwise(times))


def test_list_pages_cover_every_session_exactly_once(manager: sessionary.SessionManager) -> None:
    for i in range(5):
        manager.create(id=f"s{i}")
    everything = [i.id for i in manager.list()]
    seen: list[str] = []
    pages = []
    cursor = None
    while True:
        page = manager.list(limit=2, cursor=cursor)
        pages.append(len(page.items))
        seen.extend(i.id for i in page.items)
        cursor = page.next_cursor
        if cursor is None:
            break
        assert isinstance(cursor, str)
    assert pages == [2, 2, 1]
    assert seen == everything
    assert sorted(seen) == [f"s{i}" for i in range(5)]


def test_list_pages_with_an_exact_multiple(manager: sessionary.SessionManager) -> None:
    for i in range(4):
        manager.create(id=f"s{i}")
    first = manager.list(limit=2)
    second = manager.list(limit=2, cursor=first.next_cursor)
    assert len(first) == 2 and len(second) == 2
    rest = manager.list(limit=2, cursor=second.next_cursor).items if second.next_cursor else []
    assert rest == []
    assert {i.id for i in [*first, *second]} == {f"s{i}" for i in range(4)}


def test_list_of_nothing(manager: sessionary.SessionManager) -> None:
    page = manager.list()
    assert page.items == [] and page.next_cursor is None
    assert list(page) == []


@pytest.mark.parametrize(
    "cursor",
    [
        "garbage",
        "",
        "e30",
        "W10",
        "!!!!",
        "WzEsMiwzXQ",
    ],
)
def test_a_malformed_cursor_is_refused(manager: sessionary.SessionManager, cursor: str) -> None:
    manager.create()
    with pytest.raises(InvalidInput):
        manager.list(cursor=cursor)


@pytest.mark.parametrize(
    "cursor",
    [
        pytest.param("WyJ4Iiw1XQ", id="str-int"),  # ["x", 5]
        pytest.param("W251bGwsbnVsbF0", id="null-null"),  # [null, null]
        pytest.param("WzEsMl0", id="int-int"),  # [1, 2]
    ],
)
def test_a_cursor_with_wrongly_typed_values_is_refused(
    manager: sessionary.SessionManager, cursor: str
) -> None:
    manager.create()
    with pytest.raises(InvalidInput):
        manager.list(cursor=cursor)


def test_list_filters(manager: sessionary.SessionManager) -> None:
    manager.create(id="a", name="alpha", model="m1", source="cli")
    manager.create(id="b", name="beta", model="m1", source="api")
    manager.create(id="c", name="alpha", model="m2", source="api")
    manager.fork("a", id="fa")
    manager.fork("a", id="fb", name="other")
    manager.end("b")

    def listed(**where: Any) -> set[str]:
        return {i.id for i in manager.list(**where)}

    assert listed() == {"a", "b", "c", "fa", "fb"}
    assert listed(name="alpha") == {"a", "c", "fa"}
    assert listed(model="m1") == {"a", "b", "fa", "fb"}
    assert listed(source="api") == {"b", "c"}
    assert listed(parent_session_id="a") == {"fa", "fb"}
    assert listed(parent_session_id="b") == set()
    assert listed(ended=True) == {"b"}
    assert listed(ended=False) == {"a", "c", "fa", "fb"}
    assert listed(name="alpha", model="m1") == {"a", "fa"}
    assert listed(name="alpha", source="api", ended=False) == {"c"}
    assert listed(name="nobody") == set()
    filtered = manager.list(model="m1", limit=1)
    seen = [i.id for i in filtered]
    while filtered.next_cursor:
        filtered = manager.list(model="m1", limit=1, cursor=filtered.next_cursor)
        seen.extend(i.id for i in filtered)
    assert sorted(seen) == ["a", "b", "fa", "fb"]


# ---------------------------------------------------------------- row updates


def test_rename(manager: sessionary.SessionManager) -> None:
    chat = manager.create(id="s1", name="old")
    version = chat.info().version
    info = manager.rename("s1", "new")
    assert info.name == "new"
    assert manager.get("s1").name == "new"  # type: ignore[union-attr]
    assert info.version > version
    with pytest.raises(SessionNotFound):
        manager.rename("no-such-session", "x")


def test_set_metadata_replaces(manager: sessionary.SessionManager) -> None:
    manager.create(id="s1", metadata={"a": 1, "keep": "no"})
    info = manager.set_metadata("s1", {"b": {"c": [1, 2]}})
    assert info.metadata == {"b": {"c": [1, 2]}}
    assert manager.get("s1").metadata == {"b": {"c": [1, 2]}}  # type: ignore[union-attr]
    assert manager.set_metadata("s1", {}).metadata == {}
    with pytest.raises(SessionNotFound):
        manager.set_metadata("no-such-session", {})


def test_metadata_is_a_copy(manager: sessionary.SessionManager) -> None:
    meta: dict[str, Any] = {"list": [1]}
    manager.create(id="s1", metadata=meta)
    meta["list"].append(2)
    info = manager.get("s1")
    assert info is not None and info.metadata == {"list": [1]}
    info.metadata["list"].append(3)
    assert manager.get("s1").metadata == {"list": [1]}  # type: ignore[union-attr]


def test_end(manager: sessionary.SessionManager) -> None:
    chat = manager.create(id="s1")
    chat.append(Message.user("hello"))
    info = manager.end("s1")
    assert info.end_reason == "completed"
    assert near_now(info.ended_at)
    assert manager.get("s1").end_reason == "completed"  # type: ignore[union-attr]
    assert [m.text for m in chat.history()] == ["hello"]
    manager.create(id="s2")
    assert manager.end("s2", reason="user_exit").end_reason == "user_exit"
    with pytest.raises(SessionNotFound):
        manager.end("no-such-session")


def test_add_usage_accumulates(manager: sessionary.SessionManager) -> None:
    manager.create(id="s1")
    manager.add_usage("s1", input_tokens=10, output_tokens=5, cost=0.5)
    info = manager.add_usage("s1", input_tokens=1, output_tokens=2, cost=0.25)
    assert (info.input_tokens, info.output_tokens) == (11, 7)
    assert info.cost == pytest.approx(0.75)
    manager.add_usage("s1", 0, 0, 0)
    manager.add_usage("s1", output_tokens=3)
    stored = manager.get("s1")
    assert stored is not None
    assert (stored.input_tokens, stored.output_tokens) == (11, 10)
    assert stored.cost == pytest.approx(0.75)
    with pytest.raises(SessionNotFound):
        manager.add_usage("no-such-session", 1)


def test_add_usage_refuses_negatives(manager: sessionary.SessionManager) -> None:
    manager.create(id="s1")
    manager.add_usage("s1", 3, 4, 1.0)
    for bad in ({"input_tokens": -1}, {"output_tokens": -1}, {"cost": -1.0}):
        with pytest.raises(InvalidInput):
            manager.add_usage("s1", **bad)
    info = manager.get("s1")
    assert info is not None
    assert (info.input_tokens, info.output_tokens, info.cost) == (3, 4, 1.0)


# ---------------------------------------------------------------- delete


def test_delete_removes_everything(manager: sessionary.SessionManager) -> None:
    chat = manager.create(id="s1", name="doomed")
    chat.append_all([Message.user("the capybara"), Message.assistant("swims")])
    chat.update_state({"k": "v"})
    chat.update_state({"shared": 1}, level="user")
    keeper = manager.create(id="s2")
    keeper.append(Message.user("another capybara"))
    searchable = SEARCH in manager.store.capabilities
    if searchable:
        assert len(manager.search("capybara")) == 2
    assert manager.delete("s1") is True
    assert manager.get("s1") is None
    assert [i.id for i in manager.list()] == ["s2"]
    if searchable:
        assert [h.session_id for h in manager.search("capybara")] == ["s2"]
    with pytest.raises(SessionNotFound):
        chat.history()
    with pytest.raises(SessionNotFound):
        chat.get_state()
    assert manager.delete("s1") is False
    # the user's state belongs to the user, not the session
    assert manager.get_state().data == {"shared": 1}
    # a session made again under the same id starts from nothing
    again = manager.create(id="s1")
    assert again.history() == []
    assert again.message_count() == 0
    assert again.get_state() == sessionary.State({}, 0)
    assert again.info().name is None
    if searchable:
        assert again.search("capybara") == []


def test_delete_of_a_missing_session_is_false(manager: sessionary.SessionManager) -> None:
    assert manager.delete("no-such-session") is False


# ---------------------------------------------------------------- fork


def build_forkable(manager: sessionary.SessionManager) -> sessionary.Session:
    chat = manager.create(id="src", name="source", model="m1", source="cli", metadata={"k": 1})
    chat.append_all(
        [
            Message.user("a", id="a", metadata={"x": 1}),
            Message.assistant("b", id="b"),
            Message.user("c", id="c"),
            Message.assistant("d", id="d"),
        ]
    )
    chat.append(Message.user("side branch", id="x"), parent="b")
    chat.checkout("d")
    chat.update_state({"plan": ["step 1"], "n": 1})
    return chat


def test_fork_at_a_middle_message(manager: sessionary.SessionManager) -> None:
    chat = build_forkable(manager)
    fork = manager.fork("src", "c")
    info = fork.info()
    assert info.parent_session_id == "src"
    assert info.id != "src"
    assert (info.name, info.model, info.source, info.metadata) == ("source", "m1", "cli", {"k": 1})
    assert [m.id for m in fork.history()] == ["a", "b", "c"]
    assert fork.history() == chat.history(leaf="c")
    assert [m.parent_id for m in fork.history()] == [None, "a", "b"]
    assert fork.message_count() == 3
    assert info.head_id == "c"
    assert fork.get_state().data == {"plan": ["step 1"], "n": 1}
    # the two are independent from now on
    fork.append(Message.assistant("fork only", id="f1"))
    fork.update_state({"n": 2})
    assert chat.get_message("f1") is None
    assert chat.get_state().data == {"plan": ["step 1"], "n": 1}
    assert [m.id for m in chat.history()] == ["a", "b", "c", "d"]
    assert chat.message_count() == 5
    chat.update({"id": "a", "role": "user", "content": "changed in source"})
    assert fork.get_message("a").text == "a"  # type: ignore[union-attr]


def test_fork_defaults_to_the_head(manager: sessionary.SessionManager) -> None:
    chat = build_forkable(manager)
    fork = manager.fork("src", name="copy", id="copy")
    assert fork.id == "copy"
    assert fork.info().name == "copy"
    assert [m.id for m in fork.history()] == ["a", "b", "c", "d"]
    assert fork.message_count() == 4
    chat.checkout("x")
    assert [m.id for m in manager.fork("src").history()] == ["a", "b", "x"]


def test_fork_of_an_empty_session(manager: sessionary.SessionManager) -> None:
    manager.create(id="empty")
    fork = manager.fork("empty")
    assert fork.history() == []
    assert fork.info().parent_session_id == "empty"


def test_fork_errors_change_nothing(manager: sessionary.SessionManager) -> None:
    build_forkable(manager)
    manager.create(id="taken")
    with pytest.raises(SessionNotFound):
        manager.fork("no-such-session")
    with pytest.raises(MessageNotFound):
        manager.fork("src", "no-such-message")
    with pytest.raises(AlreadyExists):
        manager.fork("src", id="taken")
    assert {i.id for i in manager.list()} == {"src", "taken"}
    assert manager.session("taken").history() == []


def test_a_fork_is_a_fresh_row_and_lists_first(manager: sessionary.SessionManager) -> None:
    build_forkable(manager)
    tick()
    fork = manager.fork("src", "b")
    info = fork.info()
    assert near_now(info.created_at)
    assert near_now(info.updated_at)
    source = manager.get("src")
    assert source is not None and source.created_at is not None and info.created_at is not None
    assert info.created_at > source.created_at
    assert next(i.id for i in manager.list()) == fork.id


def test_a_fork_never_separates_a_tool_call_from_its_results(
    manager: sessionary.SessionManager,
) -> None:
    chat = manager.create(id="src")
    chat.append(Message.user("weather in two cities?"))
    chat.append(
        Message.assistant(
            tool_calls=[
                ToolCallPart(id="c1", name="weather", arguments={"city": "Oslo"}),
                ToolCallPart(id="c2", name="weather", arguments={"city": "Lima"}),
            ],
            id="ask",
        )
    )
    chat.append_all([Message.tool("c1", "cold", id="r1"), Message.tool("c2", "warm", id="r2")])
    try:
        fork = manager.fork("src", "r1")
    except InvalidInput:
        return  # refusing to cut a tool turn in half is fine too
    answered = {r.call_id for m in fork.history() for r in m.tool_results}
    asked = {c.id for m in fork.history() for c in m.tool_calls}
    assert asked <= answered
