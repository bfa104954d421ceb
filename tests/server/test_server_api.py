"""The HTTP API end to end over SQLite and PostgreSQL, through httpx's ASGI transport."""

from __future__ import annotations

import re
from typing import Any

import httpx
from _served import Served


def _msg(role: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": text, **extra}


async def _append(c: httpx.AsyncClient, sid: str, *messages: dict[str, Any], **body: Any) -> Any:
    r = await c.post(f"/v1/sessions/{sid}/messages", json={"messages": list(messages), **body})
    assert r.status_code == 201, r.text
    return r.json()["messages"]


async def test_sessions_messages_branches_and_search(served: Served) -> None:
    async with served.client(await served.token("acme")) as c:
        r = await c.post("/v1/sessions", json={"id": "chat", "name": "support", "model": "m1"})
        assert r.status_code == 201 and r.json()["name"] == "support"
        assert (await c.post("/v1/sessions", json={"id": "chat"})).json()["error"]["type"] == (
            "AlreadyExists"
        )
        q, a = await _append(
            c, "chat", _msg("user", "why does libfoo fail"), _msg("assistant", "a")
        )
        assert a["parent_id"] == q["id"]
        retry = (await _append(c, "chat", _msg("assistant", "retry"), parent=q["id"]))[0]

        children = (await c.get(f"/v1/sessions/chat/messages/{q['id']}/children")).json()
        assert [m["id"] for m in children["messages"]] == [a["id"], retry["id"]]
        history = (await c.get("/v1/sessions/chat/messages")).json()
        assert history["head_id"] == retry["id"]
        assert [m["id"] for m in history["messages"]] == [q["id"], retry["id"]]
        last = (await c.get("/v1/sessions/chat/messages", params={"limit": 1})).json()
        assert [m["id"] for m in last["messages"]] == [retry["id"]]
        other = (await c.get("/v1/sessions/chat/messages", params={"leaf": a["id"]})).json()
        assert [m["id"] for m in other["messages"]] == [q["id"], a["id"]]
        tree = (await c.get("/v1/sessions/chat/tree", params={"limit": 2})).json()
        assert len(tree["messages"]) == 2 and tree["next_cursor"]
        rest = (
            await c.get("/v1/sessions/chat/tree", params={"cursor": tree["next_cursor"]})
        ).json()
        assert len(rest["messages"]) == 1

        moved = (await c.put("/v1/sessions/chat/head", json={"message_id": a["id"]})).json()
        assert moved["head_id"] == a["id"] and moved["message_count"] == 3
        stale = await _append_raw(c, "chat", expected_head=retry["id"])
        assert stale.status_code == 409 and stale.json()["error"]["type"] == "HeadConflict"

        hits = (await c.get("/v1/search", params={"q": "libfoo"})).json()["hits"]
        assert [(h["message_id"], h["session_id"]) for h in hits] == [(q["id"], "chat")]
        snippet, spans = hits[0]["snippet"], hits[0]["spans"]
        assert [snippet[a:b] for a, b in spans] == ["libfoo"] and hits[0]["created_at"]
        assert "**" not in snippet and 0 < hits[0]["rank"] <= 1
        none = (await c.get("/v1/search", params={"q": "libfoo", "role": "assistant"})).json()
        assert none["hits"] == []

        fork = (await c.post("/v1/sessions/chat/fork", json={"at_message_id": q["id"]})).json()
        assert fork["parent_session_id"] == "chat" and fork["message_count"] == 1
        page = (await c.get("/v1/sessions", params={"limit": 1, "preview": True})).json()
        assert len(page["sessions"]) == 1 and page["next_cursor"]
        assert page["sessions"][0]["preview"].startswith("[user] why does")
        forks = (await c.get("/v1/sessions", params={"parent_session_id": "chat"})).json()
        assert [s["id"] for s in forks["sessions"]] == [fork["id"]]

        renamed = (await c.patch("/v1/sessions/chat", json={"name": "renamed"})).json()
        assert renamed["name"] == "renamed"
        ended = (await c.patch("/v1/sessions/chat", json={"end_reason": "done"})).json()
        assert ended["end_reason"] == "done" and ended["ended_at"]
        assert (await c.delete(f"/v1/sessions/{fork['id']}")).status_code == 204
        gone = await c.get(f"/v1/sessions/{fork['id']}")
        assert gone.status_code == 404 and gone.json()["error"]["type"] == "SessionNotFound"
        assert (await c.delete(f"/v1/sessions/{fork['id']}")).status_code == 404


async def _append_raw(c: httpx.AsyncClient, sid: str, **body: Any) -> httpx.Response:
    return await c.post(
        f"/v1/sessions/{sid}/messages", json={"messages": [_msg("user", "x")], **body}
    )


async def test_search_returns_the_authors_text_with_spans(served: Served) -> None:
    async with served.client(await served.token("acme")) as c:
        assert (await c.post("/v1/sessions", json={"id": "md"})).status_code == 201
        text = "This is **important**: run `make deploy` in /srv/app"
        await _append(c, "md", _msg("assistant", text), _msg("user", "deploy* please"))
        hits = (await c.get("/v1/search", params={"q": "deploy"})).json()["hits"]
        assert {h["snippet"] for h in hits} == {text, "deploy* please"}  # as written
        for hit in hits:
            assert [hit["snippet"][a:b] for a, b in hit["spans"]] == ["deploy"]
        hits = (await c.get("/v1/search", params={"q": "important OR srv"})).json()["hits"]
        (hit,) = hits
        assert [hit["snippet"][a:b] for a, b in hit["spans"]] == ["important", "srv"]


async def test_state_etag_and_if_match(served: Served) -> None:
    async with served.client(await served.token("acme", "ada")) as c:
        await c.post("/v1/sessions", json={"id": "s"})
        first = await c.patch("/v1/sessions/s/state", json={"ticket": "CI-42", "files": ["a"]})
        assert first.json() == {"level": "session", "data": first.json()["data"], "version": 1}
        assert first.headers["etag"] == '"1"'
        ok = await c.patch(
            "/v1/sessions/s/state", json={"files": None}, headers={"If-Match": '"1"'}
        )
        assert ok.status_code == 200 and ok.json()["data"] == {"ticket": "CI-42"}
        stale = await c.patch("/v1/sessions/s/state", json={"x": 1}, headers={"If-Match": '"1"'})
        assert stale.status_code == 412 and stale.json()["error"]["type"] == "VersionConflict"
        bad = await c.patch("/v1/sessions/s/state", json={"x": 1}, headers={"If-Match": "abc"})
        assert bad.status_code == 400
        now = await c.get("/v1/sessions/s/state")
        assert now.json()["data"] == {"ticket": "CI-42"} and now.headers["etag"] == '"2"'
        user = await c.patch("/v1/state/user", json={"tz": "UTC"})
        assert user.json() == {"level": "user", "data": {"tz": "UTC"}, "version": 1}
        assert (await c.get("/v1/state/app")).json()["version"] == 0
        assert (await c.get("/v1/state/session")).status_code == 400
        array = await c.patch("/v1/sessions/s/state", json=[1, 2])
        assert array.status_code == 422 and array.json()["error"]["type"] == "InvalidRequest"


async def test_blocks_versions_overlays_and_usage(served: Served) -> None:
    async with served.client(await served.token("acme")) as c:
        await c.post("/v1/sessions", json={"id": "s"})
        for n in range(6):
            await _append(
                c, "s", _msg("user", f"question {n} " * 30), _msg("assistant", f"answer {n}")
            )
        w1 = await c.put("/v1/sessions/s/blocks/memory", json={"content": "likes trains"})
        assert w1.status_code == 200 and w1.json()["level"] == "session"
        await c.put(
            "/v1/sessions/s/blocks/memory",
            json={"content": "hates planes", "action": "append", "author": "model"},
        )
        await c.put("/v1/sessions/s/blocks/profile", json={"content": "Ada", "level": "user"})
        blocks = {b["label"]: b for b in (await c.get("/v1/sessions/s/blocks")).json()}
        assert blocks["memory"]["content"] == "likes trains\nhates planes"
        assert blocks["profile"]["level"] == "user" and blocks["profile"]["kind"] == "writable"
        versions = (await c.get("/v1/sessions/s/blocks/memory/versions")).json()
        assert [(v["version"], v["author"]) for v in versions] == [(1, "user"), (2, "model")]
        old = (await c.get("/v1/sessions/s/blocks/memory", params={"version": 1})).json()
        assert old["content"] == "likes trains"
        missing = await c.get("/v1/sessions/s/blocks/nope")
        assert missing.status_code == 404 and missing.json()["error"]["type"] == "BlockNotFound"

        made = (
            await c.post("/v1/sessions/s/compact", json={"protect_head": 0, "tail_tokens": 1})
        ).json()
        assert made is not None and made["covered"] >= 2 and made["summary"]
        shown = (await c.get("/v1/sessions/s/overlays")).json()
        assert [o["id"] for o in shown] == [made["id"]]
        raw = (await c.get("/v1/sessions/s/messages", params={"raw": True})).json()["messages"]
        compacted = (await c.get("/v1/sessions/s/messages")).json()["messages"]
        assert len(compacted) < len(raw) == 12

        used = await c.post("/v1/sessions/s/usage", json={"input_tokens": 10, "cost": 0.5})
        assert used.json() == {
            "input_tokens": 10,
            "output_tokens": 0,
            "cost": 0.5,
            "message_count": 12,
        }
        assert (await c.get("/v1/sessions/s/usage")).json()["input_tokens"] == 10
        negative = await c.post("/v1/sessions/s/usage", json={"input_tokens": -1})
        assert negative.status_code == 422


async def test_openapi_docs_viewer_and_health(served: Served) -> None:
    async with served.client() as c:
        schema = (await c.get("/openapi.json")).json()
        assert "/v1/sessions/{session_id}/messages" in schema["paths"]
        assert "ErrorOut" in schema["components"]["schemas"]
        for page_url in ("/docs", "/redoc"):
            docs = (await c.get(page_url)).text
            assert "openapi.json" in docs and "cdn" not in docs.lower()
            scripts = re.findall(r'src="([^"]+\.js)"', docs)
            assert scripts, docs
            for script in scripts:  # served by the app itself: the page works offline
                asset = await c.get(script)
                assert asset.status_code == 200 and len(asset.content) > 100_000
        assert (await c.get("/healthz")).json() == {"status": "ok"}
        assert (await c.get("/")).status_code == 307
        page = await c.get("/ui/")
        assert page.status_code == 200 and "sessionary" in page.text
        nothing = await c.get("/v1/no-such-route")
        assert nothing.status_code in (401, 404)
