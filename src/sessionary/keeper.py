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

import json
from collections.abc import Callable
from copy import deepcopy

from sessionary.agent_state import NAMESPACE, AgentState
from sessionary.errors import InvalidInput
from sessionary.ids import check_id
from sessionary.records import Scope
from sessionary.stores.base import AsyncStore

__all__ = ["AsyncAgentStateKeeper"]


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
        return state

    async def save(self, state: AgentState) -> AgentState:
        """Save `state` over the version it was loaded from; return it with its new version.

        Saving a state equal to what this keeper last loaded or saved writes nothing.

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
        document = await self._store.put_document(
            self._scope,
            "session",
            self._session_id,
            NAMESPACE,
            self._name,
            body,
            "",
            "agent",
            state.version,
        )
        state.version = document.version
        self._saved = deepcopy(state)
        return state

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
