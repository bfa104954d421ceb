"""An app in its lifespan with its keyring, for the server tests."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
from fastapi import FastAPI

from sessionary.server import Keyring


@dataclass
class Served:
    """An app in its lifespan, its keyring, and a client factory."""

    app: FastAPI
    keyring: Keyring

    def client(self, token: str | None = None, **headers: str) -> httpx.AsyncClient:
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        transport = httpx.ASGITransport(app=self.app)
        return httpx.AsyncClient(transport=transport, base_url="http://test", headers=headers)

    async def token(self, tenant: str, user: str | None = None) -> str:
        return (await self.keyring.create(tenant, user))[1]


@contextlib.asynccontextmanager
async def uvicorn_serving(app: Any, config: Any = None) -> AsyncIterator[str]:
    """Serve `app` with a real uvicorn on a free loopback port; yield its base URL.

    `config`, if given, is the `uvicorn.Config` to serve with instead (port 0).
    """
    import uvicorn

    if config is None:
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
