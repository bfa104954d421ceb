"""How compaction calls a summarizer's or extractor's method: off the loop when it blocks.

`AsyncCallout` and `Callout` are a hand-written pair with the same method name, so that
the generated synchronous compactor (`tools/async_to_sync.py` strips the ``Async``
prefix) calls `Callout`, which calls the method directly, where the asynchronous one
awaits `AsyncCallout`. A synchronous method (the offline `StructuredSummarizer`, the
`HeuristicExtractor`, or one of your own) is CPU or blocking I/O work: called inline from
async code it would hold the event loop for its whole run (seconds for a session of
megabytes), stalling every other task, so the async flavour runs it in a worker thread.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["AsyncCallout", "Callout"]


def _is_async(method: Callable[[Any], Any]) -> bool:
    call = getattr(method, "__call__", None)  # noqa: B004 - an object with an async __call__
    return inspect.iscoroutinefunction(method) or inspect.iscoroutinefunction(call)


class AsyncCallout:
    """Calls a user-supplied method from async code without blocking the event loop."""

    @staticmethod
    async def call(method: Callable[[Any], Any], request: object) -> object:
        """Await an async method; run a synchronous one in a worker thread.

        A synchronous method that returns an awaitable has it awaited here, on the loop.
        """
        if _is_async(method):
            result = method(request)
        else:
            result = await asyncio.to_thread(method, request)
        if inspect.isawaitable(result):
            result = await result
        return result


class Callout:
    """Calls a user-supplied method from synchronous code: directly, on the caller's thread."""

    @staticmethod
    def call(method: Callable[[Any], Any], request: object) -> object:
        """Return what `method(request)` returns."""
        return method(request)
