"""Shared fixtures: every conformance test runs once per backend.

Backends that need a server join the `backend` parameter list when their URL is
reachable. Locally an unreachable server is skipped with the reason shown; with
`SESSIONARY_REQUIRE_BACKENDS=1` (CI sets it) the skip becomes a failure.
"""

from __future__ import annotations

import functools
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import pytest

import sessionary

REQUIRE_BACKENDS = os.environ.get("SESSIONARY_REQUIRE_BACKENDS", "") not in ("", "0")
POSTGRES_URL = os.environ.get(
    "SESSIONARY_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test"
)
MYSQL_URL = os.environ.get("SESSIONARY_TEST_MYSQL", "mysql://root@127.0.0.1:3306/test")
REDIS_URL = os.environ.get("SESSIONARY_TEST_REDIS", "redis://127.0.0.1:6379/0")

# Every backend, by fixture name; each param carries a marker so `-m sqlite` selects one.
BACKENDS = [
    pytest.param("memory", marks=pytest.mark.memory),
    pytest.param("sqlite", marks=pytest.mark.sqlite),
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("mysql", marks=pytest.mark.mysql),
    pytest.param("redis", marks=pytest.mark.redis),
]


# Backends whose data other processes can open: the cross-process guarantees run on these.
SHARED_BACKENDS = [
    pytest.param("sqlite", marks=pytest.mark.sqlite),
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("mysql", marks=pytest.mark.mysql),
    pytest.param("redis", marks=pytest.mark.redis),
]


def pytest_configure(config: pytest.Config) -> None:
    for name in ("memory", "sqlite", "postgres", "mysql", "redis"):
        config.addinivalue_line("markers", f"{name}: runs against the {name} backend")
    config.addinivalue_line(
        "markers", "requires(*capabilities): skipped on stores without these capabilities"
    )


@pytest.fixture
def capabilities(request: pytest.FixtureRequest) -> frozenset[str]:
    """The capabilities of the store the test runs on (`store_url` or `shared_store_url`)."""
    name = "store_url" if "store_url" in request.fixturenames else "shared_store_url"
    store = sessionary.open_store(request.getfixturevalue(name))
    try:
        return frozenset(store.capabilities)
    finally:
        store.close()


@pytest.fixture(autouse=True)
def _no_terminal_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give every test the CLI's own width off a terminal, whoever runs it.

    A shell's exported `COLUMNS`, or pytest-xdist's workers (which set `COLUMNS=80`),
    would otherwise narrow the CLI's tables; tests that want a width set it themselves.
    """
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture(autouse=True)
def _required_capabilities(request: pytest.FixtureRequest) -> None:
    """Skip a test marked `requires(...)` on a store without those capabilities.

    A store without a capability raises `Unsupported`; the tests that say so are not
    marked, so that error is asserted on exactly the stores that skip here.
    """
    mark = request.node.get_closest_marker("requires")
    if mark is None:
        return
    if not {"store_url", "shared_store_url"} & set(request.fixturenames):
        return
    have: frozenset[str] = request.getfixturevalue("capabilities")
    missing = sorted(set(mark.args) - have)
    if missing:
        pytest.skip(f"the store lacks the {', '.join(missing)} capability")


def backend_unavailable(reason: str) -> None:
    """Skip for a missing server locally; fail in CI, where every backend must run."""
    if REQUIRE_BACKENDS:
        pytest.fail(f"backend required but unavailable: {reason}")
    pytest.skip(reason)


@functools.cache
def _postgres_problem() -> str | None:
    """Why the test PostgreSQL server cannot be used, or None if it can."""
    try:
        import psycopg
    except ImportError as exc:
        return f"psycopg is not installed: {exc}"
    try:
        psycopg.connect(POSTGRES_URL, connect_timeout=5).close()
    except psycopg.Error as exc:
        return f"PostgreSQL at {POSTGRES_URL} is unreachable: {exc}"
    return None


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A URL for an empty schema of its own on the test PostgreSQL server, dropped after."""
    problem = _postgres_problem()
    if problem is not None:
        backend_unavailable(problem)
    import psycopg

    schema = f"test_{uuid.uuid4().hex[:16]}"
    yield f"{POSTGRES_URL}{'&' if '?' in POSTGRES_URL else '?'}schema={schema}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _mysql_connect(database: str | None = None) -> Any:
    """A PyMySQL connection to the test MySQL server (or another database on it)."""
    import pymysql

    parts = urlsplit(MYSQL_URL)
    return pymysql.connect(
        host=parts.hostname or "localhost",
        port=parts.port or 3306,
        user=unquote(parts.username or "root"),
        password=unquote(parts.password or ""),
        database=database or unquote(parts.path.lstrip("/")),
        connect_timeout=5,
        autocommit=True,
    )


@functools.cache
def _mysql_problem() -> str | None:
    """Why the test MySQL server cannot be used, or None if it can."""
    try:
        import aiomysql  # noqa: F401
        import pymysql
    except ImportError as exc:
        return f"PyMySQL or aiomysql is not installed: {exc}"
    try:
        _mysql_connect().close()
    except pymysql.err.Error as exc:
        return f"MySQL at {MYSQL_URL} is unreachable: {exc}"
    return None


@pytest.fixture
def mysql_url() -> Iterator[str]:
    """A URL for an empty database of its own on the test MySQL server, dropped after."""
    problem = _mysql_problem()
    if problem is not None:
        backend_unavailable(problem)
    database = f"test_{uuid.uuid4().hex[:16]}"
    conn = _mysql_connect()
    try:
        with conn.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE `{database}` CHARACTER SET utf8mb4")
    finally:
        conn.close()
    parts = urlsplit(MYSQL_URL)
    yield urlunsplit(parts._replace(path=f"/{database}"))
    conn = _mysql_connect()
    try:
        with conn.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS `{database}`")
    finally:
        conn.close()


@pytest.fixture
def mysql_admin() -> Callable[[str | None], Any]:
    """Opens an autocommit PyMySQL connection to the test MySQL server (to any database)."""
    return _mysql_connect


@functools.cache
def _redis_problem() -> str | None:
    """Why the test Redis server cannot be used, or None if it can."""
    try:
        import redis
    except ImportError as exc:
        return f"redis-py is not installed: {exc}"
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=5)
    try:
        client.ping()
    except redis.RedisError as exc:
        return f"Redis at {REDIS_URL} is unreachable: {exc}"
    finally:
        client.close()
    return None


@pytest.fixture
def redis_url() -> Iterator[str]:
    """A URL for a key namespace of its own on the test Redis server, deleted after.

    Only the keys under that namespace are removed (never FLUSHDB/FLUSHALL): the server
    is shared with other test runs.
    """
    problem = _redis_problem()
    if problem is not None:
        backend_unavailable(problem)
    import redis

    namespace = f"test-{uuid.uuid4().hex[:16]}"
    yield f"{REDIS_URL}{'&' if '?' in REDIS_URL else '?'}namespace={namespace}"
    client = redis.Redis.from_url(REDIS_URL)
    try:
        keys = list(client.scan_iter(match=f"{namespace}:*", count=1000))
        for start in range(0, len(keys), 500):
            client.unlink(*keys[start : start + 500])
    finally:
        client.close()


def _server_url(request: pytest.FixtureRequest, name: str) -> str:
    return str(request.getfixturevalue(f"{name}_url"))


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL for a fresh, empty store of each backend."""
    name = request.param
    if name == "memory":
        return "memory://"
    if name == "sqlite":
        return f"sqlite:///{tmp_path / 'test.db'}"
    return _server_url(request, name)


@pytest.fixture(params=SHARED_BACKENDS)
def shared_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL for a fresh store that other processes can open too."""
    name = request.param
    if name == "sqlite":
        return f"sqlite:///{tmp_path / 'shared.db'}"
    return _server_url(request, name)


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


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[Any]:
    """A plain redis-py client on the test server, decoding replies to text."""
    import redis

    raw = redis.Redis.from_url(redis_url.split("?")[0], decode_responses=True)
    yield raw
    raw.close()
