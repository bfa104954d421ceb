"""What every framework integration shares: install hints and opening a session by URL.

An integration takes a store URL or a manager. A URL is opened here and closed by the
integration's `close`; a manager passed in belongs to the caller and is never closed.
The sessions an integration writes to are created on their first write, so a framework
that only knows a session id (as all of them do) needs no set-up step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from sessionary._sync.manager import SessionManager
from sessionary._sync.session import Session
from sessionary.errors import InvalidURL, SessionNotFound
from sessionary.ids import check_id
from sessionary.manager import DEFAULT_URL, AsyncSessionManager
from sessionary.model import Message
from sessionary.session import AsyncSession

_M = TypeVar("_M", SessionManager, AsyncSessionManager)

__all__ = [
    "DEFAULT_URL",
    "append_async",
    "append_sync",
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
