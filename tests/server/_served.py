"""An app in its lifespan with its keyring, for the server tests."""

from __future__ import annotations

from dataclasses import dataclass

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
