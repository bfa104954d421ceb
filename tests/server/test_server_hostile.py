"""Hostile input: oversized bodies, malformed JSON, path tricks, odd queries → clean 4xx."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from sessionary.server import create_app

LIMIT = 64 * 1024


async def _raw(app: FastAPI, method: str, raw_path: bytes, body: bytes = b"") -> tuple[int, Any]:
    """Call the app with a path exactly as a client could put it on the wire."""
    path, _, query = raw_path.partition(b"?")
    from urllib.parse import unquote_to_bytes

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": unquote_to_bytes(path).decode("utf-8", "replace"),
        "raw_path": path,
        "query_string": query,
        "root_path": "",
        "headers": [(b"host", b"test"), (b"content-type", b"application/json")],
        "client": ("127.0.0.1", 1),
        "server": ("test", 80),
    }
    sent: list[dict[str, Any]] = []
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    status = sent[0]["status"]
    payload = b"".join(m.get("body", b"") for m in sent[1:])
    return status, json.loads(payload) if payload else None


@pytest.fixture
async def app(server_store_url: str) -> AsyncIterator[FastAPI]:
    made = create_app(server_store_url, auth=False, max_body_bytes=LIMIT)
    async with made.router.lifespan_context(made):
        yield made


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        await c.post("/v1/sessions", json={"id": "s1"})
        r = await c.post(
            "/v1/sessions/s1/messages", json={"messages": [{"role": "user", "content": "hi"}]}
        )
        assert r.status_code == 201
        await c.patch("/v1/sessions/s1/state", json={"k": 1})
        yield c


async def _snapshot(c: httpx.AsyncClient) -> Any:
    sessions = (await c.get("/v1/sessions")).json()["sessions"]
    trees = [(await c.get(f"/v1/sessions/{s['id']}/tree")).json() for s in sessions]
    states = [(await c.get(f"/v1/sessions/{s['id']}/state")).json() for s in sessions]
    rows = [{k: v for k, v in s.items() if k != "updated_at"} for s in sessions]
    return rows, trees, states


def _error(r: httpx.Response, status: int, kind: str) -> None:
    assert r.status_code == status, r.text
    assert r.json()["error"]["type"] == kind and r.json()["error"]["status"] == status


async def test_oversized_bodies_are_413_and_store_nothing(client: httpx.AsyncClient) -> None:
    before = await _snapshot(client)
    big = {"messages": [{"role": "user", "content": "x" * (LIMIT + 1)}]}
    _error(await client.post("/v1/sessions/s1/messages", json=big), 413, "PayloadTooLarge")

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: chunked on the wire
        yield b'{"messages": [{"role": "user", "content": "'
        for _ in range(LIMIT // 1024 + 1):
            yield b"y" * 1024
        yield b'"}]}'

    r = await client.post("/v1/sessions/s1/messages", content=chunks())
    _error(r, 413, "PayloadTooLarge")
    lying = await client.post(
        "/v1/sessions/s1/messages", content=b"{}", headers={"Content-Length": "abc"}
    )
    assert lying.status_code in (400, 413)
    assert await _snapshot(client) == before


async def test_a_message_over_the_store_limit_is_413(server_store_url: str) -> None:
    joiner = "&" if "?" in server_store_url else "?"
    app = create_app(f"{server_store_url}{joiner}max_message_bytes=2048", auth=False)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c,
    ):
        await c.post("/v1/sessions", json={"id": "s"})
        big = {"messages": [{"role": "user", "content": "z" * 4096}]}
        _error(await c.post("/v1/sessions/s/messages", json=big), 413, "PayloadTooLarge")
        assert (await c.get("/v1/sessions/s")).json()["message_count"] == 0


async def test_malformed_and_misshapen_json(client: httpx.AsyncClient) -> None:
    before = await _snapshot(client)
    headers = {"Content-Type": "application/json"}
    for body in (b"{bad", b'{"messages": [', b"\xff\xfe", b'{"a": NaN'):
        r = await client.post("/v1/sessions/s1/messages", content=body, headers=headers)
        _error(r, 400, "MalformedJSON")
    shapes: list[tuple[str, Any, int, str]] = [
        ("/v1/sessions/s1/messages", {"messages": []}, 422, "InvalidRequest"),
        ("/v1/sessions/s1/messages", {"messages": "hi"}, 422, "InvalidRequest"),
        (
            "/v1/sessions/s1/messages",
            {"messages": [{"role": "user"}], "x": 1},
            422,
            "InvalidRequest",
        ),
        (
            "/v1/sessions/s1/messages",
            {"messages": [{"role": "wizard", "content": "x"}]},
            400,
            "InvalidMessage",
        ),
        (
            "/v1/sessions/s1/messages",
            {"messages": [{"role": "user", "parts": [{"type": "?"}]}]},
            400,
            "InvalidMessage",
        ),
        (
            "/v1/sessions/s1/messages",
            {"messages": [{"role": "user", "content": "x"}], "parent": "no-such"},
            404,
            "MessageNotFound",
        ),
        ("/v1/sessions", {"id": "a/b"}, 400, "InvalidId"),
        ("/v1/sessions", {"id": "x" * 129}, 422, "InvalidRequest"),
        ("/v1/sessions", {"metadata": [1]}, 422, "InvalidRequest"),
        ("/v1/sessions/s1/fork", {"at_message_id": "../../etc"}, 400, "InvalidId"),
    ]
    for path, body, status, kind in shapes:
        _error(await client.post(path, json=body), status, kind)
    _error(await client.get("/v1/sessions", params={"limit": 10**9}), 422, "InvalidRequest")
    _error(await client.get("/v1/sessions", params={"cursor": "!!!"}), 400, "InvalidInput")
    assert await _snapshot(client) == before


@pytest.mark.parametrize(
    "raw_path",
    [
        b"/v1/sessions/..%2F..%2Fsessionary.server",
        b"/v1/sessions/s1%2F..%2Fs2/messages",
        b"/v1/sessions/s1/../s1/state",
        b"/v1/sessions/%2e%2e/state",
        b"/v1/sessions/a:b/state",
        b"/v1/sessions/s1%00/state",
        b"/v1/sessions/%E2%80%AEs1/state",
        b"/v1/sessions/" + b"a" * 300 + b"/state",
        b"/v1/sessions/s1/messages/x%2Fy/children",
        b"/v1/sessions/s1/blocks/..%2Fblock",
        b"/v1/sessions/s1/state?level=../../app",
    ],
)
async def test_path_tricks_are_clean_4xx(
    app: FastAPI, client: httpx.AsyncClient, raw_path: bytes
) -> None:
    before = await _snapshot(client)
    for method, body in (("GET", b""), ("PATCH", b'{"k": 99}'), ("PUT", b'{"content": "x"}')):
        status, payload = await _raw(app, method, raw_path, body)
        if status < 400:  # only the harmless normalised path may succeed, and only reading s1
            assert raw_path == b"/v1/sessions/s1/../s1/state" or raw_path.endswith(
                b"level=../../app"
            )
            continue
        assert 400 <= status < 500, (method, raw_path, status, payload)
        assert set(payload["error"]) == {"type", "message", "status"}
    after = await _snapshot(client)
    assert after[0] == before[0] and after[1] == before[1]


async def test_search_queries_cannot_break_out(client: httpx.AsyncClient) -> None:
    for q in ('" OR 1=1 --', "***", "NEAR(a b)", "hi\x00", "a" * 5000, '"unclosed', "-", "(("):
        r = await client.get("/v1/search", params={"q": q})
        assert r.status_code in (200, 400, 422), (q, r.text)
        if r.status_code == 200:
            assert all(hit["session_id"] == "s1" for hit in r.json()["hits"])
        else:
            assert "error" in r.json()
