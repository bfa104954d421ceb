"""History reads that cost what they return: the newest entries, read at one instant."""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from _kv_helpers import CountingDriver, spied_calls
from test_kv_incremental import texts, tool_turn, users

from sessionary import (
    DataPart,
    FilePart,
    InvalidInput,
    Message,
    ReasoningPart,
    StoreError,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from sessionary.kv import (
    AsyncIncrementalSessionManager,
    AsyncScopedDriver,
    IncrementalSessionManager,
    MemoryDriver,
    ScopedDriver,
)
from sessionary.kv._layout import (
    Meta,
    Newest,
    NewestRead,
    SessionKeys,
    history_window,
    message_json,
)
from sessionary.model import load_message, parse_message

NEVER = 10**9  # a snapshot_frequency no test reaches: nothing is rolled up


def read_plan(count: int, chunk_count: int, session: str = "s") -> NewestRead:
    keys = SessionKeys(session)
    return NewestRead(keys.meta, keys.loose, keys.chunks, 12, count, chunk_count)


def fan_out(n: int, calls: int) -> list[Message]:
    """A question, one assistant message making `calls` calls, and their results."""
    parts = [ToolCallPart(id=f"c{n}.{i}", name="look", arguments={}) for i in range(calls)]
    results = [Message.tool(f"c{n}.{i}", i, id=f"r{n}.{i}") for i in range(calls)]
    asked = [Message.user(f"q{n}", id=f"q{n}"), Message.assistant(tool_calls=parts, id=f"a{n}")]
    return asked + results


@pytest.mark.parametrize("frequency", [1, 3, 4, NEVER])
def test_every_window_is_the_window_of_the_whole_history(driver: Any, frequency: int) -> None:
    manager = IncrementalSessionManager(driver, snapshot_frequency=frequency)
    manager.append_messages("s", fan_out(1, 6))
    for n in range(2, 5):
        manager.append_messages("s", tool_turn(n))
    manager.append_messages("s", [*fan_out(5, 3), Message.user("end", id="end")])
    whole = manager.get_history("s")
    assert len(whole) == 2 + 6 + 3 * 3 + 2 + 3 + 1
    for limit in range(1, len(whole) + 2):
        expected = [m.id for m in history_window(whole, limit)]
        assert [m.id for m in manager.get_history("s", limit)] == expected, limit


def test_a_window_widens_past_the_loose_entries_first_read(driver: Any) -> None:
    manager = IncrementalSessionManager(driver, snapshot_frequency=NEVER)
    manager.append_messages("s", users(*"abcdefghij"))
    manager.append_messages("s", fan_out(1, 12))  # a result needs a call 12 entries back
    window = manager.get_history("s", 2)
    assert [m.id for m in window] == ["a1", *(f"r1.{i}" for i in range(12))]


def test_redis_reads_a_window_in_one_script(driver: Any, kind: str) -> None:
    if kind != "redis":
        pytest.skip("only the Redis driver reads the newest entries on its side")
    manager = IncrementalSessionManager(driver, snapshot_frequency=25)
    manager.append_messages("s", [Message.user(f"m{i}") for i in range(1000)])
    manager.append_messages("s", [Message.user(f"n{i}") for i in range(7)])
    calls = spied_calls(driver, ("read_newest", "get", "list_prefix"))
    expected = [f"m{i}" for i in range(987, 1000)] + [f"n{i}" for i in range(7)]
    assert texts(manager.get_history("s", 20)) == expected
    assert calls == {"read_newest": 1, "get": 0, "list_prefix": 0}


def test_redis_reads_no_loose_entry_a_window_does_not_need(driver: Any, kind: str) -> None:
    if kind != "redis":
        pytest.skip("only the Redis driver reads the newest entries on its side")
    manager = IncrementalSessionManager(driver, snapshot_frequency=NEVER)
    for start in range(0, 3000, 1000):
        manager.append_messages("s", [Message.user(f"m{i}") for i in range(start, start + 1000)])
    found = driver.read_newest(read_plan(5, 1))
    assert [m["parts"][0]["text"] for m in json.loads(found.loose)] == [
        f"m{i}" for i in range(2995, 3000)
    ]
    assert (found.more, found.chunks) == (True, [])
    calls = spied_calls(driver, ("read_newest", "get", "list_prefix"))
    assert texts(manager.get_history("s", 5)) == [f"m{i}" for i in range(2995, 3000)]
    assert calls == {"read_newest": 1, "get": 0, "list_prefix": 0}


def test_redis_reads_the_newest_chunks_only_with_every_loose_entry(driver: Any, kind: str) -> None:
    if kind != "redis":
        pytest.skip("only the Redis driver reads the newest entries on its side")
    manager = IncrementalSessionManager(driver, snapshot_frequency=2)
    manager.append_messages("s", users(*"abcdefgh"))  # chunks [ab] [cd] [ef] [gh]
    manager.append_message("s", Message.user("i", id="i"))  # loose
    found = driver.read_newest(read_plan(3, 2))
    assert found.meta_text == driver.get("sessions:s:meta")
    assert [m["id"] for m in json.loads(found.loose)] == ["i"]
    assert found.more is False
    assert [[m["id"] for m in json.loads(text)] for text in found.chunks] == [
        ["g", "h"],
        ["e", "f"],
    ]
    assert driver.read_newest(read_plan(1, 2)) == Newest(
        found.meta_text, found.loose, False, found.chunks
    )
    assert driver.read_newest(read_plan(3, 9)).chunks == [
        driver.get(f"sessions:s:chunk:{n:012d}") for n in (3, 2, 1, 0)
    ]
    manager.append_message("s", Message.user("j", id="j"))  # rolls up: [ij]
    manager.append_message("s", Message.user("k", id="k"))
    found = driver.read_newest(read_plan(0, 2))
    assert (found.loose, found.more, found.chunks) == ("[]", True, [])
    assert driver.read_newest(read_plan(2, 2, session="nobody")) == Newest(None, "[]", False, [])


def test_a_trimmed_session_reads_from_its_first_live_chunk(driver: Any) -> None:
    manager = IncrementalSessionManager(driver, snapshot_frequency=3, max_messages=5)
    for name in "abcdefghijk":
        manager.append_message("s", Message.user(name, id=name))
    whole = texts(manager.get_history("s"))
    for limit in range(1, 9):
        assert texts(manager.get_history("s", limit)) == whole[-limit:]


def test_tenants_read_only_their_own_newest_entries(driver: Any) -> None:
    acme = IncrementalSessionManager(ScopedDriver(driver, "acme"), snapshot_frequency=2)
    initech = IncrementalSessionManager(ScopedDriver(driver, "acme:x"), snapshot_frequency=2)
    acme.append_messages("s", users(*"abcde"))
    initech.append_messages("s", [Message.user(f"x{n}", id=f"x{n}") for n in range(3)])
    for _ in range(2):  # the second read guesses by the first's meta entry
        assert texts(acme.get_history("s", 4)) == list("bcde")
        assert texts(initech.get_history("s", 4)) == ["x0", "x1", "x2"]


def test_a_driver_without_a_newest_read_lists_the_loose_entries() -> None:
    driver = CountingDriver(MemoryDriver())
    manager = IncrementalSessionManager(driver, snapshot_frequency=NEVER)
    manager.append_messages("s", users(*"abcdef"))
    driver.reset()
    assert texts(manager.get_history("s", 2)) == ["e", "f"]
    assert (driver.calls["list"], driver.calls["get"]) == (1, 0)


async def test_the_async_manager_reads_the_newest_entries(adriver: Any) -> None:
    manager = AsyncIncrementalSessionManager(
        AsyncScopedDriver(adriver, "acme"), snapshot_frequency=4
    )
    await manager.append_messages("s", fan_out(1, 5))
    await manager.append_messages("s", users(*"xy"))
    whole = await manager.get_history("s")
    assert len(whole) == 9
    for limit in (1, 2, 3, 8):
        expected = [m.id for m in history_window(whole, limit)]
        assert [m.id for m in await manager.get_history("s", limit)] == expected
    assert [m.id for m in await manager.get_history("s", 3)] == [
        "a1",
        *(f"r1.{i}" for i in range(5)),
        "x",
        "y",
    ]


@pytest.mark.parametrize(
    "stored",
    [
        "not json",
        "[]",
        '{"role":"user","parts":[],"created_at":"2026-01-01T00:00:00+00:00"}',
        '{"id":"x","role":"user","parts":[{"type":"nope"}],"created_at":"2026-01-01"}',
        '{"id":"x","role":"user","parts":[],"created_at":"yesterday"}',
        '{"id":"x","role":"user"}',
    ],
)
def test_a_corrupt_stored_message_is_a_store_error(driver: Any, stored: str) -> None:
    manager = IncrementalSessionManager(driver, snapshot_frequency=NEVER)
    manager.append_messages("s", users(*"ab"))
    driver.put(SessionKeys("s").message(1), stored)
    for limit in (1, None):
        with pytest.raises(StoreError, match="corrupt"):
            manager.get_history("s", limit)


def stored_shapes() -> list[Message]:
    """Messages of every shape a store writes: each part type, extras, metadata, parents."""
    call = ToolCallPart(id="c1", name="look", arguments={"q": [1, None]}, extra={"x": 1})
    return [
        Message.user("plain", id="m1"),
        Message.user("child", id="m2", parent_id="m1", metadata={"k": {"n": [1]}}),
        Message("assistant", [ReasoningPart("hm", signature="s"), call], id="m3"),
        Message("tool", [ToolResultPart("c1", None, is_error=True, name="look")], id="m4"),
        Message("tool", [ToolResultPart("c1", {"ok": 1}), DataPart({"d": 2})], id="m5"),
        Message("user", [FilePart("image/png", url="https://x/y.png"), TextPart("t")], id="m6"),
        Message("system", [TextPart("s", extra={"cache": "on"})], id="m7", extra={"v": 2}),
        Message("assistant", [FilePart("text/plain", data="aGk=", filename="a.txt")], id="m8"),
    ]


@pytest.mark.parametrize("message", stored_shapes(), ids=lambda m: m.id)
def test_a_stored_message_loads_as_it_parses(message: Message) -> None:
    text = message_json(message)
    loaded = load_message(json.loads(text))
    assert loaded == parse_message(json.loads(text)) == message
    assert loaded.parent_id == message.parent_id
    assert message_json(loaded) == text
    naive = json.loads(text)
    naive["created_at"] = "2026-01-02T03:04:05"
    assert load_message(naive).created_at == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert load_message({**json.loads(text), "content": "x"}) == parse_message(
        {**json.loads(text), "content": "x"}
    )


def redis_only(kind: str) -> None:
    if kind != "redis":
        pytest.skip("only the Redis driver reads several values at one instant")


def test_a_read_by_the_meta_entry_seen_last_runs_no_script(driver: Any, kind: str) -> None:
    redis_only(kind)
    manager = IncrementalSessionManager(driver, snapshot_frequency=4)
    manager.append_messages("s", users(*"abcdefghij"))  # chunks [abcd] [efgh] [ij]
    manager.append_message("s", Message.user("k", id="k"))  # loose
    assert texts(manager.get_history("s", 3)) == list("ijk")
    calls = spied_calls(driver, ("read_newest", "get_many", "get", "list_prefix"))
    for limit, expected in ((3, "ijk"), (1, "k"), (6, "fghijk"), (None, "abcdefghijk")):
        assert texts(manager.get_history("s", limit)) == list(expected)
    assert calls == {"read_newest": 0, "get_many": 3, "get": 0, "list_prefix": 1}


def test_a_wrong_guess_reads_again_by_script(driver: Any, kind: str) -> None:
    redis_only(kind)
    reader = IncrementalSessionManager(driver, snapshot_frequency=3)
    writer = IncrementalSessionManager(driver, snapshot_frequency=3)
    writer.append_messages("s", users(*"ab"))
    assert texts(reader.get_history("s", 2)) == list("ab")
    calls = spied_calls(driver, ("read_newest", "get_many"))
    for end, name in enumerate("cdefg", 3):  # rolls up twice, in the append script
        writer.append_message("s", Message.user(name, id=name))
        assert texts(reader.get_history("s", 4)) == list("abcdefg"[:end][-4:])
    assert calls == {"read_newest": 5, "get_many": 5}
    writer.update_state("s", {"k": 1})  # changes only the meta entry
    assert texts(reader.get_history("s", 2)) == list("fg")
    assert calls == {"read_newest": 6, "get_many": 6}


def test_a_guess_never_hides_a_loose_entry_it_does_not_name(driver: Any, kind: str) -> None:
    redis_only(kind)
    manager = IncrementalSessionManager(driver, snapshot_frequency=NEVER)
    manager.append_messages("s", users(*"abc"))
    assert texts(manager.get_history("s", 5)) == list("abc")
    # An entry the meta entry does not count (it never is, but a guess must not hide it).
    keys = SessionKeys("s")
    stray = driver.get(keys.message(0))
    meta = Meta.decode(driver.get(keys.meta))
    assert meta is not None
    driver.put(keys.meta, replace(meta, since_snapshot=2).encode())
    manager.get_history("s", 5)  # remembers the changed meta entry
    calls = spied_calls(driver, ("read_newest", "get_many"))
    assert texts(manager.get_history("s", 5)) == list("abc")
    assert calls == {"read_newest": 1, "get_many": 1}
    assert driver.get(keys.message(0)) == stray


def test_a_remembered_session_that_expires_reads_empty(driver: Any, kind: str) -> None:
    redis_only(kind)
    manager = IncrementalSessionManager(driver, snapshot_frequency=3, ttl=0.3)
    manager.append_messages("s", users(*"abcd"))
    assert texts(manager.get_history("s", 2)) == list("cd")
    time.sleep(0.4)
    assert manager.get_history("s", 2) == []


def test_redis_reads_several_values_at_one_instant(driver: Any, kind: str) -> None:
    redis_only(kind)
    driver.put("a", "1")
    driver.put("c", "3")
    assert driver.get_many(["c", "b", "a", "c"]) == ["3", None, "1", "3"]
    scoped = ScopedDriver(driver, "acme")
    scoped.put("a", "x")
    assert scoped.get_many(["a", "c"]) == ["x", None]
    assert ScopedDriver(MemoryDriver(), "acme").get_many(["a"]) is None
    for bad in ["", "\ud800", 3]:
        with pytest.raises(InvalidInput):
            driver.get_many(["a", bad])


def test_a_remembered_entry_cannot_be_torn_by_another_thread(driver: Any, kind: str) -> None:
    # What a manager remembers is replaced whole, never changed field by field, so a
    # reader in another thread never sees one write's meta entry with another's (see
    # test_kv_threads for the appends this once lost).
    redis_only(kind)
    manager = IncrementalSessionManager(driver, snapshot_frequency=3)
    manager.append_messages("s", users(*"abcd"))
    assert texts(manager.get_history("s", 2)) == list("cd")
    known = manager._known["s"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        known.meta = replace(known.meta, version=known.meta.version - 1)  # type: ignore[misc]
    calls = spied_calls(driver, ("read_newest", "get_many"))
    assert texts(manager.get_history("s", 2)) == list("cd")
    assert calls == {"read_newest": 0, "get_many": 1}
