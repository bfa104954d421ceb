"""The sync store's PyMySQL connections: one TLS context for all, and their pool.

PyMySQL (1.1.2 and later) tries TLS, unverified, wherever the server offers it, and would
build that mode's context (the system's certificates loaded, ~30 ms of CPU) for every
connection: a store's start, and every connection its pool grows by, paid it.
The pool (`stores.mysql._Pool`) lends at most its size of connections at once; so does the
async driver's (`_AsyncPool`), which makes each connection within `connect_timeout`.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

import pytest

import sessionary
from sessionary import Message
from sessionary.errors import Closed, StoreError, StoreUnavailable
from sessionary.stores import mysql
from sessionary.stores.mysql import _connect, connect_options

pytestmark = pytest.mark.mysql


def test_connections_share_one_opportunistic_tls_context(mysql_url: str) -> None:
    options = connect_options(mysql_url, 5, "database")
    first, second = _connect(options, 5, "here"), _connect(options, 5, "here")
    try:
        if not getattr(first, "ssl", False):
            pytest.skip("this PyMySQL tries no TLS unasked")
        assert first.ctx is second.ctx
        asked = first._create_ssl_ctx({"verify_mode": False, "check_hostname": False})
        assert asked is not first.ctx  # options of its own: a context of its own
    finally:
        first.close()
        second.close()


def test_a_store_starts_in_less_cpu_than_a_tls_context_takes(mysql_url: str) -> None:
    # A second store's start: its migration check, its first pooled connection and its
    # first append. Each context PyMySQL built took ~30 ms of CPU; all of it is far less.
    with sessionary.SessionManager(mysql_url) as first:
        first.create(id="s").append(Message.user("warm-up"))
    spent = []
    for _ in range(3):
        with sessionary.SessionManager(mysql_url) as manager:
            session = manager.session("s")
            before = time.process_time()
            session.append(Message.user("first of this store"))
            spent.append(time.process_time() - before)
    assert min(spent) < 0.02, spent


def test_a_full_pool_hands_a_connection_to_one_waiting_thread(
    mysql_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mysql, "POOL_WAIT", 0.5)
    pool = mysql._Pool(mysql.connect_options(mysql_url, 0.5, "database"), 1, 5.0, "mysql")
    try:
        first = pool.take()
        with pytest.raises(StoreError, match="busy"):  # the only one is out: waits, gives up
            pool.take()
        got: list[Any] = []
        waiter = threading.Thread(target=lambda: got.append(pool.take()))
        waiter.start()
        time.sleep(0.1)
        assert got == []  # still waiting for the one connection
        pool.give(first)
        waiter.join(timeout=5)
        assert got == [first]  # the same connection, reused
        first.close()  # a connection closed while out is not kept
        pool.give(first)
        fresh = pool.take()
        assert fresh is not first and fresh.open
        pool.give(fresh)
    finally:
        pool.close()


def test_a_failed_connect_gives_its_slot_back(
    mysql_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = mysql._Pool(
        mysql.connect_options("mysql://root@127.0.0.1:1/none", 0.5, "database"), 1, 5.0, "x"
    )
    monkeypatch.setattr(mysql, "POOL_WAIT", 0.5)
    for _ in range(2):  # a leaked slot would make the second take wait and fail as busy
        with pytest.raises(StoreUnavailable, match="cannot connect"):
            pool.take()
    pool.close()
    with pytest.raises(Closed):
        pool.take()


# ---------------------------------------------------------------- the async pool
# `stores.mysql._AsyncPool`, aiomysql's connections on the driver's loop: the twin of
# `_Pool`, each new connection made (greeting and login included) within connect_timeout.


def _async_pool(url: str, size: int = 1, connect_timeout: float = 0.5) -> Any:
    options = mysql.connect_options(url, connect_timeout)
    return mysql._AsyncPool(options, size, "mysql")


def _server_ids(url: str) -> set[int]:
    """The ids of the server's connections to this URL's database."""
    database = url.rsplit("/", 1)[1]
    conn = _connect(connect_options(url, 5, "database"), 5, "here")
    try:
        with conn.cursor() as cursor:
            sql = (
                "SELECT id FROM information_schema.processlist"
                " WHERE db = %s AND id <> CONNECTION_ID()"
            )
            cursor.execute(sql, (database,))
            return {row[0] for row in cursor.fetchall()}
    finally:
        conn.close()


async def test_a_full_async_pool_hands_connections_to_its_waiters_in_turn(
    mysql_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mysql, "POOL_WAIT", 0.3)
    pool = _async_pool(mysql_url)
    try:
        first = await pool.take()
        with pytest.raises(StoreError, match="busy"):  # the only one is out: waits, gives up
            await pool.take()
        monkeypatch.setattr(mysql, "POOL_WAIT", 5.0)
        order: list[int] = []

        async def borrow(n: int) -> None:
            conn = await pool.take()
            order.append(n)
            await asyncio.sleep(0.01)
            pool.give(conn)

        waiters = [asyncio.create_task(borrow(n)) for n in range(4)]
        await asyncio.sleep(0.05)
        assert order == []  # all four wait for the one connection
        pool.give(first)
        await asyncio.gather(*waiters)
        assert order == [0, 1, 2, 3]  # in the order they came
        again = await pool.take()
        assert again is first  # the same connection, reused
        again.close()  # a connection closed while out is not kept
        pool.give(again)
        fresh = await pool.take()
        assert fresh is not first and not fresh.closed
        pool.give(fresh)
    finally:
        await pool.close()


async def test_an_async_waiter_that_gives_up_leaves_no_slot_behind(mysql_url: str) -> None:
    pool = _async_pool(mysql_url)
    try:
        first = await pool.take()
        gone = asyncio.create_task(pool.take())
        await asyncio.sleep(0.05)
        pool.give(first)  # the slot passes to the waiter ...
        gone.cancel()  # ... which is cancelled before it runs: the slot comes back
        with pytest.raises(asyncio.CancelledError):
            await gone
        async with asyncio.timeout(5):
            conn = await pool.take()  # a leaked slot would make this wait
        pool.give(conn)
    finally:
        await pool.close()


async def test_a_failed_async_connect_gives_its_slot_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(mysql, "POOL_WAIT", 0.5)
    pool = _async_pool("mysql://root@127.0.0.1:1/none")
    for _ in range(2):  # a leaked slot would make the second take wait and fail as busy
        with pytest.raises(StoreUnavailable, match="cannot connect"):
            await pool.take()
    await pool.close()
    with pytest.raises(Closed):
        await pool.take()


def _hung_up(listening: socket.socket) -> bool:
    """Whether the next client the listener accepts has hung up (within 5 seconds)."""
    accepted, _ = listening.accept()
    with accepted:
        accepted.settimeout(5)
        return accepted.recv(1) == b""


async def test_an_async_handshake_with_a_silent_peer_ends_within_connect_timeout() -> None:
    # aiomysql bounds only the TCP connect; a peer that accepts and says nothing would
    # hold the greeting forever. The half-made connection is closed.
    silent = socket.create_server(("127.0.0.1", 0))
    silent.settimeout(5)
    try:
        pool = _async_pool(f"mysql://root@127.0.0.1:{silent.getsockname()[1]}/none", 2, 0.3)
        for _ in range(2):
            started = time.monotonic()
            with pytest.raises(StoreUnavailable, match="did not answer in time"):
                await pool.take()
            assert time.monotonic() - started < 5
            assert await asyncio.to_thread(_hung_up, silent)
        await pool.close()
    finally:
        silent.close()


async def test_an_async_pool_replaces_a_connection_the_server_ended(
    mysql_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = _async_pool(mysql_url)
    try:
        conn = await pool.take()
        pool.give(conn)
        killer = _connect(connect_options(mysql_url, 5, "database"), 5, "here")
        try:
            with killer.cursor() as cursor:
                cursor.execute(f"KILL {conn.thread_id()}")
        finally:
            killer.close()
        for _ in range(500):  # until the hang-up reaches the loop
            if conn._reader.at_eof():
                break
            await asyncio.sleep(0.01)
        fresh = await pool.take()  # idle briefly: its end is seen without a ping
        assert fresh is not conn and conn.closed
        pool.give(fresh)
        monkeypatch.setattr(mysql, "_IDLE_CHECK", 0.0)  # from now on, pinged before reuse
        pinged = await pool.take()
        assert pinged is fresh
        pool.give(pinged)
    finally:
        await pool.close()


async def test_closing_the_async_pool_ends_its_connections_on_the_server(mysql_url: str) -> None:
    before = _server_ids(mysql_url)
    pool = _async_pool(mysql_url, size=3)
    taken = [await pool.take() for _ in range(3)]
    ids = {conn.thread_id() for conn in taken}
    assert ids <= _server_ids(mysql_url)
    pool.give(taken[0])
    pool.give(taken[1])
    await pool.close()
    pool.give(taken[2])  # one out while closing: closed as it comes back
    assert all(conn.closed for conn in taken)
    for _ in range(100):  # the server ends them as the goodbyes arrive
        if not _server_ids(mysql_url) & ids:
            break
        await asyncio.sleep(0.05)
    assert not _server_ids(mysql_url) & ids
    assert _server_ids(mysql_url) <= before
    with pytest.raises(Closed):
        await pool.take()
