"""Idempotency by id: re-sending a message that is already stored changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import sessionary
from sessionary import InvalidMessage, Message

Snapshot = Callable[[str], list[dict[str, Any]]]


def test_reappend_returns_the_stored_original_and_changes_nothing(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat = manager.create()
    original = chat.append(Message.user("the original", id="m1", metadata={"v": 1}))
    before = snapshot(chat.id)
    again = chat.append(Message.user("a different text", id="m1", metadata={"v": 2}))
    assert again == original
    assert again.text == "the original"
    assert again.metadata == {"v": 1}
    assert snapshot(chat.id) == before
    assert chat.message_count() == 1


def test_reappend_after_the_head_moved_keeps_the_head(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat = manager.create()
    a = chat.append(Message.user("a", id="a"))
    b = chat.append(Message.assistant("b", id="b"))
    before = snapshot(chat.id)
    for parent in (sessionary.HEAD, None, "b"):
        again = chat.append(Message.user("a again", id="a"), parent=parent)
        assert again == a
        assert again.parent_id is None
    assert chat.head() == b
    assert [m.id for m in chat.history()] == ["a", "b"]
    assert snapshot(chat.id) == before


def test_reappend_with_another_role_returns_the_original(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat = manager.create()
    original = chat.append(Message.user("question", id="m1"))
    before = snapshot(chat.id)
    again = chat.append(Message.assistant("answer", id="m1"))
    assert again == original
    assert again.role == "user"
    assert snapshot(chat.id) == before


def test_append_all_retry_after_success_is_a_no_op(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat = manager.create()
    chat.append(Message.user("start", id="s"))
    batch = [
        Message.assistant("x", id="x"),
        Message.user("y", id="y"),
        Message.assistant("z", id="z"),
    ]
    first = chat.append_all(batch)
    before = snapshot(chat.id)
    second = chat.append_all(batch)
    assert second == first
    assert [m.parent_id for m in second] == ["s", "x", "y"]
    assert snapshot(chat.id) == before
    assert chat.message_count() == 4


def test_append_all_resumes_a_partly_stored_chain(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    chat.append_all([Message.user("a", id="a"), Message.assistant("b", id="b")])
    stored = chat.append_all(
        [Message.user("a", id="a"), Message.assistant("b", id="b"), Message.user("c", id="c")]
    )
    assert [m.id for m in stored] == ["a", "b", "c"]
    assert stored[2].parent_id == "b"
    assert [m.id for m in chat.history()] == ["a", "b", "c"]
    assert chat.message_count() == 3


def test_duplicate_id_inside_one_batch_writes_nothing(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat = manager.create()
    chat.append(Message.user("start"))
    before = snapshot(chat.id)
    with pytest.raises(InvalidMessage):
        chat.append_all(
            [Message.user("one", id="dup"), Message.assistant("mid"), Message.user("two", id="dup")]
        )
    assert snapshot(chat.id) == before


def test_the_same_id_in_two_sessions_is_two_messages(manager: sessionary.SessionManager) -> None:
    one, two = manager.create(), manager.create()
    first = one.append(Message.user("in one", id="shared"))
    second = two.append(Message.user("in two", id="shared"))
    assert first.text == "in one"
    assert second.text == "in two"
    assert one.get_message("shared") == first
    assert two.get_message("shared") == second
    assert one.delete("shared") == ["shared"]
    assert two.get_message("shared") == second


def test_the_same_id_after_delete_is_a_new_message(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    chat.append(Message.user("first life", id="m1"))
    chat.delete("m1")
    reborn = chat.append(Message.user("second life", id="m1"))
    assert reborn.text == "second life"
    assert chat.get_message("m1") == reborn
    assert chat.message_count() == 1


def test_retry_with_the_same_expected_head_returns_the_stored_message(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat = manager.create()
    a = chat.append(Message.user("a"))
    sent = Message.assistant("b", id="b")
    first = chat.append(sent, expected_head=a.id)
    before = snapshot(chat.id)
    again = chat.append(sent, expected_head=a.id)  # the reply to the first call was lost
    assert again == first
    assert snapshot(chat.id) == before
