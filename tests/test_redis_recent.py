"""The Redis store's predicted read of `history(limit=N)` (`stores/_redis_recent`).

A reader learns a session's layout, another client changes the session in each way
that makes the prediction wrong (appends, roll-ups, trims, deletes, edits, branches,
head moves, clears, a new document version, expiry), and the reader's next reads must
answer exactly what a store that never predicted answers (the script's way).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from test_redis_runs import _to_old_layout

import sessionary
from sessionary import Message, SessionManager
from sessionary.records import ANY, HEAD, SessionInfo, SessionUpdate

pytestmark = pytest.mark.redis

NS, KEY = "compaction.index", "overlays"
SID = "c"
LIMIT = 5


class FakeClock:
    """A clock that stands still until a test moves it."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


def _read(manager: SessionManager, limit: int = LIMIT) -> Any:
    store = manager.store
    try:
        path, doc = store.get_path_and_document(  # type: ignore[attr-defined]
            manager.scope, SID, None, limit, NS, KEY
        )
    except sessionary.SessionaryError as exc:
        return type(exc)
    shown = [(m.id, m.parent_id, m.role, m.text) for m in path]
    return shown, None if doc is None else (doc.version, doc.body)


def _append(manager: SessionManager, n: int, start: int, parent: Any = HEAD) -> None:
    store = manager.store
    for i in range(start, start + n):
        message = Message.user(f"text {i}", id=f"m{i}")
        store.append(manager.scope, SID, [message], parent, ANY)  # type: ignore[attr-defined]
        parent = HEAD


def _put_doc(manager: SessionManager, body: dict[str, Any]) -> None:
    manager.store.put_document(  # type: ignore[attr-defined]
        manager.scope, "session", SID, NS, KEY, body, "", "test", None
    )


def _scripts(manager: SessionManager) -> list[str]:
    """Record the names of the read scripts the store runs from now on."""
    conn = manager.store._conn  # type: ignore[attr-defined]
    ran: list[str] = []
    run_lean = conn.run_lean

    def spy(name: str, keys: list[str], args: list[Any]) -> Any:
        ran.append(name)
        return run_lean(name, keys, args)

    conn.run_lean = spy
    return ran


Change = Callable[[SessionManager], None]


def _store(m: SessionManager) -> Any:
    return m.store


CHANGES: dict[str, Change] = {
    "nothing": lambda w: None,
    "one append": lambda w: _append(w, 1, 100),
    "appends past the slack": lambda w: _append(w, 9, 100),
    "a batch": lambda w: _store(w).append(
        w.scope,
        SID,
        [Message.user(f"b{i}", id=f"b{i}") for i in range(7)],
        HEAD,
        ANY,
    ),
    "a roll-up": lambda w: (_append(w, 2, 100), _store(w).roll_up(w.scope, SID)),
    "an edit in the window": lambda w: _store(w).update_message(
        w.scope, SID, Message.user("edited", id="m27")
    ),
    "a deleted head": lambda w: _store(w).delete_message(w.scope, SID, "m29"),
    "a deleted middle": lambda w: _store(w).delete_message(w.scope, SID, "m26"),
    "a branch": lambda w: _append(w, 2, 100, parent="m20"),
    "a head moved back": lambda w: _store(w).set_head(w.scope, SID, "m12"),
    "a clear": lambda w: _store(w).clear_messages(w.scope, SID),
    "a clear and appends": lambda w: (_store(w).clear_messages(w.scope, SID), _append(w, 3, 100)),
    "a new session, same id": lambda w: (
        _store(w).delete_session(w.scope, SID),
        _store(w).create_session(w.scope, SessionInfo(id=SID)),
        _append(w, 6, 200),
    ),
    "a deleted session": lambda w: _store(w).delete_session(w.scope, SID),
    "a new document version": lambda w: _put_doc(w, {"entries": [], "n": 2}),
}


@pytest.mark.parametrize("frequency", [0, 4])
@pytest.mark.parametrize("change", list(CHANGES))
def test_a_changed_session_reads_as_the_script_reads_it(
    redis_url: str, frequency: int, change: str
) -> None:
    url = f"{redis_url}&snapshot_frequency={frequency}&max_messages=40"
    with SessionManager(url) as writer, SessionManager(url) as reader:
        writer.create(id=SID)
        _append(writer, 30, 0)
        _put_doc(writer, {"entries": [], "n": 1})
        ran = _scripts(reader)
        first = _read(reader)
        assert _read(reader) == first
        assert ran == ["read_path_document"]  # learned once, then predicted
        CHANGES[change](writer)
        with SessionManager(url) as fresh:  # never predicted: the script's answer
            for _ in range(3):
                assert _read(reader) == _read(fresh)
        if change == "nothing":
            assert ran == ["read_path_document"]


@pytest.mark.parametrize("frequency", [0, 4])
def test_trimming_and_other_limits(redis_url: str, frequency: int) -> None:
    url = f"{redis_url}&snapshot_frequency={frequency}&max_messages=8"
    with SessionManager(url) as writer, SessionManager(url) as reader:
        writer.create(id=SID)
        _append(writer, 6, 0)
        with SessionManager(url) as fresh:
            for start in range(6, 40, 3):
                for limit in (LIMIT, 9, 9, 12, 12):  # 9: one past max_messages
                    assert _read(reader, limit) == _read(fresh, limit)
                _append(writer, 3, start)
                writer.store.roll_up(writer.scope, SID)  # type: ignore[attr-defined]


def test_a_trim_that_leaves_part_of_a_chunk_stops_the_walk(redis_url: str) -> None:
    url = f"{redis_url}&snapshot_frequency=4&max_messages=6"
    with SessionManager(url) as writer, SessionManager(url) as reader:
        writer.create(id=SID)
        _append(writer, 8, 0)  # rolled up at 4 and 8, trimmed to m2..m7
        ran = _scripts(reader)
        assert [m[0] for m in _read(reader, 7)[0]] == [f"m{n}" for n in range(2, 8)]
        _append(writer, 4, 8)  # rolled up at 12, trimmed to m6..m11 (m4, m5 stay in a chunk)
        assert [m[0] for m in _read(reader, 7)[0]] == [f"m{n}" for n in range(6, 12)]
        assert ran == ["read_path_document"]  # the second read was predicted


def test_the_reader_predicts_across_its_own_appends(redis_url: str) -> None:
    url = f"{redis_url}&snapshot_frequency=4"
    with SessionManager(url) as manager:
        manager.create(id=SID)
        _append(manager, 10, 0)
        ran = _scripts(manager)
        with SessionManager(url) as fresh:
            for n in range(10, 30):
                assert _read(manager) == _read(fresh)
                _append(manager, 1, n)
            for n in range(30, 100, 10):  # batches past the slack, and roll-ups
                assert _read(manager) == _read(fresh)
                batch = [Message.user(f"b{i}", id=f"m{i}") for i in range(n, n + 10)]
                manager.store.append(manager.scope, SID, batch, HEAD, ANY)  # type: ignore[attr-defined]
            assert _read(manager) == _read(fresh)
        assert ran == ["read_path_document"]  # every later read predicted


@pytest.mark.parametrize("sliding", [True, False])
def test_expiry_reads_as_the_script_reads_it(redis_url: str, sliding: bool) -> None:
    clock = FakeClock()
    url = f"{redis_url}&snapshot_frequency=4"
    with SessionManager(url, clock=clock) as reader, SessionManager(url, clock=clock) as fresh:
        reader.create(id=SID, ttl=100, ttl_sliding=sliding)
        _append(reader, 10, 0)
        ran = _scripts(reader)
        assert _read(reader) == _read(fresh)
        clock.now += timedelta(seconds=60)
        _append(reader, 1, 10)  # slides the TTL if sliding
        clock.now += timedelta(seconds=41)  # past created + ttl, not past updated + ttl
        assert _read(reader) == _read(fresh)
        assert (_read(reader) is sessionary.SessionNotFound) is not sliding
        clock.now += timedelta(seconds=60)
        assert _read(reader) is sessionary.SessionNotFound
        assert _read(fresh) is sessionary.SessionNotFound
        assert "read_path_document" in ran


def test_a_row_with_ttl_us_only_in_its_metadata_never_expires(redis_url: str) -> None:
    with SessionManager(redis_url) as reader, SessionManager(redis_url) as fresh:
        reader.create(id=SID, metadata={"ttl_us": 1})
        _append(reader, 3, 0)
        for _ in range(3):
            assert _read(reader) == _read(fresh) != sessionary.SessionNotFound


def test_scope_is_a_wall(redis_url: str) -> None:
    with SessionManager(redis_url) as reader:
        reader.create(id=SID)
        _append(reader, 8, 0)
        mine = _read(reader)
        assert _read(reader) == mine
        other = SessionManager(redis_url, user="someone-else")
        with other:
            assert _read(other) is sessionary.SessionNotFound
            other.create(id=SID)
            assert _read(other) == ([], None)
        assert _read(reader) == mine


def test_a_ttl_update_reads_as_the_script_reads_it(redis_url: str) -> None:
    clock = FakeClock()
    with SessionManager(redis_url, clock=clock) as reader:
        reader.create(id=SID)
        _append(reader, 5, 0)
        assert _read(reader) == _read(reader)
        reader.store.update_session(  # type: ignore[attr-defined]
            reader.scope, SID, SessionUpdate(ttl=10)
        )
        clock.now += timedelta(seconds=11)
        assert _read(reader) is sessionary.SessionNotFound


def test_a_killed_connection_between_predicted_reads(redis_url: str, redis_client: Any) -> None:
    with SessionManager(redis_url) as reader, SessionManager(redis_url) as fresh:
        reader.create(id=SID)
        _append(reader, 8, 0)
        ran = _scripts(reader)
        assert _read(reader) == _read(reader) == _read(fresh)
        # Close, on the server side, exactly the connection the reads go down.
        (kept,) = reader.store._conn._lane._idle  # type: ignore[attr-defined]
        host, port = kept._sock.getsockname()[:2]
        assert redis_client.client_kill_filter(addr=f"{host}:{port}") == 1
        _append(fresh, 1, 8)
        assert _read(reader) == _read(fresh)
        assert _read(reader) == _read(fresh)
        assert ran[0] == "read_path_document"


async def test_async_reads_predict_and_check_too(redis_url: str) -> None:
    url = f"{redis_url}&snapshot_frequency=4"
    with SessionManager(url) as writer, SessionManager(url) as fresh:
        writer.create(id=SID)
        _append(writer, 10, 0)
        async with sessionary.AsyncSessionManager(url) as reader:
            store = reader.store

            async def read() -> Any:
                try:
                    path, doc = await store.get_path_and_document(  # type: ignore[attr-defined]
                        reader.scope, SID, None, LIMIT, NS, KEY
                    )
                except sessionary.SessionaryError as exc:
                    return type(exc)
                return [(m.id, m.parent_id, m.role, m.text) for m in path], doc

            for n in range(10, 40, 3):
                assert await read() == await read() == _read(fresh)
                _append(writer, 3, n)
            writer.store.update_message(  # type: ignore[attr-defined]
                writer.scope, SID, Message.user("edited", id="m38")
            )
            assert await read() == _read(fresh)
            writer.store.delete_session(writer.scope, SID)  # type: ignore[attr-defined]
            assert await read() is sessionary.SessionNotFound


def test_a_session_in_the_layout_before_runs(redis_url: str, redis_client: Any) -> None:
    url = f"{redis_url}&snapshot_frequency=4"
    with SessionManager(url) as writer, SessionManager(url) as reader:
        writer.create(id=SID)
        _append(writer, 30, 0)
        assert _read(reader) == _read(reader)
        _to_old_layout(redis_client, url, SID)  # JSON chunks, no run
        with SessionManager(url) as fresh:
            for n in range(30, 45, 5):
                for _ in range(3):
                    assert _read(reader) == _read(fresh)
                    assert _read(reader, 12) == _read(fresh, 12)
                _append(writer, 5, n)


def test_reads_cancelled_anywhere_and_reads_from_other_loops(redis_url: str) -> None:
    # A predicted read cancelled at any loop turn (its MULTI/EXEC sent or not, its replies
    # read or not) leaves no reply behind for the next read to take for its own: run on
    # the caller's loop (the store unhopped), where the cancellation reaches the socket.
    # Callers on other event loops, in other threads, of one store get the same answers.
    url = f"{redis_url}&snapshot_frequency=4"
    with SessionManager(url) as writer, SessionManager(url) as fresh:
        writer.create(id=SID)
        _append(writer, 10, 0)
        reader = sessionary.AsyncSessionManager(url)

        async def read(store: Any) -> Any:
            path, doc = await store.get_path_and_document(reader.scope, SID, None, LIMIT, NS, KEY)
            shown = [(m.id, m.parent_id, m.role, m.text) for m in path]
            return shown, None if doc is None else (doc.version, doc.body)

        async def cancelled_reads() -> int:
            direct = sessionary.AsyncSessionManager(url).store._home.resident  # type: ignore[attr-defined]
            cut = 0
            try:
                assert await read(direct) == _read(fresh)
                for turns in range(40):
                    task = asyncio.ensure_future(read(direct))
                    for _ in range(turns % 10):
                        await asyncio.sleep(0)
                    cut += task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
                    if turns % 3 == 0:
                        _append(writer, 1, 100 + turns)
                    assert await read(direct) == _read(fresh)
            finally:
                await direct.close()
            return cut

        try:
            assert asyncio.run(cancelled_reads()) > 0
            expected = _read(fresh)
            with ThreadPoolExecutor(2) as pool:
                runs = pool.map(lambda _: asyncio.run(read(reader.store)), range(4))
                assert list(runs) == [expected] * 4
        finally:
            asyncio.run(reader.close())
            asyncio.run(reader.close())
