"""Everything a store holds, read around sessionary: rows of every table, or every Redis key.

For tests that prove data is gone (erasure, the sweeper): they look for a marker in the
raw text of every row and key, not through the API that did the deleting.
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any
from urllib.parse import parse_qs, urlsplit

from _redis_keys import namespace

import sessionary

POSTGRES_URL = os.environ.get(
    "SESSIONARY_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test"
)  # as tests/conftest.py (importing it picks the wrong conftest in some collections)


def raw_dump(store_url: str, manager: sessionary.SessionManager) -> list[str]:
    """One string per row of every table (or per Redis key with its value, or memory entry)."""
    scheme = store_url.split(":", 1)[0]
    if scheme == "memory":
        engine: Any = manager.store.engine  # type: ignore[attr-defined]
        return [repr(item) for table in (engine._sessions, engine._states, engine._docs)
                for item in table.items()]  # fmt: skip
    if scheme == "sqlite":
        return _sqlite(store_url.removeprefix("sqlite:///"))
    if scheme == "postgresql":
        return _postgres(parse_qs(urlsplit(store_url).query)["schema"][0])
    if scheme == "mysql":
        return _mysql(store_url)
    return _redis(store_url)


def _sqlite(path: str) -> list[str]:
    with sqlite3.connect(path) as db:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return [
            f"{name} {row!r}" for name in names for row in db.execute(f'SELECT * FROM "{name}"')
        ]


def _postgres(schema: str) -> list[str]:
    import psycopg

    with psycopg.connect(POSTGRES_URL) as conn:
        names = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
        )]  # fmt: skip
        return [f"{name} {row!r}" for name in names
                for row in conn.execute(f'SELECT * FROM "{schema}"."{name}"')]  # fmt: skip


def _mysql(url: str) -> list[str]:
    import pymysql

    parts = urlsplit(url)
    conn = pymysql.connect(
        host=parts.hostname, port=parts.port or 3306, user=parts.username or "root",
        password=parts.password or "", database=parts.path.lstrip("/"),
    )  # fmt: skip
    try:
        with conn.cursor() as cursor:
            cursor.execute("SHOW TABLES")
            names = [r[0] for r in cursor.fetchall()]
            out = []
            for name in names:
                cursor.execute(f"SELECT * FROM `{name}`")
                out += [f"{name} {row!r}" for row in cursor.fetchall()]
            return out
    finally:
        conn.close()


def _redis(url: str) -> list[str]:
    import redis

    client = redis.Redis.from_url(url.split("?")[0], decode_responses=True)
    try:
        out = []
        for key in client.scan_iter(match=namespace(url) + ":*"):
            kind = client.type(key)
            value: Any = {
                "string": client.get, "hash": client.hgetall, "set": client.smembers,
                "list": lambda k: client.lrange(k, 0, -1),
                "zset": lambda k: client.zrange(k, 0, -1, withscores=True),
            }[kind](key)  # fmt: skip
            out.append(f"{key} {value!r}")
        return out
    finally:
        client.close()
