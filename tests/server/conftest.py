"""Fixtures for the server tests: an app over SQLite and PostgreSQL, and clients with keys."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from _served import Served

from sessionary.server import create_app

SERVER_BACKENDS = [
    pytest.param("sqlite", marks=pytest.mark.sqlite),
    pytest.param("postgres", marks=pytest.mark.postgres),
]


@pytest.fixture(params=SERVER_BACKENDS)
def server_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store for the server: SQLite and PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'server.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
async def served(server_store_url: str) -> AsyncIterator[Served]:
    """The app over a fresh store, keys required, with no key cache (revocation is instant)."""
    app = create_app(server_store_url, key_cache_seconds=0)
    async with app.router.lifespan_context(app):
        keyring = app.state.sessionary.keyring
        yield Served(app, keyring)


@pytest.fixture
def unavailable(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """The root conftest's `backend_unavailable`: skip locally, fail in CI."""
    root = request.config.pluginmanager.get_plugin(str(Path(__file__).parents[1] / "conftest.py"))
    found: Callable[[str], None] = root.backend_unavailable
    return found
