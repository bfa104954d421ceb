"""Vercel AI SDK `UIMessage`s (`{id, role, metadata, parts}`, version 5).

A UIMessage keeps a tool call and its result in one tool part (`tool-<name>` or
`dynamic-tool`) whose `state` says how far it got. So an assistant message, the tool
message answering it and the assistant message after it become one assistant UIMessage,
each of our assistant messages opening with a `step-start` part. Reading splits an
assistant UIMessage back at its steps: an assistant message with the calls, then a tool
message with the results. The first message of a UIMessage takes its id and metadata.

Part states and provider metadata are kept in `extra["ai_sdk"]`; a reasoning signature
travels in `providerMetadata.sessionary.signature`. Not carried: a result without its call
in the same UIMessage, a result's name, the metadata of the messages merged into a
UIMessage after its first, and data parts without a name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sessionary.errors import InvalidId, InvalidMessage
from sessionary.formats._shared import (
    Conversion,
    Losses,
    as_items,
    as_list,
    check_messages,
    data_url,
    message,
    need,
    own,
    parse_data_url,
    pick,
    raw_block,
    raw_of,
    with_own,
)
from sessionary.ids import check_id
from sessionary.model import (
    DataPart,
    FilePart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

__all__ = ["from_ai_sdk", "to_ai_sdk"]

NS = "ai_sdk"
TARGET = "AI SDK UIMessage"
JSON = Any
_SIGNED = "sessionary"


# ---------------------------------------------------------------- ours -> wire


def to_ai_sdk(
    messages: Iterable[Message], *, strict: bool = False
) -> Conversion[list[dict[str, JSON]]]:
    """Write messages as AI SDK UIMessages.

    Args:
        messages: Our messages, in conversation order.
        strict: Raise instead of reporting what the format cannot carry.

    Returns:
        The UIMessages, and what was dropped.

    Raises:
        InvalidMessage: If a message is malformed.
        LossyConversion: If `strict` and something cannot be carried.
    """
    checked = check_messages(messages)
    losses = Losses(TARGET)
    out: list[dict[str, JSON]] = []
    previous = ""
    for i, msg in enumerate(checked):
        where = f"messages[{i}]"
        losses.extra(msg.extra, NS, where)
        if msg.role == "tool":
            _answer(out[-1] if out and out[-1]["role"] == "assistant" else None, msg, where, losses)
        elif (
            msg.role == "assistant"
            and previous == "tool"
            and out
            and out[-1]["role"] == "assistant"
        ):
            if msg.metadata:
                losses.add(
                    f"{where}.metadata", "only the first message of a UIMessage has metadata"
                )
            out[-1]["parts"].extend(_parts(msg, where, losses))
        else:
            out.append(_ui_message(msg, where, losses))
        previous = msg.role
    return losses.finish(out, strict)


def _ui_message(msg: Message, where: str, losses: Losses) -> dict[str, JSON]:
    mine = own(msg.extra, NS)
    wire: dict[str, JSON] = dict(mine.get("fields") or {})
    wire.update(id=mine.get("id", msg.id), role=msg.role, parts=_parts(msg, where, losses))
    if msg.metadata:
        wire["metadata"] = msg.metadata
    return wire


def _parts(msg: Message, where: str, losses: Losses) -> list[dict[str, JSON]]:
    start = msg.role == "assistant" and own(msg.extra, NS).get("step_start", True)
    out: list[dict[str, JSON]] = [{"type": "step-start"}] if start else []
    for j, part in enumerate(msg.parts):
        wire = _part(part, f"{where}.parts[{j}]", losses)
        if wire is not None:
            out.append(wire)
    return out


def _part(part: Part, where: str, losses: Losses) -> dict[str, JSON] | None:
    raw = raw_of(part, NS)
    if raw is not None:
        return raw
    losses.extra(part.extra, NS, where)
    mine = own(part.extra, NS)
    if isinstance(part, TextPart):
        return {"type": "text", **mine, "text": part.text}
    if isinstance(part, ReasoningPart):
        wire = {"type": "reasoning", **mine, "text": part.text}
        if part.signature is not None:
            meta = dict(wire.get("providerMetadata") or {})
            wire["providerMetadata"] = {**meta, _SIGNED: {"signature": part.signature}}
        return wire
    if isinstance(part, ToolCallPart):
        return _tool_part(part, mine)
    if isinstance(part, FilePart):
        url = part.url if part.url is not None else data_url(part.mime_type, part.data or "")
        wire = {"type": "file", **mine, "mediaType": part.mime_type, "url": url}
        return wire if part.filename is None else {**wire, "filename": part.filename}
    if isinstance(part, DataPart) and part.name:
        return {**mine, "type": f"data-{part.name}", "data": part.data}
    losses.add(where, f"{TARGET} cannot carry this {part.type} part")
    return None


def _tool_part(part: ToolCallPart, mine: dict[str, JSON]) -> dict[str, JSON]:
    wire = dict(mine.get("fields") or {})
    if mine.get("dynamic"):
        wire.update(type="dynamic-tool", toolName=part.name)
    else:
        wire["type"] = f"tool-{part.name}"
    wire.update(toolCallId=part.id, state=mine.get("state", "input-available"))
    wire["input"] = part.arguments
    return wire


def _answer(ui: dict[str, JSON] | None, msg: Message, where: str, losses: Losses) -> None:
    if msg.metadata:
        losses.add(f"{where}.metadata", "a tool message's metadata has no place in a UIMessage")
    calls = {p.get("toolCallId"): p for p in (ui or {}).get("parts", ()) if "toolCallId" in p}
    for j, part in enumerate(msg.parts):
        at = f"{where}.parts[{j}]"
        call = calls.get(part.call_id) if isinstance(part, ToolResultPart) else None
        if not isinstance(part, ToolResultPart) or call is None:
            losses.add(at, "a result is carried only in the UIMessage of its call")
            continue
        losses.extra(part.extra, NS, at)
        if part.name is not None and part.name != call.get("toolName", call["type"][5:]):
            losses.add(f"{at}.name", f"{TARGET} names a result only through its call")
        if part.is_error:
            text = part.output if isinstance(part.output, str) else str(part.output)
            call.update(state="output-error", errorText=text)
            if not isinstance(part.output, str):
                losses.add(f"{at}.output", f"{TARGET} error results are text")
        else:
            call.update(state="output-available", output=part.output)


# ---------------------------------------------------------------- wire -> ours


def from_ai_sdk(messages: Iterable[Mapping[str, JSON] | Any]) -> list[Message]:
    """Read AI SDK UIMessages.

    Args:
        messages: UIMessages as dicts (for example parsed from the JSON `useChat` sends).

    Returns:
        Our messages; part states and unknown fields are kept in `extra`.

    Raises:
        InvalidMessage: If a UIMessage or part is malformed; the text says where.
    """
    out: list[Message] = []
    for i, ui in enumerate(as_items(as_list(messages, "messages"), "messages")):
        out.extend(_read(ui, f"messages[{i}]"))
    return out


def _read(ui: dict[str, JSON], where: str) -> list[Message]:
    role = need(ui, "role", str, where)
    if role not in ("system", "user", "assistant"):
        raise InvalidMessage(f"{where}.role: unknown role {role!r}")
    parts = as_items(ui.get("parts", []), f"{where}.parts")
    read = (
        _split(parts, where)
        if role == "assistant"
        else [message(role, [_read_part(p, where) for p in parts])]
    )
    first = read[0] if read else message(role, [])
    mine: dict[str, JSON] = dict(own(first.extra, NS))
    if pick(ui, "id", "role", "parts", "metadata"):
        mine["fields"] = pick(ui, "id", "role", "parts", "metadata")
    first.id = _take_id(ui.get("id"), first.id, mine)
    metadata = ui.get("metadata")
    if isinstance(metadata, dict):
        first.metadata = metadata
    first.extra = with_own(mine, NS)
    return read or [first]


def _take_id(value: JSON, fallback: str, mine: dict[str, JSON]) -> str:
    try:
        return check_id(value, "UIMessage id")
    except InvalidId:
        if value is not None:
            mine["id"] = value
        return fallback


def _split(parts: list[dict[str, JSON]], where: str) -> list[Message]:
    steps = _Steps()
    for k, part in enumerate(parts):
        if part.get("type") == "step-start" and not pick(part, "type"):
            if steps.current or steps.results or steps.out:
                steps.flush()
            steps.stepped = True
        elif _is_tool(part):
            call, result = _read_tool(part, f"{where}.parts[{k}]")
            steps.current.append(call)
            if result is not None:
                steps.results.append(result)
        else:
            if steps.results:
                steps.flush()
                steps.stepped = False
            steps.current.append(_read_part(part, where))
    if steps.current or steps.results or not steps.out:
        steps.flush()
    return steps.out


class _Steps:
    """The messages one assistant UIMessage splits into, step by step."""

    def __init__(self) -> None:
        self.out: list[Message] = []
        self.current: list[Part] = []
        self.results: list[ToolResultPart] = []
        self.stepped = False

    def flush(self) -> None:
        extra = {} if self.stepped else {NS: {"step_start": False}}
        self.out.append(message("assistant", self.current, extra))
        if self.results:
            answered: list[Part] = [*self.results]
            self.out.append(message("tool", answered))
        self.current, self.results = [], []


def _is_tool(part: Mapping[str, JSON]) -> bool:
    kind = part.get("type")
    return isinstance(kind, str) and (kind.startswith("tool-") or kind == "dynamic-tool")


def _read_tool(part: dict[str, JSON], where: str) -> tuple[ToolCallPart, ToolResultPart | None]:
    call_id = need(part, "toolCallId", str, where)
    dynamic = part["type"] == "dynamic-tool"
    name = need(part, "toolName", str, where) if dynamic else part["type"][5:]
    state = part.get("state")
    mine: dict[str, JSON] = {}
    fields = pick(part, "type", "toolName", "toolCallId", "state", "input", "output", "errorText")
    if fields:
        mine["fields"] = fields
    if dynamic:
        mine["dynamic"] = True
    result = None
    if state == "output-available":
        result = ToolResultPart(call_id, part.get("output"))
    elif state == "output-error":
        result = ToolResultPart(call_id, str(part.get("errorText", "")), is_error=True)
    elif state != "input-available":
        mine["state"] = state
    return ToolCallPart(call_id, name, part.get("input"), extra=with_own(mine, NS)), result


def _read_part(part: dict[str, JSON], where: str) -> Part:
    kind = part.get("type")
    if kind in ("text", "reasoning") and isinstance(part.get("text"), str):
        rest = pick(part, "type", "text")
        if kind == "text":
            return TextPart(part["text"], extra=with_own(rest, NS))
        return _read_reasoning(part["text"], rest)
    if (
        kind == "file"
        and isinstance(part.get("url"), str)
        and isinstance(part.get("mediaType"), str)
    ):
        return _read_file(part)
    if isinstance(kind, str) and kind.startswith("data-") and "data" in part:
        rest = pick(part, "type", "data")
        return DataPart(part["data"], name=kind[5:], extra=with_own(rest, NS))
    return raw_block(part, NS)


def _read_reasoning(text: str, rest: dict[str, JSON]) -> ReasoningPart:
    meta = rest.get("providerMetadata")
    signed = meta.get(_SIGNED) if isinstance(meta, dict) else None
    if not (isinstance(meta, dict) and isinstance(signed, dict)) or not isinstance(
        signed.get("signature"), str
    ):
        return ReasoningPart(text, extra=with_own(rest, NS))
    others = {k: v for k, v in meta.items() if k != _SIGNED}
    rest = {**rest, "providerMetadata": others} if others else pick(rest, "providerMetadata")
    return ReasoningPart(text, signed["signature"], extra=with_own(rest, NS))


def _read_file(part: dict[str, JSON]) -> FilePart:
    rest = pick(part, "type", "url", "mediaType", "filename")
    filename = part.get("filename") if isinstance(part.get("filename"), str) else None
    parsed = parse_data_url(part["url"])
    if parsed is not None and parsed[0] == part["mediaType"]:
        return FilePart(parsed[0], data=parsed[1], filename=filename, extra=with_own(rest, NS))
    return FilePart(part["mediaType"], url=part["url"], filename=filename, extra=with_own(rest, NS))
