"""One `EVALSHA` sent straight down a pooled redis-py connection (sync and async).

redis-py's `execute_command` spends, per call, more than a round trip's worth of Python
(measured with callgrind: ~55k instructions beyond the socket work, plus ~3k to pack
each argument) on retries, metrics and generic argument encoding. The hot calls of the
Redis store and driver (an append, a commit) skip that: they pack their command here
and send it down a connection of the client's pool that a `Lane` keeps at hand, then
read the reply, which is what redis-py does underneath. A connection that fails is
disconnected by redis-py and goes back to the pool; callers then fall back on the
ordinary path (which reconnects), so nothing is lost but speed.

`make_client` builds the clients sessionary opens itself, with bounded waits: connecting
takes at most `connect_timeout` seconds, and each reply at most `timeout`. A command is
retried once, at once, on a connection that failed (a server restart, a connection the
server closed), never after a timeout, so a server that stops answering costs one
`timeout`, not several.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

__all__ = [
    "AsyncLane",
    "Lane",
    "command",
    "evalsha_command",
    "make_client",
    "packed",
    "unreachable",
]


def unreachable(exc: Exception) -> bool:
    """Whether a redis-py exception means the store cannot be reached or used at all.

    A connection that failed or timed out; a peer that does not speak Redis (its reply is
    not RESP); a database number the server does not have (redis-py selects it on
    every new connection, so nothing can work until the URL changes).
    """
    import redis.exceptions as rex

    if isinstance(exc, rex.ConnectionError | rex.TimeoutError | rex.InvalidResponse):
        return True
    return isinstance(exc, rex.ResponseError) and str(exc).startswith("DB index is out of range")


def make_client(
    module: Any,
    url: str,
    *,
    asynchronous: bool,
    connect_timeout: float,
    timeout: float,
    **extra: Any,
) -> Any:
    """A `redis.Redis` (or `redis.asyncio.Redis`) client for `url`, its waits bounded.

    Args:
        module: The `redis` package.
        url: A `redis://` or `rediss://` URL.
        asynchronous: Whether to make a `redis.asyncio` client.
        connect_timeout: Seconds to wait for a connection.
        timeout: Seconds to wait for each reply.
        extra: More client options (e.g. `decode_responses`).
    """
    retries = module.asyncio.retry if asynchronous else module.retry
    retry = retries.Retry(
        module.backoff.NoBackoff(), 1, supported_errors=(module.exceptions.ConnectionError,)
    )
    kind = module.asyncio.Redis if asynchronous else module.Redis
    return kind.from_url(
        url,
        socket_connect_timeout=connect_timeout,
        socket_timeout=timeout,
        retry=retry,
        redis_connect_func=_bounded_handshake(module, connect_timeout, asynchronous),
        **extra,
    )


def _bounded_handshake(module: Any, seconds: float, asynchronous: bool) -> Any:
    """A new connection's first exchange (`CLIENT SETINFO`, `AUTH`, ...), within `seconds`.

    redis-py bounds only the TCP connect by `socket_connect_timeout`; what it then sends
    on the new socket waits `socket_timeout`, the request bound: a server that accepts
    and never answers held a store's first call for `timeout` (60 s by default), not
    `connect_timeout` as every other server store does. Given to redis-py as the
    connection's `redis_connect_func`, which it calls in place of its own handshake.
    """
    late = module.exceptions.TimeoutError

    def handshake(conn: Any) -> None:
        sock = conn._sock
        sock.settimeout(seconds)
        try:
            conn.on_connect_check_health(check_health=True)
        except late:
            raise late("Timeout connecting to server") from None
        sock.settimeout(conn.socket_timeout)

    async def async_handshake(conn: Any) -> None:
        try:
            async with asyncio.timeout(seconds):
                await conn.on_connect_check_health(check_health=True)
        except TimeoutError:  # the loop's: redis-py's own is not a TimeoutError
            raise late("Timeout connecting to server") from None

    return async_handshake if asynchronous else handshake


def packed(parts: Sequence[str]) -> bytes:
    """Some command arguments in RESP form (UTF-8), to put in `evalsha_command`."""
    out = []
    for part in parts:
        data = part.encode()
        out.append(b"$%d\r\n%b\r\n" % (len(data), data))
    return b"".join(out)


def command(parts: Sequence[str]) -> list[bytes]:
    """The RESP form of a command (its name, then its arguments), in one piece."""
    return [b"*%d\r\n%b" % (len(parts), packed(parts))]


def evalsha_command(sha: str, keys: bytes, count: int, args: Sequence[str]) -> list[bytes]:
    """The RESP form of `EVALSHA sha count <keys> <args>` (`keys`: `count` keys, packed)."""
    head = b"*%d\r\n$7\r\nEVALSHA\r\n$40\r\n%b\r\n" % (3 + count + len(args), sha.encode())
    # One piece: redis-py sends each piece of a command with a system call of its own.
    return [b"".join((head, packed([str(count)]), keys, packed(args)))]


class _Kept:
    """The connections a lane keeps, and the pool they come from."""

    def __init__(self, client: Any) -> None:
        self._pool = client.connection_pool
        self._idle: list[Any] = []
        self._pid = os.getpid()

    def _after_fork(self) -> None:
        if self._pid != os.getpid():
            self._idle = []
            self._pid = os.getpid()


class Lane(_Kept):
    """Sends packed commands down connections of one client's pool, kept aside between calls.

    Taking a connection from redis-py's pool and giving it back costs ~30 µs (a lock, a
    readiness poll of the socket, metrics), close to a round trip on a local server, so
    a lane keeps the connections it used: one per thread that sends at once (popping
    and pushing a list is atomic). A connection whose call failed goes back to the pool,
    which redis-py has disconnected on the error, so a kept one never holds an unread
    reply. After a fork the child starts with none (the parent's sockets are not its).
    """

    def _take(self) -> Any:
        self._after_fork()
        try:
            return self._idle.pop()
        except IndexError:
            return self._pool.get_connection()

    def send(self, command: list[bytes]) -> Any:
        """Send a packed command; return the reply.

        Raises:
            redis.exceptions.RedisError: As redis-py raises it (the caller maps it).
        """
        return self.send_all(command, 1)

    def send_all(self, command: list[bytes], replies: int) -> Any:
        """Send packed commands that get `replies` replies (e.g. a `MULTI` … `EXEC`); the last.

        A connection whose call failed with replies still to read is disconnected, so no
        reply is left unread on it.

        Raises:
            redis.exceptions.RedisError: As redis-py raises it (the caller maps it).
        """
        connection = self._take()
        try:
            connection.send_packed_command(command)
            for _ in range(replies - 1):
                connection.read_response()
            reply = connection.read_response()
        except BaseException:
            if replies > 1:
                connection.disconnect()
            self._pool.release(connection)
            raise
        self._idle.append(connection)
        return reply

    def close(self) -> None:
        """Give the kept connections back to the pool."""
        while self._idle:
            self._pool.release(self._idle.pop())


class AsyncLane(_Kept):
    """`Lane` for a `redis.asyncio.Redis` client (one event loop: no two sends share one)."""

    async def send(self, command: list[bytes]) -> Any:
        """Send a packed command; return the reply.

        Raises:
            redis.exceptions.RedisError: As redis-py raises it (the caller maps it).
        """
        return await self.send_all(command, 1)

    async def send_all(self, command: list[bytes], replies: int) -> Any:
        """`Lane.send_all`, awaited.

        Raises:
            redis.exceptions.RedisError: As redis-py raises it (the caller maps it).
        """
        self._after_fork()
        connection = self._idle.pop() if self._idle else await self._pool.get_connection()
        try:
            await connection.send_packed_command(command)
            for _ in range(replies - 1):
                await connection.read_response()
            reply = await connection.read_response()
        except BaseException:
            if replies > 1:
                await connection.disconnect()
            await self._pool.release(connection)
            raise
        self._idle.append(connection)
        return reply

    async def close(self) -> None:
        """Give the kept connections back to the pool."""
        while self._idle:
            await self._pool.release(self._idle.pop())
