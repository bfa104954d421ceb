"""Every integration's adapter may be closed twice, sync and async, on every backend.

The adapters close the store they opened from a URL; a second close must return at
once. (An async SQLite store used to wait forever on its second close.)
"""

from __future__ import annotations

import asyncio
from typing import Any

from sessionary.integrations.adk import SessionarySessionService
from sessionary.integrations.langchain import SessionaryChatMessageHistory
from sessionary.integrations.openai_agents import SessionarySession
from sessionary.integrations.pydantic_ai import (
    AsyncSessionaryMessageHistory,
    SessionaryMessageHistory,
)

BOUND = 30.0
"""Seconds a close may take on a loaded machine before it counts as a hang."""


async def _twice(close: Any) -> None:
    await asyncio.wait_for(close(), BOUND)
    await asyncio.wait_for(close(), BOUND)


async def test_async_adapters_close_twice(store_url: str) -> None:
    agents = SessionarySession("chat", store_url)
    await agents.add_items([{"role": "user", "content": "hi"}])
    await _twice(agents.close)

    service = SessionarySessionService(store_url)
    await service.create_session(app_name="app", user_id="ann")
    await _twice(service.close)

    history = AsyncSessionaryMessageHistory("chat", store_url)
    await history.load()
    await _twice(history.close)

    chain = SessionaryChatMessageHistory("chat", store_url)
    await chain.aget_messages()
    await _twice(chain.aclose)


def test_sync_adapters_close_twice(store_url: str) -> None:
    history = SessionaryMessageHistory("chat", store_url)
    history.load()
    history.close()
    history.close()

    chain = SessionaryChatMessageHistory("chat", store_url)
    assert chain.messages == []
    chain.close()
    chain.close()
