"""Everything a store holds, as text, read past sessionary with each backend's own client.

For checking what reaches the disk or the server (encryption at rest). The in-memory
store has no bytes of its own: its raw form is what a plain store object hands back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import sessionary


def raw_text(url: str, plain: Any) -> str:
    """Return every stored value of the store at `url` (`plain`: its unencrypted store)."""
    kind = url.split(":", 1)[0]
    if kind == "memory":
        return _memory(plain)
    if kind == "sqlite":
        return _sqlite(url)
    if kind == "postgresql":
        return _postgres(url)
    if kind == "mysql":
        return _mysql(url)
    return _redis(url)


def _memory(plain: Any) -> str:
    manager = sessionary.SessionManager(plain)
    pieces = [json.dumps(list(manager.export(i.id)), default=str) for i in manager.list().items]
    for level in ("app", "user"):
        pieces.append(json.dumps(plain.get_state(manager.scope, level, None).data))
        for doc in plain.list_documents(manager.scope, level, None, None, 500, None).items:
            pieces.append(json.dumps([doc.body, doc.text]))
    return "\n".join(pieces)


def _sqlite(url: str) -> str:
    path = Path(url.removeprefix("sqlite:///").split("?")[0])
    blobs = [p.read_bytes() for p in (path, Path(f"{path}-wal")) if p.exists()]
    return "\n".join(b.decode("utf-8", "replace") for b in blobs)


def _postgres(url: str) -> str:
    import psycopg

    base, _, query = url.partition("?")
    schema = parse_qs(query)["schema"][0]
    with psycopg.connect(base, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
            (schema,),
        ).fetchall()
        rows = [
            conn.execute(f'SELECT t::text FROM "{schema}"."{name}" t').fetchall()
            for (name,) in tables
        ]
    return "\n".join(str(r) for r in rows)


def _mysql(url: str) -> str:
    import pymysql

    parts = urlsplit(url)
    conn = pymysql.connect(
        host=parts.hostname or "localhost",
        port=parts.port or 3306,
        user=unquote(parts.username or "root"),
        password=unquote(parts.password or ""),
        database=parts.path.lstrip("/"),
        autocommit=True,
    )
    try:
        with conn.cursor() as cursor:
            cursor.execute("SHOW TABLES")
            tables = [row[0] for row in cursor.fetchall()]
            dumped = []
            for name in tables:
                cursor.execute(f"SELECT * FROM `{name}`")
                dumped.append(repr(cursor.fetchall()))
    finally:
        conn.close()
    return "\n".join(dumped)


def _redis(url: str) -> str:
    import redis

    namespace = url.rsplit("namespace=", 1)[1].split("&")[0]
    client = redis.Redis.from_url(url.split("?")[0], decode_responses=False)
    dumped: list[str] = []
    try:
        for key in client.scan_iter(match=f"{namespace}:*", count=1000):
            kind = client.type(key).decode()
            value: Any = {
                "string": lambda k: client.get(k),
                "hash": lambda k: client.hgetall(k),
                "list": lambda k: client.lrange(k, 0, -1),
                "set": lambda k: client.smembers(k),
                "zset": lambda k: client.zrange(k, 0, -1),
                "stream": lambda k: client.xrange(k),
            }[kind](key)
            dumped.append(f"{key!r} {value!r}")
    finally:
        client.close()
    return "\n".join(dumped)
