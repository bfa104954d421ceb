"""The ASGI app: `create_app` serves the HTTP API, its OpenAPI docs and the web viewer.

```python
from sessionary.server import create_app

app = create_app("postgresql://localhost/agents")       # API keys required (see keys.py)
app = create_app("sqlite:///dev.db", auth=False)        # one open scope, for local use
```

Serve it with any ASGI server (``uvicorn.run(app)``; `sessionary.server.commands.serve`
does that). Routes live under ``/v1``; ``/docs`` and ``/redoc`` are the interactive
documentation (their scripts are served from the wheel, not a CDN, so they work offline),
``/openapi.json`` the schema, ``/ui/`` the viewer and ``/healthz`` a liveness probe.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from importlib.resources import files
from typing import Any

import anyio
from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi_offline import FastAPIOffline
from starlette.responses import JSONResponse, RedirectResponse
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sessionary.blocks import SessionConfig
from sessionary.compaction.policy import CompactionPolicy
from sessionary.crypto import Encryption
from sessionary.manager import DEFAULT_URL
from sessionary.records import Scope as StoreScope
from sessionary.server import routes_memory, routes_sessions, stream
from sessionary.server._context import ServerState, caller_scope
from sessionary.server._errors import error_body, install_error_handlers
from sessionary.server._head import HeadAsGet
from sessionary.server._hosts import HostCheck
from sessionary.server.keys import Keyring
from sessionary.server.schemas import ErrorOut
from sessionary.stores.base import AsyncStore
from sessionary.stores.encrypted import AsyncEncryptedStore
from sessionary.stores.registry import open_async_store

__all__ = ["DEFAULT_BODY_SECONDS", "DEFAULT_MAX_BODY", "BodyLimit", "create_app"]

DEFAULT_MAX_BODY = 8 * 1024 * 1024
"""The largest request body taken by default, in bytes (larger: 413 before any work)."""

DEFAULT_BODY_SECONDS = 60.0
"""How long a request body may take to arrive by default (slower: 408, connection closed)."""

_log = logging.getLogger("sessionary.server")
_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorOut} for code in (400, 401, 403, 404, 409, 412, 413, 422)
}


class BodyLimit:
    """ASGI middleware: refuse request bodies over `max_bytes` with 413, reading no more.

    A declared `Content-Length` over the limit is refused before the body is read; a
    chunked body is read up to the limit, then refused. The JSON API buffers bodies
    anyway, so reading it here first costs nothing extra.

    A body not whole within `seconds` of the request's headers is refused with 408 and
    the connection closed: a client that declares a body and never sends it would
    otherwise hold its connection (a file descriptor) for ever.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, seconds: float = DEFAULT_BODY_SECONDS) -> None:
        self.app, self.max_bytes, self.seconds = app, max_bytes, seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request, refusing its body first if it is over the limit."""
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(send)
            return
        chunks: list[bytes] = []
        outcome = "late"
        with anyio.move_on_after(self.seconds):
            outcome = await self._read(receive, chunks)
        if outcome == "whole":
            await self.app(scope, _replay(b"".join(chunks), receive), send)
        elif outcome == "over":
            await self._refuse(send)
        elif outcome == "late":
            text = f"the request body did not arrive within {self.seconds:g} s"
            await _send(send, 408, "RequestTimeout", text, close=True)

    async def _read(self, receive: Receive, chunks: list[bytes]) -> str:
        """Read the body into `chunks`: "whole", "over" the limit, or "gone" (disconnected)."""
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return "gone"
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_bytes:
                return "over"
            if not message.get("more_body", False):
                return "whole"

    async def _refuse(self, send: Send) -> None:
        text = f"the request body is over {self.max_bytes:,} bytes"
        await _send(send, 413, "PayloadTooLarge", text)


async def _send(send: Send, status: int, type_name: str, text: str, close: bool = False) -> None:
    response = JSONResponse(error_body(status, type_name, text), status)
    headers = [*response.raw_headers, *([(b"connection", b"close")] if close else [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": response.body})


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: wait for the disconnect, as usual

    return replay


def create_app(
    store: str | AsyncStore = DEFAULT_URL,
    *,
    auth: bool = True,
    tenant: str = "default",
    user: str = "default",
    config: SessionConfig | None = None,
    compaction: CompactionPolicy | None = None,
    cors_origins: Sequence[str] = (),
    max_body_bytes: int = DEFAULT_MAX_BODY,
    body_seconds: float = DEFAULT_BODY_SECONDS,
    key_cache_seconds: float = 5.0,
    poll: tuple[float, float] = (0.05, 2.0),
    viewer: bool = True,
    encryption: Encryption | None = None,
    allowed_hosts: Sequence[str] | None = None,
) -> FastAPI:
    """Return the ASGI app serving a store's sessions over HTTP.

    Args:
        store: A store URL, or an open store (left open when the app stops; a store
            opened here from a URL is closed when the app's lifespan ends).
        auth: Require an API key on every request (see `sessionary.server.keys`). With
            False, every request acts in `tenant` (user: the ``X-Sessionary-User``
            header, else `user`); use it only on a trusted machine.
        tenant: The tenant served without keys.
        user: The default user served without keys.
        config: The context blocks shown for every session besides the stored ones.
        compaction: The policy of `POST .../compact` (default: the offline summarizer).
        cors_origins: Browser origins allowed to call the API; none by default.
        max_body_bytes: The largest request body taken.
        body_seconds: How long a request body may take to arrive once its headers have
            (slower: 408, and the connection is closed).
        key_cache_seconds: How long a key read from the store is trusted.
        poll: The event streams' first and longest poll interval, in seconds.
        viewer: Serve the web viewer at ``/ui/``.
        encryption: Encrypt message bodies, state and documents at rest with these keys
            (as `SessionManager(encryption=...)` does); the API keys stay readable by
            `sessionary keys`, which never needs the encryption keys.
        allowed_hosts: Answer only requests whose ``Host`` names one of these (any port),
            and whose ``Origin``, if sent, is one of theirs or in `cors_origins`: others
            get 421 and 403, so a web page cannot reach the API by DNS rebinding (see
            `sessionary.server._hosts`). None: any host (`serve` sets them when it
            serves without API keys).

    Raises:
        InvalidURL: If `store` is not a valid store URL.
        InvalidId: If `tenant` or `user` is malformed.
    """
    owned = isinstance(store, str)
    opened: AsyncStore = open_async_store(store) if isinstance(store, str) else store
    sessions = encrypted(opened, encryption)
    state = ServerState(
        store=sessions,
        keyring=Keyring(opened, cache_seconds=key_cache_seconds) if auth else None,
        open_scope=StoreScope(tenant, user),
        watcher=stream.Watcher(sessions, poll),
        config=config if config is not None else SessionConfig(),
        compaction=compaction,
    )

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await state.watcher.close()
            if owned:
                await opened.close()

    # The docs pages load Swagger UI and ReDoc from files in the wheel: they work offline.
    app = FastAPIOffline(
        title="sessionary",
        summary="Durable, branching, searchable sessions and working memory for LLM agents.",
        version=_version(),
        lifespan=lifespan,
        responses=_ERRORS,
    )
    app.state.sessionary = state
    install_error_handlers(app, caller_scope)
    for module in (routes_sessions, stream, routes_memory):
        app.include_router(module.router)
    _add_plain_routes(app, viewer)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes, seconds=body_seconds)
    if cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(cors_origins),
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "If-Match", "X-Sessionary-User"],
            expose_headers=["ETag"],
        )
    if allowed_hosts is not None:
        app.add_middleware(HostCheck, names=allowed_hosts, origins=cors_origins)
    app.add_middleware(HeadAsGet)
    return app


def encrypted(store: AsyncStore, encryption: Encryption | None) -> AsyncStore:
    """`store` as the sessions see it: through `encryption` if given (never closing `store`)."""
    if encryption is None:
        return store
    return AsyncEncryptedStore(store, encryption, owns_inner=False)


def _add_plain_routes(app: FastAPI, viewer: bool) -> None:
    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    if viewer:
        static = files("sessionary.server") / "static"
        app.mount("/ui", StaticFiles(directory=str(static), html=True), name="viewer")

        @app.get("/", include_in_schema=False)
        async def root() -> RedirectResponse:
            return RedirectResponse("/ui/")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sessionary")
    except PackageNotFoundError:
        return "0"
