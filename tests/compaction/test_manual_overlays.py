"""Overlays with the caller's own summary: `add_compaction`, `compactions`, deletes, and
`compact_and_split` with a summary, on every backend (all of them have documents).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import sessionary
from sessionary import InvalidInput, Message, MessageNotFound, ToolCallPart
from sessionary.compaction import COMPACTION_PREFIX, SUMMARY_KEY
from sessionary.compaction.split import CONTINUED_KEY


def ids(messages: list[Message]) -> list[str]:
    return [m.id for m in messages]


def chain(manager: sessionary.SessionManager, count: int) -> str:
    chat = manager.create(name="long")
    manager.append_all(
        chat.id,
        [
            (Message.user if i % 2 == 0 else Message.assistant)(f"step {i}", id=f"m{i}")
            for i in range(count)
        ],
    )
    return chat.id


def with_tool_turn(manager: sessionary.SessionManager) -> str:
    """u0, ask (calls c1), ans (answers it), a1, then ask2 with c2 still pending."""
    chat = manager.create()
    chat.append(Message.user("add 2 and 3", id="u0"))
    chat.append(Message.assistant(tool_calls=[ToolCallPart("c1", "add", {})], id="ask"))
    chat.append(Message.tool("c1", "5", id="ans"))
    chat.append(Message.assistant("It is 5.", id="a1"))
    chat.append(Message.assistant(tool_calls=[ToolCallPart("c2", "add", {})], id="ask2"))
    return chat.id


def test_add_compaction_shows_the_callers_summary(manager: sessionary.SessionManager) -> None:
    chat_id = chain(manager, 10)
    overlay = manager.add_compaction(chat_id, "  They counted to seven.  ", "m1", "m7")
    assert (overlay.first_id, overlay.last_id, overlay.covered) == ("m1", "m7", 7)
    assert overlay.summary == "They counted to seven."
    assert overlay.tokens_after < overlay.tokens_before
    shown = manager.history(chat_id)
    assert ids(shown) == ["m0", f"{COMPACTION_PREFIX}{overlay.id}", "m8", "m9"]
    assert "They counted to seven." in shown[1].text
    assert shown[1].metadata[SUMMARY_KEY]["first_id"] == "m1"
    assert ids(manager.history(chat_id, raw=True)) == [f"m{i}" for i in range(10)]
    assert manager.compactions(chat_id) == [overlay]
    assert manager.compactions(chat_id) == manager.session(chat_id).overlays()
    # a later, wider one replaces it on the branch and says so
    wider = manager.add_compaction(chat_id, "They counted to eight.", "m0", "m8")
    assert wider.supersedes == overlay.id
    assert ids(manager.history(chat_id))[1:] == ["m9"]
    assert manager.compactions(chat_id) == [overlay, wider]


def test_add_compaction_of_one_message(manager: sessionary.SessionManager) -> None:
    chat_id = chain(manager, 3)
    overlay = manager.add_compaction(chat_id, "A greeting.", "m0", "m0")
    assert overlay.covered == 1
    assert ids(manager.history(chat_id))[1:] == ["m1", "m2"]


def test_add_compaction_refuses_bad_ranges_and_changes_nothing(
    manager: sessionary.SessionManager,
) -> None:
    chat_id = with_tool_turn(manager)
    manager.append(chat_id, Message.user("other", id="side"), parent="u0")
    before = list(manager.export(chat_id))  # the row, every message and every document
    refused = [
        ("   ", "u0", "a1"),  # a blank summary
        ("s", "a1", "ask"),  # first is after last
        ("s", "side", "a1"),  # first on another branch
        ("s", "u0", "ask"),  # ends between a call and its result
        ("s", "ans", "a1"),  # starts with a result whose call stays outside
        ("s", "u0", "ask2"),  # would hide a call still waiting for its result
    ]
    for summary, first, last in refused:
        with pytest.raises(InvalidInput):
            manager.add_compaction(chat_id, summary, first, last)
    with pytest.raises(MessageNotFound):
        manager.add_compaction(chat_id, "s", "u0", "no-such-message")
    assert list(manager.export(chat_id)) == before
    assert manager.compactions(chat_id) == []
    # the whole tool turn is a valid range
    overlay = manager.add_compaction(chat_id, "Added 2 and 3: 5.", "u0", "a1")
    assert ids(manager.history(chat_id, "ask2"))[1:] == ["ask2"]
    assert overlay.covered == 4


def test_deleting_an_overlays_last_message_drops_the_overlay(
    manager: sessionary.SessionManager,
) -> None:
    chat_id = chain(manager, 6)
    chat = manager.session(chat_id)
    kept = manager.add_compaction(chat_id, "The start.", "m0", "m1")
    manager.add_compaction(chat_id, "Up to the end.", "m2", "m5")
    manager.delete_messages(chat_id, ["m5"])
    assert manager.compactions(chat_id) == [kept]
    assert ids(manager.history(chat_id))[1:] == ["m2", "m3", "m4"]
    # the id comes back as a new message: no old summary hides it
    manager.append(chat_id, Message.assistant("step 5, again", id="m5"))
    assert ids(manager.history(chat_id))[1:] == ["m2", "m3", "m4", "m5"]
    # the subtree delete drops them too
    chat.delete("m1")
    assert manager.compactions(chat_id) == []
    assert ids(manager.history(chat_id)) == ["m0"]


def test_compact_and_split_with_the_callers_summary(manager: sessionary.SessionManager) -> None:
    chat_id = chain(manager, 6)
    manager.session(chat_id).update_state({"k": 1})
    fresh = manager.compact_and_split(chat_id, "We counted to six.", name="continued")
    old = manager.get(chat_id)
    assert old is not None and old.end_reason == "compacted"
    assert [o.covered for o in manager.compactions(chat_id)] == [6]
    info = fresh.info()
    assert info.parent_session_id == chat_id and info.name == "continued"
    shown = fresh.history()
    assert len(shown) == 1
    assert "We counted to six." in shown[0].text
    assert shown[0].metadata[CONTINUED_KEY]["session_id"] == chat_id
    assert not shown[0].id.startswith(COMPACTION_PREFIX)
    assert fresh.get_state().data == {"k": 1}
    fresh.append(Message.user("carry on"))


class StoppedClock:
    """A fake clock stopped at one moment, far from the system clock's."""

    now = datetime(2001, 2, 3, 4, 5, 6, 789012, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def test_overlays_and_the_split_summary_take_the_managers_clock(store_url: str) -> None:
    clock = StoppedClock()
    with sessionary.SessionManager(store_url, clock=clock) as manager:
        chat_id = chain(manager, 6)
        wide = manager.add_compaction(chat_id, "From the start.", "m0", "m3")
        narrow = manager.add_compaction(chat_id, "From m2 on.", "m2", "m3")
        assert [o.created_at for o in manager.compactions(chat_id)] == [clock.now, clock.now]
        # at the same time and end, the one added later applies
        shown = manager.history(chat_id)
        assert ids(shown) == ["m0", "m1", f"{COMPACTION_PREFIX}{narrow.id}", "m4", "m5"]
        assert shown[2].created_at == clock.now
        assert wide.id != narrow.id

        fresh = manager.compact_and_split(chat_id, "We counted to six.")
        first = fresh.history()[0]
        assert CONTINUED_KEY in first.metadata
        assert first.created_at == clock.now
        assert [o.created_at for o in manager.compactions(chat_id)][-1] == clock.now


def test_compact_and_split_with_a_summary_keeps_a_pending_call(
    manager: sessionary.SessionManager,
) -> None:
    chat_id = with_tool_turn(manager)
    fresh = manager.compact_and_split(chat_id, "They added 2 and 3.")
    shown = fresh.history()
    assert ids(shown)[1:] == ["ask2"]
    fresh.append(Message.tool("c2", "7", id="ans2"))
    assert ids(fresh.history())[1:] == ["ask2", "ans2"]


def test_compact_and_split_with_a_summary_refuses_an_empty_session(
    manager: sessionary.SessionManager,
) -> None:
    chat = manager.create()
    with pytest.raises(InvalidInput):
        manager.compact_and_split(chat.id, "Nothing happened.")
    info = manager.get(chat.id)
    assert info is not None and info.end_reason is None
    assert manager.list().items == [info]


async def test_async_manager_adds_compactions(
    amanager: sessionary.AsyncSessionManager,
) -> None:
    chat = await amanager.create()
    await amanager.append_all(chat.id, [Message.user("a", id="a"), Message.assistant("b", id="b")])
    overlay = await amanager.add_compaction(chat.id, "Said a.", "a", "a")
    assert await amanager.compactions(chat.id) == [overlay]
    shown = await amanager.history(chat.id)
    assert [m.id for m in shown] == [f"{COMPACTION_PREFIX}{overlay.id}", "b"]
