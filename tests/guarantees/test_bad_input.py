"""Invariant 7: bad input gets a clear, typed error and changes nothing.

Every hostile call below must raise the named subclass of `sessionary.InvalidInput`
and leave the scope's data exactly as it was: the export of every session (rows,
state, messages) and the user and app state compare equal before and after.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import sessionary
from sessionary import (
    DataPart,
    InvalidDocument,
    InvalidId,
    InvalidInput,
    InvalidMessage,
    InvalidPatch,
    InvalidQuery,
    InvalidURL,
    Message,
    PayloadTooLarge,
    SessionManager,
    TextPart,
    ToolCallPart,
)
from sessionary.records import MAX_JSON_DEPTH, SessionInfo, State
from sessionary.stores.base import SEARCH

SEED = "seed"
BIG = 20 * 1000 * 1000  # 20 MB, over the default 16 MiB limit

Action = Callable[[SessionManager, sessionary.Session], Any]


@pytest.fixture
def seeded(manager: SessionManager) -> sessionary.Session:
    """A session with a short tool-using conversation, state, and user and app state."""
    session = manager.create(id=SEED, name="seeded", metadata={"k": "v"})
    session.append_all(
        [
            Message.user("what is the weather in Paris", id="m1"),
            Message.assistant(
                tool_calls=[ToolCallPart(id="c1", name="weather", arguments={"city": "Paris"})],
                id="m2",
            ),
            Message.tool("c1", {"temp": 21}, id="m3"),
            Message.assistant("It is 21 degrees.", id="m4"),
        ]
    )
    session.update_state({"step": 1, "nested": {"a": [1, 2]}})
    manager.update_state({"theme": "dark"})
    manager.update_state({"plan": "pro"}, level="app")
    manager.create(id="other")
    return session


def _snapshot(manager: SessionManager) -> Any:
    return (
        list(manager.export()),
        manager.get_state(),
        manager.get_state("app"),
        [info.id for info in manager.list().items],
    )


def _assert_refused(
    manager: SessionManager,
    session: sessionary.Session,
    action: Action,
    error: type[InvalidInput],
) -> None:
    before = _snapshot(manager)
    with pytest.raises(error) as caught:
        action(manager, session)
    assert isinstance(caught.value, InvalidInput)
    assert str(caught.value), "the error says nothing"
    assert _snapshot(manager) == before, "a refused call changed the store"


# ---------------------------------------------------------------- messages


def _tool_call(**fields: Any) -> dict[str, Any]:
    return {"role": "assistant", "parts": [{"type": "tool_call", **fields}]}


MALFORMED_MESSAGES = {
    "missing role": {"parts": [{"type": "text", "text": "hi"}]},
    "role robot": {"role": "robot", "content": "hi"},
    "role None": {"role": None, "content": "hi"},
    "no parts or content": {"role": "user"},
    "parts a string": {"role": "user", "parts": "hi"},
    "parts a dict": {"role": "user", "parts": {"type": "text", "text": "hi"}},
    "part an int": {"role": "user", "parts": [42]},
    "part None": {"role": "user", "parts": [None]},
    "part a list": {"role": "user", "parts": [["text", "hi"]]},
    "part type txt": {"role": "user", "parts": [{"type": "txt", "text": "hi"}]},
    "part without type": {"role": "user", "parts": [{"text": "hi"}]},
    "text not a str": {"role": "user", "parts": [{"type": "text", "text": 5}]},
    "tool_call without name": _tool_call(id="c9", arguments={}),
    "tool_call with empty name": _tool_call(id="c9", name=""),
    "tool_call without id": _tool_call(name="weather"),
    "tool_result without call_id": {
        "role": "tool",
        "parts": [{"type": "tool_result", "output": "x"}],
    },
    "tool message without result": {"role": "tool", "content": "hi"},
    "user with tool_call": {
        "role": "user",
        "parts": [{"type": "tool_call", "id": "c9", "name": "weather"}],
    },
    "file with url and data": {
        "role": "user",
        "parts": [
            {"type": "file", "mime_type": "image/png", "url": "https://x/a.png", "data": "AAAA"}
        ],
    },
    "file with neither url nor data": {
        "role": "user",
        "parts": [{"type": "file", "mime_type": "image/png"}],
    },
    "created_at yesterday": {"role": "user", "content": "hi", "created_at": "yesterday"},
    "created_at a number": {"role": "user", "content": "hi", "created_at": 1700000000},
    "metadata a list": {"role": "user", "content": "hi", "metadata": [1, 2]},
    "id with a colon": {"role": "user", "content": "hi", "id": "a:b"},
    "id empty": {"role": "user", "content": "hi", "id": ""},
    "id not a str": {"role": "user", "content": "hi", "id": 7},
}

NOT_MESSAGES = {
    "int": 42,
    "str": "hello",
    "bytes": b"hello",
    "None": None,
    "object": object(),
    "list": [{"role": "user", "content": "hi"}],
    "tuple": ("user", "hi"),
}

BAD_MESSAGE_OBJECTS: dict[str, Callable[[], Message]] = {
    "role robot": lambda: Message(role="robot"),  # type: ignore[arg-type]
    "metadata with a set": lambda: Message.user("hi", metadata={"tags": {"a", "b"}}),
    "metadata with NaN": lambda: Message.user("hi", metadata={"score": float("nan")}),
    "metadata not a dict": lambda: Message.user("hi", metadata=["x"]),  # type: ignore[arg-type]
    "tool_call arguments with a set": lambda: Message.assistant(
        tool_calls=[ToolCallPart(id="c9", name="f", arguments={"s": {1}})]
    ),
    "parts not a list": lambda: Message(role="user", parts="hi"),  # type: ignore[arg-type]
    "part not a Part": lambda: Message(role="user", parts=["hi"]),  # type: ignore[list-item]
    "id with a slash": lambda: Message.user("hi", id="a/b"),
    "created_at a str": lambda: Message.user("hi", created_at="yesterday"),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("raw", MALFORMED_MESSAGES.values(), ids=MALFORMED_MESSAGES.keys())
def test_malformed_message_dicts(
    manager: SessionManager, seeded: sessionary.Session, raw: dict[str, Any]
) -> None:
    _assert_refused(manager, seeded, lambda m, s: s.append(raw), InvalidMessage)
    _assert_refused(manager, seeded, lambda m, s: s.append_all([raw]), InvalidMessage)


@pytest.mark.parametrize("value", NOT_MESSAGES.values(), ids=NOT_MESSAGES.keys())
def test_non_messages(manager: SessionManager, seeded: sessionary.Session, value: Any) -> None:
    _assert_refused(manager, seeded, lambda m, s: s.append(value), InvalidMessage)
    _assert_refused(manager, seeded, lambda m, s: s.update(value), InvalidMessage)


@pytest.mark.parametrize("make", BAD_MESSAGE_OBJECTS.values(), ids=BAD_MESSAGE_OBJECTS.keys())
def test_invalid_message_objects(
    manager: SessionManager, seeded: sessionary.Session, make: Callable[[], Message]
) -> None:
    _assert_refused(manager, seeded, lambda m, s: s.append(make()), InvalidMessage)


BAD_BATCHES: dict[str, Callable[[], Any]] = {
    "one bad message after good ones": lambda: [
        Message.user("fine", id="ok1"),
        Message.assistant("fine", id="ok2"),
        {"role": "robot", "content": "bad"},
    ],
    "a non-message in the batch": lambda: [Message.user("fine", id="ok1"), 42],
    "the same id twice": lambda: [Message.user("a", id="dup"), Message.user("b", id="dup")],
    "a single Message": lambda: Message.user("not in a list"),
    "a single dict": lambda: {"role": "user", "content": "not in a list"},
    "a str": lambda: "hello",
}


@pytest.mark.parametrize("make", BAD_BATCHES.values(), ids=BAD_BATCHES.keys())
def test_bad_batches_write_nothing(
    manager: SessionManager, seeded: sessionary.Session, make: Callable[[], Any]
) -> None:
    _assert_refused(manager, seeded, lambda m, s: s.append_all(make()), InvalidMessage)


def test_bad_update_changes_nothing(manager: SessionManager, seeded: sessionary.Session) -> None:
    bad = {"id": "m4", "role": "assistant", "parts": [{"type": "txt", "text": "x"}]}
    _assert_refused(manager, seeded, lambda m, s: s.update(bad), InvalidMessage)


# ---------------------------------------------------------------- ids and scope

BAD_IDS = {
    "colon": "a:b",
    "slash": "a/b",
    "dot-dot": "../x",
    "empty": "",
    "129 chars": "x" * 129,
    "non-ascii": "é",
    "space": "a b",
    "newline": "a\nb",
    "NUL": "a\x00b",
    "not a str": 7,
}

ID_ACTIONS: dict[str, Action] = {
    "session": lambda m, s, i=None: m.session(i),
    "create": lambda m, s, i=None: m.create(id=i),
    "create parent_session_id": lambda m, s, i=None: m.create(parent_session_id=i),
    "get": lambda m, s, i=None: m.get(i),
    "get_or_create": lambda m, s, i=None: m.get_or_create(i),
    "delete": lambda m, s, i=None: m.delete(i),
    "fork": lambda m, s, i=None: m.fork(i),
    "fork into id": lambda m, s, i=None: m.fork(SEED, id=i),
    "export": lambda m, s, i=None: list(m.export(i)),
    "for_user user": lambda m, s, i=None: m.for_user(i),
    "manager tenant": lambda m, s, i=None: SessionManager(m.store, tenant=i),
    "manager user": lambda m, s, i=None: SessionManager(m.store, user=i),
    "search session_id": lambda m, s, i=None: m.search("weather", session_id=i),
}

# Calls that take a session id but look it up without checking it first.
UNCHECKED_ID_ACTIONS: dict[str, Action] = {
    "rename": lambda m, s, i=None: m.rename(i, "new name"),
    "set_metadata": lambda m, s, i=None: m.set_metadata(i, {"x": 1}),
    "end": lambda m, s, i=None: m.end(i),
    "add_usage": lambda m, s, i=None: m.add_usage(i, 1, 1),
}


@pytest.mark.parametrize("bad", BAD_IDS.values(), ids=BAD_IDS.keys())
@pytest.mark.parametrize("action", ID_ACTIONS.values(), ids=ID_ACTIONS.keys())
def test_ids_with_separators(
    manager: SessionManager, seeded: sessionary.Session, action: Action, bad: Any
) -> None:
    _assert_refused(manager, seeded, lambda m, s: action(m, s, bad), InvalidId)


@pytest.mark.parametrize("bad", ["a:b", "../x", ""], ids=["colon", "dot-dot", "empty"])
@pytest.mark.parametrize("action", UNCHECKED_ID_ACTIONS.values(), ids=UNCHECKED_ID_ACTIONS.keys())
def test_ids_with_separators_on_registry_updates(
    manager: SessionManager, seeded: sessionary.Session, action: Action, bad: str
) -> None:
    _assert_refused(manager, seeded, lambda m, s: action(m, s, bad), InvalidId)


@pytest.mark.parametrize("bad", [b for b in BAD_IDS.values() if b != ""])
def test_bad_tenant_in_for_user(
    manager: SessionManager, seeded: sessionary.Session, bad: Any
) -> None:
    _assert_refused(manager, seeded, lambda m, s: m.for_user("u", tenant=bad), InvalidId)


def test_empty_tenant_in_for_user(manager: SessionManager, seeded: sessionary.Session) -> None:
    _assert_refused(manager, seeded, lambda m, s: m.for_user("u", tenant=""), InvalidId)


def test_longest_id_is_accepted(manager: SessionManager, seeded: sessionary.Session) -> None:
    """The boundary: 128 characters is an id, 129 (above) is not."""
    longest = "x" * 128
    assert manager.create(id=longest).id == longest
    assert manager.for_user(longest, tenant=longest).scope.user == longest


# ---------------------------------------------------------------- search

BAD_QUERIES: dict[str, Any] = {
    "empty": "",
    "spaces": "   \t\n ",
    "punctuation": "!!! ... ??? --- ***",
    "operators only": '() "" OR ^ {} : * - OR',
    "only exclusions": "-weather -Paris",
    "NUL": "\x00",
    "2000 chars of words": ("weather " * 250)[:2000],
    "2000 chars": "w" * 2000,
    "too many terms": " ".join(f"w{i}" for i in range(40)),
    "None": None,
    "int": 42,
    "bytes": b"weather",
    "list": ["weather"],
}


@pytest.mark.parametrize("query", BAD_QUERIES.values(), ids=BAD_QUERIES.keys())
def test_hostile_search_queries(
    manager: SessionManager, seeded: sessionary.Session, query: Any
) -> None:
    _assert_refused(manager, seeded, lambda m, s: m.search(query), InvalidQuery)
    _assert_refused(manager, seeded, lambda m, s: s.search(query), InvalidQuery)


@pytest.mark.parametrize(
    "cursor",
    ["", "not a cursor", base64.urlsafe_b64encode(b"[" * 100_000 + b"]" * 100_000).decode()],
    ids=["empty", "garbage", "nested 100,000 deep"],
)
def test_bad_page_cursors(manager: SessionManager, seeded: sessionary.Session, cursor: str) -> None:
    _assert_refused(manager, seeded, lambda m, s: m.list(cursor=cursor), InvalidInput)


@pytest.mark.parametrize("limit", [0, -1, True, "5", 2.5], ids=repr)
def test_bad_limits(manager: SessionManager, seeded: sessionary.Session, limit: Any) -> None:
    _assert_refused(manager, seeded, lambda m, s: s.history(limit=limit), InvalidInput)
    _assert_refused(manager, seeded, lambda m, s: s.search("weather", limit=limit), InvalidInput)
    _assert_refused(manager, seeded, lambda m, s: m.list(limit=limit), InvalidInput)


@pytest.mark.requires(SEARCH)
def test_search_still_answers_good_queries(
    manager: SessionManager, seeded: sessionary.Session
) -> None:
    """The refusals above are not a broken search: a plain query finds the seed."""
    assert {hit.message_id for hit in seeded.search("Paris")} == {"m1", "m2"}
    assert {hit.message_id for hit in manager.search("degrees")} == {"m4"}


# ---------------------------------------------------------------- state

BAD_PATCHES: dict[str, Any] = {
    "list": [1, 2],
    "list of pairs": [("a", 1)],
    "str": "ab",
    "None": None,
    "int": 42,
    "contains a set": {"tags": {"a", "b"}},
    "nested set": {"deep": {"er": [{"x": {1}}]}},
    "contains NaN": {"score": float("nan")},
    "contains bytes": {"blob": b"\x00"},
    "contains an object": {"thing": object()},
}


@pytest.mark.parametrize("patch", BAD_PATCHES.values(), ids=BAD_PATCHES.keys())
def test_bad_state_patches(manager: SessionManager, seeded: sessionary.Session, patch: Any) -> None:
    _assert_refused(manager, seeded, lambda m, s: s.update_state(patch), InvalidPatch)
    _assert_refused(manager, seeded, lambda m, s: m.update_state(patch), InvalidPatch)
    _assert_refused(manager, seeded, lambda m, s: m.update_state(patch, level="app"), InvalidPatch)


def test_unknown_state_level(manager: SessionManager, seeded: sessionary.Session) -> None:
    _assert_refused(
        manager,
        seeded,
        lambda m, s: s.update_state({"x": 1}, level="planet"),  # type: ignore[arg-type]
        InvalidInput,
    )


# ---------------------------------------------------------------- payload size

OVERSIZED: dict[str, Action] = {
    "append": lambda m, s: s.append(Message.user("x" * BIG)),
    "append_all": lambda m, s: s.append_all(
        [Message.user("small", id="ok1"), Message.user("x" * BIG)]
    ),
    "update": lambda m, s: s.update(Message.assistant("x" * BIG, id="m4")),
    "metadata": lambda m, s: s.append(Message.user("hi", metadata={"blob": "x" * BIG})),
    "tool output": lambda m, s: s.append_all(
        [
            Message.assistant(tool_calls=[ToolCallPart(id="c2", name="dump")]),
            Message.tool("c2", "x" * BIG),
        ]
    ),
    "session state": lambda m, s: s.update_state({"blob": "x" * BIG}),
    "user state": lambda m, s: m.update_state({"blob": "x" * BIG}),
    "session metadata": lambda m, s: m.set_metadata(SEED, {"blob": "x" * BIG}),
}


@pytest.mark.parametrize("action", OVERSIZED.values(), ids=OVERSIZED.keys())
def test_oversized_payloads(
    manager: SessionManager, seeded: sessionary.Session, action: Action
) -> None:
    _assert_refused(manager, seeded, action, PayloadTooLarge)


# ---------------------------------------------------------------- JSON values


def nested(depth: int, leaf: Any = "bottom") -> Any:
    """A value `depth` containers deep (objects and arrays in turn) around `leaf`."""
    value = leaf
    for level in range(depth):
        value = {"k": value} if level % 2 else [value]
    return value


DEEP = nested(MAX_JSON_DEPTH + 1)  # one level too deep as a value of its own
VERY_DEEP = nested(5000)  # deeper than Python's recursion limit: once a RecursionError
HUGE_INT = 10**4300  # 4,301 digits: more than Python converts to text


def _doc(body: Any) -> Action:
    return lambda m, s: m.store.put_document(
        m.scope, "session", SEED, "notes", "hostile", body, "", "test", None
    )


def _output(output: Any) -> Action:
    call = ToolCallPart(id="c7", name="dump")
    return lambda m, s: s.append_all(
        [Message.assistant(tool_calls=[call]), Message.tool("c7", output)]
    )


BAD_JSON: dict[str, tuple[Action, type[InvalidInput]]] = {
    "metadata too deep": (
        lambda m, s: s.append(Message.user("hi", metadata={"x": DEEP})),
        InvalidMessage,
    ),
    "metadata 5,000 deep": (
        lambda m, s: s.append(Message.user("hi", metadata={"x": VERY_DEEP})),
        InvalidMessage,
    ),
    "tool arguments 5,000 deep": (
        lambda m, s: s.append(
            Message.assistant(tool_calls=[ToolCallPart(id="c9", name="f", arguments=VERY_DEEP)])
        ),
        InvalidMessage,
    ),
    "tool output 5,000 deep": (_output(VERY_DEEP), InvalidMessage),
    "tool output too deep": (_output(DEEP), InvalidMessage),
    "data part 5,000 deep": (
        lambda m, s: s.append(Message(role="user", parts=[DataPart(VERY_DEEP)])),
        InvalidMessage,
    ),
    "unknown field 5,000 deep": (
        lambda m, s: s.append({"role": "user", "content": "hi", "later": VERY_DEEP}),
        InvalidMessage,
    ),
    "unknown part field 5,000 deep": (
        lambda m, s: s.append(Message(role="user", parts=[TextPart("hi", extra={"x": VERY_DEEP})])),
        InvalidMessage,
    ),
    "tool arguments with an int key": (
        lambda m, s: s.append(
            Message.assistant(tool_calls=[ToolCallPart(id="c9", name="f", arguments={1: "one"})])
        ),
        InvalidMessage,
    ),
    "tool output with a None key": (_output({"a": [{None: 1}]}), InvalidMessage),
    "metadata with a 4,301-digit int": (
        lambda m, s: s.append(Message.user("hi", metadata={"n": HUGE_INT})),
        InvalidMessage,
    ),
    "tool output with infinity": (_output([float("inf")]), InvalidMessage),
    "session state 5,000 deep": (lambda m, s: s.update_state({"x": VERY_DEEP}), InvalidPatch),
    "user state too deep": (lambda m, s: m.update_state({"x": DEEP}), InvalidPatch),
    "app state 5,000 deep": (
        lambda m, s: m.update_state({"x": VERY_DEEP}, level="app"),
        InvalidPatch,
    ),
    "state with a 4,301-digit int": (lambda m, s: s.update_state({"n": HUGE_INT}), InvalidPatch),
    "state with a lone surrogate": (lambda m, s: s.update_state({"\ud800": 1}), InvalidInput),
    "session metadata 5,000 deep": (
        lambda m, s: m.set_metadata(SEED, {"x": VERY_DEEP}),
        InvalidInput,
    ),
    "new session's metadata 5,000 deep": (
        lambda m, s: m.create(metadata={"x": VERY_DEEP}),
        InvalidInput,
    ),
    "imported session state 5,000 deep": (
        lambda m, s: m.store.import_session(
            m.scope, SessionInfo(id="imported"), [], State({"x": VERY_DEEP}, 1)
        ),
        InvalidInput,
    ),
    "imported session state a list": (
        lambda m, s: m.store.import_session(
            m.scope,
            SessionInfo(id="imported"),
            [],
            State([1, 2], 1),  # type: ignore[arg-type]
        ),
        InvalidInput,
    ),
    "document body 5,000 deep": (_doc({"x": VERY_DEEP}), InvalidDocument),
    "document body with an int key": (_doc({"x": {2: "two"}}), InvalidDocument),
}


@pytest.mark.parametrize(("action", "error"), BAD_JSON.values(), ids=BAD_JSON.keys())
def test_json_values_nested_too_deep_or_not_json(
    manager: SessionManager,
    seeded: sessionary.Session,
    action: Action,
    error: type[InvalidInput],
) -> None:
    """Deep nesting was a bare RecursionError; an int key was written as a str key."""
    _assert_refused(manager, seeded, action, error)


def test_json_values_as_deep_as_allowed_round_trip(
    manager: SessionManager, seeded: sessionary.Session
) -> None:
    deepest = nested(MAX_JSON_DEPTH - 1, leaf="\x00 NUL and 😀")  # one level for the key
    message = seeded.append(Message.user("deep", metadata={"x": deepest}))
    assert seeded.get_message(message.id).metadata == {"x": deepest}
    assert seeded.update_state({"x": deepest}).data["x"] == deepest
    assert seeded.get_state().data["x"] == deepest
    manager.set_metadata(SEED, {"x": deepest})
    assert manager.get(SEED).metadata == {"x": deepest}  # type: ignore[union-attr]
    call = seeded.append(
        Message.assistant(tool_calls=[ToolCallPart(id="c8", name="f", arguments={"x": deepest})])
    )
    assert seeded.get_message(call.id).tool_calls[0].arguments == {"x": deepest}


# ---------------------------------------------------------------- store URLs

BAD_URLS: dict[str, tuple[Any, type[InvalidInput]]] = {
    "unknown scheme": ("nope://x", InvalidURL),
    "no scheme name": ("://x", InvalidURL),
    "sqlite with a host": ("sqlite://host/x.db", InvalidURL),
    "sqlite without a path": ("sqlite://", InvalidURL),
    "sqlite slash only": ("sqlite:///", InvalidURL),
    "unknown option": ("sqlite:///x.db?bogus=1", InvalidURL),
    "bad durability": ("sqlite:///x.db?durability=maybe", InvalidInput),
    "bad busy_timeout": ("sqlite:///x.db?busy_timeout=soon", InvalidURL),
    "bad max_message_bytes": ("sqlite:///x.db?max_message_bytes=lots", InvalidURL),
    "memory with unknown option": ("memory://?bogus=1", InvalidURL),
    "empty": ("", InvalidURL),
}


@pytest.mark.parametrize(("url", "error"), BAD_URLS.values(), ids=BAD_URLS.keys())
def test_bad_store_urls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: Any, error: type[InvalidInput]
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error):
        SessionManager(url)
    with pytest.raises(error):
        sessionary.AsyncSessionManager(url)
    assert os.listdir(tmp_path) == [], "a refused URL created a file"


@pytest.mark.parametrize("url", [None, 42, b"sqlite:///x.db"], ids=repr)
def test_non_str_urls_to_open_store(url: Any) -> None:
    with pytest.raises(InvalidURL):
        sessionary.open_store(url)
    with pytest.raises(InvalidURL):
        sessionary.open_async_store(url)


@pytest.mark.parametrize("url", [None, 42], ids=repr)
def test_non_str_urls_to_manager(url: Any) -> None:
    with pytest.raises(InvalidURL):
        SessionManager(url)


@pytest.mark.parametrize(
    "make_url",
    [
        lambda tmp: "sqlite:////nonexistent-dir/x.db",
        lambda tmp: f"sqlite:///{tmp / 'missing' / 'deeper' / 'x.db'}",
        lambda tmp: f"sqlite:///{tmp}",  # a directory, not a file
        lambda tmp: f"sqlite:///{tmp / 'garbage.db'}",  # a file that is not a database
    ],
    ids=["nonexistent dir", "missing parents", "a directory", "not a database"],
)
def test_unopenable_sqlite_is_store_unavailable(
    tmp_path: Path, make_url: Callable[[Path], str]
) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database, just some bytes\n" * 200)
    before = garbage.read_bytes()
    url = make_url(tmp_path)
    with pytest.raises(sessionary.StoreUnavailable) as caught:
        SessionManager(url)
    assert isinstance(caught.value, sessionary.StoreError)
    assert garbage.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["garbage.db"]
