"""Keeping an agent's state in its session, so that any process can resume the agent.

`AsyncAgentStateKeeper` stores an `AgentState` as a versioned document of the session
(namespace ``agent``, key: the agent's name), so another process or machine that opens
the same session id loads exactly what was saved. Saving is optimistic: a keeper that
loaded version N can only save over version N, so two replicas saving the same agent
get a `VersionConflict` instead of silently overwriting each other.

`sessionary.AgentStateKeeper` is the generated synchronous twin; `sessionary.shutdown`
saves through either one on SIGTERM or at interpreter exit.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from copy import deepcopy
from typing import Any

from sessionary.agent_state import NAMESPACE, AgentState
from sessionary.errors import InvalidInput, VersionConflict
from sessionary.ids import check_id
from sessionary.records import Document, Scope
from sessionary.stores.base import AsyncStore

__all__ = ["AsyncAgentStateKeeper"]

_PENDING = 256  # saves cut short that a keeper remembers, at most


class AsyncAgentStateKeeper:
    """Loads and saves one agent's state in one session.

    Args:
        store: The store the session lives in.
        scope: The session's scope.
        session_id: The session (it must exist).
        name: Which agent of the session (several agents can share one session).
    """

    def __init__(self, store: AsyncStore, scope: Scope, session_id: str, name: str = "agent"):
        self._store = store
        self._scope = scope
        self._session_id = check_id(session_id, "session id")
        self._name = check_id(name, "agent name")
        self._saved: AgentState | None = None
        # Saves under way or cut short, as (the version saved over, digest of the body):
        # the store may still take them after their caller stopped waiting.
        self._sending: list[tuple[int, str]] = []

    async def load(self) -> AgentState:
        """Return the saved state, or a fresh one (version 0) if none was saved.

        Raises:
            SessionNotFound: If the session does not exist.
        """
        document = await self._store.get_document(
            self._scope, "session", self._session_id, NAMESPACE, self._name, None
        )
        if document is None:
            state = AgentState()
        else:
            state = AgentState.from_dict(document.body, version=document.version)
        self._saved = deepcopy(state)
        self._sending = []
        return state

    async def save(self, state: AgentState) -> AgentState:
        """Save `state` over the version it was loaded from; return it with its new version.

        Saving a state equal to what this keeper last loaded or saved writes nothing. A
        save of this keeper that was cancelled (or lost its reply) after the store took it
        is its own: the next save goes over it instead of raising `VersionConflict`.

        Raises:
            VersionConflict: If another writer saved since `state` was loaded.
            InvalidInput: If `state` is not an `AgentState`, or not JSON.
        """
        if not isinstance(state, AgentState):
            raise InvalidInput(f"expected an AgentState, not {type(state).__name__}")
        saved = self._saved
        if saved is not None and saved.version == state.version and saved.same_content(state):
            return state
        body = json.loads(state.to_json())
        try:
            document = await self._put(body, state.version)
        except VersionConflict:
            landed = await self._landed(state.version)
            if landed is None:
                raise
            # A save of this keeper that was cancelled (or lost its reply) was taken by
            # the store: that version is ours, not another writer's.
            document = landed if landed.body == body else await self._put(body, landed.version)
        self._sending = []
        state.version = document.version
        self._saved = deepcopy(state)
        return state

    async def _put(self, body: dict[str, Any], version: int) -> Document:
        """Write `body` over `version`, remembering it until a save returns."""
        self._sending = [*self._sending[-(_PENDING - 1) :], (version, _digest(body))]
        return await self._store.put_document(
            self._scope,
            "session",
            self._session_id,
            NAMESPACE,
            self._name,
            body,
            "",
            "agent",
            version,
        )

    async def _landed(self, version: int) -> Document | None:
        """The stored state, if every version after `version` is a save of this keeper.

        Those are saves that were cancelled (or lost their reply) after the store took
        them; a save cut short after it found one of them may have gone over it.
        """
        latest = await self._document(None)
        if latest is None or not 0 < latest.version - version <= len(self._sending):
            return None
        for number in range(version + 1, latest.version + 1):
            document = latest if number == latest.version else await self._document(number)
            if document is None or (number - 1, _digest(document.body)) not in self._sending:
                return None
        return latest

    async def _document(self, version: int | None) -> Document | None:
        return await self._store.get_document(
            self._scope, "session", self._session_id, NAMESPACE, self._name, version
        )

    async def history(self) -> list[AgentState]:
        """Return every saved version of the state, oldest first."""
        versions = await self._store.document_versions(
            self._scope, "session", self._session_id, NAMESPACE, self._name
        )
        return [AgentState.from_dict(d.body, version=d.version) for d in versions]

    async def save_latest(self, current: Callable[[], AgentState | None]) -> AgentState | None:
        """Save what `current()` returns (None: nothing to save); used on shutdown."""
        state = current()
        return None if state is None else await self.save(state)


def _digest(body: dict[str, Any]) -> str:
    """A digest of a state's JSON body, the same for equal bodies."""
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()
