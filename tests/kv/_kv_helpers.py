"""Helpers shared by the key-value tests and their worker processes."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from sessionary.kv import (
    AsyncMemoryDriver,
    AsyncRedisDriver,
    AsyncSQLiteDriver,
    KVDriver,
    MemoryDriver,
    RedisDriver,
    SQLiteDriver,
)

REDIS_URL = os.environ.get("SESSIONARY_REDIS_URL", "redis://127.0.0.1:6379/0")


def redis_problem() -> str | None:
    """None if Redis answers at REDIS_URL, else why not."""
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1)
    try:
        client.ping()
    except redis.RedisError as exc:
        return f"Redis at {REDIS_URL} is unreachable: {exc}"
    finally:
        client.close()
    return None


def new_namespace() -> str:
    return f"sessionary-test-{uuid.uuid4().hex}"


def drop_redis_namespace(namespace: str) -> None:
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    try:
        keys = list(client.scan_iter(match=f"{namespace}:*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


def open_driver(kind: str, where: str) -> Any:
    """A sync driver: `where` is a file path (sqlite) or a namespace (redis)."""
    if kind == "memory":
        return MemoryDriver()
    if kind == "sqlite":
        return SQLiteDriver(where)
    if kind == "redis":
        return RedisDriver(REDIS_URL, namespace=where)
    raise AssertionError(kind)


def open_async_driver(kind: str, where: str) -> Any:
    if kind == "memory":
        return AsyncMemoryDriver()
    if kind == "sqlite":
        return AsyncSQLiteDriver(where)
    if kind == "redis":
        return AsyncRedisDriver(REDIS_URL, namespace=where)
    raise AssertionError(kind)


def spied_calls(driver: Any, names: tuple[str, ...]) -> dict[str, int]:
    """Count the calls made from now on to some of a driver's methods."""
    calls = dict.fromkeys(names, 0)
    for name in names:
        inner = getattr(driver, name)

        def spy(*args: Any, _name: str = name, _inner: Callable[..., Any] = inner) -> Any:
            calls[_name] += 1
            return _inner(*args)

        setattr(driver, name, spy)
    return calls


class CountingDriver:
    """Wraps a driver and counts calls and the entries each call reads or writes."""

    def __init__(self, inner: KVDriver) -> None:
        self.inner = inner
        self.reset()

    def reset(self) -> None:
        self.calls: dict[str, int] = dict.fromkeys(("get", "put", "delete", "list", "commit"), 0)
        self.entries_read = 0
        self.entries_written = 0

    @property
    def write_calls(self) -> int:
        return self.calls["put"] + self.calls["delete"] + self.calls["commit"]

    @property
    def read_calls(self) -> int:
        return self.calls["get"] + self.calls["list"]

    def get(self, key: str) -> str | None:
        self.calls["get"] += 1
        value = self.inner.get(key)
        self.entries_read += value is not None
        return value

    def put(self, key: str, value: str) -> None:
        self.calls["put"] += 1
        self.entries_written += 1
        self.inner.put(key, value)

    def delete(self, key: str) -> bool:
        self.calls["delete"] += 1
        self.entries_written += 1
        return self.inner.delete(key)

    def list_prefix(self, prefix: str) -> list[tuple[str, str]]:
        self.calls["list"] += 1
        entries = self.inner.list_prefix(prefix)
        self.entries_read += len(entries)
        return entries

    def commit(self, expect: Mapping[str, str | None], writes: Mapping[str, str | None]) -> bool:
        self.calls["commit"] += 1
        done = self.inner.commit(expect, writes)
        self.entries_written += len(writes) if done else 0
        return done

    def close(self) -> None:
        self.inner.close()
