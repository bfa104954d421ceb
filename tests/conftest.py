"""Shared fixtures: every conformance test runs once per backend.

Backends that need a server join the `backend` parameter list when their URL is
reachable. Locally an unreachable server is skipped with the reason shown; with
`SESSIONARY_REQUIRE_BACKENDS=1` (CI sets it) the skip becomes a failure.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

import sessionary

REQUIRE_BACKENDS = os.environ.get("SESSIONARY_REQUIRE_BACKENDS", "") not in ("", "0")

# Every backend, by fixture name; each param carries a marker so `-m sqlite` selects one.
BACKENDS = [
    pytest.param("memory", marks=pytest.mark.memory),
    pytest.param("sqlite", marks=pytest.mark.sqlite),
]


# Backends whose data other processes can open: the cross-process guarantees run on these.
SHARED_BACKENDS = [
    pytest.param("sqlite", marks=pytest.mark.sqlite),
]


def pytest_configure(config: pytest.Config) -> None:
    for name in ("memory", "sqlite", "postgres", "mysql", "redis"):
        config.addinivalue_line("markers", f"{name}: runs against the {name} backend")


def backend_unavailable(reason: str) -> None:
    """Skip for a missing server locally; fail in CI, where every backend must run."""
    if REQUIRE_BACKENDS:
        pytest.fail(f"backend required but unavailable: {reason}")
    pytest.skip(reason)


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL for a fresh, empty store of each backend."""
    name = request.param
    if name == "memory":
        return "memory://"
    if name == "sqlite":
        return f"sqlite:///{tmp_path / 'test.db'}"
    raise AssertionError(name)


@pytest.fixture(params=SHARED_BACKENDS)
def shared_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL for a fresh store that other processes can open too."""
    name = request.param
    if name == "sqlite":
        return f"sqlite:///{tmp_path / 'shared.db'}"
    raise AssertionError(name)


@pytest.fixture
def manager(store_url: str) -> Iterator[sessionary.SessionManager]:
    """A sync manager over a fresh store of each backend."""
    with sessionary.SessionManager(store_url) as mgr:
        yield mgr


@pytest.fixture
async def amanager(store_url: str) -> AsyncIterator[sessionary.AsyncSessionManager]:
    """An async manager over a fresh store of each backend."""
    async with sessionary.AsyncSessionManager(store_url) as mgr:
        yield mgr
