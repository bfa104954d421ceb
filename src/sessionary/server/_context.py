"""What every request handler needs: the app's shared state and the caller's scope.

`ServerState` is made once per app (by `create_app`) and kept on ``app.state``. The
`manager` dependency turns a request into an `AsyncSessionManager` bound to the
caller's scope: the tenant comes from the API key (or the server's fixed scope when it
runs without keys) and the user from the key, or, for a key bound to a tenant only, from
the ``X-Sessionary-User`` header (default ``default``). Every read and write goes
through that manager, so the library's scope filtering is the wall: another tenant's
session is simply not found (404), never forbidden (403), and its existence is not told.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request

from sessionary.blocks import SessionConfig
from sessionary.compaction.policy import CompactionPolicy
from sessionary.ids import check_id
from sessionary.manager import AsyncSessionManager
from sessionary.records import Scope
from sessionary.server._errors import ServerProblem
from sessionary.server.keys import Keyring
from sessionary.stores.base import AsyncStore

if TYPE_CHECKING:
    from sessionary.server.stream import Watcher

__all__ = ["USER_HEADER", "Manager", "ServerState", "caller_scope", "get_manager", "state_of"]

USER_HEADER = "X-Sessionary-User"


@dataclass(slots=True)
class ServerState:
    """The app's shared state: its store, how callers are told apart, and defaults.

    Args:
        store: The open store every request reads and writes.
        keyring: The API keys, or None to serve `open_scope` without keys.
        open_scope: The tenant (and default user) served when there is no keyring.
        watcher: Polls the sessions that event streams follow.
        config: The context blocks every session handle is opened with.
        compaction: The compaction policy of every session handle.
    """

    store: AsyncStore
    keyring: Keyring | None
    open_scope: Scope
    watcher: Watcher
    config: SessionConfig = field(default_factory=SessionConfig)
    compaction: CompactionPolicy | None = None


def state_of(request: Request) -> ServerState:
    """Return the app's `ServerState`."""
    found: ServerState = request.app.state.sessionary
    return found


def _token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return request.headers.get("x-api-key") or None


def _asked_user(request: Request) -> str | None:
    asked = request.headers.get(USER_HEADER.lower())
    return None if asked is None else check_id(asked, "user")


async def caller_scope(request: Request) -> Scope:
    """Return the scope the request acts in.

    Raises:
        ServerProblem: 401 without a live key, 403 if a user-bound key asks for another user.
        InvalidId: If the user header is malformed.
    """
    state = state_of(request)
    asked = _asked_user(request)
    if state.keyring is None:
        return Scope(state.open_scope.tenant, asked or state.open_scope.user)
    token = _token(request)
    if token is None:
        raise ServerProblem(401, "Unauthorized", "an API key is required (Authorization: Bearer)")
    key = await state.keyring.verify(token)
    if key is None:
        raise ServerProblem(401, "Unauthorized", "the API key is unknown or revoked")
    if key.user is not None and asked not in (None, key.user):
        raise ServerProblem(403, "Forbidden", "this API key acts only as its own user")
    return Scope(key.tenant, key.user or asked or "default")


async def get_manager(
    request: Request, scope: Annotated[Scope, Depends(caller_scope)]
) -> AsyncSessionManager:
    """Return a session manager bound to the caller's scope (it opens nothing)."""
    state = state_of(request)
    return AsyncSessionManager(
        state.store,
        tenant=scope.tenant,
        user=scope.user,
        config=state.config,
        compaction=state.compaction,
    )


Manager = Annotated[AsyncSessionManager, Depends(get_manager)]
"""A handler parameter typed `Manager` receives the caller's scoped manager."""
