"""A server that drops a store's idle connections costs no call that starts later.

A restart, a failover, or a reaper of idle connections (`wait_timeout`, a proxy's idle
limit) closes every pooled connection while nobody uses them. The next calls must not
fail for that: a pooled connection idle for `IDLE_LOOK` seconds is looked at as it is
handed out (`_waits.said_goodbye`), and one the server closed is replaced. Here the
server ends this test's connections from another connection, while they sit idle.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pymysql
import pytest

import sessionary
from sessionary import Message
from sessionary.stores._waits import IDLE_LOOK

WRITERS = 4
"""Calls made at once before the drop, so that the pool holds several connections."""


def _drop_postgres(url: str, name: str) -> int:
    """End the server's connections whose application name is `name`; return how many."""
    with psycopg.connect(url.partition("?")[0], autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchall()
    return len(rows)


def _drop_mysql(url: str) -> int:
    """End the server's connections to this URL's database; return how many."""
    parts = urlsplit(url)
    admin = pymysql.connect(
        host=parts.hostname,
        port=parts.port or 3306,
        user=parts.username or "root",
        password=parts.password or "",
    )
    database = parts.path.lstrip("/")
    try:
        with admin.cursor() as cursor:
            cursor.execute(
                "SELECT id FROM information_schema.processlist WHERE db = %s", (database,)
            )
            ids = [row[0] for row in cursor.fetchall()]
            for one in ids:
                cursor.execute(f"KILL {int(one)}")
    finally:
        admin.close()
    return len(ids)


@pytest.fixture(params=["postgres", "mysql"])
def dropper(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, Callable[[], int]]:
    """A store URL and a function that ends every connection of its stores on the server."""
    url = str(request.getfixturevalue(f"{request.param}_url"))
    if request.param == "postgres":
        name = f"dropped-{uuid.uuid4().hex[:12]}"
        monkeypatch.setenv("PGAPPNAME", name)  # libpq reads it as each connection opens
        return url, lambda: _drop_postgres(url, name)
    return url, lambda: _drop_mysql(url)


def _after_the_drop(drop: Callable[[], int]) -> None:
    assert drop() >= 2  # several pooled connections (and more, on PostgreSQL's side)
    time.sleep(IDLE_LOOK + 0.3)  # idle long enough to be looked at


def test_sync_calls_after_the_server_dropped_every_connection(
    dropper: tuple[str, Callable[[], int]],
) -> None:
    url, drop = dropper
    with sessionary.SessionManager(url) as manager:
        chats = [manager.create(id=f"s{n}") for n in range(WRITERS)]
        threads = [
            threading.Thread(target=chat.append, args=(Message.user("before"),)) for chat in chats
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        _after_the_drop(drop)
        for n in range(2 * WRITERS):  # more calls than connections were dropped
            chats[n % WRITERS].append(Message.user(f"after {n}"))
        assert [len(chat.history()) for chat in chats] == [3] * WRITERS


async def test_async_calls_after_the_server_dropped_every_connection(
    dropper: tuple[str, Callable[[], int]],
) -> None:
    url, drop = dropper
    async with sessionary.AsyncSessionManager(url) as manager:
        chats = [await manager.create(id=f"s{n}") for n in range(WRITERS)]
        await asyncio.gather(*(chat.append(Message.user("before")) for chat in chats))
        await asyncio.to_thread(_after_the_drop, drop)
        for n in range(2 * WRITERS):
            await chats[n % WRITERS].append(Message.user(f"after {n}"))
        await asyncio.gather(*(chat.append(Message.user("together")) for chat in chats))
        counts: list[Any] = [len(await chat.history()) for chat in chats]
        assert counts == [4] * WRITERS
