"""The chunked snapshot: boundaries, windows across chunks, trims, crashes, old data, races."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

import pytest
from _kv_helpers import CountingDriver, spied_calls
from test_kv_incremental import snapshot, texts, tool_turn, users

from sessionary import Message
from sessionary.kv import IncrementalSessionManager, MemoryDriver, ScopedDriver
from sessionary.kv._layout import SessionKeys


def chunk_keys(driver: Any, session: str = "s") -> list[str]:
    return [key for key, _ in driver.list_prefix(f"sessions:{session}:chunk:")]


def chunk_key(number: int, session: str = "s") -> str:
    return f"sessions:{session}:chunk:{number:012d}"


def test_a_roll_up_writes_new_chunks_of_at_most_n_and_never_rewrites_one(driver: Any) -> None:
    manager = IncrementalSessionManager(driver, snapshot_frequency=3)
    manager.append_messages("s", users(*"abc"))
    first = driver.get(chunk_key(0))
    manager.append_messages("s", users(*"defgh"))  # one roll-up: chunks of 3 and 2
    manager.append_message("s", Message.user("i", id="i"))
    assert chunk_keys(driver) == [chunk_key(0), chunk_key(1), chunk_key(2)]
    assert driver.get(chunk_key(0)) == first
    assert [m["id"] for m in json.loads(driver.get(chunk_key(1)))] == list("def")
    assert [m["id"] for m in json.loads(driver.get(chunk_key(2)))] == list("gh")
    assert snapshot(driver) == list("abcdefgh")
    assert texts(manager.get_history("s")) == list("abcdefghi")


def test_a_large_batch_keeps_short_reads_short() -> None:
    driver = CountingDriver(MemoryDriver())
    manager = IncrementalSessionManager(driver, snapshot_frequency=25)
    manager.append_messages("s", [Message.user(f"m{i}") for i in range(1000)])
    driver.reset()
    assert texts(manager.get_history("s", 20)) == [f"m{i}" for i in range(980, 1000)]
    assert driver.entries_read == 2  # the meta entry and one chunk of 25


def test_every_limit_reads_the_right_window_across_chunk_boundaries(driver: Any) -> None:
    manager = IncrementalSessionManager(driver, snapshot_frequency=3)
    names = [f"m{i}" for i in range(11)]
    for name in names:  # chunks of 3, 3, 3, then 2 loose entries
        manager.append_message("s", Message.user(name, id=name))
    for limit in range(1, 14):
        assert texts(manager.get_history("s", limit)) == names[-limit:]
    assert texts(manager.get_history("s")) == names


def test_a_window_widens_across_chunks_to_keep_a_call_with_its_result(driver: Any) -> None:
    manager = IncrementalSessionManager(driver, snapshot_frequency=2)
    question, call, result = tool_turn(1)
    manager.append_messages("s", [question, call])  # chunk 0 ends on the call
    manager.append_messages("s", [result, Message.user("bye", id="bye")])  # chunk 1
    manager.append_message("s", Message.user("more", id="more"))  # loose
    assert [m.id for m in manager.get_history("s", 3)] == ["a1", "t1", "bye", "more"]
    assert [m.id for m in manager.get_history("s", 2)] == ["bye", "more"]


def test_a_short_read_gets_only_the_newest_chunks() -> None:
    driver = CountingDriver(MemoryDriver())
    manager = IncrementalSessionManager(driver, snapshot_frequency=10)
    for start in range(0, 200, 10):
        manager.append_messages("s", [Message.user(f"m{start + i}") for i in range(10)])
    driver.reset()
    assert texts(manager.get_history("s", 15)) == [f"m{i}" for i in range(185, 200)]
    assert (driver.calls["list"], driver.calls["get"]) == (1, 2)


def test_a_trim_deletes_whole_chunks_and_cuts_into_the_first(driver: Any) -> None:
    manager = IncrementalSessionManager(driver, snapshot_frequency=3, max_messages=5)
    names = [f"m{i}" for i in range(12)]
    for name in names:
        manager.append_message("s", Message.user(name, id=name))
    # Each roll-up keeps the newest 5: chunks 0 and 1 are gone, chunk 2 is cut by 1.
    assert chunk_keys(driver) == [chunk_key(2), chunk_key(3)]
    assert json.loads(driver.get("sessions:s:meta"))["skip"] == 1
    assert snapshot(driver) == names[-5:]
    assert texts(manager.get_history("s")) == names[-5:]
    for limit in range(1, 7):
        assert texts(manager.get_history("s", limit)) == names[-5:][-limit:]


def test_a_trim_drops_a_tool_result_cut_from_its_call_across_chunks(driver: Any) -> None:
    manager = IncrementalSessionManager(driver, snapshot_frequency=3, max_messages=4)
    manager.append_messages("s", tool_turn(1))  # chunk 0: q1 a1 t1
    manager.append_messages("s", tool_turn(2))  # the newest 4 start at t1: it goes too
    assert chunk_keys(driver) == [chunk_key(1)]
    assert snapshot(driver) == ["q2", "a2", "t2"]
    assert [m.id for m in manager.get_history("s", 1)] == ["a2", "t2"]


def test_a_trim_smaller_than_a_batch_cuts_into_the_new_chunk(driver: Any) -> None:
    manager = IncrementalSessionManager(driver, snapshot_frequency=2, max_messages=3)
    manager.append_messages("s", users(*"abcdefg"))  # chunks ab, cd, ef, g: two wholly cut
    assert chunk_keys(driver) == [chunk_key(2), chunk_key(3)]
    assert snapshot(driver) == list("efg")
    assert json.loads(driver.get("sessions:s:meta"))["count"] == 3


class CrashingDriver:
    """Dies (raises) in the roll-up's commit, after writing the chunk on its own.

    That is what a writer that stored the chunk and the meta entry in two steps would
    leave behind if it crashed in between: a chunk the meta entry does not name.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.armed = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def commit(self, expect: Mapping[str, str | None], writes: Mapping[str, str | None]) -> bool:
        chunks = [k for k, v in writes.items() if ":chunk:" in k and v is not None]
        if self.armed and chunks:
            self.inner.put(chunks[0], "not even JSON")
            raise SystemExit("the writer died")
        return bool(self.inner.commit(expect, writes))

    def roll_up_commit(
        self, roll: Any, expect: Mapping[str, str | None], writes: Mapping[str, str | None]
    ) -> bool | None:
        if not hasattr(self.inner, "roll_up_commit"):
            return None
        chunks = [k for k, v in writes.items() if ":chunk:" in k and v is not None]
        if self.armed and chunks:
            self.inner.put(chunks[0], "not even JSON")
            raise SystemExit("the writer died")
        return bool(self.inner.roll_up_commit(roll, expect, writes))


def test_a_crash_between_chunk_and_meta_shows_readers_no_half_roll_up(driver: Any) -> None:
    # A trim (here never reached) keeps the roll-up in the client on every driver: with
    # nothing to trim, the Redis append script rolls up itself, with no "between".
    manager = IncrementalSessionManager(driver, snapshot_frequency=3, max_messages=100)
    manager.append_messages("s", users(*"abc"))  # chunk 0
    crashing = IncrementalSessionManager(
        CrashingDriver(driver), snapshot_frequency=3, max_messages=100
    )
    crashing.append_messages("s", users("d", "e"))
    with pytest.raises(SystemExit):
        crashing.append_message("s", Message.user("f", id="f"))  # appended; roll-up dies
    assert driver.get(chunk_key(1)) == "not even JSON"  # the stray chunk is there...
    for limit in (None, 1, 3, 4, 6):  # ...and no reader looks at it
        assert texts(manager.get_history("s", limit)) == list("abcdef")[-(limit or 6) :]
    assert manager.get_or_create("s").messages == manager.get_history("s")
    # A driver-side append lets one writer claim a roll-up; the dead writer's claim
    # lapses (after seconds), as deleting it here does at once.
    driver.delete(SessionKeys("s").lock)
    manager.append_message("s", Message.user("g", id="g"))  # the next roll-up replaces it
    assert [m["id"] for m in json.loads(driver.get(chunk_key(1)))] == list("def")
    assert [m["id"] for m in json.loads(driver.get(chunk_key(2)))] == ["g"]
    assert texts(manager.get_history("s")) == list("abcdefg")


def write_old_layout(driver: Any, rolled: list[Message], loose: list[Message]) -> None:
    """Store a session as the manager did before chunks: one `snapshot` entry."""
    meta = {"created_at": 1.0, "updated_at": 1.0, "user_id": None, "state": {"k": 1}}
    count = len(rolled) + len(loose)
    meta.update(version=3, next_seq=count, since_snapshot=len(loose), count=count)
    driver.put("sessions:s:snapshot", json.dumps([m.to_dict() for m in rolled]))
    for seq, message in enumerate([*rolled, *loose]):
        driver.put(f"session-ids:s:{message.id}", str(seq))
        if seq >= len(rolled):
            driver.put(f"sessions:s:msg:{seq:012d}", json.dumps(message.to_dict()))
    driver.put("sessions:s:meta", json.dumps(meta))


def test_old_layout_data_reads_as_is_and_moves_to_chunks_on_its_next_write(driver: Any) -> None:
    write_old_layout(driver, users(*"abcd"), users("e"))
    manager = IncrementalSessionManager(driver, snapshot_frequency=3)
    assert texts(manager.get_history("s")) == list("abcde")
    assert texts(manager.get_history("s", 2)) == ["d", "e"]
    assert manager.append_message("s", Message.user("a", id="a")) == 0  # ids still known
    manager.append_message("s", Message.user("f", id="f"))
    assert driver.get("sessions:s:snapshot") is None
    assert chunk_keys(driver) == [chunk_key(0)]
    assert texts(manager.get_history("s", 3)) == list("def")
    manager.append_message("s", Message.user("g", id="g"))  # a roll-up: chunk 1
    assert snapshot(driver) == list("abcdefg")
    assert (manager.get_state("s"), texts(manager.get_history("s"))) == ({"k": 1}, list("abcdefg"))


def test_old_layout_data_moves_in_a_trimming_roll_up(driver: Any) -> None:
    write_old_layout(driver, users(*"abcd"), users(*"ef"))
    manager = IncrementalSessionManager(driver, snapshot_frequency=3, max_messages=3)
    manager.snapshot_now("s")
    assert driver.get("sessions:s:snapshot") is None
    assert snapshot(driver) == list("def")
    assert texts(manager.get_history("s", 2)) == ["e", "f"]


def test_old_layout_state_update_moves_it_too(driver: Any) -> None:
    write_old_layout(driver, users(*"ab"), [])
    manager = IncrementalSessionManager(driver)
    manager.update_state("s", {"x": 2})
    assert driver.get("sessions:s:snapshot") is None
    assert texts(manager.get_history("s", 1)) == ["b"]


@pytest.mark.parametrize("settings", [{}, {"max_messages": 12}])
def test_concurrent_writers_and_readers_through_one_driver(
    driver: Any, settings: dict[str, int]
) -> None:
    manager = IncrementalSessionManager(driver, snapshot_frequency=3, **settings)
    writers, batches = 4, 12
    problems: list[str] = []
    done = threading.Event()

    def write(w: int) -> None:
        for b in range(batches):
            size = 1 + (b % 2)
            manager.append_messages("s", [Message.user(f"{w}.{b}.{i}") for i in range(size)])
            if b % 5 == 4:
                manager.snapshot_now("s")

    def read() -> None:
        while not done.is_set():
            for limit in (None, 5):
                found = texts(manager.get_history("s", limit))
                problems.extend(batch_problems(found, whole=limit is None and not settings))

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    reader = threading.Thread(target=read)
    reader.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    reader.join()
    manager.snapshot_now("s")  # a trim only happens in a roll-up
    final = texts(manager.get_history("s"))
    assert problems == []
    assert batch_problems(final, whole=not settings) == []
    total = writers * sum(1 + (b % 2) for b in range(batches))
    assert len(final) == (total if not settings else 12)


def batch_problems(found: list[str], whole: bool) -> list[str]:
    """What is wrong with a read: batches split or out of order, a writer's order broken.

    A window may start inside a batch (the window's or the trim's cut) but nowhere else
    may one be split. With `whole`, the read must also start at each writer's first batch.
    """
    problems = []
    parsed = [tuple(int(x) for x in text.split(".")) for text in found]
    last: dict[int, tuple[int, int]] = {}
    for index, (w, b, i) in enumerate(parsed):
        if index > 0 and i > 0 and parsed[index - 1] != (w, b, i - 1):
            problems.append(f"batch {w}.{b} split at {index}: {found}")
        if w in last and last[w] >= (b, i):
            problems.append(f"writer {w} out of order at {index}: {found}")
        if whole and w not in last and (b, i) != (0, 0):
            problems.append(f"writer {w} starts at {b}.{i}: {found}")
        last[w] = (b, i)
    return problems


def stored_chunks(driver: Any, session: str = "s") -> list[str]:
    """The ids of each stored chunk's messages, joined."""
    entries = driver.list_prefix(f"sessions:{session}:chunk:")
    return ["".join(m["id"] for m in json.loads(text)) for _, text in entries]


def test_a_due_roll_up_leaves_the_same_chunks_on_every_driver(driver: Any) -> None:
    reference = MemoryDriver()
    for where in (driver, reference):
        manager = IncrementalSessionManager(where, snapshot_frequency=3, ttl=3600)
        manager.append_messages("s", users(*"ab"))
        manager.append_messages("s", users(*"cdefgh"))  # rolls [abc] [def] [gh]
        for name in "ijkl":  # rolls [ijk] when k comes
            manager.append_message("s", Message.user(name, id=name))
    assert stored_chunks(driver) == stored_chunks(reference) == ["abc", "def", "gh", "ijk"]
    assert [key for key, _ in driver.list_prefix("sessions:s:msg:")] == [
        SessionKeys("s").message(11)
    ]
    meta = json.loads(driver.get("sessions:s:meta"))
    expected = json.loads(reference.get("sessions:s:meta"))
    for field in ("layout", "next_seq", "since_snapshot", "count", "first_chunk", "next_chunk"):
        assert meta[field] == expected[field], field
    assert meta["expires_at"] > meta["updated_at"]
    manager = IncrementalSessionManager(driver, snapshot_frequency=3)
    assert texts(manager.get_history("s")) == list("abcdefghijkl")
    assert texts(manager.get_history("s", 2)) == list("kl")


def test_redis_rolls_a_due_roll_up_into_the_append(driver: Any, kind: str) -> None:
    if kind != "redis":
        pytest.skip("only the Redis driver appends on its side")
    manager = IncrementalSessionManager(ScopedDriver(driver, "acme"), snapshot_frequency=3)
    calls = spied_calls(driver, ("append_loose", "roll_up_commit", "commit", "list_prefix"))
    manager.append_messages("s", users(*"ab"))  # creates the session: a commit
    for name in "cdefg":
        manager.append_message("s", Message.user(name, id=name))
    assert calls == {"append_loose": 6, "roll_up_commit": 0, "commit": 1, "list_prefix": 0}
    chunks = driver.list_prefix(ScopedDriver(driver, "acme").prefix + "sessions:s:chunk:")
    assert ["".join(m["id"] for m in json.loads(text)) for _, text in chunks] == ["abc", "def"]
    assert texts(manager.get_history("s")) == list("abcdefg")
