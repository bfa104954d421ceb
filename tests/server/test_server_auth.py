"""API keys and scope: no key is 401, another tenant's ids are 404 and change nothing."""

from __future__ import annotations

import json

import httpx
import pytest
from _served import Served

from sessionary import SessionManager
from sessionary.server import KEYS_TENANT, create_app
from sessionary.server.keys import Keyring

MESSAGE = {"messages": [{"role": "user", "content": "secret plan"}]}


async def _seed(c: httpx.AsyncClient) -> str:
    await c.post("/v1/sessions", json={"id": "a-chat"})
    r = await c.post("/v1/sessions/a-chat/messages", json=MESSAGE)
    await c.patch("/v1/sessions/a-chat/state", json={"k": 1})
    await c.put("/v1/sessions/a-chat/blocks/memory", json={"content": "a's memory"})
    return str(r.json()["messages"][0]["id"])


async def test_missing_unknown_and_revoked_keys_are_401(served: Served) -> None:
    key, token = await served.keyring.create("acme")
    async with served.client() as c:
        r = await c.get("/v1/sessions")
        assert r.status_code == 401 and r.json()["error"]["type"] == "Unauthorized"
        assert r.headers["www-authenticate"] == "Bearer"
        for bad in ("nope", token + "x", token.replace("sess_", "sk_"), "sess_0000000000000000.x"):
            r = await c.get("/v1/sessions", headers={"Authorization": f"Bearer {bad}"})
            assert r.status_code == 401, bad
        assert (await c.get("/v1/sessions", headers={"X-API-Key": token})).status_code == 200
        await served.keyring.revoke(key.id)
        r = await c.get("/v1/sessions", headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 401


async def test_another_tenants_ids_are_404_and_change_nothing(served: Served) -> None:
    async with served.client(await served.token("tenant-a")) as a:
        message_id = await _seed(a)
        before = (await a.get("/v1/sessions/a-chat/tree")).json()
    sid, mid = "a-chat", message_id
    attempts = [
        ("GET", f"/v1/sessions/{sid}", None),
        ("PATCH", f"/v1/sessions/{sid}", {"name": "stolen"}),
        ("DELETE", f"/v1/sessions/{sid}", None),
        ("POST", f"/v1/sessions/{sid}/fork", {}),
        ("POST", f"/v1/sessions/{sid}/messages", MESSAGE),
        ("GET", f"/v1/sessions/{sid}/messages", None),
        ("GET", f"/v1/sessions/{sid}/tree", None),
        ("GET", f"/v1/sessions/{sid}/messages/{mid}", None),
        ("GET", f"/v1/sessions/{sid}/messages/{mid}/children", None),
        ("PUT", f"/v1/sessions/{sid}/head", {"message_id": None}),
        ("GET", f"/v1/sessions/{sid}/state", None),
        ("PATCH", f"/v1/sessions/{sid}/state", {"k": 2}),
        ("GET", f"/v1/sessions/{sid}/blocks", None),
        ("PUT", f"/v1/sessions/{sid}/blocks/memory", {"content": "overwritten"}),
        ("GET", f"/v1/sessions/{sid}/blocks/memory/versions", None),
        ("GET", f"/v1/sessions/{sid}/overlays", None),
        ("POST", f"/v1/sessions/{sid}/compact", {}),
        ("GET", f"/v1/sessions/{sid}/usage", None),
        ("POST", f"/v1/sessions/{sid}/usage", {"input_tokens": 5}),
        ("GET", f"/v1/sessions/{sid}/events", None),
    ]
    async with served.client(await served.token("tenant-b")) as b:
        for method, path, body in attempts:
            r = await b.request(method, path, json=body)
            assert r.status_code == 404, (method, path, r.text)
            assert r.json()["error"]["type"] == "SessionNotFound", (method, path)
        assert (await b.get("/v1/sessions")).json()["sessions"] == []
        assert (await b.get("/v1/search", params={"q": "secret"})).json()["hits"] == []
        scoped = await b.get("/v1/search", params={"q": "secret", "session_id": sid})
        unknown = await b.get("/v1/search", params={"q": "secret", "session_id": "no-such"})
        assert scoped.status_code == unknown.status_code
        assert scoped.json()["error"]["type"] == unknown.json()["error"]["type"]
    async with served.client(await served.token("tenant-a")) as a:
        assert (await a.get("/v1/sessions/a-chat/tree")).json() == before
        info = (await a.get("/v1/sessions/a-chat")).json()
        assert info["name"] is None and info["input_tokens"] == 0
        assert (await a.get("/v1/sessions/a-chat/state")).json()["data"] == {"k": 1}
        blocks = (await a.get("/v1/sessions/a-chat/blocks")).json()
        assert [b["content"] for b in blocks] == ["a's memory"]


async def test_user_bound_and_tenant_wide_keys(served: Served) -> None:
    async with served.client(await served.token("acme", "ada")) as ada:
        await ada.post("/v1/sessions", json={"id": "ada-chat"})
        r = await ada.get("/v1/sessions", headers={"X-Sessionary-User": "bob"})
        assert r.status_code == 403 and r.json()["error"]["type"] == "Forbidden"
        assert (await ada.get("/v1/sessions", headers={"X-Sessionary-User": "ada"})).is_success
    async with served.client(await served.token("acme", "bob")) as bob:
        assert (await bob.get("/v1/sessions/ada-chat")).status_code == 404
    wide = await served.token("acme")
    async with served.client(wide, **{"X-Sessionary-User": "ada"}) as admin:
        assert [s["id"] for s in (await admin.get("/v1/sessions")).json()["sessions"]] == [
            "ada-chat"
        ]
        assert (await admin.get("/v1/users")).json() == {"users": ["ada"]}
        bad = await admin.get("/v1/sessions", headers={"X-Sessionary-User": "../bob"})
        assert bad.status_code == 400 and bad.json()["error"]["type"] == "InvalidId"
    async with served.client(wide) as admin:
        assert (await admin.get("/v1/sessions")).json()["sessions"] == []  # user "default"


async def test_keys_are_stored_hashed_and_the_reserved_tenant_is_refused(
    server_store_url: str,
) -> None:
    app = create_app(server_store_url)
    async with app.router.lifespan_context(app):
        ring: Keyring = app.state.sessionary.keyring
        key, token = await ring.create("acme", "ada", "ci")
        with pytest.raises(ValueError, match="reserved"):
            await ring.create(KEYS_TENANT)
        assert [k.id for k in await ring.list("acme")] == [key.id]
        assert await ring.list("other") == []
    secret = token.split(".", 1)[1]
    with SessionManager(server_store_url) as mgr:
        docs = mgr.store.list_documents(
            mgr.scope.__class__(KEYS_TENANT, "default"), "app", None, "apikey", 10, None
        ).items
    stored = json.dumps([doc.body for doc in docs])
    assert key.id in [doc.key for doc in docs]
    assert secret not in stored and token not in stored and "sha256" in stored


async def test_cors_is_off_by_default_and_on_for_listed_origins(server_store_url: str) -> None:
    preflight = {"Origin": "http://app.example", "Access-Control-Request-Method": "GET"}
    for origins, allowed in (((), False), (("http://app.example",), True)):
        app = create_app(server_store_url, auth=False, cors_origins=origins)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
                r = await c.options("/v1/sessions", headers=preflight)
                got = r.headers.get("access-control-allow-origin")
                assert (got == "http://app.example") is allowed
                r = await c.get("/v1/sessions", headers={"Origin": "http://evil.example"})
                assert "access-control-allow-origin" not in r.headers


async def test_without_keys_one_open_scope_is_served(server_store_url: str) -> None:
    app = create_app(server_store_url, auth=False, tenant="local")
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            await c.post("/v1/sessions", json={"id": "mine"})
            info = (await c.get("/v1/info")).json()
            assert (info["tenant"], info["user"], info["auth"]) == ("local", "default", False)
    with SessionManager(server_store_url, tenant="local") as mgr:
        assert mgr.get("mine") is not None
