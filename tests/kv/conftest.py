"""Fixtures for the key-value tests: each driver test runs on memory, SQLite and Redis.

Redis joins when it answers at `SESSIONARY_REDIS_URL` (default redis://127.0.0.1:6379/0);
locally an unreachable server is skipped with the reason, and with
`SESSIONARY_REQUIRE_BACKENDS=1` (CI) the skip becomes a failure. Every Redis test works
in a namespace of its own and removes it afterwards.
"""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from _kv_helpers import (
    drop_redis_namespace,
    new_namespace,
    open_async_driver,
    open_driver,
    redis_problem,
)

REQUIRE_BACKENDS = os.environ.get("SESSIONARY_REQUIRE_BACKENDS", "") not in ("", "0")

DRIVERS = [
    pytest.param("memory", marks=pytest.mark.memory),
    pytest.param("sqlite", marks=pytest.mark.sqlite),
    pytest.param("redis", marks=pytest.mark.redis),
]


def backend_unavailable(reason: str) -> None:
    """Skip for a missing server locally; fail in CI, where every backend must run."""
    if REQUIRE_BACKENDS:
        pytest.fail(f"backend required but unavailable: {reason}")
    pytest.skip(reason)


@functools.cache
def _redis_problem() -> str | None:
    try:
        return redis_problem()
    except ImportError:
        return "redis-py is not installed"


@pytest.fixture(params=DRIVERS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def place(kind: str, tmp_path: Path) -> Iterator[str]:
    if kind != "redis":
        yield str(tmp_path / "kv.db")
        return
    if problem := _redis_problem():
        backend_unavailable(problem)
    namespace = new_namespace()
    try:
        yield namespace
    finally:
        drop_redis_namespace(namespace)


@pytest.fixture
def driver(kind: str, place: str) -> Iterator[Any]:
    """A fresh, empty sync driver of each kind."""
    drv = open_driver(kind, place)
    try:
        yield drv
    finally:
        drv.close()


@pytest.fixture
async def adriver(kind: str, place: str) -> AsyncIterator[Any]:
    """A fresh, empty async driver of each kind."""
    drv = open_async_driver(kind, place)
    try:
        yield drv
    finally:
        await drv.close()
