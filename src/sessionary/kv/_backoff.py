"""Waiting between compare-and-set attempts: a hand-written async/sync pair.

A writer whose `commit` lost a race re-reads and tries again. A short, growing, random
pause spreads the retries of several losers so that they do not collide again in step.
After `deadline` seconds of losing, the writer gives up with `Conflict`.
"""

from __future__ import annotations

import asyncio
import random
import time

from sessionary.errors import Conflict

__all__ = ["AsyncBackoff", "Backoff"]

FIRST_PAUSE = 0.0005
LONGEST_PAUSE = 0.05
DEADLINE = 60.0


class Backoff:
    """Pauses between the attempts of one write (sync)."""

    def __init__(self, what: str, deadline: float = DEADLINE) -> None:
        self.what = what
        self.attempts = 0
        self._give_up = time.monotonic() + deadline

    def pause_seconds(self) -> float:
        """Return how long to wait before the next attempt.

        Raises:
            Conflict: If the deadline has passed.
        """
        if time.monotonic() > self._give_up:
            raise Conflict(f"{self.what}: gave up after {self.attempts} lost races")
        self.attempts += 1
        ceiling = min(LONGEST_PAUSE, FIRST_PAUSE * 2 ** min(self.attempts, 16))
        return random.uniform(0, ceiling)

    def wait(self) -> None:
        """Sleep before the next attempt."""
        time.sleep(self.pause_seconds())


class AsyncBackoff(Backoff):
    """Pauses between the attempts of one write (async: the event loop keeps running)."""

    async def wait(self) -> None:  # type: ignore[override]
        """Sleep before the next attempt."""
        await asyncio.sleep(self.pause_seconds())
