"""A SQLite store or key-value driver opened before a fork, used in the forked child.

SQLite forbids using an inherited connection in a child (its locks are the parent's),
so the child opens the file again (`sessionary.stores._sqlite_fork`): the child's
writes are durable even after the parent closes the file, a child's async store gets a
worker thread of its own, and a store busy in another thread at the fork raises
`StoreUnavailable` in the child instead of hanging or touching the parent's connection.
"""

from __future__ import annotations

import asyncio
import os
import threading
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
from _guarantees import wait_for_child

from sessionary import AsyncSessionManager, Message, SessionManager, StoreUnavailable
from sessionary.kv import AsyncSQLiteDriver, SQLiteDriver
from sessionary.stores import _sqlite_fork

HANG = 60.0


def _fork(child: Callable[[], object]) -> int:
    """Fork; the child runs `child` and exits 0, or 1 if it raised."""
    with warnings.catch_warnings():  # Python 3.12+ warns about forking with threads
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        code = 1
        try:
            child()
            code = 0
        finally:
            os._exit(code)
    return pid


def _texts(url: str) -> list[str]:
    with SessionManager(url) as manager:
        return [m.text for m in manager.session("chat").history()]


def test_an_async_store_carries_into_a_forked_child(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    manager = AsyncSessionManager(url)
    chat = manager.session("chat")

    async def append(text: str) -> None:
        await chat.append(Message.user(text))

    asyncio.run(manager.create(id="chat"))
    asyncio.run(append("parent"))  # the parent's worker thread now runs
    pid = _fork(lambda: asyncio.run(append("child")))
    assert wait_for_child(pid, HANG) == 0
    asyncio.run(append("parent again"))  # the parent's worker and connection still work
    asyncio.run(manager.close())
    assert _texts(url) == ["parent", "child", "parent again"]


def test_a_childs_writes_outlive_the_parent_closing_the_file(tmp_path: Path) -> None:
    # The parent closing its last connection checkpoints and deletes the write-ahead log
    # unless another process holds a lock on the file. A child reading and then writing
    # through the parent's connection holds none (its copy of SQLite believes it holds
    # the parent's), so it would write into the deleted log and lose what it was told
    # was stored.
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    to_child_r, to_child_w = os.pipe()
    to_parent_r, to_parent_w = os.pipe()
    manager = SessionManager(url)
    manager.create(id="chat").append(Message.user("parent"))

    def child() -> None:
        session = manager.session("chat")
        assert [m.text for m in session.history()] == ["parent"]
        os.write(to_parent_w, b"1")
        assert os.read(to_child_r, 1) == b"2"  # the parent has closed the file
        session.append(Message.user("child"))
        assert [m.text for m in session.history()] == ["parent", "child"]

    pid = _fork(child)
    assert os.read(to_parent_r, 1) == b"1"
    manager.close()
    os.write(to_child_w, b"2")
    assert wait_for_child(pid, HANG) == 0
    for end in (to_child_r, to_child_w, to_parent_r, to_parent_w):
        os.close(end)
    assert _texts(url) == ["parent", "child"]


def test_forks_during_appends_wait_for_the_append_in_flight(tmp_path: Path) -> None:
    # A thread appends without pause through an async store while the main thread forks:
    # each fork waits for the append in flight, and each child appends through its own
    # connection and worker; the parent's chain stays whole.
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    manager = AsyncSessionManager(url)
    stop, started = threading.Event(), threading.Event()

    async def keep_appending() -> None:
        chat = await manager.create(id="chat")
        while not stop.is_set():
            await chat.append(Message.user("parent"))
            started.set()

    writer = threading.Thread(target=asyncio.run, args=(keep_appending(),))
    writer.start()
    started.wait()
    try:
        for i in range(5):
            child = manager.session("chat").append(Message.user(f"child {i}"))
            pid = _fork(lambda: asyncio.run(child))  # noqa: B023 (run before the next turn)
            child.close()  # the parent's copy of the coroutine, never run here
            assert wait_for_child(pid, HANG) == 0
    finally:
        stop.set()
        writer.join()
    asyncio.run(manager.close())
    with SessionManager(url) as reopened:
        session = reopened.session("chat")
        texts = [m.text for m in session.history()]
        assert len(texts) == session.message_count()  # one chain from the head
    assert [t for t in texts if t != "parent"] == [f"child {i}" for i in range(5)]


def test_a_store_busy_at_the_fork_is_unavailable_in_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_sqlite_fork, "FORK_WAIT", 0.2)
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    manager = SessionManager(url)
    session = manager.create(id="chat")
    session.append(Message.user("before"))
    engine_lock = manager.store.engine.inline_lock  # type: ignore[attr-defined]
    taken, done = threading.Event(), threading.Event()

    def busy() -> None:  # a call in flight on another thread, through the fork
        with engine_lock:
            taken.set()
            done.wait()

    thread = threading.Thread(target=busy)
    thread.start()
    taken.wait()

    def child() -> None:
        with pytest.raises(StoreUnavailable, match="open it again"):
            session.append(Message.user("child"))
        with pytest.raises(StoreUnavailable):
            session.history()
        manager.close()  # closes nothing of the parent's
        assert _texts(url) == ["before"]  # a store opened in the child works

    pid = _fork(child)
    assert wait_for_child(pid, HANG) == 0
    done.set()
    thread.join()
    session.append(Message.user("after"))
    manager.close()
    assert _texts(url) == ["before", "after"]


def test_a_key_value_driver_carries_into_a_forked_child(tmp_path: Path) -> None:
    path = str(tmp_path / "kv.db")
    driver = AsyncSQLiteDriver(path)
    asyncio.run(driver.put("parent", "1"))

    async def child() -> None:
        assert await driver.get("parent") == "1"
        await driver.put("child", "2")
        await driver.close()

    pid = _fork(lambda: asyncio.run(child()))
    assert wait_for_child(pid, HANG) == 0
    assert asyncio.run(driver.get("child")) == "2"
    asyncio.run(driver.close())


def test_an_in_memory_driver_keeps_its_copy_in_the_child() -> None:
    driver = SQLiteDriver(":memory:")
    driver.put("parent", "1")

    def child() -> None:
        assert driver.get("parent") == "1"
        driver.put("child", "2")
        assert driver.get("child") == "2"

    pid = _fork(child)
    assert wait_for_child(pid, HANG) == 0
    assert driver.get("child") is None  # the child's copy was its own
    driver.close()
