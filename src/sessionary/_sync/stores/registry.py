# This file was generated from src/sessionary/stores/registry.py by tools/async_to_sync.py.
# Do not edit it: edit the source and run `python tools/async_to_sync.py`.
"""Opening a store by URL; backends are imported only when their scheme is used.

| URL | backend |
| --- | --- |
| `sqlite:///relative/path.db`, `sqlite:////absolute/path.db`, or a plain path | SQLite file |
| `sqlite:///:memory:` | SQLite in memory (private to the store) |
| `memory://` / `memory://NAME` | in-process memory (private / shared by name) |
| `postgresql://user:password@host:port/database` (or `postgres://`) | PostgreSQL |
| `mysql://user:password@host:port/database` (or `mariadb://`) | MySQL or MariaDB |
| `redis://[:password@]host:port/db` (or `rediss://`) | Redis |

SQLite options go in the query string: `durability=full|normal`, `busy_timeout=SECONDS`,
`max_message_bytes=N`. Server options: `pool_size=N` (most connections, default 10),
`max_message_bytes=N`, and for PostgreSQL `schema=NAME` (created if missing). Redis
options: `namespace=NAME` (the first part of every key, default `sessionary`),
`snapshot_frequency=N` (default 25; 0 never rolls up), `max_messages=N`, `ttl=SECONDS`,
`max_message_bytes=N`. Every server store (PostgreSQL, MySQL, Redis) takes
`connect_timeout=SECONDS` (connecting: TCP, greeting, login; default 10) and
`timeout=SECONDS` (each request, lock waits included; default 60); running out of
either raises `StoreUnavailable`. SQLite and both SQL servers take `migrate=false`: check
the schema's version instead of creating or upgrading it (`SchemaError` if it is missing
or old). Every value is range-checked (`InvalidURL`).
`sessionary.stores.urls` parses URLs without opening anything.

A server store's asyncio driver is bound to one event loop, so the async store runs on
a loop of its own (`adapter.wrap_store`): any loop in any thread may use it.
"""

from __future__ import annotations

from typing import Any

from sessionary._optional import require
from sessionary._sync.stores.adapter import wrap_engine, wrap_store
from sessionary._sync.stores.base import Store
from sessionary._sync.stores.sql import SQLStore
from sessionary.retention import Clock, system_clock
from sessionary.stores.urls import StoreURL, parse_store_url

__all__ = ["open_store"]


def open_store(url: str, *, clock: Clock | None = None) -> Store:
    """Open the store a URL names.

    Args:
        url: `sqlite:///path.db`, `memory://`, `postgresql://...`, `mysql://...`, or a
            plain file path (SQLite).
        clock: What the store takes as the time now when it decides whether a session
            with a TTL has expired (default: the system clock); see `sessionary.retention`.

    Raises:
        InvalidURL: If the URL is malformed, has unknown options, or names no backend.
        BackendNotInstalled: If the backend's optional dependency is missing.
        StoreUnavailable: If the backend cannot be opened.
    """
    parsed = parse_store_url(url)
    clock = system_clock if clock is None else clock
    if parsed.scheme == "memory":
        from sessionary.stores.memory import open_memory_engine

        return wrap_engine(open_memory_engine(parsed.location, **parsed.options, clock=clock))  # type: ignore[arg-type]
    if parsed.scheme in ("postgresql", "mysql"):
        return _open_server(parsed, clock)
    if parsed.scheme == "redis":
        from sessionary._sync.stores.redis import RedisStore

        options: Any = parsed.options
        return wrap_store(lambda: RedisStore(parsed.location, **options, clock=clock))
    from sessionary.stores.sqlite import SQLiteEngine

    return wrap_engine(SQLiteEngine(parsed.location, **parsed.options, clock=clock))  # type: ignore[arg-type]


def _open_server(parsed: StoreURL, clock: Clock) -> Store:
    """Open a PostgreSQL or MySQL store; its driver is imported here, not before."""
    options: dict[str, Any] = dict(parsed.options)
    # The store's own options; the rest are the driver's.
    sizes: dict[str, Any] = {
        k: options.pop(k) for k in ("max_message_bytes", "migrate") if k in options
    }
    sizes["clock"] = clock
    if parsed.scheme == "postgresql":
        require("psycopg", "psycopg_pool", extra="postgres", what="the postgresql backend")
        from sessionary.stores._postgres_sql import PostgresDialect
        from sessionary.stores.postgres import PostgresDriver

        return wrap_store(
            lambda: SQLStore(
                PostgresDriver(parsed.location, **options),
                PostgresDialect(options.get("schema")),
                **sizes,
            )
        )
    require("pymysql", "aiomysql", extra="mysql", what="the mysql backend")
    from sessionary.stores._mysql_sql import MySQLDialect
    from sessionary.stores.mysql import MySQLDriver

    return wrap_store(
        lambda: SQLStore(MySQLDriver(parsed.location, **options), MySQLDialect(), **sizes)
    )
