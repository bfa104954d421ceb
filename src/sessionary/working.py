"""The working context of one model call, built from any list of events (pure: no I/O).

A `WorkingContext` is what one model call is built from: a system prompt, the history the
model sees, the tools on offer, and the messages added during the call (the model's
reply, its tool calls and their results). It is thrown away afterwards; only the added
messages are meant to be persisted (`new_messages`). `AsyncSession.turn()` gives one
built from a stored session (see `sessionary.turn`); `build_working_context` builds one
from a plain event log of your own, as the session-agent design does between a
workflow and an agent::

    ctx = build_working_context(events, system="You are terse.")
    ctx.add(Message.user("What changed?"))
    reply = call_the_model(**ctx.request("workers-ai"))
    ctx.add(from_workers_ai_response(reply))
    append_to_my_log(to_events(ctx.new_messages(), session_id="s1").value)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from sessionary.errors import InvalidInput, InvalidMessage
from sessionary.formats import Loss, from_events
from sessionary.formats._shared import check_messages
from sessionary.model import Message
from sessionary.requests import build_request
from sessionary.session import coerce_message
from sessionary.toolspec import ToolFormat, ToolSpec, export_tools
from sessionary.window import pair_safe_start

__all__ = ["DEFAULT_LIMIT", "EventMapper", "WorkingContext", "build_working_context"]

DEFAULT_LIMIT = 50
"""The most history messages `build_working_context` keeps by default, as the session-agent
design loads at most 50 events unless told otherwise."""

EventMapper = Callable[[Mapping[str, Any]], "Message | Mapping[str, Any] | None"]
"""Turns one event into a message (or its JSON shape), or None to leave the event out."""


class WorkingContext:
    """The ephemeral view one model call is built from, and the messages it adds.

    Attributes:
        system: The system prompt ("" for none).
        history: The messages the model sees before this call, oldest first.
        tools: The tools on offer.
        added: The messages added since the context was built, oldest first.
        dropped: What the last `request` could not carry in its format (see
            `sessionary.formats.Loss`); empty when nothing was lost.
    """

    def __init__(
        self,
        system: str = "",
        history: Sequence[Message] = (),
        tools: Sequence[ToolSpec] = (),
    ) -> None:
        if not isinstance(system, str):
            raise InvalidInput("a system prompt must be text")
        tools = _listed(tools, "tools", InvalidInput)
        if not all(isinstance(tool, ToolSpec) for tool in tools):
            raise InvalidInput("tools must be ToolSpec objects")
        self.system = system
        self.history: list[Message] = check_messages(_listed(history, "history", InvalidMessage))
        self.tools: list[ToolSpec] = tools
        self.added: list[Message] = []
        self.dropped: list[Loss] = []

    @property
    def messages(self) -> list[Message]:
        """The history followed by the messages added since: what the model sees."""
        return self.history + self.added

    def new_messages(self) -> list[Message]:
        """Return the messages added since the context was built: what to persist."""
        return list(self.added)

    def add(self, message: Message | Mapping[str, Any]) -> Message:
        """Add a message (a reply, a tool call, a result) to the context; return it.

        Raises:
            InvalidMessage: If the message is malformed, is a compaction summary, or has
                an id already added.
        """
        added = coerce_message(message)
        if any(m.id == added.id for m in self.added):
            raise InvalidMessage(f"message id {added.id!r} was already added")
        self.added.append(added)
        return added

    def add_all(self, messages: Iterable[Message | Mapping[str, Any]]) -> list[Message]:
        """Add several messages in order; all of them or, on a malformed one, none.

        Raises:
            InvalidMessage: As `add`.
        """
        if isinstance(messages, Message | Mapping | str | bytes) or not isinstance(
            messages, Iterable
        ):
            raise InvalidMessage("add_all takes an iterable of messages; use add for one")
        batch = [coerce_message(m) for m in messages]
        ids = [m.id for m in self.added + batch]
        if len(ids) != len(set(ids)):
            raise InvalidMessage("a message id appears twice among the added messages")
        self.added.extend(batch)
        return batch

    def export_tools(self, format: ToolFormat = "openai-chat") -> list[dict[str, Any]]:
        """Return the tools in a provider's form (see `sessionary.toolspec`).

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
        SDK UIMessages) and ``tools`` keyed by name; "workers-ai" gives ``messages``
        (system first) and ``tools`` for a Workers AI chat model. Keys with nothing to
        send are left out, so the result can be splatted into the SDK call with the model
        name. What the format cannot carry (e.g. reasoning in OpenAI Chat) is listed in
        `dropped`.

        Raises:
            InvalidInput: If the format is not one of those, whether or not there are tools.
        """
        out, dropped = build_request(format, self.system, self.messages, self.tools)
        self.dropped = list(dropped)
        return out


def build_working_context(
    events: Iterable[Mapping[str, Any]],
    *,
    system: str | Sequence[str] = "",
    limit: int | None = DEFAULT_LIMIT,
    to_message: EventMapper | None = None,
    tools: Sequence[ToolSpec] = (),
) -> WorkingContext:
    """Build a model call's working context from a plain list of events (no store needed).

    Args:
        events: Events in order, in the event-log shape `sessionary.formats.from_events`
            reads (or its stored rows), unless `to_message` reads them.
        system: The system prompt; several instructions are joined with blank lines.
        limit: Keep at most this many of the latest messages (None: all), widened back
            so that no tool result is shown without its call, as `Session.history` does.
        to_message: Turns one event into a message, or None to leave it out (e.g. a
            compaction marker, or events of another kind); it may return the message's
            JSON shape. Default: the event-log reader, `from_events` over the whole list
            (`sessionary.formats.event_to_message` reads one event the same way).
        tools: The tools on offer.

    Raises:
        InvalidInput: If `limit` is not a non-negative integer, or `system` is not text.
        InvalidMessage: If an event (or what `to_message` made of it) is malformed.
    """
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
        raise InvalidInput(f"limit must be a non-negative integer or None, not {limit!r}")
    texts = [system] if isinstance(system, str) else system
    if not isinstance(texts, list | tuple) or not all(isinstance(text, str) for text in texts):
        raise InvalidInput("system instructions must be text or a list of texts")
    listed = _listed(events, "events", InvalidMessage)
    if to_message is None:
        history = from_events(listed)
    else:
        mapped = (to_message(event) for event in listed)
        history = [coerce_message(m) for m in mapped if m is not None]
    if limit is not None:
        history = history[pair_safe_start(history, len(history) - limit) :]
    return WorkingContext("\n\n".join(t for t in texts if t), history, tools)


def _listed(values: Any, what: str, error: type[InvalidInput | InvalidMessage]) -> list[Any]:
    """Return `values` as a list, refusing text, mappings and what is not iterable."""
    if isinstance(values, str | bytes | Mapping | Message) or not isinstance(values, Iterable):
        raise error(f"{what} must be a list, not {type(values).__name__}")
    return list(values)
