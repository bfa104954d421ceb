"""What every framework integration shares: install hints, names, opening and closing a store.

An integration takes a store URL or a manager. A URL is opened here and closed by the
integration's `close`; a manager passed in belongs to the caller and is never closed.
The sessions an integration writes to are created on their first write, so a framework
that only knows a session id (as all of them do) needs no set-up step.

A framework takes any string as a session id (an e-mail address, `thread:42/1`, a name
with spaces); sessionary ids are 1-128 letters, digits, `_`, `.` and `-`. `encode_name`
maps the one to the other reversibly: a valid id stays as it is (so a session stored
under it is found unchanged), any other name is stored hex-encoded behind an `x.`
prefix, and `decode_name` gives the framework its own name back.

Closing follows the OpenAI Agents SDK's sessions (the one framework that defines it for
a session): an integration that opened its store is terminal from its first `close`, and
every later use raises `Closed` (a RuntimeError) instead of reopening or hanging; closing
again is a no-op. An integration over the caller's manager is not closed by `close`,
which is then a no-op, as the SDK's sessions over an injected client do.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import Hashable, Sequence
from typing import TypeVar

from sessionary._sync.manager import SessionManager
from sessionary._sync.session import Session
from sessionary.errors import Closed, InvalidId, InvalidURL, SessionNotFound
from sessionary.ids import MAX_ID_LENGTH, check_id
from sessionary.manager import DEFAULT_URL, AsyncSessionManager
from sessionary.model import Message
from sessionary.session import AsyncSession

_M = TypeVar("_M", SessionManager, AsyncSessionManager)
_ENCODED = "x."  # the prefix of a name stored hex-encoded

__all__ = [
    "DEFAULT_URL",
    "Lifecycle",
    "LoopLocks",
    "append_async",
    "append_sync",
    "close_async",
    "close_sync",
    "decode_name",
    "encode_name",
    "install_hint",
    "open_async_manager",
    "open_sync_manager",
]


def install_hint(package: str, extra: str, exc: ImportError) -> ImportError:
    """Return the ImportError to raise when a framework's package is missing."""
    error = ImportError(
        f"this integration needs {package}, which is not installed: "
        f"pip install 'sessionary[{extra}]' ({exc})"
    )
    error.name = exc.name
    return error


def encode_name(name: str, what: str) -> str:
    """Return the sessionary id for a framework's app, user or session name (reversible).

    Args:
        name: Any non-empty string (one that encodes to at most 63 UTF-8 bytes, if it is
            not a valid id already).
        what: What the name is, for the error message.

    Raises:
        InvalidId: If the name is empty, not a string, holds a lone surrogate (it has no
            UTF-8 form), or is too long even encoded.
    """
    if not isinstance(name, str) or not name:
        raise InvalidId(f"{what} must be a non-empty string")
    with contextlib.suppress(InvalidId):
        if not name.startswith(_ENCODED):
            return check_id(name, what)
    try:
        encoded = _ENCODED + name.encode().hex()
    except UnicodeEncodeError:
        raise InvalidId(f"{what} {name!r} is not valid Unicode text") from None
    if len(encoded) > MAX_ID_LENGTH:
        raise InvalidId(f"{what} {name!r} is too long to store")
    return encoded


def decode_name(value: str) -> str:
    """Return the framework's name a sessionary id stands for (the inverse of `encode_name`)."""
    if value.startswith(_ENCODED):
        with contextlib.suppress(ValueError):
            return bytes.fromhex(value[len(_ENCODED) :]).decode()
    return value


def open_sync_manager(
    store: SessionManager | str, tenant: str | None, user: str | None
) -> tuple[SessionManager, bool]:
    """Return a sync manager for `store` and whether the caller must close it.

    Raises:
        InvalidURL: If `store` is neither a URL nor a `SessionManager`.
    """
    if isinstance(store, str):
        return SessionManager(store, tenant=tenant or "default", user=user or "default"), True
    if isinstance(store, SessionManager):
        return _rescoped(store, tenant, user), False
    raise InvalidURL(f"expected a store URL or a SessionManager, not {type(store).__name__}")


def open_async_manager(
    store: AsyncSessionManager | str, tenant: str | None, user: str | None
) -> tuple[AsyncSessionManager, bool]:
    """Return an async manager for `store` and whether the caller must close it.

    Raises:
        InvalidURL: If `store` is neither a URL nor an `AsyncSessionManager`.
    """
    if isinstance(store, str):
        manager = AsyncSessionManager(store, tenant=tenant or "default", user=user or "default")
        return manager, True
    if isinstance(store, AsyncSessionManager):
        return _rescoped(store, tenant, user), False
    raise InvalidURL(f"expected a store URL or an AsyncSessionManager, not {type(store).__name__}")


def _rescoped(manager: _M, tenant: str | None, user: str | None) -> _M:
    """Return `manager`, or one for another tenant or user sharing its store."""
    if tenant is None and user is None:
        return manager
    scope = manager.scope
    return manager.for_user(user or scope.user, tenant=tenant or scope.tenant)


class Lifecycle:
    """Whether an integration owns its store and has closed it (see the module docstring).

    A thread lock, not an asyncio one, guards it: an integration may be used from several
    threads, each with its own event loop.
    """

    def __init__(self, name: str, owned: bool) -> None:
        self.name = name
        self.owned = owned
        self.closed = False
        self._releasing = False
        self._lock = threading.Lock()

    def check_open(self) -> None:
        """Raise `Closed` if the integration was closed.

        Raises:
            Closed: After `close()` on an integration that opened its store.
        """
        if self.closed:
            raise Closed(f"{self.name} is closed")

    def start_close(self) -> bool:
        """Mark the integration closed; return whether the caller must now close the store.

        Only the first call on an integration that owns its store returns True, so a store
        is closed once however often (or concurrently) `close` is called.
        """
        with self._lock:
            if not self.owned or self._releasing:
                return False
            self.closed = self._releasing = True
            return True

    def close_failed(self) -> None:
        """Let the next `close` try again: closing the store failed or was cancelled."""
        with self._lock:
            self._releasing = False


class LoopLocks:
    """Asyncio locks by key, one per key in each event loop the integration is used from.

    An `asyncio.Lock` belongs to the loop it is first contended in, and an integration may
    be used from several threads, each with its own loop: each loop gets its own locks
    (they order the coroutines of that loop; the store's own checks order the rest). A
    lock lives as long as a coroutine holds it or waits for it, a loop's locks as long as
    the loop: neither builds up over many keys or loops.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()  # the maps are shared by every thread's loop
        self._loops: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, weakref.WeakValueDictionary[Hashable, asyncio.Lock]
        ] = weakref.WeakKeyDictionary()

    def get(self, key: Hashable) -> asyncio.Lock:
        """Return the running loop's lock for `key`; keep it referenced while using it."""
        loop = asyncio.get_running_loop()
        with self._guard:
            locks = self._loops.get(loop)
            if locks is None:
                locks = self._loops[loop] = weakref.WeakValueDictionary()
            lock = locks.get(key)
            if lock is None:
                lock = locks[key] = asyncio.Lock()
            return lock


def close_sync(life: Lifecycle, manager: SessionManager) -> None:
    """Close `manager` if `life` says this call must (see `Lifecycle.start_close`)."""
    if life.start_close():
        try:
            manager.close()
        except BaseException:
            life.close_failed()
            raise


async def close_async(life: Lifecycle, manager: AsyncSessionManager) -> None:
    """Close `manager` if `life` says this call must (see `Lifecycle.start_close`)."""
    if life.start_close():
        try:
            await manager.close()
        except BaseException:
            life.close_failed()
            raise


def append_sync(
    manager: SessionManager, session_id: str, messages: Sequence[Message]
) -> list[Message]:
    """Append `messages` as one atomic chain, creating the session on first use."""
    if not messages:
        return []
    session: Session = manager.session(check_id(session_id, "session id"))
    try:
        return session.append_all(messages)
    except SessionNotFound:
        return manager.get_or_create(session_id).append_all(messages)


async def append_async(
    manager: AsyncSessionManager, session_id: str, messages: Sequence[Message]
) -> list[Message]:
    """Append `messages` as one atomic chain, creating the session on first use."""
    if not messages:
        return []
    session: AsyncSession = manager.session(check_id(session_id, "session id"))
    try:
        return await session.append_all(messages)
    except SessionNotFound:
        return await (await manager.get_or_create(session_id)).append_all(messages)
