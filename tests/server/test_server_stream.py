"""Server-sent events over a real uvicorn: new messages and head moves arrive as events."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
from _served import uvicorn_serving

from sessionary.server import create_app
from sessionary.server.stream import Watcher

HANG = 60  # a bound on a hang only


async def _events(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    event: dict[str, Any] = {}
    async for line in response.aiter_lines():
        if not line:
            if "event" in event:
                yield event
            event = {}
        elif not line.startswith(":"):
            field, _, value = line.partition(":")
            event[field] = value.strip()


async def _next(stream: AsyncIterator[dict[str, Any]], kind: str) -> dict[str, Any]:
    async with asyncio.timeout(HANG):
        async for event in stream:
            if event["event"] == kind:
                return event
    raise AssertionError(f"the stream ended before a {kind!r} event")


async def test_new_messages_stream_as_events(server_store_url: str) -> None:
    app = create_app(server_store_url, auth=False, poll=(0.01, 0.05))
    async with uvicorn_serving(app) as base, httpx.AsyncClient(base_url=base) as c:
        await c.post("/v1/sessions", json={"id": "live"})
        first = await c.post(
            "/v1/sessions/live/messages", json={"messages": [{"role": "user", "content": "0"}]}
        )
        first_id = first.json()["messages"][0]["id"]
        async with c.stream("GET", "/v1/sessions/live/events") as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            stream = _events(response)
            start = json.loads((await _next(stream, "head"))["data"])
            assert start == {"head_id": first_id, "message_count": 1}
            batch = [{"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}]
            sent = (await c.post("/v1/sessions/live/messages", json={"messages": batch})).json()
            got = [await _next(stream, "message") for _ in sent["messages"]]
            assert [e["id"] for e in got] == [m["id"] for m in sent["messages"]]
            assert json.loads(got[1]["data"])["parts"][0]["text"] == "b"
            head = json.loads((await _next(stream, "head"))["data"])
            assert head == {"head_id": sent["messages"][1]["id"], "message_count": 3}
            await c.put("/v1/sessions/live/head", json={"message_id": first_id})
            moved = await _next(stream, "head")  # a checkout sends no message events
            assert json.loads(moved["data"])["head_id"] == first_id
        async with c.stream(
            "GET", "/v1/sessions/live/events", headers={"Last-Event-ID": "no-such-id"}
        ) as response:
            assert json.loads((await _next(_events(response), "head"))["data"])["head_id"] == (
                first_id
            )


async def test_one_poll_loop_serves_every_subscriber(server_store_url: str) -> None:
    from sessionary.manager import AsyncSessionManager

    async with AsyncSessionManager(server_store_url) as mgr:
        chat = await mgr.create(id="shared")
        watcher = Watcher(mgr.store, (0.01, 0.02))
        followers = [watcher.follow(mgr.scope, "shared") for _ in range(3)]
        firsts = [await anext(f) for f in followers]
        assert all(info.message_count == 0 for info in firsts)
        assert len(watcher._feeds) == 1
        await chat.append({"role": "user", "content": "x"})
        async with asyncio.timeout(HANG):
            seconds = [await anext(f) for f in followers]
        assert all(info.message_count == 1 for info in seconds)
        for f in followers:
            await f.aclose()
        assert watcher._feeds == {}
        await mgr.delete("shared")
        ended = [info async for info in watcher.follow(mgr.scope, "shared")]
        assert ended == []
        await watcher.close()
