"""Server-sent events: new messages of a session, as they are stored, on any backend.

No store has a change feed in the store protocol, so the server notices new messages by
polling the session's registry row (one small keyed read) and comparing its head and
message count. The poll backs off while nothing changes: it starts at `poll[0]` seconds
after a change and doubles up to `poll[1]` (0.05 s and 2 s by default), so an idle
session costs one read every 2 s and an active one is seen within tens of milliseconds.
Every subscriber of the same session in one server process shares one poll loop (a
`Watcher` feed), so the read rate grows with the sessions watched, not the clients.
(PostgreSQL's LISTEN/NOTIFY or a Redis channel could replace the poll where a store
offers a notification; the store protocol has no such method yet.)

The stream sends ``message`` events (data: the message's JSON, id: the message id) for
messages added on the head's branch, then a ``head`` event (data: the head id and the
message count); a checkout sends only the ``head`` event. Sent with ``Last-Event-ID``
(as browsers do on reconnect), it first replays what followed that message on the head's
branch (at most `WINDOW` messages).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import APIRouter, Header, Request
from sse_starlette import EventSourceResponse

from sessionary.model import Message
from sessionary.records import Scope, SessionInfo
from sessionary.server._context import Manager, state_of
from sessionary.session import AsyncSession
from sessionary.stores.base import AsyncStore

__all__ = ["WINDOW", "Watcher", "router"]

router = APIRouter(prefix="/v1", tags=["sessions"])
WINDOW = 100
"""The most messages one burst of events replays."""


@dataclass(slots=True)
class _Feed:
    info: SessionInfo | None = None
    gone: bool = False
    subscribers: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    def publish(self) -> None:
        old, self.changed = self.changed, asyncio.Event()
        old.set()


def _signature(info: SessionInfo | None) -> tuple[str | None, int] | None:
    return None if info is None else (info.head_id, info.message_count)


class Watcher:
    """Polls watched sessions' rows with backoff; one loop per session for all subscribers.

    Args:
        store: The store to poll.
        poll: The first and the longest interval between polls, in seconds.
    """

    def __init__(self, store: AsyncStore, poll: tuple[float, float] = (0.05, 2.0)) -> None:
        self.store, self.poll = store, poll
        self._feeds: dict[tuple[Scope, str], _Feed] = {}

    async def follow(self, scope: Scope, session_id: str) -> AsyncIterator[SessionInfo]:
        """Yield the session's row now and after every change of its head or count."""
        key = (scope, session_id)
        feed = self._feeds.setdefault(key, _Feed())
        feed.subscribers += 1
        if feed.task is None:
            feed.task = asyncio.create_task(self._run(key, feed))
        try:
            seen: Any = ()
            while True:
                waiter = feed.changed
                if feed.info is not None and _signature(feed.info) != seen:
                    seen = _signature(feed.info)
                    yield feed.info
                    continue
                if feed.gone:
                    return
                await waiter.wait()
        finally:
            await self._leave(key, feed)

    async def _leave(self, key: tuple[Scope, str], feed: _Feed) -> None:
        feed.subscribers -= 1
        if feed.subscribers == 0:
            self._feeds.pop(key, None)
            if feed.task is not None:
                feed.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await feed.task

    async def _run(self, key: tuple[Scope, str], feed: _Feed) -> None:
        first, longest = self.poll
        interval = first
        while True:
            info = await self.store.get_session(*key)
            if info is None:
                feed.gone = True
                feed.publish()
                return
            if _signature(info) != _signature(feed.info):
                feed.info = info
                feed.publish()
                interval = first
            else:
                interval = min(interval * 2, longest)
            await asyncio.sleep(interval)

    async def close(self) -> None:
        """Stop every poll loop."""
        for feed in list(self._feeds.values()):
            if feed.task is not None:
                feed.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await feed.task
        self._feeds.clear()


async def _after(handle: AsyncSession, last: str | None, count: int | None) -> list[Message]:
    """The messages on the head's branch after `last` (the newest `count`, at most WINDOW)."""
    window = await handle.history(limit=WINDOW if count is None else min(count, WINDOW), raw=True)
    ids = [message.id for message in window]
    if last in ids:
        return window[ids.index(last) + 1 :]
    return window if count is not None else []


def _event(kind: str, data: Any, event_id: str | None = None) -> dict[str, Any]:
    event = {"event": kind, "data": json.dumps(data, separators=(",", ":"))}
    return event if event_id is None else {**event, "id": event_id}


async def _events(
    watcher: Watcher, handle: AsyncSession, scope: Scope, resume: str | None
) -> AsyncIterator[dict[str, Any]]:
    start = await handle.info()
    last, count = start.head_id, start.message_count
    if resume is not None and resume != last:
        for message in await _after(handle, resume, None):
            yield _event("message", message.to_dict(), message.id)
    async for now in watcher.follow(scope, handle.id):
        if now.message_count > count and now.head_id != last:
            for message in await _after(handle, last, now.message_count - count):
                yield _event("message", message.to_dict(), message.id)
        last, count = now.head_id, now.message_count
        yield _event("head", {"head_id": last, "message_count": count})


@router.get("/sessions/{session_id}/events")
async def session_events(
    session_id: str,
    request: Request,
    mgr: Manager,
    last_event_id: Annotated[str | None, Header()] = None,
) -> EventSourceResponse:
    """Stream the session's new messages and head moves as server-sent events."""
    handle = mgr.session(session_id)
    await handle.info()  # 404 now rather than an empty stream
    watcher: Watcher = state_of(request).watcher
    return EventSourceResponse(_events(watcher, handle, mgr.scope, last_event_id), ping=15)
