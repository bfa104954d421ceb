"""The incremental session manager's behaviour, on every driver."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from sessionary import Message, ToolCallPart
from sessionary.errors import (
    AlreadyExists,
    InvalidId,
    InvalidInput,
    InvalidMessage,
    InvalidPatch,
    PayloadTooLarge,
)
from sessionary.kv import AsyncIncrementalSessionManager, IncrementalSessionManager
from sessionary.stores._common import DEFAULT_MAX_MESSAGE_BYTES


def users(*names: str) -> list[Message]:
    return [Message.user(n, id=n) for n in names]


def texts(messages: list[Message]) -> list[str]:
    return [m.text for m in messages]


def loose_count(driver: Any, session: str = "s") -> int:
    return len(driver.list_prefix(f"sessions:{session}:msg:"))


def snapshot(driver: Any, session: str = "s") -> list[str]:
    """The ids of the rolled-up messages: the live chunks, minus what a trim cut."""
    meta = json.loads(driver.get(f"sessions:{session}:meta") or "{}")
    ids: list[str] = []
    for number in range(meta.get("first_chunk", 0), meta.get("next_chunk", 0)):
        chunk = json.loads(driver.get(f"sessions:{session}:chunk:{number:012d}"))
        ids += [m["id"] for m in chunk[meta["skip"] if number == meta["first_chunk"] else 0 :]]
    return ids


def test_loose_entries_roll_up_every_n_appends(driver: Any) -> None:
    manager = IncrementalSessionManager(driver, snapshot_frequency=3)
    for name in ("a", "b"):
        manager.append_message("s", Message.user(name, id=name))
    assert (loose_count(driver), snapshot(driver)) == (2, [])
    manager.append_message("s", Message.user("c", id="c"))
    assert (loose_count(driver), snapshot(driver)) == (0, ["a", "b", "c"])
    manager.append_messages("s", users("d", "e"))
    assert (loose_count(driver), snapshot(driver)) == (2, ["a", "b", "c"])
    assert texts(manager.get_history("s")) == ["a", "b", "c", "d", "e"]


def test_a_roll_up_due_mid_batch_runs_once_at_the_end(driver: Any) -> None:
    manager = IncrementalSessionManager(driver, snapshot_frequency=3)
    manager.append_messages("s", users("a", "b"))
    manager.append_messages("s", users("c", "d", "e", "f", "g"))  # due after "c"
    assert (loose_count(driver), snapshot(driver)) == (0, list("abcdefg"))
    assert texts(manager.get_history("s")) == list("abcdefg")


def test_max_messages_trims_at_each_roll_up_only(driver: Any) -> None:
    manager = IncrementalSessionManager(driver, snapshot_frequency=4, max_messages=5)
    manager.append_messages("s", users(*"abcd"))
    manager.append_messages("s", users(*"efg"))
    assert texts(manager.get_history("s")) == list("abcdefg")  # loose ones accumulate
    manager.append_message("s", Message.user("h", id="h"))
    assert snapshot(driver) == list("defgh")
    assert texts(manager.get_history("s", 2)) == list("gh")


def tool_turn(n: int) -> list[Message]:
    call = ToolCallPart(id=f"call{n}", name="look", arguments={"n": n})
    return [
        Message.user(f"q{n}", id=f"q{n}"),
        Message.assistant(tool_calls=[call], id=f"a{n}"),
        Message.tool(f"call{n}", "result", id=f"t{n}"),
    ]


def test_a_trim_never_leaves_a_tool_result_without_its_call(driver: Any) -> None:
    manager = IncrementalSessionManager(driver, snapshot_frequency=6, max_messages=4)
    manager.append_messages("s", [*tool_turn(1), *tool_turn(2)])
    # The newest four would start with t1, whose call a1 was trimmed: t1 goes too.
    assert snapshot(driver) == ["q2", "a2", "t2"]


def test_history_widens_to_keep_a_call_with_its_result(driver: Any) -> None:
    manager = IncrementalSessionManager(driver)
    manager.append_messages("s", [*tool_turn(1), Message.user("bye", id="bye")])
    assert [m.id for m in manager.get_history("s", 2)] == ["a1", "t1", "bye"]
    assert [m.id for m in manager.get_history("s", 1)] == ["bye"]
    assert manager.get_history("s", 100) == manager.get_history("s")


def test_snapshot_now_rolls_up_at_once(driver: Any) -> None:
    manager = IncrementalSessionManager(driver, snapshot_frequency=100)
    manager.snapshot_now("s")  # nothing to do: no session
    manager.append_messages("s", users("a", "b"))
    manager.snapshot_now("s")
    assert (loose_count(driver), snapshot(driver)) == (0, ["a", "b"])
    manager.snapshot_now("s")
    assert texts(manager.get_history("s")) == ["a", "b"]


def test_appending_a_stored_id_changes_nothing(driver: Any) -> None:
    manager = IncrementalSessionManager(driver, snapshot_frequency=2)
    assert manager.append_messages("s", users("a", "b", "c")) == 3
    before = driver.list_prefix("")
    assert manager.append_message("s", Message.user("again", id="a")) == 0
    assert driver.list_prefix("") == before
    assert manager.append_messages("s", [Message.user("x", id="b"), *users("d")]) == 1
    assert texts(manager.get_history("s")) == ["a", "b", "c", "d"]


def test_state_merges_and_reads_back(driver: Any) -> None:
    manager = IncrementalSessionManager(driver)
    assert manager.get_state("s") == {}
    assert manager.update_state("s", {"mood": "ok", "topic": {"a": 1}}) == {
        "mood": "ok",
        "topic": {"a": 1},
    }
    manager.update_state("s", {"mood": None, "topic": {"b": 2}})
    assert manager.get_state("s") == {"topic": {"a": 1, "b": 2}}
    with pytest.raises(InvalidPatch):
        manager.update_state("s", ["not", "an", "object"])  # type: ignore[arg-type]


def test_a_state_over_the_size_limit_is_refused_and_changes_nothing(driver: Any) -> None:
    """The state lives in the meta entry, which every append rewrites: it was unbounded."""
    manager = IncrementalSessionManager(driver)
    manager.update_state("s", {"small": 1})
    manager.append_message("s", Message.user("a"))
    before = driver.list_prefix("")
    half = "x" * (DEFAULT_MAX_MESSAGE_BYTES // 2)
    with pytest.raises(PayloadTooLarge):
        manager.update_state("s", {"big": half + half})
    manager.update_state("s", {"big": half})
    with pytest.raises(PayloadTooLarge):  # the merged state counts, not the patch
        manager.update_state("s", {"more": half})
    assert manager.get_state("s") == {"small": 1, "big": half}
    manager.update_state("s", {"big": None})
    assert manager.get_state("s") == {"small": 1}
    assert [key for key, _ in driver.list_prefix("")] == [key for key, _ in before]


def test_get_or_create_writes_meta_only_and_returns_everything(driver: Any) -> None:
    manager = IncrementalSessionManager(driver, snapshot_frequency=2)
    created = manager.get_or_create("s", "alice")
    assert (created.session_id, created.user_id, created.messages) == ("s", "alice", [])
    assert [k for k, _ in driver.list_prefix("")] == ["sessions:s:meta"]
    manager.append_messages("s", users("a", "b", "c"))
    manager.update_state("s", {"k": 1})
    again = manager.get_or_create("s", "alice")
    assert (texts(again.messages), again.state, again.user_id) == (
        ["a", "b", "c"],
        {"k": 1},
        "alice",
    )
    assert again.created_at == created.created_at < again.updated_at
    with pytest.raises(AlreadyExists):
        manager.get_or_create("s", "mallory")


def test_delete_session_removes_every_key(driver: Any) -> None:
    manager = IncrementalSessionManager(driver, snapshot_frequency=3)
    manager.append_messages("s", users(*"abcde"))
    manager.update_state("s", {"k": 1})
    manager.append_message("other", Message.user("keep", id="keep"))
    assert manager.delete_session("s") is True
    assert all(
        not k.startswith(("sessions:s:", "session-ids:s:")) for k, _ in driver.list_prefix("")
    )
    assert manager.delete_session("s") is False
    assert manager.get_history("s") == []
    assert texts(manager.get_history("other")) == ["keep"]
    assert manager.append_message("s", Message.user("a", id="a")) == 1  # its id is free again


def test_an_expired_session_reads_as_absent_and_starts_afresh(driver: Any) -> None:
    manager = IncrementalSessionManager(driver, snapshot_frequency=2, ttl=0.2)
    manager.append_messages("s", users("a", "b", "c"))
    manager.update_state("s", {"k": 1})
    assert texts(manager.get_history("s")) == ["a", "b", "c"]
    time.sleep(0.3)
    assert manager.get_history("s") == []
    assert manager.get_state("s") == {}
    assert manager.append_message("s", Message.user("a", id="a")) == 1
    assert texts(manager.get_history("s")) == ["a"]
    assert len(driver.list_prefix("")) == 3  # meta, one loose entry, one id record


@pytest.mark.parametrize(
    "bad",
    [
        [Message.user("ok", id="ok"), Message(role="nobody", parts=[])],  # type: ignore[arg-type]
        [Message.user("x", id="same"), Message.user("y", id="same")],
        [Message.user("ok", id="bad:id")],
        Message.user("not a list"),
        [Message.user("lone \ud800")],
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(driver: Any, bad: Any) -> None:
    manager = IncrementalSessionManager(driver)
    with pytest.raises(InvalidMessage):
        manager.append_messages("s", bad)
    assert driver.list_prefix("") == []


def test_bad_ids_and_settings_are_refused(driver: Any) -> None:
    manager = IncrementalSessionManager(driver)
    for call in (
        lambda: manager.append_message("a:b", Message.user("x")),
        lambda: manager.get_history("../x"),
        lambda: manager.get_or_create("s", "bad:user"),
        lambda: manager.delete_session(""),
    ):
        with pytest.raises(InvalidId):
            call()
    with pytest.raises(InvalidInput):
        manager.get_history("s", 0)
    bad: tuple[dict[str, Any], ...] = (
        {"snapshot_frequency": 0},
        {"snapshot_frequency": None},
        {"snapshot_frequency": 2.5},
        {"max_messages": -1},
        {"ttl": 0},
        {"ttl": float("inf")},  # accepted before, and every write raised ValueError
    )
    for settings in bad:
        with pytest.raises(InvalidInput):
            IncrementalSessionManager(driver, **settings)
    assert driver.list_prefix("") == []


async def test_async_manager(adriver: Any) -> None:
    manager = AsyncIncrementalSessionManager(adriver, snapshot_frequency=2, max_messages=3)
    await manager.append_messages("s", users("a", "b", "c"))
    await manager.append_message("s", Message.user("d", id="d"))
    assert texts(await manager.get_history("s")) == ["a", "b", "c", "d"]
    await manager.snapshot_now("s")  # trims to max_messages
    assert texts(await manager.get_history("s")) == ["b", "c", "d"]
    assert texts(await manager.get_history("s", 2)) == ["c", "d"]
    assert await manager.update_state("s", {"k": 1}) == {"k": 1}
    assert await manager.get_state("s") == {"k": 1}
    session = await manager.get_or_create("s")
    assert texts(session.messages) == ["b", "c", "d"]
    assert await manager.delete_session("s") is True
    assert await adriver.list_prefix("") == []


def test_managers_taking_turns_on_a_session_never_lose_a_write(driver: Any) -> None:
    # Each manager remembers the meta entry it last wrote; the other's writes make that
    # guess stale, which its next commit must notice (and then read and retry).
    one = IncrementalSessionManager(driver, snapshot_frequency=3)
    two = IncrementalSessionManager(driver, snapshot_frequency=3)
    for n in range(10):
        writer = one if n % 2 == 0 else two
        assert writer.append_message("s", Message.user(f"m{n}", id=f"m{n}")) == 1
        if n == 4:
            two.update_state("s", {"k": n})
    one.update_state("s", {"j": 1})
    assert [m.id for m in two.get_history("s")] == [f"m{n}" for n in range(10)]
    assert two.get_state("s") == {"k": 4, "j": 1}
    assert one.append_message("s", Message.user("again", id="m1")) == 0
    two.delete_session("s")
    assert one.append_message("s", Message.user("new", id="m1")) == 1
    assert [m.text for m in one.get_history("s")] == ["new"]
