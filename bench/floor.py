"""The floor under any thread-based async SQLite: a round trip to a worker thread and back.

An async API over the blocking ``sqlite3`` module has to run each call on another thread
and wake the event loop when it is done: one wake-up each way, whatever the library. A no-op
sent through the same mechanism measures that cost alone, so raw sqlite3's append plus one
round trip is the best any such library can do. Two mechanisms are timed, in the append
phase's rounds next to the libraries: sessionary's own runner (the one its async SQLite store
uses) and ``asyncio.to_thread`` for reference.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from statistics import median
from time import perf_counter

__all__ = ["Floor", "floors"]


def _noop() -> None:
    return None


@dataclass
class Floor:
    """One way to run a no-op on a worker thread, timed per ``await`` in one event loop."""

    key: str
    label: str
    start: Callable[[], Callable[[], Awaitable[None]]]  # called inside the loop
    stop: Callable[[], Awaitable[None]] | None = None
    samples: list[float] = field(default_factory=list)
    _hop: Callable[[], Awaitable[None]] | None = field(default=None, init=False, repr=False)

    @property
    def median(self) -> float | None:
        return median(self.samples) if self.samples else None

    def time(self, loop: asyncio.AbstractEventLoop, count: int) -> None:
        """Time ``count`` round trips; the first block starts the worker, untimed."""
        loop.run_until_complete(self._time(count))

    async def _time(self, count: int) -> None:
        if self._hop is None:
            self._hop = self.start()
            await self._hop()
        hop, samples = self._hop, self.samples
        for _ in range(count):
            began = perf_counter()
            await hop()
            samples.append(perf_counter() - began)

    def finish(self, loop: asyncio.AbstractEventLoop) -> None:
        if self.stop is not None:
            loop.run_until_complete(self.stop())


def floors() -> list[Floor]:
    """The mechanisms to time: sessionary's runner, and ``asyncio.to_thread``."""
    from sessionary.stores._runner import AsyncRunner  # private: the async store's own

    runner = AsyncRunner(blocking=True)

    async def close_runner() -> None:
        await runner.close(_noop)

    return [
        Floor("runner", "sessionary's runner", lambda: runner.bind(_noop), close_runner),
        Floor("to_thread", "`asyncio.to_thread`", lambda: _to_thread),
    ]


def _to_thread() -> Awaitable[None]:
    return asyncio.to_thread(_noop)
