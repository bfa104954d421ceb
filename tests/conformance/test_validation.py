"""Bad input gets a clear, typed error and changes nothing."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pytest

import sessionary
from sessionary import (
    DataPart,
    FilePart,
    InvalidId,
    InvalidInput,
    InvalidMessage,
    InvalidPatch,
    InvalidURL,
    Message,
    PayloadTooLarge,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from sessionary.query import parse_query
from sessionary.records import MAX_LIMIT, SessionFilter

Snapshot = Callable[[str], list[dict[str, Any]]]


def with_option(url: str, option: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{option}"


def started(manager: sessionary.SessionManager) -> sessionary.Session:
    chat = manager.create()
    chat.append_all([Message.user("hello"), Message.assistant("hi")])
    chat.update_state({"k": 1})
    return chat


BAD_MESSAGES: list[Any] = [
    pytest.param({"role": "robot", "content": "x"}, id="unknown-role-json"),
    pytest.param(Message(role="robot", parts=[TextPart("x")]), id="unknown-role"),  # type: ignore[arg-type]
    pytest.param({"content": "x"}, id="no-role"),
    pytest.param({"role": "user", "parts": [{"type": "hologram"}]}, id="unknown-part-type"),
    pytest.param({"role": "user", "parts": [{"text": "x"}]}, id="part-without-type"),
    pytest.param({"role": "user", "parts": [42]}, id="part-not-object"),
    pytest.param({"role": "user", "parts": "hello"}, id="parts-not-list"),
    pytest.param({"role": "user"}, id="no-parts"),
    pytest.param({"role": "user", "parts": [{"type": "text"}]}, id="text-missing"),
    pytest.param({"role": "user", "parts": [{"type": "text", "text": 5}]}, id="text-int-json"),
    pytest.param({"role": "user", "parts": [{"type": "text", "text": None}]}, id="text-null-json"),
    pytest.param(
        Message(role="user", parts=[ToolCallPart(id="c1", name="f")]), id="tool-call-in-user"
    ),
    pytest.param(
        Message(role="user", parts=[ToolResultPart(call_id="c1", output="x")]),
        id="tool-result-in-user",
    ),
    pytest.param(
        Message(role="assistant", parts=[ToolResultPart(call_id="c1", output="x")]),
        id="tool-result-in-assistant",
    ),
    pytest.param(Message(role="system", parts=[ReasoningPart("x")]), id="reasoning-in-system"),
    pytest.param(Message(role="tool", parts=[]), id="tool-without-result"),
    pytest.param(Message(role="tool", parts=[DataPart({"a": 1})]), id="tool-with-only-data"),
    pytest.param(Message(role="tool", parts=[TextPart("x")]), id="tool-with-text"),
    pytest.param(Message.tool("", "out"), id="tool-result-empty-call-id"),
    pytest.param(
        Message.assistant(tool_calls=[ToolCallPart(id="", name="f")]), id="tool-call-empty-id"
    ),
    pytest.param(
        Message.assistant(tool_calls=[ToolCallPart(id="c", name="")]), id="tool-call-empty-name"
    ),
    pytest.param(Message(role="user", parts=[FilePart("image/png")]), id="file-without-source"),
    pytest.param(
        Message(role="user", parts=[FilePart("image/png", url="https://x", data="AAAA")]),
        id="file-with-two-sources",
    ),
    pytest.param(Message.user("x", metadata={"s": {1, 2}}), id="metadata-set"),
    pytest.param(Message.user("x", metadata={"n": math.nan}), id="metadata-nan"),
    pytest.param(Message.user("x", metadata={"n": math.inf}), id="metadata-inf"),
    pytest.param(Message.user("x", metadata=[1]), id="metadata-list"),  # type: ignore[arg-type]
    pytest.param({"role": "user", "content": "x", "metadata": "m"}, id="metadata-str-json"),
    pytest.param(
        Message.assistant(tool_calls=[ToolCallPart(id="c", name="f", arguments={"x": math.nan})]),
        id="arguments-nan",
    ),
    pytest.param(Message.tool("c", {"when": object()}), id="output-not-json"),
    pytest.param(Message.user("x", id="a:b"), id="id-colon"),
    pytest.param(Message.user("x", id="a/b"), id="id-slash"),
    pytest.param(Message.user("x", id="a b"), id="id-space"),
    pytest.param(Message.user("x", id="x" * 200), id="id-200-chars"),
    pytest.param(Message.user("x", id=""), id="id-empty"),
    pytest.param(Message.user("x", id="-dash-first"), id="id-dash-first"),
    pytest.param(Message.user("x", id="caf\u00e9"), id="id-non-ascii"),
    pytest.param({"role": "user", "content": "x", "id": 7}, id="id-int"),
    pytest.param({"role": "user", "content": "x", "created_at": "yesterday"}, id="created-bad"),
    pytest.param({"role": "user", "content": "x", "created_at": 17}, id="created-int"),
    pytest.param("just a string", id="str-not-message"),
    pytest.param(42, id="int-not-message"),
    pytest.param(None, id="none-not-message"),
]


@pytest.mark.parametrize("bad", BAD_MESSAGES)
def test_a_malformed_message_is_refused_and_nothing_changes(
    manager: sessionary.SessionManager, snapshot: Snapshot, bad: Any
) -> None:
    chat = started(manager)
    before = snapshot(chat.id)
    with pytest.raises(InvalidMessage):
        chat.append(bad)
    with pytest.raises(InvalidMessage):
        chat.append_all([Message.user("fine, but not alone"), bad])
    assert snapshot(chat.id) == before
    assert chat.message_count() == 2
    assert [m.text for m in chat.history()] == ["hello", "hi"]


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(Message(role="user", parts=[TextPart(123)]), id="text-int"),  # type: ignore[arg-type]
        pytest.param(Message(role="user", parts=[TextPart(None)]), id="text-none"),  # type: ignore[arg-type]
        pytest.param(
            Message(role="assistant", parts=[ReasoningPart(["x"])]),  # type: ignore[arg-type]
            id="reasoning-list",
        ),
        pytest.param(
            Message(role="assistant", parts=[ToolCallPart(id=5, name="f")]),  # type: ignore[arg-type]
            id="call-id-int",
        ),
        pytest.param(
            Message(role="tool", parts=[ToolResultPart(call_id="c", output="x", is_error="no")]),  # type: ignore[arg-type]
            id="is-error-str",
        ),
        pytest.param(Message(role="user", parts=[FilePart(7, url="u")]), id="mime-int"),  # type: ignore[arg-type]
    ],
)
def test_a_part_object_with_a_wrong_field_type_is_refused(
    manager: sessionary.SessionManager, snapshot: Snapshot, bad: Message
) -> None:
    chat = started(manager)
    before = snapshot(chat.id)
    with pytest.raises(InvalidMessage):
        chat.append(bad)
    assert snapshot(chat.id) == before


@pytest.mark.parametrize("batch", [None, 5, 1.5, object()], ids=["none", "int", "float", "object"])
def test_append_all_of_something_not_iterable_is_an_invalid_message(
    manager: sessionary.SessionManager, snapshot: Snapshot, batch: Any
) -> None:
    chat = started(manager)
    before = snapshot(chat.id)
    with pytest.raises(InvalidMessage, match="iterable"):
        chat.append_all(batch)
    with pytest.raises(InvalidMessage, match="iterable"):
        manager.append_all(chat.id, batch)
    assert snapshot(chat.id) == before


def test_append_all_of_a_generator_that_fails_writes_nothing(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat = started(manager)
    before = snapshot(chat.id)

    def failing() -> Any:
        yield Message.user("first")
        raise LookupError("the caller's own error")

    with pytest.raises(LookupError, match="the caller's own error"):
        chat.append_all(failing())
    assert snapshot(chat.id) == before
    assert [m.text for m in chat.append_all(iter([Message.user("gen")]))] == ["gen"]


def test_a_bad_batch_writes_nothing(manager: sessionary.SessionManager, snapshot: Snapshot) -> None:
    chat = started(manager)
    before = snapshot(chat.id)
    good = [Message.user(f"good {i}") for i in range(5)]
    with pytest.raises(InvalidMessage):
        chat.append_all([*good, {"role": "robot", "content": "x"}, Message.user("after")])
    with pytest.raises(InvalidMessage):
        chat.append_all(Message.user("one message is not a batch"))  # type: ignore[arg-type]
    with pytest.raises(InvalidMessage):
        chat.append_all("a string is not a batch")  # type: ignore[arg-type]
    with pytest.raises(InvalidMessage):
        chat.append_all({"role": "user", "content": "a mapping is not a batch"})  # type: ignore[arg-type]
    assert snapshot(chat.id) == before


# ---------------------------------------------------------------- size limits


def test_a_message_over_the_size_limit_is_refused(small_store_url: str) -> None:
    with sessionary.SessionManager(small_store_url) as manager:
        chat = manager.create()
        chat.append(Message.user("small"))
        before = list(manager.export(chat.id))
        with pytest.raises(PayloadTooLarge):
            chat.append(Message.user("x" * 2000))
        with pytest.raises(PayloadTooLarge):
            chat.append(Message.user("x", metadata={"blob": "y" * 2000}))
        with pytest.raises(PayloadTooLarge):
            chat.append_all([Message.user("fits"), Message.user("\u20ac" * 400)])  # 1200 bytes
        with pytest.raises(PayloadTooLarge):
            chat.update(Message.user("z" * 2000, id=chat.history()[0].id))
        assert list(manager.export(chat.id)) == before
        # the limit counts bytes, and a message under it is taken
        fits = chat.append(Message.user("\u00e9" * 400))  # 800 bytes of text
        assert chat.get_message(fits.id) == fits
        assert chat.message_count() == 2


def test_state_and_metadata_over_the_size_limit_are_refused(small_store_url: str) -> None:
    with sessionary.SessionManager(small_store_url) as manager:
        chat = manager.create(id="s1")
        chat.update_state({"small": 1})
        with pytest.raises(PayloadTooLarge):
            chat.update_state({"big": "x" * 2000})
        with pytest.raises(PayloadTooLarge):
            manager.update_state({"big": "x" * 2000})
        with pytest.raises(PayloadTooLarge):
            manager.update_state({"big": "x" * 2000}, level="app")
        with pytest.raises(PayloadTooLarge):
            manager.create(id="s2", metadata={"big": "x" * 2000})
        with pytest.raises(PayloadTooLarge):
            manager.set_metadata("s1", {"big": "x" * 2000})
        assert chat.get_state() == sessionary.State({"small": 1}, 1)
        assert manager.get_state() == sessionary.State({}, 0)
        assert manager.get("s2") is None
        info = manager.get("s1")
        assert info is not None and info.metadata == {}
        # many small patches cannot grow the document past the limit either
        with pytest.raises(PayloadTooLarge):
            for i in range(20):
                chat.update_state({f"k{i}": "v" * 90})
        state = chat.get_state()
        assert len(json.dumps(state.data, separators=(",", ":")).encode()) <= 1000
        assert 1 < state.version < 21


# ---------------------------------------------------------------- limits, ids, labels


@pytest.mark.parametrize("limit", [0, -1, True, False, 1.5, "3", []])
def test_invalid_limits_are_refused(manager: sessionary.SessionManager, limit: Any) -> None:
    chat = started(manager)
    with pytest.raises(InvalidInput):
        chat.history(limit=limit)
    with pytest.raises(InvalidInput):
        manager.list(limit=limit)
    with pytest.raises(InvalidInput):
        manager.search("hello", limit=limit)
    with pytest.raises(InvalidInput):
        chat.search("hello", limit=limit)


def _limited_calls(
    manager: sessionary.SessionManager, chat: sessionary.Session, capabilities: frozenset[str]
) -> dict[str, Callable[[int], object]]:
    """Every call that takes a limit, public or store-level, on one stored session."""
    store, scope = manager.store, manager.scope
    calls: dict[str, Callable[[int], object]] = {
        "history": lambda n: chat.history(limit=n),
        "context_history": lambda n: chat.context_history(limit=n),
        "list": lambda n: manager.list(limit=n),
        "store.list_sessions": lambda n: store.list_sessions(scope, SessionFilter(), n, None),
        "store.get_path": lambda n: store.get_path(scope, chat.id, None, n),
        "store.page_messages": lambda n: store.page_messages(scope, chat.id, None, n),
    }
    if hasattr(store, "sweep"):  # a store of your own may have none
        calls["sweep"] = lambda n: manager.sweep(limit=n)
        calls["sweep batch_size"] = lambda n: manager.sweep(batch_size=n)
    if "documents" in capabilities:
        calls["audit"] = lambda n: manager.audit(limit=n)
        calls["store.list_documents"] = lambda n: store.list_documents(
            scope, "user", None, None, n, None
        )
    if "search" in capabilities:
        calls["search"] = lambda n: manager.search("hello", limit=n)
        calls["session.search"] = lambda n: chat.search("hello", limit=n)
    if "document_search" in capabilities:
        calls["store.search_documents"] = lambda n: store.search_documents(
            scope, "user", None, None, parse_query("hello"), n
        )
    return calls


@pytest.mark.parametrize("limit", [MAX_LIMIT + 1, 2**63, 10**30])
def test_a_limit_past_the_maximum_is_refused_by_every_call(
    manager: sessionary.SessionManager,
    snapshot: Snapshot,
    capabilities: frozenset[str],
    limit: int,
) -> None:
    chat = started(manager)
    before = snapshot(chat.id)
    for name, call in _limited_calls(manager, chat, capabilities).items():
        with pytest.raises(InvalidInput, match="2\\*\\*31-1"):
            call(limit)
        assert snapshot(chat.id) == before, name


def test_the_largest_limit_is_taken_by_every_call(
    manager: sessionary.SessionManager, capabilities: frozenset[str]
) -> None:
    chat = started(manager)
    manager.update_state({"note": "hello"})
    for call in _limited_calls(manager, chat, capabilities).values():
        call(MAX_LIMIT)  # no error on any store
    assert [m.text for m in chat.history(limit=MAX_LIMIT)] == ["hello", "hi"]
    assert [i.id for i in manager.list(limit=MAX_LIMIT)] == [chat.id]
    paged, _ = manager.store.page_messages(manager.scope, chat.id, None, MAX_LIMIT)
    assert len(paged) == 2
    if "search" in capabilities:
        assert [h.message_id for h in manager.search("hello", limit=MAX_LIMIT)] == [
            chat.history()[0].id
        ]


BAD_FILTERS: list[Any] = [
    pytest.param({"name": 5}, id="name-int"),
    pytest.param({"model": 5}, id="model-int"),
    pytest.param({"source": 5}, id="source-int"),
    pytest.param({"name": b"chat"}, id="name-bytes"),
    pytest.param({"model": ["gpt"]}, id="model-list"),
    pytest.param({"source": "a\x00b"}, id="source-nul"),
    pytest.param({"name": "\ud800"}, id="name-surrogate"),
    pytest.param({"ended": "yes"}, id="ended-str"),
    pytest.param({"ended": 1}, id="ended-1"),
    pytest.param({"ended": 0}, id="ended-0"),
    pytest.param({"parent_session_id": 5}, id="parent-int"),
]


@pytest.mark.parametrize("where", BAD_FILTERS)
def test_a_list_filter_of_the_wrong_type_is_refused(
    manager: sessionary.SessionManager, where: dict[str, Any]
) -> None:
    manager.create(id="open1", name="chat", model="gpt", source="cli")
    manager.create(id="ended1", name="chat", model="gpt", source="cli")
    manager.end("ended1")
    with pytest.raises(InvalidInput):
        manager.list(**where)
    with pytest.raises(InvalidInput):
        manager.store.list_sessions(manager.scope, SessionFilter(**where), 10, None)
    # the right types still filter
    assert [i.id for i in manager.list(ended=True, name="chat", model="gpt", source="cli")] == [
        "ended1"
    ]
    assert [i.id for i in manager.list(ended=False)] == ["open1"]


@pytest.mark.parametrize(
    "bad_id",
    [
        "a:b",
        "a/b",
        "a b",
        "x" * 200,
        "",
        "-x",
        "_x",
        ".x",
        "a\nb",
        "a\x00b",
        "\u00e9t\u00e9",
        5,
        None,
    ],
)
def test_invalid_session_ids_are_refused(manager: sessionary.SessionManager, bad_id: Any) -> None:
    if bad_id is not None:  # create(id=None) means "make one up"
        with pytest.raises(InvalidId):
            manager.create(id=bad_id)
    with pytest.raises(InvalidId):
        manager.session(bad_id)
    with pytest.raises(InvalidId):
        manager.get(bad_id)
    with pytest.raises(InvalidId):
        manager.delete(bad_id)
    with pytest.raises(InvalidId):
        manager.get_or_create(bad_id)
    assert manager.list().items == []


def test_a_session_id_of_128_characters_is_fine(manager: sessionary.SessionManager) -> None:
    long_id = "a" * 128
    chat = manager.create(id=long_id)
    assert chat.id == long_id
    assert manager.get(long_id) is not None


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"name": "two\nlines"}, id="name-newline"),
        pytest.param({"name": "x" * 1001}, id="name-long"),
        pytest.param({"name": 5}, id="name-int"),
        pytest.param({"model": "a\x00b"}, id="model-nul"),
        pytest.param({"source": ["cli"]}, id="source-list"),
        pytest.param({"metadata": {"s": {1}}}, id="metadata-set"),
        pytest.param({"metadata": {"n": math.nan}}, id="metadata-nan"),
        pytest.param({"parent_session_id": "a/b"}, id="parent-slash"),
    ],
)
def test_invalid_session_fields_are_refused(
    manager: sessionary.SessionManager, fields: dict[str, Any]
) -> None:
    with pytest.raises(InvalidInput):
        manager.create(id="s1", **fields)
    assert manager.get("s1") is None
    assert manager.list().items == []


@pytest.mark.parametrize("metadata", [[1, 2], [("a", 1)], "ab", 5])
def test_session_metadata_that_is_not_an_object_is_refused(
    manager: sessionary.SessionManager, snapshot: Snapshot, metadata: Any
) -> None:
    chat = started(manager)
    before = snapshot(chat.id)
    with pytest.raises(InvalidInput):
        manager.create(id="s1", metadata=metadata)
    with pytest.raises(InvalidInput):
        manager.set_metadata(chat.id, metadata)
    assert manager.get("s1") is None
    assert snapshot(chat.id) == before


def test_invalid_session_updates_change_nothing(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat = started(manager)
    before = snapshot(chat.id)
    with pytest.raises(InvalidInput):
        manager.rename(chat.id, 5)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        manager.rename(chat.id, "two\nlines")
    with pytest.raises(InvalidInput):
        manager.set_metadata(chat.id, {"s": {1}})
    with pytest.raises(InvalidInput):
        manager.end(chat.id, "")
    with pytest.raises(InvalidInput):
        manager.end(chat.id, "bad\x07reason")
    assert snapshot(chat.id) == before


# ---------------------------------------------------------------- state patches


BAD_PATCHES: list[Any] = [
    pytest.param({"s": {1, 2}}, id="set-value"),
    pytest.param({"n": math.nan}, id="nan"),
    pytest.param({"n": -math.inf}, id="inf"),
    pytest.param({"o": object()}, id="object"),
]

NOT_OBJECTS: list[Any] = [
    pytest.param([1, 2], id="list"),
    pytest.param([("a", 1)], id="list-of-pairs"),
    pytest.param("ab", id="str"),
    pytest.param(None, id="none"),
    pytest.param(5, id="int"),
]


@pytest.mark.parametrize("patch", BAD_PATCHES)
def test_a_bad_state_patch_changes_nothing(
    manager: sessionary.SessionManager, snapshot: Snapshot, patch: Any
) -> None:
    chat = started(manager)
    manager.update_state({"u": 1})
    manager.update_state({"a": 1}, level="app")
    before = snapshot(chat.id)
    with pytest.raises(InvalidPatch):
        chat.update_state(patch)
    with pytest.raises(InvalidPatch):
        chat.update_state(patch, level="user")
    with pytest.raises(InvalidPatch):
        manager.update_state(patch)
    with pytest.raises(InvalidPatch):
        manager.update_state(patch, level="app")
    assert snapshot(chat.id) == before
    assert manager.get_state() == sessionary.State({"u": 1}, 1)
    assert manager.get_state("app") == sessionary.State({"a": 1}, 1)


@pytest.mark.parametrize("patch", NOT_OBJECTS)
def test_a_patch_that_is_not_an_object_is_an_invalid_patch(
    manager: sessionary.SessionManager, snapshot: Snapshot, patch: Any
) -> None:
    chat = started(manager)
    before = snapshot(chat.id)
    with pytest.raises(InvalidPatch):
        chat.update_state(patch)
    with pytest.raises(InvalidPatch):
        manager.update_state(patch)
    assert snapshot(chat.id) == before
    assert manager.get_state() == sessionary.State({}, 0)


def test_a_patch_with_a_non_string_key_is_refused(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat = started(manager)
    before = snapshot(chat.id)
    with pytest.raises(InvalidPatch):
        chat.update_state({1: "x"})
    with pytest.raises(InvalidInput):
        manager.create(metadata={1: "x"})
    assert snapshot(chat.id) == before


@pytest.mark.parametrize("version", ["0", "1", -1, False, True, 0.0, 1.0, [1]])
def test_an_expected_state_version_of_the_wrong_type_is_refused(
    manager: sessionary.SessionManager, snapshot: Snapshot, version: Any
) -> None:
    chat = started(manager)  # its state is at version 1
    manager.update_state({"u": 1})
    before = snapshot(chat.id)
    for level in ("session", "user", "app"):
        with pytest.raises(InvalidInput, match="expected_version"):
            chat.update_state({"x": 1}, expected_version=version, level=level)
        with pytest.raises(InvalidInput, match="expected_version"):
            manager.store.update_state(manager.scope, level, chat.id, {"x": 1}, version)
    for level in ("user", "app"):
        with pytest.raises(InvalidInput, match="expected_version"):
            manager.update_state({"x": 1}, expected_version=version, level=level)
    assert snapshot(chat.id) == before
    assert manager.get_state() == sessionary.State({"u": 1}, 1)
    assert manager.get_state("app") == sessionary.State({}, 0)
    # a whole number is compared as before: 0 for a state never written
    assert manager.update_state({"a": 1}, expected_version=0, level="app").version == 1
    assert chat.update_state({"k": 2}, expected_version=1).version == 2


@pytest.mark.parametrize("level", ["bogus", "", "SESSION", None])
def test_an_unknown_state_level_is_refused(
    manager: sessionary.SessionManager, snapshot: Snapshot, level: Any
) -> None:
    chat = started(manager)
    before = snapshot(chat.id)
    with pytest.raises(InvalidInput):
        chat.get_state(level)
    with pytest.raises(InvalidInput):
        chat.update_state({"x": 1}, level=level)
    with pytest.raises(InvalidInput):
        manager.update_state({"x": 1}, level=level)
    assert snapshot(chat.id) == before


def test_manager_state_has_no_session_level(manager: sessionary.SessionManager) -> None:
    with pytest.raises(InvalidInput):
        manager.get_state("session")
    with pytest.raises(InvalidInput):
        manager.update_state({"x": 1}, level="session")


# ---------------------------------------------------------------- usage and URLs


@pytest.mark.parametrize(
    "usage",
    [
        {"input_tokens": -1},
        {"output_tokens": -5},
        {"cost": -0.01},
        {"cost": math.nan},
        {"input_tokens": 1.5},
        {"input_tokens": True},
        {"output_tokens": "3"},
        {"cost": "1"},
    ],
)
def test_bad_usage_is_refused(
    manager: sessionary.SessionManager, snapshot: Snapshot, usage: dict[str, Any]
) -> None:
    chat = started(manager)
    manager.add_usage(chat.id, 1, 2, 0.5)
    before = snapshot(chat.id)
    with pytest.raises(InvalidInput):
        manager.add_usage(chat.id, **usage)
    assert snapshot(chat.id) == before


def test_bad_store_urls_are_refused(store_url: str) -> None:
    for url in (
        with_option(store_url, "no_such_option=1"),
        with_option(store_url, "max_message_bytes=lots"),
        "nosuchscheme://x",
        "",
    ):
        with pytest.raises(InvalidURL):
            sessionary.SessionManager(url)
        with pytest.raises(InvalidURL):
            sessionary.open_store(url)


def test_text_that_is_not_valid_unicode_is_refused(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat = started(manager)
    before = snapshot(chat.id)
    with pytest.raises(InvalidMessage):
        chat.append(Message.user("broken \ud800 text"))
    with pytest.raises(InvalidMessage):
        chat.append(Message.user("fine", metadata={"k": "\udc80"}))
    with pytest.raises(InvalidInput):
        chat.update_state({"k": "\ud800"})
    with pytest.raises(InvalidInput):
        manager.create(id="s2", name="\ud800")
    assert snapshot(chat.id) == before
    assert manager.get("s2") is None


def test_big_integers_in_json_round_trip(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    big = {"n": 2**70, "neg": -(2**64), "max": 2**63 - 1}
    stored = chat.append(Message.user("x", id="m1", metadata=big))
    assert stored.metadata == big
    assert chat.get_message("m1").metadata == big  # type: ignore[union-attr]
    assert chat.update_state(big).data == big
    assert chat.get_state().data == big


def test_huge_usage_is_stored_exactly_or_refused(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat = started(manager)
    before = snapshot(chat.id)
    try:
        info = manager.add_usage(chat.id, input_tokens=2**70)
    except InvalidInput:
        assert snapshot(chat.id) == before
        return
    assert info.input_tokens == 2**70
    assert manager.get(chat.id).input_tokens == 2**70  # type: ignore[union-attr]


def test_an_infinite_cost_is_refused(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat = started(manager)
    before = snapshot(chat.id)
    with pytest.raises(InvalidInput):
        manager.add_usage(chat.id, cost=math.inf)
    assert snapshot(chat.id) == before
