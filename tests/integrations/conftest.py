"""Fixtures for the framework integrations (the backends come from tests/conftest.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest


@pytest.fixture
def sync_loop() -> Iterator[None]:
    """Close the event loop a framework's `run_sync` left on this thread.

    The frameworks' sync entry points create a thread-default loop and keep it for later
    calls; closing it at the end of the test keeps warnings-as-errors quiet about it.
    """
    yield
    loop = asyncio.get_event_loop_policy()._local._loop  # type: ignore[attr-defined]
    if loop is not None and not loop.is_closed():
        loop.close()
    asyncio.set_event_loop(None)
