"""The server under load and odd requests: a busy loop, partial writes, slow clients."""

from __future__ import annotations

import asyncio
import http.client
import json
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _served import uvicorn_serving
from fastapi import FastAPI

from sessionary.compaction.policy import CompactionPolicy
from sessionary.compaction.summary import SummaryRequest
from sessionary.server import create_app
from sessionary.server.commands import create_key

JSON = {"content-type": "application/json"}


def _client(app: FastAPI, **headers: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app)
    return httpx.AsyncClient(transport=transport, base_url="http://test", headers=headers)


@pytest.fixture
async def app(server_store_url: str) -> AsyncIterator[FastAPI]:
    made = create_app(server_store_url, auth=False)
    async with made.router.lifespan_context(made):
        yield made


def _messages(n: int) -> list[dict[str, Any]]:
    return [{"role": "user" if i % 2 else "assistant", "content": f"m{i} " * 20} for i in range(n)]


async def test_a_compaction_runs_its_sync_summarizer_off_the_event_loop(tmp_path: Path) -> None:
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    class Slow:
        def summarize(self, request: SummaryRequest) -> str:
            started.set()
            release.wait(5)
            finished.set()
            return "the summary"

    made = create_app(
        f"sqlite:///{tmp_path / 'a.db'}", auth=False, compaction=CompactionPolicy(summarizer=Slow())
    )
    async with made.router.lifespan_context(made), _client(made) as c:
        await c.post("/v1/sessions", json={"id": "s"})
        await c.post("/v1/sessions/s/messages", json={"messages": _messages(6)})
        body = {"protect_head": 0, "tail_tokens": 0}
        compaction = asyncio.create_task(c.post("/v1/sessions/s/compact", json=body))
        assert await asyncio.to_thread(started.wait, 5)
        health = await c.get("/healthz")
        assert health.status_code == 200 and not finished.is_set()  # served meanwhile
        release.set()
        made_overlay = await compaction
        assert made_overlay.status_code == 200 and made_overlay.json()["summary"] == "the summary"


async def test_a_refused_session_update_changes_nothing(app: FastAPI) -> None:
    async with _client(app) as c:
        await c.post("/v1/sessions", json={"id": "s", "name": "before", "metadata": {"k": 1}})
        before = (await c.get("/v1/sessions/s")).json()
        bad = b'{"name": "CHANGED", "metadata": {"x": NaN}, "end_reason": "done"}'
        r = await c.patch("/v1/sessions/s", content=bad, headers=JSON)
        assert r.status_code == 400 and r.json()["error"]["type"] == "InvalidInput"
        assert (await c.get("/v1/sessions/s")).json() == before
        ok = {"name": "after", "metadata": {"k": 2}, "end_reason": "done"}
        changed = (await c.patch("/v1/sessions/s", json=ok)).json()
        assert (changed["name"], changed["metadata"], changed["end_reason"]) == (
            "after",
            {"k": 2},
            "done",
        )
        assert changed["ended_at"] is not None
        assert (await c.patch("/v1/sessions/s", json={})).json() == changed


async def test_versions_beyond_64_bits_are_refused_on_every_store(app: FastAPI) -> None:
    async with _client(app) as c:
        await c.post("/v1/sessions", json={"id": "s"})
        await c.put("/v1/sessions/s/blocks/mem", json={"content": "x"})
        for version in (2**63, 10**30):
            r = await c.get("/v1/sessions/s/blocks/mem", params={"version": version})
            assert r.status_code == 422 and r.json()["error"]["type"] == "InvalidRequest"
            r = await c.patch(
                "/v1/sessions/s/state", json={"a": 1}, headers={"If-Match": f'"{version}"'}
            )
            assert r.status_code == 400 and r.json()["error"]["type"] == "InvalidInput"
        r = await c.get("/v1/sessions/s/blocks/mem", params={"version": 2**63 - 1})
        assert r.status_code == 404


async def test_an_unexpected_error_answers_500_and_keeps_the_connection(tmp_path: Path) -> None:
    made = create_app(f"sqlite:///{tmp_path / 'a.db'}", auth=False)

    async def boom() -> None:
        raise RuntimeError("a bug")

    made.add_api_route("/boom", boom)
    async with uvicorn_serving(made) as base:
        port = int(base.rsplit(":", 1)[1])

        def two_requests() -> list[tuple[int, bytes]]:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            try:
                answers = []
                for path in ("/boom", "/healthz"):
                    conn.request("GET", path)
                    response = conn.getresponse()
                    answers.append((response.status, response.read()))
                    assert not response.will_close
                return answers
            finally:
                conn.close()

        (status, body), healthy = await asyncio.to_thread(two_requests)
    assert status == 500 and json.loads(body)["error"]["type"] == "InternalError"
    assert healthy[0] == 200


REBINDING = {"Host": "attacker.example", "Origin": "http://attacker.example"}


async def _guarded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **options: Any) -> FastAPI:
    """The app `serve` would run on loopback with these options (uvicorn not started)."""
    import uvicorn

    from sessionary.server import commands

    served: list[FastAPI] = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self: served.append(self.config.app))
    commands.serve(f"sqlite:///{tmp_path / 'a.db'}", host="127.0.0.1", port=8000, **options)
    return served[0]


async def test_serve_without_keys_refuses_dns_rebinding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = await _guarded(tmp_path, monkeypatch, auth=False, cors_origins=["http://app.test"])
    async with made.router.lifespan_context(made), _client(made) as c:
        await c.post("/v1/sessions", json={"id": "s"}, headers={"Host": "127.0.0.1:8000"})
        r = await c.get("/v1/sessions", headers={"Host": "attacker.example"})
        assert r.status_code == 421 and r.json()["error"]["type"] == "MisdirectedRequest"
        assert (await c.delete("/v1/sessions/s", headers=REBINDING)).status_code == 421
        other_origin = {"Host": "127.0.0.1:8000", "Origin": "http://attacker.example"}
        r = await c.delete("/v1/sessions/s", headers=other_origin)
        assert r.status_code == 403 and r.json()["error"]["type"] == "Forbidden"
        for host, origin in [
            ("127.0.0.1:8000", "http://127.0.0.1:8000"),
            ("localhost:8000", "http://localhost:5173"),
            ("[::1]:8000", None),
            ("LOCALHOST", "http://app.test"),
        ]:
            headers = {"Host": host} | ({"Origin": origin} if origin else {})
            assert (await c.get("/v1/sessions/s", headers=headers)).status_code == 200, headers


async def test_serve_takes_extra_hosts_and_checks_none_with_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = await _guarded(tmp_path, monkeypatch, auth=False, allowed_hosts=["sessions.lan"])
    async with extra.router.lifespan_context(extra), _client(extra) as c:
        assert (await c.get("/healthz", headers={"Host": "sessions.lan"})).status_code == 200
        assert (await c.get("/healthz", headers=REBINDING)).status_code == 421
    keyed = await _guarded(tmp_path, monkeypatch)  # a page without the key reads nothing
    async with keyed.router.lifespan_context(keyed), _client(keyed) as c:
        assert (await c.get("/v1/sessions", headers=REBINDING)).status_code == 401


async def test_a_body_that_never_comes_is_408_and_the_connection_closed(tmp_path: Path) -> None:
    made = create_app(f"sqlite:///{tmp_path / 'a.db'}", auth=False, body_seconds=0.5)
    async with uvicorn_serving(made) as base:
        host, port = base.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        head = b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"
        writer.write(head)
        answer = await asyncio.wait_for(reader.read(), 10)  # all of it: the server closes
        writer.close()
    status, _, rest = answer.partition(b"\r\n")
    assert status.startswith(b"HTTP/1.1 408") and b"connection: close" in rest.lower()
    assert json.loads(rest.partition(b"\r\n\r\n")[2])["error"]["type"] == "RequestTimeout"


@pytest.mark.parametrize("sent", [b"", b"GET /healthz HTTP/1.1\r\nHost: x\r\n"])
async def test_headers_that_never_complete_lose_their_connection(
    tmp_path: Path, sent: bytes
) -> None:
    from sessionary.server._uvicorn import uvicorn_config

    made = create_app(f"sqlite:///{tmp_path / 'a.db'}", auth=False)
    config = uvicorn_config(made, "127.0.0.1", 0, "warning", header_seconds=0.5)
    async with uvicorn_serving(made, config) as base:
        port = int(base.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")  # answered, kept alive
        assert (await reader.readuntil(b'"ok"}')).startswith(b"HTTP/1.1 200")
        writer.write(sent)
        assert await asyncio.wait_for(reader.read(), 3) == b""  # closed by the deadline
        writer.close()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await asyncio.wait_for(reader.read(), 3) == b""  # a silent new connection too
        writer.close()


async def test_mistyped_fields_are_422(app: FastAPI) -> None:
    async with _client(app) as c:
        await c.post("/v1/sessions", json={"id": "s"})
        for path, body in [
            ("/v1/sessions/s/usage", {"input_tokens": "5"}),
            ("/v1/sessions/s/usage", {"output_tokens": True}),
            ("/v1/sessions/s/usage", {"cost": "0.25"}),
            ("/v1/sessions/s/compact", {"protect_head": "3"}),
            ("/v1/sessions/s/compact", {"tail_tokens": False}),
            ("/v1/sessions", {"id": 5}),
        ]:
            r = await c.post(path, json=body)
            assert r.status_code == 422, (path, body)
            assert r.json()["error"]["type"] == "InvalidRequest"
        used = await c.post("/v1/sessions/s/usage", json={"input_tokens": 5, "cost": 1})
        assert used.status_code == 200 and used.json()["cost"] == 1.0


@pytest.mark.parametrize(
    "body", [b'{"id": "\\xff\\xfe"}'.replace(b"\\xff\\xfe", b"\xff\xfe"), b"[" * 3000]
)
async def test_unparsable_bodies_are_malformed_json(app: FastAPI, body: bytes) -> None:
    async with _client(app) as c:
        r = await c.post("/v1/sessions", content=body, headers=JSON)
    assert r.status_code == 400 and r.json()["error"]["type"] == "MalformedJSON"


async def test_405_keeps_its_allow_header(app: FastAPI) -> None:
    async with _client(app) as c:
        r = await c.put("/v1/sessions")
    assert r.status_code == 405 and r.json()["error"]["type"] == "MethodNotAllowed"
    assert "GET" in r.headers["allow"]  # Starlette names the first matching route's methods


@pytest.mark.parametrize("body", [b"{not json", b"[" * 3000])
async def test_a_caller_without_a_key_is_told_so_before_its_body_is_judged(
    tmp_path: Path, body: bytes
) -> None:
    url = f"sqlite:///{tmp_path / 'keyed.db'}"
    _, token = await asyncio.to_thread(create_key, url, "acme", "ada", "robustness")
    made = create_app(url)
    async with made.router.lifespan_context(made), _client(made) as c:
        anonymous = await c.post("/v1/sessions", content=body, headers=JSON)
        wrong = await c.post(
            "/v1/sessions", content=body, headers={**JSON, "authorization": "Bearer nope"}
        )
        keyed = await c.post(
            "/v1/sessions", content=body, headers={**JSON, "authorization": f"Bearer {token}"}
        )
    assert anonymous.status_code == 401 and anonymous.json()["error"]["type"] == "Unauthorized"
    assert anonymous.headers["www-authenticate"] == "Bearer"
    assert wrong.status_code == 401
    assert keyed.status_code == 400 and keyed.json()["error"]["type"] == "MalformedJSON"


async def test_head_answers_as_get_without_a_body_on_a_real_server(tmp_path: Path) -> None:
    made = create_app(f"sqlite:///{tmp_path / 'a.db'}", auth=False)
    async with uvicorn_serving(made) as base:
        async with httpx.AsyncClient(base_url=base) as c:
            created = await c.post("/v1/sessions", json={"id": "s"})
            assert created.status_code == 201
        port = int(base.rsplit(":", 1)[1])

        def over_one_connection() -> list[tuple[str, int, dict[str, str], bytes]]:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            answers = []
            try:
                for method, path in [
                    ("GET", "/healthz"),
                    ("HEAD", "/healthz"),
                    ("HEAD", "/v1/sessions/s"),
                    ("HEAD", "/v1/sessions/s/events"),  # a stream: headers, then stopped
                    ("HEAD", "/v1/sessions/nope"),
                    ("HEAD", "/v1/sessions/s/compact"),  # POST only
                    ("GET", "/v1/sessions/s"),
                ]:
                    conn.request(method, path)
                    response = conn.getresponse()
                    body = response.read()
                    answers.append((method, response.status, dict(response.headers), body))
                    assert not response.will_close, (method, path)
                return answers
            finally:
                conn.close()

        answers = await asyncio.to_thread(over_one_connection)
    (_, _, got, got_body), *heads, (_, last, _, _) = answers
    health, session, events, missing, post_only = heads
    assert health[1] == 200 and health[3] == b""
    assert health[2]["content-length"] == got["content-length"] == str(len(got_body))
    assert session[1] == 200 and session[3] == b"" and int(session[2]["content-length"]) > 0
    assert events[1] == 200 and events[2]["content-type"].startswith("text/event-stream")
    assert missing[1] == 404 and post_only[1] == 405
    assert last == 200  # the connection still serves after the stream was cut
