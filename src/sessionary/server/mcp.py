"""An MCP server offering a session's memory tools, on the official `mcp` SDK.

The tools are the library's own (`sessionary.tools`): their names, descriptions and
JSON schemas come from the session's `tools()` and every call goes through its
dispatcher (`call_tool`), which never raises, so an agent sees exactly what an agent
using the library in-process sees. The server is bound to one scope (tenant and user)
and either to one session (`session_id`) or, without one, to whichever session each
call names: every context tool then takes an extra required ``session_id`` argument
(history tools search all the user's sessions and take none).

```python
server = create_mcp_server(store, Scope("acme", "ada"), session_id="chat-1")
```

Serve it over stdio or streamable HTTP with `sessionary.server.commands.mcp`. Over HTTP,
`mcp_http_app` asks for the API keys of `sessionary serve` (a bearer token) through the
SDK's own token check: each request then acts in its key's tenant (and user, for a key
bound to one; else the server's user), and the SDK keeps one key's MCP sessions from
another's.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from pydantic import AnyHttpUrl
from starlette.applications import Starlette

from sessionary.blocks import SessionConfig
from sessionary.errors import SessionaryError
from sessionary.ids import check_id
from sessionary.manager import AsyncSessionManager
from sessionary.records import Scope
from sessionary.server._blocks import discover_blocks
from sessionary.server._hosts import is_loopback, mcp_security, served_names
from sessionary.server.keys import Keyring
from sessionary.session import AsyncSession
from sessionary.stores.base import AsyncStore
from sessionary.stores.registry import open_async_store
from sessionary.tools import HISTORY_TOOLS
from sessionary.toolspec import ToolResult, ToolSpec, parse_arguments

__all__ = ["SESSION_ARGUMENT", "MemoryTools", "create_mcp_server", "mcp_http_app"]

SESSION_ARGUMENT = "session_id"
_PLACEHOLDER = "mcp-tool-listing"
_TENANT_CLAIM = "sessionary_tenant"


def _with_session_argument(spec: ToolSpec) -> ToolSpec:
    """The spec with a required `session_id` argument, for a server bound to no session."""
    schema = dict(spec.parameters)
    schema["properties"] = {
        SESSION_ARGUMENT: {
            "type": "string",
            "description": "The id of the session whose memory to use (made if new).",
            "minLength": 1,
        },
        **schema.get("properties", {}),
    }
    schema["required"] = [SESSION_ARGUMENT, *schema.get("required", [])]
    return dataclasses.replace(spec, parameters=schema)


class MemoryTools:
    """The memory tools of one scope, for one session or for the session each call names.

    Args:
        store: The store the sessions live in.
        scope: The tenant and user whose data the tools see.
        config: The context blocks (and `history_tools`) the sessions are opened with.
        session_id: The session every call acts on, or None to take it from each call.
        create: Create a named session that does not exist yet (else the call fails).
    """

    def __init__(
        self,
        store: AsyncStore,
        scope: Scope,
        config: SessionConfig | None = None,
        *,
        session_id: str | None = None,
        create: bool = True,
    ) -> None:
        config = config if config is not None else SessionConfig()
        self.manager = AsyncSessionManager(
            store, tenant=scope.tenant, user=scope.user, config=config
        )
        self.session_id = None if session_id is None else check_id(session_id, "session id")
        self.create = create

    async def _session(self, session_id: str) -> AsyncSession:
        mgr = self.manager
        handle = await mgr.get_or_create(session_id) if self.create else mgr.session(session_id)
        await handle.info()
        config = await discover_blocks(mgr, session_id)
        return AsyncSession(mgr.store, mgr.scope, session_id, config, compaction=mgr.compaction)

    async def specs(self) -> list[ToolSpec]:
        """Return the tools offered now (with `session_id` added when bound to no session)."""
        if self.session_id is not None:
            return await (await self._session(self.session_id)).tools()
        # No session to describe: describe the tools as for an empty one, in a scratch store.
        scratch = open_async_store("memory://")
        try:
            mgr = AsyncSessionManager(scratch, config=self.manager.config)
            specs = await (await mgr.create(id=_PLACEHOLDER)).tools()
        finally:
            await scratch.close()
        return [s if s.name in HISTORY_TOOLS else _with_session_argument(s) for s in specs]

    async def call(self, name: str, arguments: object = None) -> ToolResult:
        """Run a tool; like the library's dispatcher it never raises."""
        if self.session_id is not None:
            return await self._call_in(self.session_id, name, arguments)
        if name in HISTORY_TOOLS and self.manager.config.history_tools:
            return await self.manager.call_tool(name, arguments)
        try:
            args = parse_arguments(arguments)
            session_id = check_id(args.pop(SESSION_ARGUMENT, None), SESSION_ARGUMENT)
        except SessionaryError as exc:
            return ToolResult(f"Error: {exc}", True)
        return await self._call_in(session_id, name, args)

    async def _call_in(self, session_id: str, name: str, arguments: object) -> ToolResult:
        try:
            session = await self._session(session_id)
        except SessionaryError as exc:
            return ToolResult(f"Error: {exc}", True)
        return await session.call_tool(name, arguments)


def _tool(spec: ToolSpec) -> types.Tool:
    return types.Tool(name=spec.name, description=spec.description, input_schema=spec.parameters)


def create_mcp_server(
    store: AsyncStore,
    scope: Scope,
    *,
    session_id: str | None = None,
    config: SessionConfig | None = None,
    create: bool = True,
    name: str = "sessionary",
) -> Server[Any]:
    """Return an MCP server (the SDK's low-level `Server`) offering the memory tools.

    Args:
        store: An open store; the caller closes it.
        scope: The tenant and user the tools act for.
        session_id: Bind every call to this session; None takes it from each call.
        config: The context blocks offered (stored blocks are found as well).
        create: Create sessions named by calls that do not exist yet.
        name: The server's name, as clients show it.
    """
    tools = MemoryTools(store, scope, config, session_id=session_id, create=create)

    def tools_for(ctx: ServerRequestContext[Any]) -> MemoryTools:
        caller = _caller_scope(ctx, scope)
        if caller == scope:
            return tools
        return MemoryTools(store, caller, config, session_id=session_id, create=create)

    async def list_tools(
        ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        specs = await tools_for(ctx).specs()
        return types.ListToolsResult(tools=[_tool(spec) for spec in specs])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        result = await tools_for(ctx).call(params.name, params.arguments or {})
        text = types.TextContent(type="text", text=result.text)
        return types.CallToolResult(content=[text], is_error=result.is_error)

    return Server(
        name,
        instructions="Your durable memory: context blocks you can edit and your past sessions.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _caller_scope(ctx: ServerRequestContext[Any], default: Scope) -> Scope:
    """The scope of the API key that authenticated this HTTP request, else `default`."""
    scope = getattr(ctx.request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    token = getattr(user, "access_token", None)
    if not isinstance(token, AccessToken) or not token.claims:
        return default
    return Scope(str(token.claims[_TENANT_CLAIM]), token.subject or default.user)


class _KeyCheck:
    """The SDK's bearer-token check (`TokenVerifier`), answered by the server's API keys."""

    def __init__(self, keyring: Keyring) -> None:
        self.keyring = keyring

    async def verify_token(self, token: str) -> AccessToken | None:
        key = await self.keyring.verify(token)
        if key is None:
            return None
        return AccessToken(
            token=token,
            client_id=key.id,
            scopes=[],
            subject=key.user,
            claims={_TENANT_CLAIM: key.tenant},
        )


def mcp_http_app(server: Server[Any], *, host: str, keyring: Keyring | None) -> Starlette:
    """Return the streamable HTTP app (at ``/mcp``) of `server`.

    Args:
        server: From `create_mcp_server`; its scope serves requests when `keyring` is None.
        host: The address served (on loopback, requests naming another host are refused,
            as `serve` refuses them: `sessionary.server._hosts`).
        keyring: The API keys every request must bear (``Authorization: Bearer``), each
            acting in its own scope; None serves `server`'s scope to anyone.
    """
    # On loopback, the names `serve` takes: any other Host is 421, another web origin 403.
    security = mcp_security(served_names(host)) if is_loopback(host) else None
    if keyring is None:
        return server.streamable_http_app(host=host, transport_security=security)
    # A resource server only: no OAuth routes are offered, the issuer is never contacted.
    auth = AuthSettings(issuer_url=AnyHttpUrl("http://localhost"), resource_server_url=None)
    return server.streamable_http_app(
        host=host, auth=auth, token_verifier=_KeyCheck(keyring), transport_security=security
    )
