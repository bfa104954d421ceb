"""The manager's message operations, and deleting exactly the messages asked for.

The manager's methods take a session id and hand the call to the session's own method,
so these tests check that they reach the same behaviour on every backend; the tree
rules of `delete_messages` (a leaf always, an inner message only with everything below
it) are checked here once, through both the manager and the session.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

import sessionary
from sessionary import (
    InvalidInput,
    Message,
    MessageHasChildren,
    MessageNotFound,
    SessionNotFound,
    ToolCallPart,
)
from sessionary.stores.base import SEARCH
from sessionary.window import orphan_results

Snapshot = Callable[[str], list[dict[str, Any]]]


def ids(messages: Sequence[Message]) -> list[str]:
    return [m.id for m in messages]


def stored_ids(manager: sessionary.SessionManager, session_id: str) -> set[str]:
    return {r["message"]["id"] for r in manager.export(session_id) if r["type"] == "message"}


def assert_consistent(manager: sessionary.SessionManager, session_id: str) -> None:
    """Every stored message's parent is stored, and the head's path has no orphan result."""
    stored = [r["message"] for r in manager.export(session_id) if r["type"] == "message"]
    present = {m["id"] for m in stored}
    for message in stored:
        assert message.get("parent_id") is None or message["parent_id"] in present, message
    assert manager.message_count(session_id) == len(stored)
    assert not orphan_results(manager.history(session_id, raw=True))


def tree(manager: sessionary.SessionManager) -> str:
    """A session shaped ``a - b - c - d`` with a branch ``b - x - y``; the head is d."""
    chat = manager.create()
    manager.append_all(
        chat.id,
        [
            Message.user("a", id="a"),
            Message.assistant("b", id="b"),
            Message.user("c", id="c"),
            Message.assistant("d", id="d"),
        ],
    )
    manager.append_all(
        chat.id, [Message.user("x", id="x"), Message.assistant("y", id="y")], parent="b"
    )
    chat.checkout("d")
    return chat.id


# ---------------------------------------------------------------- thin delegates


def test_manager_appends_reads_and_counts_by_session_id(
    manager: sessionary.SessionManager,
) -> None:
    chat = manager.create()
    first = manager.append(chat.id, Message.user("hello", id="m1"))
    assert first.id == "m1"
    more = manager.append_all(
        chat.id, [Message.assistant("hi", id="m2"), Message.user("bye", id="m3")]
    )
    assert ids(more) == ["m2", "m3"]
    manager.append(chat.id, Message.assistant("again", id="m4"), parent="m1")
    assert ids(manager.history(chat.id)) == ["m1", "m4"]
    assert ids(manager.history(chat.id, "m3")) == ["m1", "m2", "m3"]
    assert ids(manager.history(chat.id, "m3", 2)) == ["m2", "m3"]
    assert manager.message_count(chat.id) == 4
    # the same as asking the session itself
    assert manager.history(chat.id) == chat.history()
    assert manager.message_count(chat.id) == chat.message_count()
    assert manager.clear(chat.id) == 4
    assert manager.history(chat.id) == []
    assert manager.message_count(chat.id) == 0


def test_manager_message_operations_touch_the_session(
    manager: sessionary.SessionManager,
) -> None:
    chat = manager.create()
    before = chat.info().updated_at
    manager.append(chat.id, Message.user("hello", id="m1"))
    appended = chat.info().updated_at
    assert appended >= before
    manager.upsert(chat.id, Message.user("hello, edited", id="m1"))
    assert chat.info().updated_at >= appended


def test_manager_message_operations_on_a_missing_session(
    manager: sessionary.SessionManager,
) -> None:
    with pytest.raises(SessionNotFound):
        manager.append("no-such-session", Message.user("x"))
    with pytest.raises(SessionNotFound):
        manager.history("no-such-session")
    with pytest.raises(SessionNotFound):
        manager.delete_messages("no-such-session", ["m1"])


def test_upsert_appends_a_new_message_and_replaces_a_stored_one(
    manager: sessionary.SessionManager,
) -> None:
    chat = manager.create()
    manager.append_all(chat.id, [Message.user("q", id="q"), Message.assistant("a", id="a")])
    draft = manager.upsert(chat.id, Message.assistant("Thinking", id="r"), parent="q")
    assert draft.parent_id == "q"
    assert chat.head() == draft
    manager.append(chat.id, Message.user("later", id="later"), parent="a")
    # re-sent while it streams in: one message, the latest content, same place
    final = manager.upsert(
        chat.id, Message.assistant("Thinking done: 42", id="r", metadata={"done": True})
    )
    assert final.text == "Thinking done: 42"
    assert final.metadata == {"done": True}
    assert final.parent_id == "q"
    assert chat.get_message("r") == final
    assert chat.head() is not None and chat.head().id == "later"  # type: ignore[union-attr]
    assert manager.message_count(chat.id) == 4
    # the same content again changes nothing
    assert manager.upsert(chat.id, final) == final


def test_upsert_cannot_change_a_role(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat = manager.create()
    manager.append(chat.id, Message.user("q", id="q"))
    before = snapshot(chat.id)
    with pytest.raises(InvalidInput):
        manager.upsert(chat.id, Message.assistant("q", id="q"))
    assert snapshot(chat.id) == before


# ---------------------------------------------------------------- delete_messages


def test_delete_messages_deletes_a_leaf_only(manager: sessionary.SessionManager) -> None:
    chat_id = tree(manager)
    assert manager.delete_messages(chat_id, ["d"]) == ["d"]
    assert stored_ids(manager, chat_id) == {"a", "b", "c", "x", "y"}
    assert ids(manager.history(chat_id)) == ["a", "b", "c"]  # the head moved to the parent
    assert manager.message_count(chat_id) == 5
    assert_consistent(manager, chat_id)
    # the head's new place is real: appending continues from it
    assert manager.append(chat_id, Message.assistant("d2", id="d2")).parent_id == "c"


def test_delete_messages_refuses_an_inner_message_and_changes_nothing(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat_id = tree(manager)
    before = snapshot(chat_id)
    with pytest.raises(MessageHasChildren) as raised:
        manager.delete_messages(chat_id, ["c"])
    assert "'d'" in str(raised.value)
    # a child on another branch counts too, and a leaf asked for beside it is not deleted
    with pytest.raises(MessageHasChildren):
        manager.delete_messages(chat_id, ["y", "b", "c", "d"])
    assert isinstance(raised.value, InvalidInput)
    assert snapshot(chat_id) == before


def test_delete_messages_takes_an_inner_message_with_everything_below(
    manager: sessionary.SessionManager,
) -> None:
    chat_id = tree(manager)
    deleted = manager.delete_messages(chat_id, ["b", "c", "d", "x", "y"])
    assert deleted == ["b", "c", "d", "x", "y"]
    assert stored_ids(manager, chat_id) == {"a"}
    assert ids(manager.history(chat_id)) == ["a"]
    assert_consistent(manager, chat_id)


def test_delete_messages_moves_the_head_to_the_nearest_kept_ancestor(
    manager: sessionary.SessionManager,
) -> None:
    chat_id = tree(manager)
    chat = manager.session(chat_id)
    manager.delete_messages(chat_id, ["d", "c"])
    assert chat.head() is not None and chat.head().id == "b"  # type: ignore[union-attr]
    chat.checkout("y")
    # deleting outside the head's path keeps the head
    manager.append(chat_id, Message.user("z", id="z"), parent="a")
    chat.checkout("y")
    manager.delete_messages(chat_id, ["z"])
    assert ids(manager.history(chat_id)) == ["a", "b", "x", "y"]
    # a whole root chain: the head empties
    manager.delete_messages(chat_id, ["y", "x", "b", "a"])
    assert chat.head() is None
    assert manager.history(chat_id) == []
    assert manager.message_count(chat_id) == 0


def test_delete_messages_with_an_unknown_id_changes_nothing(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat_id = tree(manager)
    before = snapshot(chat_id)
    with pytest.raises(MessageNotFound):
        manager.delete_messages(chat_id, ["d", "no-such-message"])
    with pytest.raises(InvalidInput):
        manager.delete_messages(chat_id, "d")  # one string is not a collection of ids
    assert snapshot(chat_id) == before
    assert manager.delete_messages(chat_id, []) == []
    assert manager.delete_messages(chat_id, ["d", "d"]) == ["d"]


def test_delete_messages_keeps_tool_pairs_together(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    chat.append(Message.user("add 2 and 3", id="u"))
    chat.append(Message.assistant(tool_calls=[ToolCallPart("c1", "add", {})], id="ask"))
    chat.append(Message.tool("c1", "5", id="ans"))
    # the call cannot go without its result: the result is its child
    with pytest.raises(MessageHasChildren):
        chat.delete_messages(["ask"])
    # the result alone leaves the call waiting, as before the result arrived
    assert chat.delete_messages(["ans"]) == ["ans"]
    assert ids(chat.history()) == ["u", "ask"]
    assert_consistent(manager, chat.id)
    chat.append(Message.tool("c1", "5", id="ans"))
    assert sorted(chat.delete_messages(["ans", "ask"])) == ["ans", "ask"]
    assert ids(chat.history()) == ["u"]
    assert_consistent(manager, chat.id)


def test_deleted_ids_can_be_appended_again(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    chat.append_all([Message.user("one", id="m1"), Message.assistant("two", id="m2")])
    chat.delete_messages(["m2"])
    again = chat.append(Message.assistant("two, again", id="m2"))
    assert again.text == "two, again"
    assert ids(chat.history()) == ["m1", "m2"]


def test_delete_messages_in_a_long_session(manager: sessionary.SessionManager) -> None:
    # long enough that key-value stores have rolled most messages into snapshots
    chat = manager.create()
    chat.append_all([Message.user(f"m{i}", id=f"m{i}") for i in range(60)])
    chat.append(Message.assistant("side", id="side"), parent="m10")
    chat.checkout("m59")
    assert manager.delete_messages(chat.id, ["m59", "m58", "side"]) == ["m59", "m58", "side"]
    assert ids(chat.history(limit=2)) == ["m56", "m57"]
    assert chat.path_length() == 58
    assert ids(chat.branches("m10")) == ["m11"]
    chat.append(Message.user("m58b", id="m58b"))
    assert ids(chat.history(limit=3)) == ["m56", "m57", "m58b"]
    assert_consistent(manager, chat.id)


@pytest.mark.requires(SEARCH)
def test_messages_deleted_exactly_leave_search(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    chat.append_all([Message.user("keep zebra", id="m1"), Message.user("drop zebra", id="m2")])
    assert len(chat.search("zebra")) == 2
    chat.delete_messages(["m2"])
    assert [hit.message_id for hit in chat.search("zebra")] == ["m1"]


async def test_async_manager_message_operations(
    amanager: sessionary.AsyncSessionManager,
) -> None:
    chat = await amanager.create()
    await amanager.append_all(chat.id, [Message.user("a", id="a"), Message.assistant("b", id="b")])
    await amanager.upsert(chat.id, Message.assistant("b, edited", id="b"))
    assert [m.text for m in await amanager.history(chat.id)] == ["a", "b, edited"]
    with pytest.raises(MessageHasChildren):
        await amanager.delete_messages(chat.id, ["a"])
    assert await amanager.delete_messages(chat.id, ["b"]) == ["b"]
    assert await amanager.message_count(chat.id) == 1
    assert await amanager.clear(chat.id) == 1
