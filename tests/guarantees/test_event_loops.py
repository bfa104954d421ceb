"""Async stores and drivers answer on any event loop, in any thread (issue 14, item 1).

asyncio drivers are bound to the loop that first used them; sessionary runs them on a
loop of their own (`sessionary.stores._home_loop`). These tests drive one manager (or
one key-value driver) from loops that come and go: `asyncio.run` again and again,
threads each with a loop of their own, a manager made in one loop and used in another.
Then they close it twice, from another thread, and use it after. Each test ends with a
garbage collection, so a connection or task left on a dead loop shows up as an error
(`filterwarnings = error` turns unraisable exceptions into failures).
"""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _guarantees import wait_for_child

from sessionary import AsyncSessionManager, Closed, Message, SessionManager
from sessionary.kv import AsyncIncrementalSessionManager, AsyncRedisDriver, AsyncSQLiteDriver

HANG = 120.0
"""Seconds after which a thread or a child counts as hung: generous, for a loaded machine."""

THREADS = 5
PER_THREAD = 8


class StoreChat:
    """One session of an `AsyncSessionManager` over a store URL."""

    def __init__(self, url: str) -> None:
        self.manager = AsyncSessionManager(url)
        self.session = self.manager.session("chat")

    async def start(self) -> None:
        await self.manager.create(id="chat")

    async def append(self, text: str) -> None:
        await self.session.append(Message.user(text))

    async def texts(self) -> list[str]:
        history = await self.session.history()
        # The path from the head holds every message: the chain is whole.
        assert len(history) == await self.session.message_count()
        return [m.text for m in history]

    async def close(self) -> None:
        await self.manager.close()


class KVChat:
    """One session of an `AsyncIncrementalSessionManager` over a key-value driver."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        self.sessions = AsyncIncrementalSessionManager(driver, snapshot_frequency=5)

    async def start(self) -> None:
        await self.sessions.get_or_create("chat", "someone")

    async def append(self, text: str) -> None:
        await self.sessions.append_messages("chat", [Message.user(text)])

    async def texts(self) -> list[str]:
        return [m.text for m in await self.sessions.get_history("chat")]

    async def close(self) -> None:
        await self.driver.close()


TARGETS = [
    pytest.param("memory", marks=pytest.mark.memory),
    pytest.param("sqlite", marks=pytest.mark.sqlite),
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("mysql", marks=pytest.mark.mysql),
    pytest.param("redis", marks=pytest.mark.redis),
    pytest.param("kv-redis", marks=pytest.mark.redis),
    pytest.param("kv-sqlite", marks=pytest.mark.sqlite),
]


@pytest.fixture(params=TARGETS)
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """What a chat runs on: a store URL, or `kv-...:<where>` for a key-value driver."""
    name = request.param
    if name == "memory":
        return "memory://"
    if name in ("sqlite", "kv-sqlite"):
        path = f"sqlite:///{tmp_path / 'loops.db'}"
        return path if name == "sqlite" else f"kv-sqlite:{tmp_path / 'kv.db'}"
    url = str(request.getfixturevalue(f"{name.removeprefix('kv-')}_url"))
    if name == "kv-redis":  # the redis_url fixture deletes the namespace's keys after
        base, _, namespace = url.partition("?namespace=")
        return f"kv-redis:{base}?{namespace}"
    return url


def open_chat(target: str) -> StoreChat | KVChat:
    if target.startswith("kv-sqlite:"):
        return KVChat(AsyncSQLiteDriver(target.removeprefix("kv-sqlite:")))
    if target.startswith("kv-redis:"):
        url, _, namespace = target.removeprefix("kv-redis:").partition("?")
        return KVChat(AsyncRedisDriver(url, namespace=namespace))
    return StoreChat(target)


@pytest.fixture
def chat(target: str) -> Iterator[StoreChat | KVChat]:
    """A chat made outside any event loop, started, and closed after the test."""
    opened = open_chat(target)
    asyncio.run(opened.start())
    yield opened
    asyncio.run(opened.close())
    del opened
    gc.collect()


def test_asyncio_run_twenty_times_in_a_row(chat: StoreChat | KVChat) -> None:
    for i in range(20):
        asyncio.run(chat.append(f"m{i}"))
    assert asyncio.run(chat.texts()) == [f"m{i}" for i in range(20)]


def _in_threads(chat: StoreChat | KVChat) -> list[BaseException]:
    """Run THREADS threads, each appending PER_THREAD messages from a loop of its own."""
    errors: list[BaseException] = []
    ready = threading.Barrier(THREADS)

    async def append_all(k: int) -> None:
        for j in range(PER_THREAD):
            await chat.append(f"t{k}-{j}")

    def work(k: int) -> None:
        try:
            ready.wait(HANG)
            asyncio.run(append_all(k))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(HANG)
    assert not any(thread.is_alive() for thread in threads), "a thread hung"
    return errors


def test_threads_each_with_a_loop_of_its_own_append_at_once(chat: StoreChat | KVChat) -> None:
    assert _in_threads(chat) == []
    texts = asyncio.run(chat.texts())
    assert sorted(texts) == sorted(f"t{k}-{j}" for k in range(THREADS) for j in range(PER_THREAD))
    for k in range(THREADS):  # each thread's appends keep their order in the chain
        mine = [t for t in texts if t.startswith(f"t{k}-")]
        assert mine == [f"t{k}-{j}" for j in range(PER_THREAD)]


def test_a_chat_made_in_one_loop_is_used_in_another(target: str) -> None:
    async def make() -> StoreChat | KVChat:
        made = open_chat(target)
        await made.start()
        await made.append("first loop")
        return made

    chat = asyncio.run(make())
    try:
        asyncio.run(chat.append("second loop"))
        done = threading.Thread(target=asyncio.run, args=(chat.append("a thread's loop"),))
        done.start()
        done.join(HANG)
        assert not done.is_alive()
        assert asyncio.run(chat.texts()) == ["first loop", "second loop", "a thread's loop"]
    finally:
        asyncio.run(chat.close())
    gc.collect()


def test_close_twice_from_another_thread_then_use(target: str) -> None:
    chat = open_chat(target)
    asyncio.run(chat.start())
    asyncio.run(chat.append("before"))
    closer = threading.Thread(target=asyncio.run, args=(chat.close(),))
    closer.start()
    closer.join(HANG)
    assert not closer.is_alive(), "close hung"
    asyncio.run(chat.close())  # again, from another thread and loop: harmless

    async def both_twice() -> None:
        await chat.close()
        await asyncio.gather(chat.close(), chat.close())

    asyncio.run(both_twice())
    with pytest.raises(Closed):
        asyncio.run(chat.append("after"))
    with pytest.raises(RuntimeError):  # Closed is a RuntimeError too, like the SDKs'
        asyncio.run(chat.texts())
    gc.collect()


def test_a_sync_manager_closes_twice_from_any_thread(target: str) -> None:
    if target.startswith("kv-"):
        pytest.skip("the key-value managers have no sync store URL")
    manager = SessionManager(target)
    manager.create(id="chat").append(Message.user("hello"))
    closer = threading.Thread(target=manager.close)
    closer.start()
    closer.join(HANG)
    assert not closer.is_alive()
    manager.close()
    with pytest.raises(Closed):
        manager.session("chat").history()
    with pytest.raises(Closed):
        manager.create()


@pytest.mark.parametrize("server", ["postgres", "redis", "mysql"])
def test_a_store_never_closed_lets_the_interpreter_exit_quietly(
    request: pytest.FixtureRequest, server: str, redis_url: str
) -> None:
    url = request.getfixturevalue(f"{server}_url")
    redis_base, _, namespace = redis_url.partition("?namespace=")
    script = (
        "import asyncio, logging, sys\n"
        # Debug mode's notes of slow steps (a loaded machine) are not what this checks;
        # asyncio's errors (a task destroyed pending, a loop closed) still show.
        "logging.getLogger('asyncio').setLevel(logging.ERROR)\n"
        "from sessionary import AsyncSessionManager, Message\n"
        "from sessionary.kv import AsyncRedisDriver\n"
        "manager = AsyncSessionManager(sys.argv[1])\n"
        "async def use():\n"
        "    chat = await manager.create()\n"
        "    await chat.append(Message.user('never closed'))\n"
        "asyncio.run(use())\n"
        "asyncio.run(use())\n"
        "driver = AsyncRedisDriver(sys.argv[2], namespace=sys.argv[3])\n"
        "asyncio.run(driver.put('k', 'v'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-W", "error", "-c", script, url, redis_base, namespace],
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.parametrize("server", ["postgres", "redis", "mysql"])
def test_a_forked_child_starts_afresh(request: pytest.FixtureRequest, server: str) -> None:
    chat = StoreChat(request.getfixturevalue(f"{server}_url"))
    asyncio.run(chat.start())
    asyncio.run(chat.append("parent"))  # the parent's loop and connections now exist
    with warnings.catch_warnings():  # Python 3.12+ warns about forking with threads
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: a loop and connections of its own, or exit 1
        code = 1
        try:
            asyncio.run(chat.append("child"))
            code = 0
        finally:
            os._exit(code)
    assert wait_for_child(pid, HANG) == 0
    asyncio.run(chat.append("parent again"))  # the parent's connections still work
    assert asyncio.run(chat.texts()) == ["parent", "child", "parent again"]
    asyncio.run(chat.close())
    gc.collect()


@pytest.mark.parametrize("server", ["postgres"])
def test_a_cancelled_caller_does_not_cut_its_write_short(
    request: pytest.FixtureRequest, server: str
) -> None:
    # A writer waits on the session's row lock, held by another connection; its caller
    # is cancelled. The caller hears at once; the write goes on, and lands whole once
    # the lock is released.
    import psycopg

    url = request.getfixturevalue(f"{server}_url")
    base, _, schema = url.partition("?schema=")
    chat = StoreChat(url)
    asyncio.run(chat.start())
    with psycopg.connect(base, autocommit=True) as holder:
        with holder.transaction():
            holder.execute(f'SELECT 1 FROM "{schema}".sessions WHERE id = %s FOR UPDATE', ["chat"])

            async def cancel_a_blocked_append() -> None:
                task = asyncio.create_task(chat.append("whole"))
                await _blocked_behind(holder)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task

            asyncio.run(cancel_a_blocked_append())
        # The lock is released: the append the caller gave up on completes.
        asyncio.run(chat.close())  # waits for it
    chat = StoreChat(url)
    assert asyncio.run(chat.texts()) == ["whole"]
    asyncio.run(chat.close())
    gc.collect()


def test_the_next_call_on_a_session_waits_for_a_write_given_up_in_flight(
    postgres_url: str,
) -> None:
    # As above, the cancelled append waits on the row lock; the caller then reads its
    # session. The read must not overtake the append it gave up on (it would show the
    # message absent, then have it land): it starts once that append has ended.
    import psycopg

    base, _, schema = postgres_url.partition("?schema=")
    chat = StoreChat(postgres_url)
    asyncio.run(chat.start())
    holder = psycopg.connect(base)
    try:
        holder.execute(f'SELECT 1 FROM "{schema}".sessions WHERE id = %s FOR UPDATE', ["chat"])

        async def cancel_then_read() -> list[str]:
            task = asyncio.create_task(chat.append("given up"))
            await _blocked_behind(holder)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            read = asyncio.create_task(chat.texts())
            await asyncio.sleep(0.05)  # the read is handed over while the lock is held
            await asyncio.to_thread(holder.commit)
            return await read

        assert asyncio.run(cancel_then_read()) == ["given up"]
    finally:
        holder.close()
        asyncio.run(chat.close())
    gc.collect()


async def _blocked_behind(holder: Any) -> None:
    """Poll until some backend waits on a lock `holder` holds."""
    pid = holder.info.backend_pid
    deadline = time.monotonic() + HANG
    while time.monotonic() < deadline:
        row = holder.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))", [pid]
        ).fetchone()
        if row and row[0]:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the append never reached the lock")
