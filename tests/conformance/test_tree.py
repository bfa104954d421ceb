"""The message tree: appends, branches, the head, history windows, deletes and updates."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

import sessionary
from sessionary import (
    HEAD,
    HeadConflict,
    InvalidInput,
    InvalidMessage,
    Message,
    MessageNotFound,
    TextPart,
    ToolCallPart,
)
from sessionary.stores.base import SEARCH

Snapshot = Callable[[str], list[dict[str, Any]]]
OpenScope = Callable[..., sessionary.SessionManager]


def ids(messages: Sequence[Message]) -> list[str]:
    return [m.id for m in messages]


def all_messages(manager: sessionary.SessionManager, session_id: str) -> list[dict]:
    """Every stored message of a session, on every branch, as exported."""
    return [r["message"] for r in manager.export(session_id) if r["type"] == "message"]


def assert_no_dangling_parents(manager: sessionary.SessionManager, session_id: str) -> None:
    stored = all_messages(manager, session_id)
    present = {m["id"] for m in stored}
    for m in stored:
        assert m.get("parent_id") is None or m["parent_id"] in present, m


def tool_turn(prefix: str, calls: int) -> tuple[Message, list[Message]]:
    """An assistant message making `calls` tool calls, and one tool message per call."""
    call_ids = [f"{prefix}-call-{i}" for i in range(calls)]
    asking = Message.assistant(
        tool_calls=[
            ToolCallPart(id=c, name="lookup", arguments={"n": i}) for i, c in enumerate(call_ids)
        ],
        id=f"{prefix}-ask",
    )
    answers = [
        Message.tool(c, f"result {i}", id=f"{prefix}-ans-{i}") for i, c in enumerate(call_ids)
    ]
    return asking, answers


# ---------------------------------------------------------------- append and the head


def test_new_session_is_empty(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    assert chat.history() == []
    assert chat.head() is None
    assert chat.path_length() == 0
    assert chat.message_count() == 0
    assert chat.info().head_id is None


def test_append_after_head_chains_and_moves_head(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    a = chat.append(Message.user("one"))
    b = chat.append(Message.assistant("two"))
    c = chat.append(Message.user("three"), parent=HEAD)
    assert a.parent_id is None
    assert b.parent_id == a.id
    assert c.parent_id == b.id
    assert ids(chat.history()) == [a.id, b.id, c.id]
    head = chat.head()
    assert head is not None and head.id == c.id
    assert chat.info().head_id == c.id
    assert chat.path_length() == 3
    assert chat.message_count() == 3


def test_append_returns_the_message_as_stored(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    first = chat.append(Message.user("hello"))
    sent = Message.assistant(
        "hi there",
        tool_calls=[ToolCallPart(id="c1", name="search", arguments={"q": "x", "n": [1, 2]})],
        metadata={"model": "m-1", "nested": {"k": [True, None, 1.5]}},
        created_at=datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC),
    )
    stored = chat.append(sent)
    assert stored == sent
    assert stored.parent_id == first.id
    again = chat.get_message(sent.id)
    assert again == sent
    assert again is not None and again.parent_id == first.id
    assert again.created_at == datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)


def test_a_tool_call_without_arguments_reads_back(manager: sessionary.SessionManager) -> None:
    # A call whose arguments are null (a deferred call, a tool added mid-run) is stored and
    # read back as it was, by a new handle too, and its JSON shape keeps the null.
    chat = manager.create()
    sent = Message.assistant(tool_calls=[ToolCallPart(id="c1", name="later", arguments=None)])
    chat.append(sent)
    for again in (chat.history(), manager.session(chat.id).history(limit=1)):
        assert again == [sent]
        assert again[0].tool_calls[0].arguments is None
    assert all_messages(manager, chat.id)[0]["parts"][0].get("arguments") is None


def test_append_accepts_the_json_shape(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    stored = chat.append({"id": "m1", "role": "user", "content": "plain text"})
    assert stored.id == "m1"
    assert stored.parts == [TextPart("plain text")]
    stored2 = chat.append({"role": "assistant", "parts": [{"type": "text", "text": "ok"}]})
    assert stored2.parent_id == "m1"
    assert [m.text for m in chat.history()] == ["plain text", "ok"]


def test_created_at_keeps_its_instant(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    plus_two = timezone(timedelta(hours=2))
    aware = datetime(2023, 1, 2, 3, 4, 5, 678901, tzinfo=plus_two)
    naive = datetime(2023, 1, 2, 3, 4, 5, 1)
    chat.append(Message.user("aware", id="aware", created_at=aware))
    chat.append(Message.user("naive", id="naive", created_at=naive))
    got_aware = chat.get_message("aware")
    got_naive = chat.get_message("naive")
    assert got_aware is not None and got_naive is not None
    assert got_aware.created_at == aware
    assert got_naive.created_at == naive.replace(tzinfo=UTC)


def test_append_with_parent_none_starts_a_new_root(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    a = chat.append(Message.user("first root"))
    chat.append(Message.assistant("reply"))
    r = chat.append(Message.user("second root"), parent=None)
    assert r.parent_id is None
    assert ids(chat.history()) == [r.id]
    assert chat.path_length() == 1
    assert chat.message_count() == 3
    assert ids(chat.history(leaf=ids(chat.branches(a.id))[0])) == [a.id, chat.branches(a.id)[0].id]


def test_append_to_a_message_with_children_makes_a_branch(
    manager: sessionary.SessionManager,
) -> None:
    chat = manager.create()
    a = chat.append(Message.user("question"))
    b = chat.append(Message.assistant("answer one"))
    c = chat.append(Message.assistant("answer two"), parent=a.id)
    assert c.parent_id == a.id
    assert ids(chat.branches(a.id)) == [b.id, c.id]
    assert ids(chat.history()) == [a.id, c.id]
    assert ids(chat.history(leaf=b.id)) == [a.id, b.id]
    assert chat.message_count() == 3
    assert chat.path_length() == 2
    assert chat.path_length(b.id) == 2
    # a third branch, appended after the head moved elsewhere, is still the youngest
    chat.checkout(b.id)
    d = chat.append(Message.assistant("answer three"), parent=a.id)
    assert ids(chat.branches(a.id)) == [b.id, c.id, d.id]
    assert chat.head() == d


def test_append_to_an_explicit_parent_deep_in_the_tree(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    chain = chat.append_all([Message.user(f"m{i}", id=f"m{i}") for i in range(6)])
    assert ids(chat.history()) == ids(chain)
    x = chat.append(Message.user("edit of m2"), parent="m2")
    assert ids(chat.history()) == ["m0", "m1", "m2", x.id]
    y = chat.append(Message.assistant("reply to edit"))
    assert y.parent_id == x.id
    assert chat.path_length() == 5
    assert chat.message_count() == 8
    assert ids(chat.branches("m2")) == ["m3", x.id]


def test_append_to_an_unknown_parent_writes_nothing(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat = manager.create()
    chat.append(Message.user("one"))
    other = manager.create()
    foreign = other.append(Message.user("elsewhere"))
    before = snapshot(chat.id)
    with pytest.raises(MessageNotFound):
        chat.append(Message.user("lost"), parent="no-such-message")
    with pytest.raises(MessageNotFound):
        chat.append(Message.user("lost"), parent=foreign.id)
    with pytest.raises(MessageNotFound):
        chat.append_all([Message.user("x"), Message.user("y")], parent="no-such-message")
    assert snapshot(chat.id) == before


def test_append_all_is_a_chain(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    a = chat.append(Message.user("start"))
    stored = chat.append_all(
        [
            Message.assistant("x", id="x"),
            {"id": "y", "role": "user", "content": "y"},
            Message.assistant("z", id="z"),
        ]
    )
    assert ids(stored) == ["x", "y", "z"]
    assert [m.parent_id for m in stored] == [a.id, "x", "y"]
    assert ids(chat.history()) == [a.id, "x", "y", "z"]
    assert chat.head() == stored[-1]
    branch = chat.append_all([Message.user("p", id="p"), Message.user("q", id="q")], parent=a.id)
    assert [m.parent_id for m in branch] == [a.id, "p"]
    roots = chat.append_all([Message.user("r", id="r")], parent=None)
    assert roots[0].parent_id is None
    assert chat.message_count() == 7


def test_append_all_of_nothing_changes_nothing(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat = manager.create()
    chat.append(Message.user("one"))
    before = snapshot(chat.id)
    assert chat.append_all([]) == []
    assert chat.append_all(iter([])) == []
    assert snapshot(chat.id) == before


def _turns(chat: sessionary.Session) -> list[Message]:
    """Append h1, a1, h2, a2 (user and assistant turns with those ids); return them."""
    return chat.append_all(
        [
            Message.user("q1", id="h1"),
            Message.assistant("r1", id="a1"),
            Message.user("q2", id="h2"),
            Message.assistant("r2", id="a2"),
        ]
    )


@pytest.mark.parametrize(
    ("batch", "stored_id"),
    [
        (["h3", "a1"], "a1"),  # the repro: a new message, then one stored long ago
        (["h3", "a2"], "a2"),  # ... or the head itself
        (["h1", "h3", "a1", "x"], "a1"),  # a stored prefix does not excuse a later one
    ],
)
def test_append_all_refuses_a_stored_message_after_a_new_one(
    manager: sessionary.SessionManager, snapshot: Snapshot, batch: list[str], stored_id: str
) -> None:
    chat = manager.create()
    _turns(chat)
    before = snapshot(chat.id)
    messages = [Message.user(f"text of {i}", id=i) for i in batch]
    # A stale expected head too: the batch is wrong whatever the head, so it says that.
    stale = {"expected_head": "h1"}
    for options in ({}, {"parent": "h1"}, {"parent": None}, {"expected_head": "a2"}, stale):
        with pytest.raises(InvalidMessage, match=f"'{stored_id}'.*stored already"):
            chat.append_all(messages, **options)  # type: ignore[arg-type]
        assert snapshot(chat.id) == before
    assert ids(chat.history()) == ["h1", "a1", "h2", "a2"]
    assert chat.get_message("h3") is None


def test_append_all_continues_a_stored_prefix(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    turns = _turns(chat)
    # A caller re-sending the whole conversation with one new message at its end.
    stored = chat.append_all([*turns, Message.user("q3", id="h3"), Message.assistant("r3")])
    assert stored[:4] == turns
    assert [m.parent_id for m in stored[4:]] == ["a2", "h3"]
    assert ids(chat.history()) == ["h1", "a1", "h2", "a2", "h3", stored[5].id]
    # A stored prefix ending above the head: the new suffix answers its last message.
    branch = chat.append_all([turns[0], turns[1], Message.user("other q2", id="b2")])
    assert branch[2].parent_id == "a1"
    assert ids(chat.history()) == ["h1", "a1", "b2"]
    assert chat.message_count() == 7


def test_append_all_of_stored_messages_changes_nothing(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat = manager.create()
    turns = _turns(chat)
    before = snapshot(chat.id)
    assert chat.append_all(turns) == turns  # the whole batch retried
    assert chat.append_all(turns[:2]) == turns[:2]  # a stored chain above the head
    assert chat.append_all(turns, expected_head="h1") == turns  # a retry after its ack
    assert snapshot(chat.id) == before
    assert chat.head() == turns[-1]


def test_expected_head(manager: sessionary.SessionManager, snapshot: Snapshot) -> None:
    chat = manager.create()
    a = chat.append(Message.user("one"), expected_head=None)
    before = snapshot(chat.id)
    with pytest.raises(HeadConflict):
        chat.append(Message.user("stale"), expected_head=None)
    with pytest.raises(HeadConflict):
        chat.append_all([Message.user("stale")], expected_head="not-the-head")
    assert snapshot(chat.id) == before
    b = chat.append(Message.assistant("two"), expected_head=a.id)
    assert chat.head() == b
    # the expected head is checked even when appending somewhere else in the tree
    with pytest.raises(HeadConflict):
        chat.append(Message.user("branch"), parent=a.id, expected_head=a.id)
    c = chat.append(Message.user("branch"), parent=a.id, expected_head=b.id)
    assert c.parent_id == a.id
    chat.checkout(None)
    d = chat.append(Message.user("new root"), expected_head=None)
    assert d.parent_id is None


# ---------------------------------------------------------------- checkout


def test_checkout_moves_the_head(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    a, b, c = chat.append_all([Message.user("a"), Message.assistant("b"), Message.user("c")])
    chat.checkout(b.id)
    assert chat.head() == b
    assert ids(chat.history()) == [a.id, b.id]
    assert chat.path_length() == 2
    assert chat.message_count() == 3
    d = chat.append(Message.user("d"))
    assert d.parent_id == b.id
    assert ids(chat.branches(b.id)) == [c.id, d.id]


def test_checkout_none_empties_the_view_but_keeps_messages(
    manager: sessionary.SessionManager,
) -> None:
    chat = manager.create()
    a, _ = chat.append_all([Message.user("a"), Message.assistant("b")])
    chat.checkout(None)
    assert chat.head() is None
    assert chat.history() == []
    assert chat.history(limit=5) == []
    assert chat.path_length() == 0
    assert chat.message_count() == 2
    r = chat.append(Message.user("fresh start"))
    assert r.parent_id is None
    assert ids(chat.history()) == [r.id]
    assert chat.get_message(a.id) is not None


def test_checkout_of_an_unknown_message_changes_nothing(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat = manager.create()
    chat.append(Message.user("a"))
    other = manager.create()
    foreign = other.append(Message.user("x"))
    before = snapshot(chat.id)
    with pytest.raises(MessageNotFound):
        chat.checkout("no-such-message")
    with pytest.raises(MessageNotFound):
        chat.checkout(foreign.id)
    assert snapshot(chat.id) == before


def test_checkout_with_an_expected_head_is_a_compare_and_set(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat = manager.create()
    with pytest.raises(HeadConflict):
        chat.checkout(None, expected_head="not-the-head")
    chat.checkout(None, expected_head=None)  # an empty session's head is None
    a, b = chat.append_all([Message.user("a"), Message.assistant("b")])
    chat.checkout(a.id, expected_head=b.id)
    assert chat.head() == a
    before = snapshot(chat.id)
    for stale in (b.id, None, "gone"):
        with pytest.raises(HeadConflict):
            chat.checkout(b.id, expected_head=stale)
    # the conflict is checked before the target, and neither changes anything
    with pytest.raises(HeadConflict):
        chat.checkout("no-such-message", expected_head=b.id)
    with pytest.raises(MessageNotFound):
        chat.checkout("no-such-message", expected_head=a.id)
    assert snapshot(chat.id) == before
    chat.checkout(None, expected_head=a.id)
    assert chat.head() is None
    with pytest.raises(sessionary.InvalidId):
        chat.checkout(a.id, expected_head="bad id!")


def test_checkout_is_persisted_for_every_handle(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    chat = manager.create()
    a, b, _ = chat.append_all([Message.user("a"), Message.assistant("b"), Message.user("c")])
    chat.checkout(b.id)
    assert manager.session(chat.id).head() == b
    other = open_scope().session(chat.id)
    assert other.head() == b
    assert ids(other.history()) == [a.id, b.id]
    # and a write through the other handle is seen here
    d = other.append(Message.user("d"))
    assert d.parent_id == b.id
    assert chat.head() == d


# ---------------------------------------------------------------- reads


def test_history_of_a_leaf(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    a, b, _ = chat.append_all([Message.user("a"), Message.assistant("b"), Message.user("c")])
    x = chat.append(Message.user("x"), parent=a.id)
    assert ids(chat.history(leaf=b.id)) == [a.id, b.id]
    assert ids(chat.history(leaf=a.id)) == [a.id]
    assert ids(chat.history(leaf=x.id)) == [a.id, x.id]
    assert ids(chat.history(leaf=b.id, limit=1)) == [b.id]
    with pytest.raises(MessageNotFound):
        chat.history(leaf="no-such-message")
    with pytest.raises(MessageNotFound):
        chat.path_length("no-such-message")


def test_history_limit_returns_the_last_n_oldest_first(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    stored = chat.append_all(
        [Message.user(f"u{i}") if i % 2 == 0 else Message.assistant(f"a{i}") for i in range(10)]
    )
    every = ids(stored)
    for n in (1, 2, 3, 9, 10, 11, 1000):
        assert ids(chat.history(limit=n)) == every[-n:], n
    chat.checkout(every[4])
    assert ids(chat.history(limit=2)) == every[3:5]
    assert chat.history(limit=3) == chat.history()[-3:]


def test_history_limit_keeps_tool_calls_with_all_their_results(
    manager: sessionary.SessionManager,
) -> None:
    chat = manager.create()
    question = chat.append(Message.user("what is the weather?"))
    asking, answers = tool_turn("t", 2)
    chat.append_all([asking, *answers])
    whole = [asking.id, *ids(answers)]
    for n in (1, 2, 3):
        assert ids(chat.history(limit=n)) == whole, n
    assert ids(chat.history(limit=4)) == [question.id, *whole]
    final = chat.append(Message.assistant("sunny"))
    assert ids(chat.history(limit=1)) == [final.id]
    assert ids(chat.history(limit=2)) == [*whole, final.id]
    assert ids(chat.history(leaf=answers[0].id, limit=1)) == [asking.id, answers[0].id]


def test_history_limit_reaches_far_back_for_a_call(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    chat.append_all([Message.user(f"filler {i}") for i in range(5)])
    asking, answers = tool_turn("wide", 40)
    chat.append_all([asking, *answers])
    window = chat.history(limit=1)
    assert ids(window) == [asking.id, *ids(answers)]
    window = chat.history(limit=25)
    assert ids(window) == [asking.id, *ids(answers)]


def test_history_limit_with_two_tool_turns(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    first_ask, first_answers = tool_turn("one", 2)
    second_ask, second_answers = tool_turn("two", 3)
    chat.append_all([Message.user("go"), first_ask, *first_answers, second_ask, *second_answers])
    assert ids(chat.history(limit=2)) == [second_ask.id, *ids(second_answers)]
    assert ids(chat.history(limit=5)) == [
        first_ask.id,
        *ids(first_answers),
        second_ask.id,
        *ids(second_answers),
    ]


def test_branches(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    a = chat.append(Message.user("a"))
    assert chat.branches(a.id) == []
    b = chat.append(Message.assistant("b"))
    assert chat.branches(a.id) == [b]
    assert chat.branches(a.id)[0].parent_id == a.id
    with pytest.raises(MessageNotFound):
        chat.branches("no-such-message")


def test_message_count_counts_every_branch(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    a = chat.append(Message.user("a"))
    for i in range(4):
        chat.append(Message.assistant(f"alt {i}"), parent=a.id)
    chat.append(Message.user("other root"), parent=None)
    assert chat.message_count() == 6
    assert chat.info().message_count == 6
    assert manager.get(chat.id).message_count == 6  # type: ignore[union-attr]
    assert len(chat.branches(a.id)) == 4


def test_get_message(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    a = chat.append(Message.user("a"))
    b = chat.append(Message.assistant("b", metadata={"k": 1}))
    got = chat.get_message(b.id)
    assert got == b
    assert got is not None and got.parent_id == a.id and got.metadata == {"k": 1}
    assert chat.get_message("no-such-message") is None
    assert manager.create().get_message(a.id) is None


def test_returned_messages_are_copies(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    sent = Message.user("original", id="m1", metadata={"k": [1]})
    stored = chat.append(sent)
    sent.parts.append(TextPart("sneaky"))
    sent.metadata["k"].append(2)
    stored.parts.clear()
    got = chat.get_message("m1")
    assert got is not None
    got.metadata["k"].append(3)
    again = chat.get_message("m1")
    assert again is not None
    assert again.text == "original"
    assert again.metadata == {"k": [1]}


def test_unknown_fields_survive_a_round_trip(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    stored = chat.append(
        {
            "id": "m1",
            "role": "assistant",
            "parts": [
                {"type": "text", "text": "hi", "citations": [{"url": "https://x"}]},
                {"type": "tool_call", "id": "c1", "name": "f", "arguments": {}, "x_flag": 1},
            ],
            "provider_options": {"cache": True},
        }
    )
    got = chat.get_message("m1")
    assert got == stored
    assert got is not None
    assert got.extra == {"provider_options": {"cache": True}}
    assert got.parts[0].extra == {"citations": [{"url": "https://x"}]}
    assert got.parts[1].extra == {"x_flag": 1}
    data = got.to_dict()
    assert data["provider_options"] == {"cache": True}
    assert data["parts"][0]["citations"] == [{"url": "https://x"}]


# ---------------------------------------------------------------- delete and clear


def test_delete_removes_the_subtree_and_moves_the_head_up(
    manager: sessionary.SessionManager,
) -> None:
    chat = manager.create()
    # a - b - c          (head: c)
    #   |   \ d
    #   \ e
    a, b, c = chat.append_all([Message.user("a"), Message.assistant("b"), Message.user("c")])
    d = chat.append(Message.user("d"), parent=b.id)
    e = chat.append(Message.assistant("e"), parent=a.id)
    chat.checkout(c.id)
    deleted = chat.delete(b.id)
    assert sorted(deleted) == sorted([b.id, c.id, d.id])
    assert chat.head() == a
    assert ids(chat.history()) == [a.id]
    assert chat.path_length() == 1
    assert chat.message_count() == 2
    assert ids(chat.branches(a.id)) == [e.id]
    for gone in (b.id, c.id, d.id):
        assert chat.get_message(gone) is None
    assert_no_dangling_parents(manager, chat.id)
    assert {m["id"] for m in all_messages(manager, chat.id)} == {a.id, e.id}
    # the head's new place is a real message: appending continues from it
    f = chat.append(Message.assistant("f"))
    assert f.parent_id == a.id
    assert chat.path_length() == 2


def test_delete_outside_the_head_keeps_the_head(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    a, b, c = chat.append_all([Message.user("a"), Message.assistant("b"), Message.user("c")])
    x = chat.append(Message.assistant("x"), parent=a.id)
    y = chat.append(Message.user("y"))
    chat.checkout(c.id)
    assert sorted(chat.delete(x.id)) == sorted([x.id, y.id])
    assert chat.head() == c
    assert ids(chat.history()) == [a.id, b.id, c.id]
    assert chat.message_count() == 3
    # deleting the head itself moves it to its parent
    assert chat.delete(c.id) == [c.id]
    assert chat.head() == b
    assert chat.path_length() == 2


def test_delete_of_a_root_with_the_head_inside_empties_the_head(
    manager: sessionary.SessionManager,
) -> None:
    chat = manager.create()
    a, b = chat.append_all([Message.user("a"), Message.assistant("b")])
    r = chat.append(Message.user("root two"), parent=None)
    chat.checkout(b.id)
    assert sorted(chat.delete(a.id)) == sorted([a.id, b.id])
    assert chat.head() is None
    assert chat.history() == []
    assert chat.path_length() == 0
    assert chat.message_count() == 1
    assert chat.get_message(r.id) == r
    assert_no_dangling_parents(manager, chat.id)


def test_delete_of_an_unknown_message_changes_nothing(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat = manager.create()
    chat.append(Message.user("a"))
    before = snapshot(chat.id)
    with pytest.raises(MessageNotFound):
        chat.delete("no-such-message")
    assert snapshot(chat.id) == before


@pytest.mark.requires(SEARCH)
def test_deleted_messages_leave_search(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    a = chat.append(Message.user("keep this walrus"))
    b = chat.append(Message.assistant("drop this narwhal"))
    assert ids_of_hits(manager.search("narwhal")) == [b.id]  # indexed before the delete
    c = chat.append(Message.user("another narwhal, never searched"))
    chat.delete(b.id)
    assert manager.search("narwhal") == []
    assert chat.search("narwhal") == []
    assert ids_of_hits(manager.search("walrus")) == [a.id]
    assert chat.get_message(c.id) is None


def ids_of_hits(hits: Sequence[sessionary.SearchHit]) -> list[str]:
    return [h.message_id for h in hits]


def test_clear(manager: sessionary.SessionManager) -> None:
    chat = manager.create(name="kept")
    chat.append_all([Message.user("alpha wombat"), Message.assistant("beta")])
    chat.append(Message.user("gamma"), parent=None)
    chat.update_state({"k": "v"})
    searchable = SEARCH in manager.store.capabilities
    if searchable:
        assert len(manager.search("wombat")) == 1
    assert chat.clear() == 3
    assert chat.history() == []
    assert chat.head() is None
    assert chat.message_count() == 0
    assert chat.path_length() == 0
    if searchable:
        assert manager.search("wombat") == []
    info = chat.info()
    assert info.name == "kept"
    assert chat.get_state().data == {"k": "v"}
    assert chat.clear() == 0
    a = chat.append(Message.user("after clear"))
    assert a.parent_id is None
    assert chat.message_count() == 1


# ---------------------------------------------------------------- update


def test_update_replaces_parts_and_metadata_in_place(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    a, b, c = chat.append_all(
        [Message.user("a"), Message.assistant("old text", metadata={"v": 1}), Message.user("c")]
    )
    new = Message.assistant("new text", id=b.id, metadata={"v": 2})
    stored = chat.update(new)
    assert stored.text == "new text"
    assert stored.metadata == {"v": 2}
    assert stored.parent_id == a.id
    assert stored.created_at == b.created_at
    got = chat.get_message(b.id)
    assert got is not None and got.text == "new text" and got.metadata == {"v": 2}
    assert ids(chat.history()) == [a.id, b.id, c.id]
    assert chat.head() == c
    assert chat.message_count() == 3
    assert chat.update({"id": a.id, "role": "user", "content": "edited a"}).text == "edited a"
    assert chat.history()[0].text == "edited a"


@pytest.mark.requires(SEARCH)
@pytest.mark.parametrize("searched_before", [True, False])
def test_update_reindexes_search(manager: sessionary.SessionManager, searched_before: bool) -> None:
    chat = manager.create()
    chat.append(Message.user("unrelated opening"))
    m = chat.append(Message.assistant("the marmoset sleeps"))
    if searched_before:
        assert ids_of_hits(chat.search("marmoset")) == [m.id]
    chat.update(Message.assistant("the ocelot sleeps", id=m.id))
    assert chat.search("marmoset") == []
    assert manager.search("marmoset") == []
    assert ids_of_hits(chat.search("ocelot")) == [m.id]
    assert ids_of_hits(manager.search("sleeps")) == [m.id]


def test_update_cannot_change_the_role(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat = manager.create()
    m = chat.append(Message.user("question"))
    before = snapshot(chat.id)
    with pytest.raises(InvalidInput):
        chat.update(Message.assistant("answer", id=m.id))
    with pytest.raises(InvalidInput):
        chat.update(Message.system("sys", id=m.id))
    assert snapshot(chat.id) == before


def test_update_of_an_unknown_or_bad_message_changes_nothing(
    manager: sessionary.SessionManager, snapshot: Snapshot
) -> None:
    chat = manager.create()
    m = chat.append(Message.user("question"))
    before = snapshot(chat.id)
    with pytest.raises(MessageNotFound):
        chat.update(Message.user("nope", id="no-such-message"))
    with pytest.raises(InvalidMessage):
        chat.update({"id": m.id, "role": "user", "parts": [{"type": "hologram"}]})
    with pytest.raises(InvalidMessage):
        chat.update(Message.user("x", id=m.id, metadata={"bad": {1, 2}}))
    with pytest.raises(InvalidMessage):
        chat.update(Message(role="user", id=m.id, parts=[ToolCallPart(id="c", name="f")]))
    assert snapshot(chat.id) == before


def test_a_parent_id_inside_the_message_is_not_where_it_goes(
    manager: sessionary.SessionManager,
) -> None:
    chat = manager.create()
    a = chat.append(Message.user("a"))
    stored = chat.append(
        {"id": "m2", "role": "assistant", "content": "b", "parent_id": "no-such-message"}
    )
    assert stored.parent_id == a.id
    root = chat.append(Message.user("c", parent_id=a.id), parent=None)
    assert root.parent_id is None
    assert chat.get_message(root.id).parent_id is None  # type: ignore[union-attr]


def test_any_and_head_sentinels(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    a = chat.append(Message.user("a"), parent=sessionary.HEAD, expected_head=sessionary.ANY)
    b = chat.append(Message.user("b"), expected_head=sessionary.ANY)
    assert b.parent_id == a.id


def test_a_long_chain(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    stored = chat.append_all([Message.user(f"m{i}", id=f"m{i}") for i in range(2500)])
    assert chat.path_length() == 2500
    assert chat.path_length("m1234") == 1235
    assert ids(chat.history(limit=3)) == ["m2497", "m2498", "m2499"]
    assert ids(chat.history()) == ids(stored)
    assert ids(chat.history(leaf="m10")) == [f"m{i}" for i in range(11)]
    deleted = chat.delete("m1000")
    assert len(deleted) == 1500
    assert chat.head() == stored[999]
    assert chat.message_count() == 1000
    assert chat.path_length() == 1000
    assert chat.delete("m0") and chat.message_count() == 0
    assert chat.head() is None


def test_history_limit_with_a_result_whose_call_is_not_on_the_path(
    manager: sessionary.SessionManager,
) -> None:
    chat = manager.create()
    asking, answers = tool_turn("elsewhere", 1)
    root = chat.append(Message.user("root"))
    chat.append(asking)
    orphan = chat.append(Message.tool("elsewhere-call-0", "stray", id="stray"), parent=root.id)
    window = chat.history(limit=1)
    assert window[-1] == orphan
    assert ids(window) == [root.id, orphan.id]  # widened as far as it can go, then stops
    chat.append_all(answers, parent=asking.id)
    assert ids(chat.history(limit=1)) == [asking.id, answers[0].id]
