"""`serve` with encryption at rest: the API reads clear text, the store holds none of it."""

from __future__ import annotations

import os

from _raw_dump import raw_dump
from _served import Served

from sessionary import SessionManager
from sessionary.crypto import Encryption, Keyring
from sessionary.server import Keyring as ServerKeys
from sessionary.server import create_app
from sessionary.server.app import encrypted
from sessionary.stores.registry import open_async_store

SECRET = "tangerine"


async def test_served_sessions_are_encrypted_at_rest(server_store_url: str) -> None:
    keys = Encryption(Keyring({"k1": os.urandom(32)}, "k1"))
    app = create_app(server_store_url, key_cache_seconds=0, encryption=keys)
    async with app.router.lifespan_context(app):
        _, token = await app.state.sessionary.keyring.create("acme")
        async with Served(app, app.state.sessionary.keyring).client(token) as c:
            assert (await c.post("/v1/sessions", json={"id": "chat"})).status_code == 201
            message = {"role": "user", "content": f"the code is {SECRET}"}
            r = await c.post("/v1/sessions/chat/messages", json={"messages": [message]})
            assert r.status_code == 201, r.text
            assert (await c.patch("/v1/sessions/chat/state", json={"k": SECRET})).status_code == 200
            r = await c.put("/v1/sessions/chat/blocks/memory", json={"content": SECRET * 2})
            assert r.status_code in (200, 201), r.text
            r = await c.get("/v1/sessions/chat/messages")
            assert SECRET in r.text
    rows = raw_dump(server_store_url, None)  # type: ignore[arg-type]
    assert rows and not [row for row in rows if SECRET in row]
    # The API keys stay readable without the encryption keys (as `sessionary keys list` reads).
    plain = open_async_store(server_store_url)
    try:
        assert [key.tenant for key in await ServerKeys(plain).list()] == ["acme"]
    finally:
        await plain.close()
    # What the server stored is what a manager with the same keys reads.
    with SessionManager(server_store_url, tenant="acme", encryption=keys) as manager:
        assert [m.text for m in manager.session("chat").history()] == [f"the code is {SECRET}"]


async def test_encrypted_never_closes_the_store_it_wraps() -> None:
    store = open_async_store("memory://")
    assert encrypted(store, None) is store
    wrapped = encrypted(store, Encryption(Keyring({"k1": os.urandom(32)}, "k1")))
    await wrapped.close()
    assert await store.list_scopes() == []  # still open: a closed store raises Closed
    await store.close()
