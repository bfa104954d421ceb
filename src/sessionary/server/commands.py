"""The server's commands as plain functions, for the `sessionary` CLI to call.

| function | runs |
| --- | --- |
| `serve(db, ...)` | the HTTP API, its docs and the web viewer (uvicorn), until stopped |
| `mcp(db, ...)` | the MCP server over stdio or streamable HTTP, until stopped |
| `create_key(db, tenant, ...)` | makes an API key; returns its record and its token |
| `list_keys(db, ...)` | the keys' records (never their secrets) |
| `revoke_key(db, key_id)` | revokes a key |

The `sessionary` CLI offers them as ``sessionary serve``, ``sessionary mcp`` and
``sessionary keys create|list|revoke`` (`sessionary.cli._serve`). `db` is a store URL
or a SQLite file path.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from sessionary.blocks import BlockSpec, SessionConfig
from sessionary.crypto import Encryption
from sessionary.errors import InvalidInput
from sessionary.records import Scope
from sessionary.server._hosts import is_loopback, served_names
from sessionary.server._uvicorn import uvicorn_config
from sessionary.server.app import DEFAULT_MAX_BODY, create_app, encrypted
from sessionary.server.keys import ApiKey, Keyring
from sessionary.stores.base import AsyncStore
from sessionary.stores.registry import open_async_store

if TYPE_CHECKING:
    from mcp.server import Server
    from starlette.types import ASGIApp

__all__ = [
    "DEFAULT_MCP_BLOCKS",
    "create_key",
    "list_keys",
    "mcp",
    "mcp_config",
    "parse_block",
    "revoke_key",
    "serve",
]

T = TypeVar("T")
DEFAULT_MCP_BLOCKS = ("memory:writable:user",)
"""The blocks `mcp` offers when given none: one writable block shared by the user's sessions."""

_log = logging.getLogger("sessionary.server")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""Characters a key's name may not hold: C0, DEL, C1, and the bidirectional overrides."""


def serve(
    db: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    auth: bool = True,
    tenant: str = "default",
    user: str = "default",
    cors_origins: Sequence[str] = (),
    max_body_bytes: int = DEFAULT_MAX_BODY,
    log_level: str = "info",
    encryption: Encryption | None = None,
    allowed_hosts: Sequence[str] = (),
) -> None:
    """Serve the HTTP API and the viewer on `host`:`port` until interrupted.

    Args:
        db: The store URL or SQLite path.
        host: The address to listen on (default: loopback only).
        port: The port.
        auth: Require API keys (`create_key`); False serves `tenant` to anyone who can
            connect, so it is refused on an address other than loopback.
        tenant: The tenant served without keys.
        user: The default user served without keys.
        cors_origins: Browser origins allowed to call the API (none by default).
        max_body_bytes: The largest request body taken.
        log_level: uvicorn's log level.
        encryption: Encrypt what is stored at rest with these keys (see `create_app`).
        allowed_hosts: Host names served besides loopback's (``localhost``, 127.0.0.1,
            ::1) and `host`, such as a reverse proxy's. Without API keys, or with this
            given, a request naming another host answers 421 and one from another web
            origin (not in `cors_origins`) 403: the guard against DNS rebinding.

    Raises:
        InvalidInput: If `auth` is off on a non-loopback address.
    """
    import uvicorn

    if not auth and not is_loopback(host):
        raise InvalidInput(f"refusing to serve without API keys on {host}; use loopback")
    app = create_app(
        db,
        auth=auth,
        tenant=tenant,
        user=user,
        cors_origins=cors_origins,
        max_body_bytes=max_body_bytes,
        encryption=encryption,
        allowed_hosts=sorted(served_names(host, allowed_hosts))
        if allowed_hosts or not auth
        else None,
    )
    uvicorn.Server(uvicorn_config(app, host, port, log_level)).run()


def parse_block(text: str) -> BlockSpec:
    """Return the stored block ``label[:kind[:level]]`` names (kind: writable by default).

    Raises:
        InvalidInput: If the text does not name a block.
    """
    label, _, rest = text.partition(":")
    kind, _, level = rest.partition(":")
    return BlockSpec(label, kind=kind or "writable", level=level or "session")  # type: ignore[arg-type]


def mcp_config(blocks: Sequence[str] = DEFAULT_MCP_BLOCKS, history: bool = True) -> SessionConfig:
    """Return the config `mcp` offers: the named stored blocks and the history tools."""
    specs = tuple(parse_block(text) for text in blocks)
    return SessionConfig(blocks=specs, history_tools=history)


def mcp(
    db: str,
    *,
    transport: Literal["stdio", "http"] = "stdio",
    tenant: str = "default",
    user: str = "default",
    session_id: str | None = None,
    blocks: Sequence[str] = DEFAULT_MCP_BLOCKS,
    history: bool = True,
    host: str = "127.0.0.1",
    port: int = 8001,
    auth: bool = True,
    encryption: Encryption | None = None,
) -> None:
    """Serve the memory tools over MCP until the client disconnects or it is interrupted.

    Args:
        db: The store URL or SQLite path.
        transport: "stdio" (for a client that starts the server) or "http" (streamable
            HTTP at ``http://host:port/mcp``).
        tenant: The tenant the tools act for.
        user: The user the tools act for.
        session_id: Bind every call to this session; None: each call names one.
        blocks: Stored blocks to offer, each ``label[:kind[:level]]``.
        history: Offer session_search, session_list and session_history.
        host: The HTTP address (loopback by default).
        port: The HTTP port.
        auth: Over HTTP, require an API key (`create_key`) and act in its scope; False
            serves `tenant`/`user` to anyone who connects, refused off loopback.
        encryption: Encrypt what is stored at rest with these keys (see `create_app`).

    Raises:
        InvalidInput: For an unknown transport, or `auth` off on a non-loopback address.
    """
    from sessionary.server.mcp import create_mcp_server, mcp_http_app

    scope, config = Scope(tenant, user), mcp_config(blocks, history)
    if transport not in ("stdio", "http"):
        raise InvalidInput(f"an MCP transport is 'stdio' or 'http', not {transport!r}")
    if transport == "http" and not auth and not is_loopback(host):
        raise InvalidInput(f"refusing to serve MCP without API keys on {host}; use loopback")

    async def run() -> None:
        store = open_async_store(db)
        try:
            sessions = encrypted(store, encryption)
            server = create_mcp_server(sessions, scope, session_id=session_id, config=config)
            if transport == "stdio":
                await _run_stdio(server)
            else:
                keyring = Keyring(store) if auth else None
                await _run_http(mcp_http_app(server, host=host, keyring=keyring), host, port)
        finally:
            await store.close()

    asyncio.run(run())


async def _run_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def _run_http(app: ASGIApp, host: str, port: int) -> None:
    import uvicorn

    await uvicorn.Server(uvicorn_config(app, host, port)).serve()


def _with_keyring(db: str, work: Callable[[Keyring], Awaitable[T]]) -> T:
    async def run() -> T:
        store: AsyncStore = open_async_store(db)
        try:
            return await work(Keyring(store))
        finally:
            await store.close()

    return asyncio.run(run())


def create_key(db: str, tenant: str, user: str | None = None, name: str = "") -> tuple[ApiKey, str]:
    """Make an API key for `tenant` (only `user`, if given); return its record and token.

    The token is shown only here: the store keeps a salted hash of it.

    Raises:
        InvalidId: If the tenant or user is malformed.
        InvalidInput: If the name holds a control character (it is shown on terminals).
    """
    if isinstance(name, str) and _CONTROL.search(name):
        raise InvalidInput(f"a key's name must hold no control characters; got {name!r:.80}")
    return _with_keyring(db, lambda ring: ring.create(tenant, user, name))


def list_keys(db: str, tenant: str | None = None) -> list[ApiKey]:
    """Return the API keys' records (of one tenant, if given), revoked ones too."""
    return _with_keyring(db, lambda ring: ring.list(tenant))


def revoke_key(db: str, key_id: str) -> ApiKey:
    """Revoke an API key by its id; servers stop taking it within their key cache time.

    Raises:
        NotFound: If there is no such key.
    """
    return _with_keyring(db, lambda ring: ring.revoke(key_id))
