"""Connections of the Redis store: a hand-written async/sync pair over redis-py.

Everything the two faces of the store do differently lives here: which client class
they use and how it closes. Scripts are registered once per connection and run by one
`EVALSHA` each, sent straight through the client (redis-py's script objects add a
little work to every call); a server that lost a script gets it again through the
script object. redis-py's exceptions become sessionary's in `mapped_errors` and
`_mapped`, the only places that map them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sessionary._optional import require
from sessionary.errors import StoreError, StoreUnavailable
from sessionary.kv._redis_wire import (
    AsyncLane,
    Lane,
    evalsha_command,
    make_client,
    packed,
    unreachable,
)
from sessionary.stores._redis_lua import SCRIPTS
from sessionary.stores.urls import CONNECT_TIMEOUT, REQUEST_TIMEOUT

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
    except rex.RedisError as exc:
        raise _mapped(exc) from exc


def _mapped(exc: Exception) -> StoreError:
    """The error of sessionary's tree that stands for a redis-py exception."""
    if unreachable(exc):
        return StoreUnavailable(f"Redis is unreachable: {exc}")
    return StoreError(f"Redis failed: {exc}")


def _clean(replies: Any) -> list[Any] | None:
    """An `EXEC` reply, or None if a command in it failed (or the transaction did not run)."""
    if not isinstance(replies, list) or any(isinstance(r, Exception) for r in replies):
        return None
    return replies


def _detour(module: Any) -> tuple[type[Exception], ...]:
    """What sends a direct call the ordinary way: a lost script, a failed connection.

    Not a timeout: a server that stopped answering would only be asked again.
    """
    errors = module.exceptions
    return (errors.NoScriptError, errors.ConnectionError)


class RedisConnection:
    """A `redis.Redis` client with the store's scripts (and `extra` ones) registered.

    Connecting waits at most `connect_timeout` seconds, each reply at most `timeout`.
    """

    def __init__(
        self,
        url: str,
        connect_timeout: float = CONNECT_TIMEOUT,
        timeout: float = REQUEST_TIMEOUT,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        module = _import_redis()
        self.client: redis.Redis = make_client(
            module,
            url,
            asynchronous=False,
            connect_timeout=connect_timeout,
            timeout=timeout,
            decode_responses=True,
        )
        self.scripts: dict[str, Any] = {
            name: self.client.register_script(source)
            for name, source in {**SCRIPTS, **(extra or {})}.items()
        }
        self._missing = module.exceptions.NoScriptError
        self._failed = module.exceptions.RedisError
        self._detour = _detour(module)
        self._lane = Lane(self.client)

    def run_packed(self, name: str, keys: list[str], packed_keys: bytes, args: list[str]) -> Any:
        """`run`, sent straight down a pooled connection (`packed_keys`: `keys`, packed).

        A script the server lost, or a connection that failed, takes the ordinary way.
        """
        command = evalsha_command(self.scripts[name].sha, packed_keys, len(keys), args)
        try:
            return self._lane.send(command)
        except self._detour:
            pass
        except self._failed as exc:
            raise _mapped(exc) from exc
        return self.run(name, keys, args)

    def multi(self, command: list[bytes], replies: int) -> list[Any] | None:
        """The `EXEC` reply of a packed `MULTI` … `EXEC` that gets `replies` replies.

        None if the connection failed or a command failed inside (the caller then takes
        the ordinary way, which reconnects or reports the error).
        """
        try:
            found = self._lane.send_all(command, replies)
        except self._detour:
            return None
        except self._failed as exc:
            raise _mapped(exc) from exc
        return _clean(found)

    def run_lean(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """`run` down the lean way of `run_packed` (each argument sent as its `str`)."""
        return self.run_packed(name, keys, packed(keys), [str(arg) for arg in args])

    def run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """Run a script by name; return what it returns."""
        script = self.scripts[name]
        try:
            try:
                return self.client.evalsha(script.sha, len(keys), *keys, *args)
            except self._missing:
                return script(keys=keys, args=args)  # loads it, then runs it
        except self._failed as exc:
            raise _mapped(exc) from exc

    def close(self) -> None:
        """Close the client's connections."""
        with mapped_errors():
            self._lane.close()
            self.client.close()


class AsyncRedisConnection:
    """A `redis.asyncio.Redis` client with the store's scripts (and `extra` ones) registered.

    Connecting waits at most `connect_timeout` seconds, each reply at most `timeout`.
    """

    def __init__(
        self,
        url: str,
        connect_timeout: float = CONNECT_TIMEOUT,
        timeout: float = REQUEST_TIMEOUT,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        module = _import_redis()
        self.client: redis.asyncio.Redis = make_client(
            module,
            url,
            asynchronous=True,
            connect_timeout=connect_timeout,
            timeout=timeout,
            decode_responses=True,
        )
        self.scripts: dict[str, Any] = {
            name: self.client.register_script(source)
            for name, source in {**SCRIPTS, **(extra or {})}.items()
        }
        self._missing = module.exceptions.NoScriptError
        self._failed = module.exceptions.RedisError
        self._detour = _detour(module)
        self._lane = AsyncLane(self.client)

    async def run_packed(
        self, name: str, keys: list[str], packed_keys: bytes, args: list[str]
    ) -> Any:
        """`run`, sent straight down a pooled connection (`packed_keys`: `keys`, packed).

        A script the server lost, or a connection that failed, takes the ordinary way.
        """
        command = evalsha_command(self.scripts[name].sha, packed_keys, len(keys), args)
        try:
            return await self._lane.send(command)
        except self._detour:
            pass
        except self._failed as exc:
            raise _mapped(exc) from exc
        return await self.run(name, keys, args)

    async def multi(self, command: list[bytes], replies: int) -> list[Any] | None:
        """`RedisConnection.multi`, awaited."""
        try:
            found = await self._lane.send_all(command, replies)
        except self._detour:
            return None
        except self._failed as exc:
            raise _mapped(exc) from exc
        return _clean(found)

    async def run_lean(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """`run` down the lean way of `run_packed` (each argument sent as its `str`)."""
        return await self.run_packed(name, keys, packed(keys), [str(arg) for arg in args])

    async def run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """Run a script by name; return what it returns."""
        script = self.scripts[name]
        try:
            try:
                return await self.client.evalsha(script.sha, len(keys), *keys, *args)
            except self._missing:
                return await script(keys=keys, args=args)  # loads it, then runs it
        except self._failed as exc:
            raise _mapped(exc) from exc

    async def close(self) -> None:
        """Close the client's connections."""
        with mapped_errors():
            await self._lane.close()
            await self.client.aclose()
