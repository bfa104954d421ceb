# This file was generated from src/sessionary/turn.py by tools/async_to_sync.py.
# Do not edit it: edit the source and run `python tools/async_to_sync.py`.
"""The working context: what one model call is built from, and what it adds.

`Session.turn()` opens an `Turn`: the frozen system prompt, the history as
the model should see it (overlays, evicted results, reclaimed loads, a pair-safe
window) and the tools on offer, read once when the turn begins. The agent adds the
model's reply, tool calls and tool results with `add`; nothing is written until the
turn ends, and then only the added messages, as one atomic append.

If another writer moved the session's head meanwhile, the turn's `policy` decides:

- ``"fail"`` (default): raise `HeadConflict`; nothing is written.
- ``"branch"``: store the turn as a new branch from where it began.
- ``"rebase"``: store the turn after the new head.

An exception inside the ``async with`` block persists nothing, unless the turn was
opened with ``persist_on_error=True``. With ``agent=`` the agent's state is loaded when
the turn begins (`ctx.state`) and saved, pointing at the new head, when it ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Literal

from sessionary._sync.keeper import AgentStateKeeper
from sessionary.agent_state import AgentState
from sessionary.errors import InvalidInput
from sessionary.model import Message
from sessionary.records import ANY, HEAD, Expected, Parent
from sessionary.toolspec import ToolResult, ToolSpec
from sessionary.working import WorkingContext

if TYPE_CHECKING:
    from sessionary._sync.session import Session

__all__ = ["POLICIES", "Turn", "TurnPolicy"]

TurnPolicy = Literal["fail", "branch", "rebase"]
POLICIES: tuple[TurnPolicy, ...] = ("fail", "branch", "rebase")


class Turn(WorkingContext):
    """One model call's working context; open it with `Session.turn()`.

    A `WorkingContext` (its `add`, `messages`, `request`, ...) read from the session when
    the turn begins, whose added messages are persisted when it ends.

    Attributes:
        system: The system prompt (frozen when the session caches its prompt).
        history: The stored history as the model should see it when the turn began.
        tools: The tools on offer: the session's memory tools, then the caller's own.
        added: The messages added during this turn, oldest first.
        base: The head's id when the turn began (None: the session was empty).
        state: The agent's state, when the turn was opened with ``agent=``.
        stored: After the turn ended, the messages it persisted.
        dropped: What the last `request` could not carry in its format (see
            `sessionary.formats.Loss`); empty when nothing was lost.
    """

    def __init__(
        self,
        session: Session,
        *,
        policy: TurnPolicy = "fail",
        limit: int | None = None,
        tools: Sequence[ToolSpec] = (),
        persist_on_error: bool = False,
        agent: str | None = None,
    ) -> None:
        if policy not in POLICIES:
            raise InvalidInput(f"policy must be one of {list(POLICIES)}, not {policy!r}")
        if not isinstance(tools, Sequence) or not all(isinstance(t, ToolSpec) for t in tools):
            raise InvalidInput("tools must be a list of ToolSpec objects")
        super().__init__()
        self.session = session
        self.policy: TurnPolicy = policy
        self.limit = limit
        self.persist_on_error = persist_on_error
        self._extra_tools = list(tools)
        self._keeper: AgentStateKeeper | None = (
            None if agent is None else session.agent_state(agent)
        )
        self.base: str | None = None
        self.state: AgentState | None = None
        self.stored: list[Message] = []
        self._open = False

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> Turn:
        head = self.session.head()
        self.base = None if head is None else head.id
        self.history = self.session.context_history(self.base, self.limit)
        self.system = self.session.freeze_system_prompt()
        own = self.session.tools()
        names = {tool.name for tool in own}
        clashes = sorted(names & {tool.name for tool in self._extra_tools})
        if clashes:
            raise InvalidInput(f"tool names already taken by the session's tools: {clashes}")
        self.tools = own + self._extra_tools
        if self._keeper is not None:
            self.state = self._keeper.load()
        self._open = True
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._open = False
        if exc is not None and not self.persist_on_error:
            return
        self.commit()

    def commit(self) -> list[Message]:
        """Persist the messages added so far (as the turn's end does); return them stored.

        Raises:
            HeadConflict: With policy "fail", if the head moved since the turn began.
            VersionConflict: If another writer saved the agent's state since it loaded.
        """
        if self.added:
            parent: Parent = self.base
            expected: Expected = self.base
            if self.policy == "branch":
                expected = ANY
            elif self.policy == "rebase":
                parent, expected = HEAD, ANY
            self.stored = self.session.append_all(self.added, parent=parent, expected_head=expected)
            self.base, self.history, self.added = self.stored[-1].id, self.messages, []
        if self._keeper is not None and self.state is not None:
            self.state.history_leaf = self.base
            self._keeper.save(self.state)
        return self.stored

    # ------------------------------------------------------------------ tools

    def call_tool(self, name: str, arguments: object = None) -> ToolResult:
        """Run one of the session's memory tools; never raises (errors are results)."""
        return self.session.call_tool(name, arguments)

    def __repr__(self) -> str:
        state = "open" if self._open else "closed"
        return f"<{type(self).__name__} {self.session.id!r} {state}, {len(self.added)} added>"
