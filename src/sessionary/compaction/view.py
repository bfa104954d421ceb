"""The context view of stored messages: evicted tool results and clipped arguments (pure).

Nothing here changes what is stored. A tool result longer than the eviction threshold is
shown as its head and tail with a reference the `read_tool_result` tool reads back by
character range; oversized tool-call arguments are clipped, keeping their JSON shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sessionary.compaction.planner import EVICTED_KEY
from sessionary.compaction.policy import DEFAULT_TRUNCATION_MARKER, Eviction
from sessionary.errors import InvalidInput
from sessionary.model import Message, Part, ToolCallPart, ToolResultPart
from sessionary.tokens import json_text

__all__ = [
    "CLIPPED_KEY",
    "EVICTED_KEY",
    "clip_arguments",
    "context_view",
    "evict_result",
    "read_range",
]

CLIPPED_KEY = "clipped_arguments"
"""The key of the object that holds a tool call's arguments clipped as JSON text."""


def evict_result(part: ToolResultPart, message_id: str, eviction: Eviction) -> ToolResultPart:
    """Return `part` as a head-and-tail preview if its output exceeds the threshold.

    The head and tail together never exceed the threshold (a preview of 2000 with a
    threshold of 1000 shows 500 each), so the preview is always shorter than the output.
    """
    if eviction.excludes(part.name):
        return part
    text = json_text(part.output)
    if len(text) <= eviction.threshold:
        return part
    # Head and tail must not overlap, or the "preview" repeats the whole output twice.
    keep = min(eviction.preview, eviction.threshold // 2)
    head, tail = text[:keep], text[len(text) - keep :]
    omitted = len(text) - len(head) - len(tail)
    note = (
        f"\n\n… [{omitted} characters not shown of {len(text)}; the whole output is stored: "
        f'call read_tool_result with message_id="{message_id}", call_id="{part.call_id}", '
        f"start and end character offsets] …\n\n"
    )
    marker = {
        "message_id": message_id,
        "call_id": part.call_id,
        "chars": len(text),
        "preview": keep,
    }
    return replace(part, output=head + note + tail, extra={**part.extra, EVICTED_KEY: marker})


def _clip(text: str, limit: int, marker: str) -> str:
    return f"{text[:limit]}{marker.format(omitted=len(text) - limit)}"


def _clip_value(value: Any, limit: int, marker: str) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return _clip(value, limit, marker)
    if isinstance(value, dict):
        return {k: _clip_value(v, limit, marker) for k, v in value.items()}
    if isinstance(value, list):
        return [_clip_value(v, limit, marker) for v in value]
    return value


def clip_arguments(
    part: ToolCallPart, max_chars: int, marker: str = DEFAULT_TRUNCATION_MARKER
) -> ToolCallPart:
    """Return `part` with its long string arguments clipped, if its JSON exceeds `max_chars`.

    Each string longer than a quarter of `max_chars` is cut to that length and ends with
    `marker` (``{omitted}`` in it becomes the number of characters cut); keys, numbers
    and structure stay. Arguments still too long (many short strings) are shown as their
    clipped JSON text: under `CLIPPED_KEY` in an object if they were an object, as
    providers that take tool input as an object (Anthropic, Gemini) would otherwise get
    none of it.
    """
    text = json_text(part.arguments)
    if len(text) <= max_chars:
        return part
    clipped = _clip_value(part.arguments, max(8, max_chars // 4), marker)
    if len(json_text(clipped)) > max_chars:
        clipped = _clip(text, max_chars, marker)
        if isinstance(part.arguments, dict):
            clipped = {CLIPPED_KEY: clipped}
    return replace(part, arguments=clipped)


def _view_part(
    part: Part, message_id: str, eviction: Eviction | None, max_args: int | None, marker: str
) -> Part:
    if isinstance(part, ToolResultPart) and eviction is not None:
        return evict_result(part, message_id, eviction)
    if isinstance(part, ToolCallPart) and max_args is not None:
        return clip_arguments(part, max_args, marker)
    return part


def context_view(
    messages: Sequence[Message],
    eviction: Eviction | None,
    max_argument_chars: int | None,
    marker: str = DEFAULT_TRUNCATION_MARKER,
) -> list[Message]:
    """Return `messages` as a model should see them (copies; the inputs are unchanged)."""
    if eviction is None and max_argument_chars is None:
        return list(messages)
    shown = []
    for message in messages:
        parts = [
            _view_part(p, message.id, eviction, max_argument_chars, marker) for p in message.parts
        ]
        changed = any(a is not b for a, b in zip(parts, message.parts, strict=True))
        shown.append(replace(message, parts=parts) if changed else message)
    return shown


def read_range(message: Message, call_id: str | None, start: int, end: int | None) -> str:
    """Return characters `start`..`end` of a stored tool result's whole output.

    Raises:
        InvalidInput: If the message holds no such result or the range is malformed.
    """
    results = [r for r in message.tool_results if call_id is None or r.call_id == call_id]
    if not results:
        raise InvalidInput(f"message {message.id!r} holds no tool result for {call_id!r}")
    if start < 0 or (end is not None and end < start):
        raise InvalidInput("need 0 <= start <= end")
    return json_text(results[0].output)[start:end]
