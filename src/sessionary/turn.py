"""The working context: what one model call is built from, and what it adds.

`AsyncSession.turn()` opens an `AsyncTurn`: the frozen system prompt, the history as
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

from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from sessionary.agent_state import AgentState
from sessionary.errors import InvalidInput, InvalidMessage
from sessionary.formats import Loss
from sessionary.keeper import AsyncAgentStateKeeper
from sessionary.model import Message
from sessionary.records import ANY, HEAD, Expected, Parent
from sessionary.requests import build_request
from sessionary.session import coerce_message
from sessionary.toolspec import ToolFormat, ToolResult, ToolSpec, export_tools

if TYPE_CHECKING:
    from sessionary.session import AsyncSession

__all__ = ["POLICIES", "AsyncTurn", "TurnPolicy"]

TurnPolicy = Literal["fail", "branch", "rebase"]
POLICIES: tuple[TurnPolicy, ...] = ("fail", "branch", "rebase")


class AsyncTurn:
    """One model call's working context; open it with `AsyncSession.turn()`.

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
        session: AsyncSession,
        *,
        policy: TurnPolicy = "fail",
        limit: int | None = None,
        tools: Sequence[ToolSpec] = (),
        persist_on_error: bool = False,
        agent: str | None = None,
    ) -> None:
        if policy not in POLICIES:
            raise InvalidInput(f"policy must be one of {list(POLICIES)}, not {policy!r}")
        if not all(isinstance(tool, ToolSpec) for tool in tools):
            raise InvalidInput("tools must be ToolSpec objects")
        self.session = session
        self.policy: TurnPolicy = policy
        self.limit = limit
        self.persist_on_error = persist_on_error
        self._extra_tools = list(tools)
        self._keeper: AsyncAgentStateKeeper | None = (
            None if agent is None else session.agent_state(agent)
        )
        self.system = ""
        self.history: list[Message] = []
        self.tools: list[ToolSpec] = []
        self.added: list[Message] = []
        self.base: str | None = None
        self.state: AgentState | None = None
        self.stored: list[Message] = []
        self.dropped: list[Loss] = []
        self._open = False

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> AsyncTurn:
        head = await self.session.head()
        self.base = None if head is None else head.id
        self.history = await self.session.context_history(self.base, self.limit)
        self.system = await self.session.freeze_system_prompt()
        own = await self.session.tools()
        names = {tool.name for tool in own}
        clashes = sorted(names & {tool.name for tool in self._extra_tools})
        if clashes:
            raise InvalidInput(f"tool names already taken by the session's tools: {clashes}")
        self.tools = own + self._extra_tools
        if self._keeper is not None:
            self.state = await self._keeper.load()
        self._open = True
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._open = False
        if exc is not None and not self.persist_on_error:
            return
        await self.commit()

    async def commit(self) -> list[Message]:
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
            self.stored = await self.session.append_all(
                self.added, parent=parent, expected_head=expected
            )
            self.base, self.history, self.added = self.stored[-1].id, self.messages, []
        if self._keeper is not None and self.state is not None:
            self.state.history_leaf = self.base
            await self._keeper.save(self.state)
        return self.stored

    # ------------------------------------------------------------------ building

    @property
    def messages(self) -> list[Message]:
        """The history followed by the messages added in this turn: what the model sees."""
        return self.history + self.added

    def add(self, message: Message | Mapping[str, Any]) -> Message:
        """Add a message to the turn (persisted when the turn ends); return it.

        Raises:
            InvalidMessage: If the message is malformed, is a compaction summary, or has
                an id already added in this turn.
        """
        added = coerce_message(message)
        if any(m.id == added.id for m in self.added):
            raise InvalidMessage(f"message id {added.id!r} was already added in this turn")
        self.added.append(added)
        return added

    def add_all(self, messages: Iterable[Message | Mapping[str, Any]]) -> list[Message]:
        """Add several messages in order; all of them or, on a malformed one, none.

        Raises:
            InvalidMessage: As `add`.
        """
        if isinstance(messages, Message | Mapping | str | bytes):
            raise InvalidMessage("add_all takes an iterable of messages; use add for one")
        batch = [coerce_message(m) for m in messages]
        ids = [m.id for m in self.added + batch]
        if len(ids) != len(set(ids)):
            raise InvalidMessage("a message id appears twice in this turn")
        self.added.extend(batch)
        return batch

    async def call_tool(self, name: str, arguments: object = None) -> ToolResult:
        """Run one of the session's memory tools; never raises (errors are results)."""
        return await self.session.call_tool(name, arguments)

    def export_tools(self, format: ToolFormat = "openai-chat") -> list[dict[str, Any]]:
        """Return the turn's tools in a provider's form (see `sessionary.toolspec`).

        Raises:
            InvalidInput: If the format is unknown.
        """
        return export_tools(self.tools, format)

    def request(self, format: ToolFormat = "openai-chat") -> dict[str, Any]:
        """Return the pieces of a provider request: system prompt, messages and tools.

        "openai-chat" gives ``messages`` (system first) and ``tools``; "anthropic" gives
        ``system``, ``messages`` and ``tools``; "openai-responses" gives
        ``instructions``, ``input`` and ``tools``; "gemini" gives ``contents`` and
        ``config`` (``system_instruction`` and ``tools``) for
        ``client.models.generate_content``; "ai-sdk" gives ``system``, ``messages`` (AI
        SDK UIMessages) and ``tools`` keyed by name. Keys with nothing to send are left
        out, so the result can be splatted into the SDK call with the model name. What
        the format cannot carry (e.g. reasoning in OpenAI Chat) is listed in `dropped`.

        Raises:
            InvalidInput: If the format is not one of those, whether or not there are tools.
        """
        out, dropped = build_request(format, self.system, self.messages, self.tools)
        self.dropped = list(dropped)
        return out

    def __repr__(self) -> str:
        state = "open" if self._open else "closed"
        return f"<{type(self).__name__} {self.session.id!r} {state}, {len(self.added)} added>"
