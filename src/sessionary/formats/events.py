"""The event log of the session-agent design (`SessionEvent`s, and their stored rows).

Actions map to messages: `user_message` ↔ user, `agent_message` ↔ assistant without tool
calls (its `model` in `metadata["model"]`), `tool_call_request` ↔ assistant with tool calls
(`toolCalls: [{id, name, arguments}]`), `tool_result` ↔ one result of a tool message
(`toolCallId`, `toolName`, `isSuccess`), `system_instruction` ↔ system, and `compaction` ↔ a
system message remembering its action and `compactedEventCount`. Event ids are message
ids; `timestamp` is in milliseconds. An action this version does not know is read as a
user message that remembers it, so nothing is lost.

Events hold text only: reasoning, files and data parts are reported as dropped, several
text parts are joined with newlines (reported), and non-string tool outputs become JSON
text. Timestamps keep millisecond precision.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from typing import Any

from sessionary.errors import InvalidId, InvalidMessage
from sessionary.formats._shared import (
    Conversion,
    Losses,
    as_items,
    as_list,
    call_names,
    check_messages,
    message,
    need,
    output_text,
    own,
    pick,
    with_own,
)
from sessionary.ids import check_id
from sessionary.model import (
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    from_micros,
    to_micros,
)
from sessionary.records import load_json

__all__ = ["event_to_message", "from_events", "to_events"]

NS = "events"
TARGET = "the event log"
JSON = Any
_ACTIONS = {"user": "user_message", "system": "system_instruction"}
_KNOWN = ("id", "sessionId", "seq", "timestamp", "action", "content")


# ---------------------------------------------------------------- ours -> wire


def to_events(
    messages: Iterable[Message], *, session_id: str = "", strict: bool = False
) -> Conversion[list[dict[str, JSON]]]:
    """Write messages as session events (`seq` numbers them from 0 in order).

    Args:
        messages: Our messages, in conversation order.
        session_id: The `sessionId` of events whose message does not remember one.
        strict: Raise instead of reporting what the format cannot carry.

    Returns:
        The events, and what was dropped.

    Raises:
        InvalidMessage: If a message is malformed.
        LossyConversion: If `strict` and something cannot be carried.
    """
    checked = check_messages(messages)
    names = call_names(checked)
    losses = Losses(TARGET)
    out: list[dict[str, JSON]] = []
    for i, msg in enumerate(checked):
        where = f"messages[{i}]"
        losses.extra(msg.extra, NS, where)
        if set(msg.metadata) - {"model"}:
            losses.add(f"{where}.metadata", f"{TARGET} keeps only metadata['model']")
        base = _base(msg, session_id)
        if msg.role == "tool":
            out.extend(_results(msg, base, names, where, losses))
        else:
            out.append({**base, **_event(msg, where, losses)})
    for seq, event in enumerate(out):
        event.setdefault("seq", seq)
    return losses.finish(out, strict)


def _base(msg: Message, session_id: str) -> dict[str, JSON]:
    mine = own(msg.extra, NS)
    base = dict(mine.get("fields") or {})
    base["id"] = msg.id
    base["sessionId"] = mine.get("sessionId", session_id)
    if "seq" in mine:
        base["seq"] = mine["seq"]
    base["timestamp"] = to_micros(msg.created_at) // 1000
    return base


def _text(msg: Message, where: str, losses: Losses) -> str:
    texts = []
    for j, part in enumerate(msg.parts):
        if isinstance(part, TextPart):
            losses.extra(part.extra, NS, f"{where}.parts[{j}]")
            texts.append(part.text)
        elif not isinstance(part, ToolCallPart | ToolResultPart):
            losses.add(f"{where}.parts[{j}]", f"{TARGET} holds text only, not a {part.type} part")
    if len(texts) > 1:
        losses.add(f"{where}.parts", f"{TARGET} joins {len(texts)} text parts into one")
    return "\n".join(texts)


def _event(msg: Message, where: str, losses: Losses) -> dict[str, JSON]:
    mine = own(msg.extra, NS)
    event: dict[str, JSON] = {"content": _text(msg, where, losses)}
    if "action" in mine:
        event["action"] = mine["action"]
        if "compactedEventCount" in mine:
            event["compactedEventCount"] = mine["compactedEventCount"]
    elif msg.role == "assistant" and msg.tool_calls:
        event["action"] = "tool_call_request"
        event["toolCalls"] = [
            {**own(c.extra, NS), "id": c.id, "name": c.name, "arguments": c.arguments}
            for c in msg.tool_calls
        ]
    elif msg.role == "assistant":
        event["action"] = "agent_message"
    else:
        event["action"] = _ACTIONS[msg.role]
    if isinstance(msg.metadata.get("model"), str):
        event["model"] = msg.metadata["model"]
    return event


def _results(
    msg: Message, base: dict[str, JSON], names: Mapping[str, str], where: str, losses: Losses
) -> list[dict[str, JSON]]:
    out: list[dict[str, JSON]] = []
    for j, part in enumerate(msg.parts):
        at = f"{where}.parts[{j}]"
        if not isinstance(part, ToolResultPart):
            losses.add(at, f"{TARGET} cannot carry a {part.type} part in a tool result")
            continue
        losses.extra(part.extra, NS, at)
        event = {**base, **own(part.extra, NS), "action": "tool_result"}
        if out:
            event["id"] = f"{msg.id}.{len(out)}"
            event.pop("seq", None)
        event.update(content=output_text(part.output), toolCallId=part.call_id)
        event.update(toolName=part.name or names.get(part.call_id, ""), isSuccess=not part.is_error)
        out.append(event)
    return out


# ---------------------------------------------------------------- wire -> ours


def from_events(events: Iterable[Mapping[str, JSON] | Any]) -> list[Message]:
    """Read session events, or the rows they are stored as (`metadata` as JSON text).

    Args:
        events: Events in `seq` order.

    Returns:
        One message per event; `sessionId`, `seq` and unknown fields are kept in `extra`.

    Raises:
        InvalidMessage: If an event is malformed; the text says where.
    """
    names: dict[str, str] = {}
    out: list[Message] = []
    for i, raw in enumerate(as_items(as_list(events, "events"), "events")):
        event = _from_row(raw, f"events[{i}]") if "session_id" in raw else raw
        msg = _read(event, names, f"events[{i}]")
        names.update({c.id: c.name for c in msg.tool_calls})
        out.append(msg)
    return out


def event_to_message(event: Mapping[str, JSON] | Any) -> Message:
    """Read one event (or its stored row) as a message, as `from_events` reads a list.

    A tool result without `toolName` cannot borrow its call's name here; read the whole
    list with `from_events` for that.

    Raises:
        InvalidMessage: If the event is malformed.
    """
    (message,) = from_events([event])
    return message


def _from_row(row: dict[str, JSON], where: str) -> dict[str, JSON]:
    meta = row.get("metadata")
    try:
        fields = load_json(meta) if isinstance(meta, str) else {}
    except ValueError:
        raise InvalidMessage(f"{where}.metadata: is not JSON") from None
    if not isinstance(fields, dict):
        raise InvalidMessage(f"{where}.metadata: must be a JSON object")
    event = {"id": row.get("id"), "sessionId": row["session_id"], "seq": row.get("seq")}
    event.update(timestamp=row.get("created_at"), action=row.get("action"))
    return {**event, "content": row.get("content") or "", **fields}


def _read(event: dict[str, JSON], names: Mapping[str, str], where: str) -> Message:
    action = need(event, "action", str, where)
    content = event.get("content") or ""
    if not isinstance(content, str):
        raise InvalidMessage(f"{where}.content: must be a string")
    mine: dict[str, JSON] = {k: event[k] for k in ("sessionId", "seq") if k in event}
    if action == "tool_result":
        msg = message("tool", [_read_result(event, content, names, mine, where)])
    else:
        msg = _read_message(event, action, content, mine, where)
    _stamp(msg, event, where)
    return msg


def _read_message(
    event: dict[str, JSON], action: str, content: str, mine: dict[str, JSON], where: str
) -> Message:
    extra_keys = ("toolCalls", "model", "compactedEventCount")
    if pick(event, *_KNOWN, *extra_keys):
        mine["fields"] = pick(event, *_KNOWN, *extra_keys)
    parts: list[Any] = [TextPart(content)] if content else []
    role = {"agent_message": "assistant", "tool_call_request": "assistant"}.get(action)
    role = role or {"system_instruction": "system", "compaction": "system"}.get(action, "user")
    if action == "compaction" or (role == "user" and action != "user_message"):
        mine["action"] = action
        if "compactedEventCount" in event:
            mine["compactedEventCount"] = event["compactedEventCount"]
    for k, call in enumerate(event.get("toolCalls") or ()):
        at = f"{where}.toolCalls[{k}]"
        if not isinstance(call, Mapping):
            raise InvalidMessage(f"{at}: must be an object")
        rest = pick(call, "id", "name", "arguments")
        call_part = ToolCallPart(need(call, "id", str, at), need(call, "name", str, at))
        call_part.arguments, call_part.extra = call.get("arguments", {}), with_own(rest, NS)
        parts.append(call_part)
    msg = message(role, parts, with_own(mine, NS))
    if isinstance(event.get("model"), str):
        msg.metadata = {"model": event["model"]}
    return msg


def _read_result(
    event: dict[str, JSON],
    content: str,
    names: Mapping[str, str],
    mine: dict[str, JSON],
    where: str,
) -> ToolResultPart:
    rest = pick(event, *_KNOWN, "toolCallId", "toolName", "isSuccess")
    call_id = need(event, "toolCallId", str, where)
    name = event.get("toolName") if isinstance(event.get("toolName"), str) else None
    part = ToolResultPart(call_id, content, is_error=event.get("isSuccess") is False)
    part.name = None if not name or names.get(call_id) == name else name
    part.extra = with_own({**rest, **mine}, NS)
    return part


def _stamp(msg: Message, event: dict[str, JSON], where: str) -> None:
    with contextlib.suppress(InvalidId):  # an event without a usable id keeps a new one
        msg.id = check_id(event.get("id"), "event id")
    stamp = event.get("timestamp")
    if isinstance(stamp, int) and not isinstance(stamp, bool):
        msg.created_at = from_micros(stamp * 1000)
    elif stamp is not None:
        raise InvalidMessage(f"{where}.timestamp: must be milliseconds since the epoch")
