"""The MCP server with the SDK's own client: in-process, and over streamable HTTP."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest
from _served import uvicorn_serving
from mcp.client import Client

from sessionary import AsyncSessionManager, Message
from sessionary.records import Scope
from sessionary.server.commands import mcp_config
from sessionary.server.keys import Keyring
from sessionary.server.mcp import SESSION_ARGUMENT, create_mcp_server, mcp_http_app
from sessionary.stores.base import AsyncStore

ADA = Scope("acme", "ada")


@pytest.fixture
async def store(server_store_url: str) -> AsyncIterator[AsyncStore]:
    async with AsyncSessionManager(server_store_url, tenant="acme", user="ada") as mgr:
        chat = await mgr.create(id="chat-1")
        await chat.append(Message.user("the deploy key rotates on Fridays"))
        yield mgr.store


async def test_bound_server_offers_the_sessions_own_tools(store: AsyncStore) -> None:
    config = mcp_config(["memory:writable:user", "notes:skill"])
    server = create_mcp_server(store, ADA, session_id="chat-1", config=config)
    library = (
        await AsyncSessionManager(store, tenant="acme", user="ada", config=config)
        .session("chat-1")
        .tools()
    )
    async with Client(server) as client:
        listed = (await client.list_tools()).tools
        assert [(t.name, t.description, t.input_schema) for t in listed] == [
            (s.name, s.description, s.parameters) for s in library
        ]
        done = await client.call_tool("set_context", {"label": "memory", "content": "likes trains"})
        assert not done.is_error and done.content[0].text.startswith("Written to memory")
        found = await client.call_tool("session_search", {"query": "deploy key"})
        assert "chat-1" in found.content[0].text and "«deploy»" in found.content[0].text
        bad = await client.call_tool("set_context", {"label": "nope", "content": "x"})
        assert bad.is_error and "must be one of" in bad.content[0].text
        unknown = await client.call_tool("drop_tables", {})
        assert unknown.is_error
    mgr = AsyncSessionManager(store, tenant="acme", user="ada", config=config)
    versions = await mgr.session("chat-1").context_block_versions("memory")
    assert [(v.content, v.author) for v in versions] == [("likes trains", "model")]


async def test_unbound_server_takes_the_session_from_each_call(store: AsyncStore) -> None:
    server = create_mcp_server(store, ADA, config=mcp_config())
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert SESSION_ARGUMENT in tools["set_context"].input_schema["required"]
        assert SESSION_ARGUMENT not in tools["session_search"].input_schema["properties"]
        args = {"label": "memory", "content": "prefers tea", SESSION_ARGUMENT: "chat-2"}
        assert not (await client.call_tool("set_context", args)).is_error
        missing = await client.call_tool("set_context", {"label": "memory", "content": "x"})
        assert missing.is_error and SESSION_ARGUMENT in missing.content[0].text
        sneaky = {**args, SESSION_ARGUMENT: "../other"}
        assert (await client.call_tool("set_context", sneaky)).is_error
        listing = await client.call_tool("session_list", {})
        assert "chat-1" in listing.content[0].text and "chat-2" in listing.content[0].text


async def test_another_scope_sees_nothing(store: AsyncStore) -> None:
    server = create_mcp_server(store, Scope("other", "eve"), config=mcp_config())
    async with Client(server) as client:
        found = await client.call_tool("session_search", {"query": "deploy"})
        assert found.content[0].text == "No results found."
        history = await client.call_tool("session_history", {"session_id": "chat-1"})
        assert history.is_error


async def test_streamable_http_transport(store: AsyncStore) -> None:
    server = create_mcp_server(store, ADA, session_id="chat-1", config=mcp_config())
    app = server.streamable_http_app(host="127.0.0.1")
    async with uvicorn_serving(app) as base, Client(f"{base}/mcp") as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert "set_context" in names and "session_search" in names
        found = await client.call_tool("session_history", {"session_id": "chat-1"})
        assert "Fridays" in found.content[0].text


async def test_http_transport_asks_for_an_api_key_and_acts_in_its_scope(
    store: AsyncStore,
) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    keyring = Keyring(store)
    _, ada = await keyring.create("acme", "ada", "ada's agent")
    _, eve = await keyring.create("other", "eve", "eve's agent")
    server = create_mcp_server(store, ADA, config=mcp_config())
    app = mcp_http_app(server, host="127.0.0.1", keyring=keyring)

    @contextlib.asynccontextmanager
    async def client(base: str, token: str) -> AsyncIterator[Client]:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(f"{base}/mcp", http_client=http)) as c,
        ):
            yield c

    async with uvicorn_serving(app) as base:
        for token in (None, "sess_nope.wrong"):
            async with httpx2.AsyncClient() as raw:
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                answer = await raw.post(f"{base}/mcp", json={}, headers=headers)
            assert answer.status_code == 401
        async with client(base, ada) as mine:
            found = await mine.call_tool("session_search", {"query": "Fridays"})
            assert "Fridays" in found.content[0].text
        async with client(base, eve) as theirs:  # another tenant's key: another scope
            found = await theirs.call_tool("session_search", {"query": "Fridays"})
            assert found.content[0].text == "No results found."
            history = await theirs.call_tool("session_history", {"session_id": "chat-1"})
            assert history.is_error
        await keyring.revoke((await keyring.list("acme"))[0].id)
        async with httpx2.AsyncClient() as raw:
            answer = await raw.post(
                f"{base}/mcp", json={}, headers={"Authorization": f"Bearer {ada}"}
            )
        assert answer.status_code == 401
