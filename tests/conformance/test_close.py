"""Closing is idempotent: a store or a manager closed twice is simply closed.

Each close below is bounded by a generous timeout, since the failure this guards against
(a second close of an async SQLite store waiting for a worker thread that had already
stopped) was a hang, not an error. A call made after the close raises `Closed` on every
backend, sync and async: it never hangs, works on a half-closed store, or leaks a
driver's own exception.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

import pytest

import sessionary
from sessionary import AsyncSessionManager, Closed, Message, SessionManager

T = TypeVar("T")

BOUND = 30.0
"""Seconds a close may take on a loaded machine before it counts as a hang."""


async def _bounded(call: Awaitable[T]) -> T:
    return await asyncio.wait_for(call, BOUND)


def test_sync_manager_closes_twice(store_url: str) -> None:
    manager = SessionManager(store_url)
    manager.create().append(Message.user("before the close"))
    manager.close()
    manager.close()
    with manager:  # leaving the block closes a third time
        pass


async def test_async_manager_closes_twice(store_url: str) -> None:
    manager = AsyncSessionManager(store_url)
    await (await manager.create()).append(Message.user("before the close"))
    await _bounded(manager.close())
    await _bounded(manager.close())
    async with manager:
        pass


def test_sync_store_closes_twice(store_url: str) -> None:
    store = sessionary.open_store(store_url)
    store.close()
    store.close()


async def test_async_store_closes_twice(store_url: str) -> None:
    store = sessionary.open_async_store(store_url)
    await _bounded(store.close())
    await _bounded(store.close())


async def test_async_closes_at_once_close_once(store_url: str) -> None:
    """Two closes racing on one event loop: both return."""
    manager = AsyncSessionManager(store_url)
    await manager.create()
    await _bounded(asyncio.gather(manager.close(), manager.close()))


def test_sync_calls_after_close_raise_closed(store_url: str) -> None:
    manager = SessionManager(store_url)
    chat = manager.create()
    chat.append(Message.user("before the close"))
    manager.close()
    with pytest.raises(Closed):
        chat.append(Message.user("after the close"))
    with pytest.raises(Closed):
        chat.history()
    with pytest.raises(Closed):
        manager.create()


async def test_async_calls_after_close_raise_closed(store_url: str) -> None:
    manager = AsyncSessionManager(store_url)
    chat = await manager.create()
    await chat.append(Message.user("before the close"))
    await _bounded(manager.close())
    with pytest.raises(Closed):
        await _bounded(chat.append(Message.user("after the close")))
    with pytest.raises(Closed):
        await _bounded(chat.history())
    with pytest.raises(Closed):
        await _bounded(manager.create())
