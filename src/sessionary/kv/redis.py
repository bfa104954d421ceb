"""The Redis driver: values in plain keys, a sorted-set index for ordered prefix listing.

Under a namespace `ns` (default `sessionary`), the value of key `k` lives at `ns:v:k` and
every key is a member of the sorted set `ns:index` (all scores 0), so a prefix listing is
one `ZRANGEBYLEX`, in key order. Every operation that touches more than one Redis key
runs as one Lua script or `MULTI` transaction, which Redis executes atomically: `commit`
checks the expected values and applies the writes in a single script, so compare-and-set
holds for every client of the server and no client ever sees half a commit. The scripts
name keys they compute, so the driver needs one Redis node (not a cluster).

`RedisDriver` uses `redis.Redis`; `AsyncRedisDriver` uses `redis.asyncio.Redis`. Install
them with `pip install sessionary[redis]`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sessionary._optional import require
from sessionary.errors import StoreError, StoreUnavailable
from sessionary.kv.keys import check_key, check_prefix, check_value, prefix_end

if TYPE_CHECKING:
    import redis
    import redis.asyncio

__all__ = ["DEFAULT_URL", "AsyncRedisDriver", "RedisDriver"]

DEFAULT_URL = "redis://localhost:6379/0"

# KEYS: index, the expected keys, the written keys. ARGV: how many keys are expected, then
# (present?, value) per expected key, then (store?, value, member) per written key.
_COMMIT = """
local expected = tonumber(ARGV[1])
local a = 2
for i = 2, expected + 1 do
  local current = redis.call('GET', KEYS[i])
  if ARGV[a] == '0' then
    if current then return 0 end
  elseif current ~= ARGV[a + 1] then
    return 0
  end
  a = a + 2
end
for i = expected + 2, #KEYS do
  if ARGV[a] == '0' then
    redis.call('DEL', KEYS[i])
    redis.call('ZREM', KEYS[1], ARGV[a + 2])
  else
    redis.call('SET', KEYS[i], ARGV[a + 1])
    redis.call('ZADD', KEYS[1], 0, ARGV[a + 2])
  end
  a = a + 3
end
return 1
"""

# KEYS: index. ARGV: the range's lower and upper bounds, the value keys' prefix.
_LIST = """
local members = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[1], ARGV[2])
local out = {}
for _, member in ipairs(members) do
  local value = redis.call('GET', ARGV[3] .. member)
  if value then
    out[#out + 1] = member
    out[#out + 1] = value
  end
end
return out
"""


def _import_redis() -> Any:
    return require("redis", "redis.asyncio", extra="redis", what="the Redis driver")


@contextmanager
def _mapped_errors() -> Iterator[None]:
    """Map redis-py's exceptions onto the error tree; the only place that does."""
    import redis.exceptions as rex

    try:
        yield
    except (rex.ConnectionError, rex.TimeoutError) as exc:
        raise StoreUnavailable(f"Redis is unreachable: {exc}") from exc
    except rex.RedisError as exc:
        raise StoreError(f"Redis failed: {exc}") from exc


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class _Layout:
    """Where the driver keeps values and the index, and how calls become script arguments."""

    def __init__(self, namespace: str) -> None:
        check_key(namespace, "Redis namespace")
        self.index = f"{namespace}:index"
        self.values = f"{namespace}:v:"

    def key(self, key: str) -> str:
        return self.values + check_key(key)

    def list_args(self, prefix: str) -> list[str]:
        end = prefix_end(check_prefix(prefix))
        low = "[" + prefix if prefix else "-"
        return [low, "+" if end is None else "(" + end, self.values]

    def commit_args(
        self, expect: Mapping[str, str | None], writes: Mapping[str, str | None]
    ) -> tuple[list[str], list[str]]:
        keys, args = [self.index], [str(len(expect))]
        for key, value in expect.items():
            keys.append(self.key(key))
            args += ["0", ""] if value is None else ["1", check_value(value)]
        for key, value in writes.items():
            keys.append(self.key(key))
            args += ["0", "", key] if value is None else ["1", check_value(value), key]
        return keys, args

    @staticmethod
    def pairs(flat: list[Any]) -> list[tuple[str, str]]:
        return [(_text(flat[i]), _text(flat[i + 1])) for i in range(0, len(flat), 2)]


class RedisDriver:
    """A key-value driver over one Redis server, shared by any number of processes."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        client: redis.Redis | None = None,
        namespace: str = "sessionary",
    ) -> None:
        """Connect to Redis at `url`, or use `client`.

        Args:
            url: A `redis://` URL; ignored when `client` is given.
            client: A client to use; the caller keeps ownership and closes it.
            namespace: The prefix of every Redis key the driver uses.

        Raises:
            BackendNotInstalled: If redis-py is not installed.
        """
        module = _import_redis()
        self._layout = _Layout(namespace)
        self._owned = client is None
        self._client: redis.Redis = client or module.Redis.from_url(url)
        self._commit = self._client.register_script(_COMMIT)
        self._list = self._client.register_script(_LIST)

    def get(self, key: str) -> str | None:
        """Return the value stored under `key`, or None."""
        with _mapped_errors():
            value = self._client.get(self._layout.key(key))
        return None if value is None else _text(value)

    def put(self, key: str, value: str) -> None:
        """Store `value` under `key`."""
        self.commit({}, {key: value})

    def delete(self, key: str) -> bool:
        """Remove `key`; return whether it was there."""
        with _mapped_errors(), self._client.pipeline(transaction=True) as pipe:
            pipe.delete(self._layout.key(key))
            pipe.zrem(self._layout.index, key)
            removed, _ = pipe.execute()
        return bool(removed)

    def list_prefix(self, prefix: str) -> list[tuple[str, str]]:
        """Return every entry whose key starts with `prefix`, in key order."""
        args = self._layout.list_args(prefix)
        with _mapped_errors():
            flat = self._list(keys=[self._layout.index], args=args)
        return self._layout.pairs(flat)

    def commit(self, expect: Mapping[str, str | None], writes: Mapping[str, str | None]) -> bool:
        """Apply `writes` if every key in `expect` holds its value; see `KVDriver.commit`."""
        keys, args = self._layout.commit_args(expect, writes)
        with _mapped_errors():
            return bool(self._commit(keys=keys, args=args))

    def close(self) -> None:
        """Close the client if the driver made it."""
        if self._owned:
            with _mapped_errors():
                self._client.close()


class AsyncRedisDriver:
    """The async face of `RedisDriver`, over `redis.asyncio.Redis`."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        client: redis.asyncio.Redis | None = None,
        namespace: str = "sessionary",
    ) -> None:
        """Connect to Redis at `url`, or use `client`; see `RedisDriver`.

        Raises:
            BackendNotInstalled: If redis-py is not installed.
        """
        module = _import_redis()
        self._layout = _Layout(namespace)
        self._owned = client is None
        self._client: redis.asyncio.Redis = client or module.asyncio.Redis.from_url(url)
        self._commit = self._client.register_script(_COMMIT)
        self._list = self._client.register_script(_LIST)

    async def get(self, key: str) -> str | None:
        """Return the value stored under `key`, or None."""
        with _mapped_errors():
            value = await self._client.get(self._layout.key(key))
        return None if value is None else _text(value)

    async def put(self, key: str, value: str) -> None:
        """Store `value` under `key`."""
        await self.commit({}, {key: value})

    async def delete(self, key: str) -> bool:
        """Remove `key`; return whether it was there."""
        with _mapped_errors():
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.delete(self._layout.key(key))
                pipe.zrem(self._layout.index, key)
                removed, _ = await pipe.execute()
        return bool(removed)

    async def list_prefix(self, prefix: str) -> list[tuple[str, str]]:
        """Return every entry whose key starts with `prefix`, in key order."""
        args = self._layout.list_args(prefix)
        with _mapped_errors():
            flat = await self._list(keys=[self._layout.index], args=args)
        return self._layout.pairs(flat)

    async def commit(
        self, expect: Mapping[str, str | None], writes: Mapping[str, str | None]
    ) -> bool:
        """Apply `writes` if every key in `expect` holds its value; see `AsyncKVDriver.commit`."""
        keys, args = self._layout.commit_args(expect, writes)
        with _mapped_errors():
            return bool(await self._commit(keys=keys, args=args))

    async def close(self) -> None:
        """Close the client if the driver made it."""
        if self._owned:
            with _mapped_errors():
                await self._client.aclose()
