"""One `EVALSHA` sent straight down a pooled redis-py connection (sync and async).

redis-py's `execute_command` spends, per call, more than a round trip's worth of Python
(measured with callgrind: ~55k instructions beyond the socket work, plus ~3k to pack
each argument) on retries, metrics and generic argument encoding. The hot calls of the
Redis store and driver (an append, a commit) skip that: they pack their command here,
take a connection from the client's pool, send, read the reply and give the connection
back, which is what redis-py does underneath. A connection that fails is disconnected
by redis-py before it goes back to the pool; callers then fall back on the ordinary
path (which retries and reconnects), so nothing is lost but speed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["evalsha_command", "packed", "send", "send_async"]


def packed(parts: Sequence[str]) -> bytes:
    """Some command arguments in RESP form (UTF-8), to put in `evalsha_command`."""
    out = []
    for part in parts:
        data = part.encode()
        out.append(b"$%d\r\n%b\r\n" % (len(data), data))
    return b"".join(out)


def evalsha_command(sha: str, keys: bytes, count: int, args: Sequence[str]) -> list[bytes]:
    """The RESP form of `EVALSHA sha count <keys> <args>` (`keys`: `count` keys, packed)."""
    head = b"*%d\r\n$7\r\nEVALSHA\r\n$40\r\n%b\r\n" % (3 + count + len(args), sha.encode())
    # One piece: redis-py sends each piece of a command with a system call of its own.
    return [b"".join((head, packed([str(count)]), keys, packed(args)))]


def send(client: Any, command: list[bytes]) -> Any:
    """Send a packed command on one of `client`'s pooled connections; return the reply.

    Raises:
        redis.exceptions.RedisError: As redis-py raises it (the caller maps it).
    """
    pool = client.connection_pool
    connection = pool.get_connection()
    try:
        connection.send_packed_command(command)
        return connection.read_response()
    finally:
        pool.release(connection)


async def send_async(client: Any, command: list[bytes]) -> Any:
    """`send` for a `redis.asyncio.Redis` client.

    Raises:
        redis.exceptions.RedisError: As redis-py raises it (the caller maps it).
    """
    pool = client.connection_pool
    connection = await pool.get_connection()
    try:
        await connection.send_packed_command(command)
        return await connection.read_response()
    finally:
        await pool.release(connection)
