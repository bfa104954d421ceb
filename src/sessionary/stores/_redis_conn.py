"""Connections of the Redis store: a hand-written async/sync pair over redis-py.

Everything the two faces of the store do differently lives here: which client class
they use and how it closes. Scripts are registered once per connection and run by
`EVALSHA` (redis-py loads a script again if the server lost it). redis-py's exceptions
become sessionary's in `mapped_errors`, the only place that maps them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sessionary._optional import require
from sessionary.errors import StoreError, StoreUnavailable
from sessionary.stores._redis_lua import SCRIPTS

if TYPE_CHECKING:
    import redis
    import redis.asyncio

__all__ = ["AsyncRedisConnection", "RedisConnection", "mapped_errors"]


def _import_redis() -> Any:
    return require("redis", "redis.asyncio", extra="redis", what="the redis backend")


@contextmanager
def mapped_errors() -> Iterator[None]:
    """Map redis-py's exceptions onto the error tree."""
    import redis.exceptions as rex

    try:
        yield
    except (rex.ConnectionError, rex.TimeoutError) as exc:
        raise StoreUnavailable(f"Redis is unreachable: {exc}") from exc
    except rex.RedisError as exc:
        raise StoreError(f"Redis failed: {exc}") from exc


def _client_options(connect_timeout: float | None) -> dict[str, Any]:
    options: dict[str, Any] = {"decode_responses": True}
    if connect_timeout is not None:
        options["socket_connect_timeout"] = connect_timeout
    return options


class RedisConnection:
    """A `redis.Redis` client with the store's scripts registered."""

    def __init__(self, url: str, connect_timeout: float | None = None) -> None:
        module = _import_redis()
        self.client: redis.Redis = module.Redis.from_url(url, **_client_options(connect_timeout))
        self.scripts: dict[str, Any] = {
            name: self.client.register_script(source) for name, source in SCRIPTS.items()
        }

    def run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """Run a script by name; return what it returns."""
        with mapped_errors():
            return self.scripts[name](keys=keys, args=args)

    def close(self) -> None:
        """Close the client's connections."""
        with mapped_errors():
            self.client.close()


class AsyncRedisConnection:
    """A `redis.asyncio.Redis` client with the store's scripts registered."""

    def __init__(self, url: str, connect_timeout: float | None = None) -> None:
        module = _import_redis()
        self.client: redis.asyncio.Redis = module.asyncio.Redis.from_url(
            url, **_client_options(connect_timeout)
        )
        self.scripts: dict[str, Any] = {
            name: self.client.register_script(source) for name, source in SCRIPTS.items()
        }

    async def run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """Run a script by name; return what it returns."""
        with mapped_errors():
            return await self.scripts[name](keys=keys, args=args)

    async def close(self) -> None:
        """Close the client's connections."""
        with mapped_errors():
            await self.client.aclose()
