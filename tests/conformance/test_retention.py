"""Retention: sessions with a TTL vanish from every read when they expire, and the sweeper
deletes them with everything they own. Time is a fake clock given to the store: no sleeps.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from _raw_dump import raw_dump

import sessionary
from sessionary import InvalidInput, SessionNotFound


class FakeClock:
    """A clock that stands still until a test moves it."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def timed(store_url: str, clock: FakeClock) -> Iterator[sessionary.SessionManager]:
    """A manager whose store runs on the fake clock."""
    with sessionary.SessionManager(store_url, clock=clock) as manager:
        yield manager


def _reads(manager: sessionary.SessionManager, session_id: str) -> dict[str, object]:
    """What every read says about a session (SessionNotFound as a string)."""
    out: dict[str, object] = {
        "get": manager.get(session_id) is not None,
        "list": session_id in [info.id for info in manager.list()],
    }
    if "search" in manager.store.capabilities:
        out["search"] = any(hit.session_id == session_id for hit in manager.search("kiwi"))
    session = manager.session(session_id)
    for name, read in [
        ("history", lambda: len(session.history())),
        ("count", session.message_count),
        ("state", lambda: session.get_state().data),
        ("usage", lambda: manager.add_usage(session_id, 1).input_tokens),
    ]:
        try:
            out[name] = read()
        except SessionNotFound:
            out[name] = "gone"
    return out


def _fill(manager: sessionary.SessionManager, session_id: str, **fields: object) -> None:
    session = manager.create(id=session_id, **fields)  # type: ignore[arg-type]
    session.append({"role": "user", "content": f"kiwi {session_id}x"})
    session.update_state({"k": f"{session_id}x"})


def test_a_fixed_ttl_hides_the_session_from_every_read_at_once(
    timed: sessionary.SessionManager, clock: FakeClock
) -> None:
    _fill(timed, "short", ttl=100, ttl_sliding=False)
    _fill(timed, "kept")
    live = _reads(timed, "short")
    assert live["get"] and live["list"] and live["history"] == 1 and live.get("search", True)
    clock.advance(60)
    timed.session("short").append({"role": "user", "content": "activity does not extend it"})
    clock.advance(41)
    gone = _reads(timed, "short")
    assert gone["get"] is False and gone["list"] is False and gone.get("search") in (None, False)
    assert {gone[k] for k in ("history", "count", "state", "usage")} == {"gone"}
    assert _reads(timed, "kept")["history"] == 1


def test_a_sliding_ttl_counts_from_the_last_activity(
    timed: sessionary.SessionManager, clock: FakeClock
) -> None:
    _fill(timed, "chat", ttl=100)
    info = timed.get("chat")
    assert info is not None and info.ttl == 100 and info.ttl_sliding
    assert info.expires_at == info.updated_at + timedelta(seconds=100)  # type: ignore[operator]
    clock.advance(60)
    timed.session("chat").append({"role": "user", "content": "still here"})
    clock.advance(60)  # 120 s since creation, 60 since the last activity
    assert timed.get("chat") is not None
    clock.advance(41)
    assert timed.get("chat") is None
    with pytest.raises(SessionNotFound):
        timed.session("chat").history()


def test_a_write_to_an_expired_session_is_refused(
    timed: sessionary.SessionManager, clock: FakeClock
) -> None:
    _fill(timed, "chat", ttl=10)
    chat = timed.session("chat")
    first = chat.append({"role": "assistant", "content": "kept"})
    kept = [m.id for m in chat.history()]
    clock.advance(11)
    later = {"role": "user", "content": "too late", "id": "late"}
    edited = {"role": "assistant", "content": "edited", "id": first.id}
    writes = {
        "append": lambda: timed.append("chat", later),
        "append_all": lambda: chat.append_all([later]),
        "upsert": lambda: chat.upsert(edited),
        "update": lambda: chat.update(edited),
        "delete": lambda: chat.delete(first.id),
        "delete_messages": lambda: chat.delete_messages([first.id]),
        "checkout": lambda: chat.checkout(None),
        "clear": chat.clear,
        "state": lambda: chat.update_state({"k": "changed"}),
        "compaction": lambda: chat.add_compaction("summary", kept[0], kept[-1]),
        "set_ttl": lambda: timed.set_ttl("chat", 1000),
        "rename": lambda: timed.rename("chat", "renamed"),
        "end": lambda: timed.end("chat"),
        "usage": lambda: timed.add_usage("chat", 1),
    }
    for name, write in writes.items():
        with pytest.raises(SessionNotFound):
            write()
            pytest.fail(f"{name} wrote to an expired session")
        assert timed.get("chat") is None, name  # nothing brought it back
    clock.advance(-11)  # had any write landed, it would show now
    assert [m.id for m in chat.history()] == kept
    assert chat.get_message(first.id) == first
    assert chat.get_state().data == {"k": "chatx"}
    info = timed.get("chat")
    assert info is not None and info.name is None and info.ended_at is None and info.ttl == 10


def test_set_ttl_gives_changes_and_removes_a_ttl(
    timed: sessionary.SessionManager, clock: FakeClock
) -> None:
    _fill(timed, "chat")
    assert timed.get("chat").ttl is None  # type: ignore[union-attr]
    assert timed.set_ttl("chat", 50, sliding=False).ttl == 50
    clock.advance(40)
    info = timed.set_ttl("chat", None)
    assert info.ttl is None
    clock.advance(1000)
    assert timed.get("chat") is not None
    timed.set_ttl("chat", 30, sliding=False)  # created 1040 s ago: expired at once
    assert timed.get("chat") is None
    with pytest.raises(SessionNotFound):
        timed.set_ttl("missing", 10)


def test_the_managers_ttl_applies_to_the_sessions_it_creates(
    store_url: str, clock: FakeClock
) -> None:
    with sessionary.SessionManager(store_url, clock=clock, ttl=60, ttl_sliding=False) as mgr:
        mgr.create(id="a")
        mgr.create(id="b", ttl=600)
        other = mgr.for_user("other")
        other.create(id="c")
        assert other.get("c").ttl == 60  # type: ignore[union-attr]
        # a manager for another actor keeps the TTL too (and its kind)
        mgr.as_actor("bob").create(id="d")
        assert (mgr.get("d").ttl, mgr.get("d").ttl_sliding) == (60, False)  # type: ignore[union-attr]
        clock.advance(61)
        assert [info.id for info in mgr.list()] == ["b"]
        assert other.list().items == []


def test_a_ttl_is_kept_in_whole_microseconds_on_every_store(
    timed: sessionary.SessionManager, clock: FakeClock
) -> None:
    assert timed.create(id="tiny", ttl=1e-9).info().ttl == 1e-6  # at least 1 µs
    assert timed.create(id="odd", ttl=2.0000004).info().ttl == 2.0
    timed.create(id="set")
    assert timed.set_ttl("set", 1e-9).ttl == 1e-6
    # what it reports is what it expires by: alive now, gone 1 µs later
    assert sorted(info.id for info in timed.list()) == ["odd", "set", "tiny"]
    clock.advance(1e-6)
    assert [info.id for info in timed.list()] == ["odd"]


def test_the_sweeper_deletes_expired_sessions_with_all_they_own(
    timed: sessionary.SessionManager, clock: FakeClock, store_url: str
) -> None:
    for n in range(5):
        _fill(timed, f"old{n}", ttl=10)
        if "documents" in timed.store.capabilities:
            session = timed.session(f"old{n}")
            first = session.history()[0]
            session.add_compaction(f"summary old{n}x", first.id, first.id)
    _fill(timed, "young", ttl=1000)
    _fill(timed, "forever")
    assert [row for row in raw_dump(store_url, timed) if "old3x" in row]
    clock.advance(11)

    assert timed.sweep(batch_size=2) == 5
    assert timed.sweep() == 0

    # SQLite's FTS5 drops deleted words from its segments when it next merges them
    # (erasure merges at once); what it indexes is gone, so no search finds them.
    rows = [
        row
        for row in raw_dump(store_url, timed)
        if not row.startswith(("documents_fts_", "sessionary_migrations"))
    ]
    assert [row for row in rows if "old" in row and not row.startswith("messages_fts_")] == []
    assert sorted(info.id for info in timed.list()) == ["forever", "young"]
    assert len(timed.history("young")) == 1


def test_sweep_stops_at_its_limit_and_the_next_one_carries_on(
    timed: sessionary.SessionManager, clock: FakeClock
) -> None:
    for n in range(4):
        timed.create(id=f"s{n}", ttl=5)
    clock.advance(6)
    assert timed.sweep(batch_size=1, limit=3) == 3
    assert timed.sweep() == 1


def test_sweepers_running_at_once_delete_each_session_once(
    store_url: str, clock: FakeClock
) -> None:
    managers = [sessionary.SessionManager(store_url, clock=clock)]
    if store_url != "memory://":
        managers.append(sessionary.SessionManager(store_url, clock=clock))
    try:
        for n in range(30):
            managers[0].create(id=f"s{n}", ttl=5)
        clock.advance(6)
        counts: list[int] = []
        threads = [
            threading.Thread(target=lambda m=m: counts.append(m.sweep(batch_size=4)))
            for m in managers * 2
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sum(counts) == 30
        assert managers[0].list().items == []
    finally:
        for manager in managers:
            manager.close()


@pytest.mark.parametrize("ttl", [0, -1, float("inf"), float("nan"), "10", True])
def test_a_bad_ttl_is_refused_and_changes_nothing(
    timed: sessionary.SessionManager, ttl: object
) -> None:
    with pytest.raises(InvalidInput):
        timed.create(id="x", ttl=ttl)  # type: ignore[arg-type]
    assert timed.get("x") is None
    timed.create(id="y")
    with pytest.raises(InvalidInput):
        timed.set_ttl("y", ttl)  # type: ignore[arg-type]
    assert timed.get("y").ttl is None  # type: ignore[union-attr]
    with pytest.raises(InvalidInput):
        timed.create(id="z", ttl_sliding="yes")  # type: ignore[arg-type]


def test_a_clock_needs_a_store_url(manager: sessionary.SessionManager) -> None:
    with pytest.raises(InvalidInput):
        sessionary.SessionManager(manager.store, clock=FakeClock())


async def test_retention_async(store_url: str, clock: FakeClock) -> None:
    async with sessionary.AsyncSessionManager(store_url, clock=clock) as manager:
        await manager.create(id="a", ttl=10)
        await manager.set_ttl("a", 20, sliding=False)
        clock.advance(15)
        assert await manager.get("a") is not None
        clock.advance(6)
        assert await manager.get("a") is None
        assert await manager.sweep() == 1
