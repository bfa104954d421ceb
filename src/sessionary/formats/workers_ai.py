"""Cloudflare Workers AI chat messages (the `messages` of `env.AI.run(model, {...})`).

The shape is OpenAI Chat's, held to what Workers AI's chat models take: every message
has a `role` and a string `content`; an assistant's calls are `tool_calls` items
(`{id, type: "function", function: {name, arguments}}`, the arguments as JSON text); a
result is a `tool` message with `tool_call_id`, the tool's `name` and its output as text.
`to_workers_ai` returns ``{"messages": [...]}``, with the system instructions it is given
joined into one system message first, ready to be sent with the model's name (and
`tools`, see `sessionary.toolspec.ToolSpec.to_workers_ai`).

Not carried: reasoning, file, image and data parts, the boundaries between several text
parts (joined with newlines), a result's `is_error`, and message metadata; each is
reported in `Conversion.dropped`. Non-string tool outputs are sent as JSON text.

`from_workers_ai` reads the messages back (a `tool` message without `tool_call_id`
answers the earliest open call of its `name`), and `from_workers_ai_response` reads what
a chat model returned (`{"response": ..., "tool_calls": [{name, arguments}]}`) as an
assistant message, giving calls without an id a new one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sessionary.errors import InvalidInput, InvalidMessage
from sessionary.formats._shared import (
    Conversion,
    Losses,
    as_dict,
    as_items,
    as_list,
    call_names,
    check_messages,
    decode_arguments,
    encode_arguments,
    message,
    need,
    output_text,
    own,
    paired,
    pick,
    result_name,
    with_own,
)
from sessionary.ids import new_id
from sessionary.model import Message, Part, TextPart, ToolCallPart, ToolResultPart

__all__ = ["from_workers_ai", "from_workers_ai_response", "to_workers_ai"]

NS = "workers_ai"
TARGET = "Workers AI"
JSON = Any
_ROLES = ("system", "user", "assistant")
_KNOWN_MESSAGE = ("role", "content", "tool_calls")
_KNOWN_RESULT = ("role", "content", "tool_call_id", "name")


# ---------------------------------------------------------------- ours -> wire


def to_workers_ai(
    messages: Iterable[Message], *, system: str | Sequence[str] = (), strict: bool = False
) -> Conversion[dict[str, JSON]]:
    """Write messages as the input of a Workers AI chat model: ``{"messages": [...]}``.

    Args:
        messages: Our messages, in conversation order.
        system: System instructions, sent first as one system message (several are
            joined with blank lines; empty ones are left out).
        strict: Raise instead of reporting what the format cannot carry.

    Returns:
        The model input, and what was dropped.

    Raises:
        InvalidInput: If `system` is neither text nor a list of texts.
        InvalidMessage: If a message is malformed.
        LossyConversion: If `strict` and something cannot be carried.
    """
    instructions = _instructions(system)
    losses = Losses(TARGET)
    checked = paired(check_messages(messages), losses)
    names = call_names(checked)
    out: list[dict[str, JSON]] = []
    if instructions:
        out.append({"role": "system", "content": instructions})
    for i, msg in enumerate(checked):
        where = f"messages[{i}]"
        losses.envelope(msg, NS, where)
        if msg.role == "tool":
            out.extend(_results(msg, names, where, losses))
        else:
            out.append(_message(msg, where, losses))
    return losses.finish({"messages": out}, strict)


def _instructions(system: str | Sequence[str]) -> str:
    texts = [system] if isinstance(system, str) else list(system)
    if not all(isinstance(text, str) for text in texts):
        raise InvalidInput("system instructions must be text or a list of texts")
    return "\n\n".join(text for text in texts if text)


def _message(msg: Message, where: str, losses: Losses) -> dict[str, JSON]:
    wire: dict[str, JSON] = dict(own(msg.extra, NS).get("fields") or {})
    wire["role"] = msg.role
    texts: list[str] = []
    calls: list[dict[str, JSON]] = []
    for j, part in enumerate(msg.parts):
        at = f"{where}.parts[{j}]"
        if isinstance(part, TextPart):
            losses.extra(part.extra, NS, at)
            texts.append(part.text)
        elif isinstance(part, ToolCallPart):
            losses.extra(part.extra, NS, at)
            mine = own(part.extra, NS)
            function = {"name": part.name, "arguments": encode_arguments(part.arguments, mine)}
            fields = mine.get("fields") or {}
            calls.append({**fields, "id": part.id, "type": "function", "function": function})
        else:
            losses.add(at, f"{TARGET} messages hold text only, not a {part.type} part")
    if len(texts) > 1:
        losses.add(f"{where}.parts", f"{TARGET} joins {len(texts)} text parts into one")
    elif texts == [""]:
        losses.add(f"{where}.parts[0]", f"{TARGET} cannot tell an empty text part from none")
    wire["content"] = "\n".join(texts)
    if calls:
        wire["tool_calls"] = calls
    return wire


def _results(
    msg: Message, names: Mapping[str, str], where: str, losses: Losses
) -> list[dict[str, JSON]]:
    out = []
    for j, part in enumerate(msg.parts):
        at = f"{where}.parts[{j}]"
        if not isinstance(part, ToolResultPart):
            losses.add(at, f"a tool message of {TARGET} cannot carry a {part.type} part")
            continue
        losses.extra(part.extra, NS, at)
        if part.is_error:
            losses.add(f"{at}.is_error", f"{TARGET} cannot mark a tool result as an error")
        wire = {**(own(part.extra, NS).get("fields") or {}), "role": "tool"}
        wire["tool_call_id"] = part.call_id
        name = result_name(part, names)
        if name is not None:
            wire["name"] = name
        wire["content"] = output_text(part.output)
        out.append(wire)
    return out


# ---------------------------------------------------------------- wire -> ours


def from_workers_ai(value: Mapping[str, JSON] | Iterable[Mapping[str, JSON]]) -> list[Message]:
    """Read Workers AI chat messages: a model input ``{"messages": [...]}``, or the list.

    Returns:
        Our messages; a leading system message stays a system message, and every wire
        field without a slot is kept in `extra`.

    Raises:
        InvalidMessage: If a message is malformed; the text says where.
    """
    items = value.get("messages") if isinstance(value, Mapping) else as_list(value, "messages")
    wire = as_items(items, "messages")
    open_calls: list[ToolCallPart] = []
    out: list[Message] = []
    for i, item in enumerate(wire):
        where = f"messages[{i}]"
        role = need(item, "role", str, where)
        if role == "tool":
            out.append(_read_result(item, open_calls, where))
            continue
        if role not in _ROLES:
            raise InvalidMessage(f"{where}.role: unknown role {role!r}")
        read = _read_message(item, role, where)
        open_calls.extend(read.tool_calls)
        out.append(read)
    return out


def _content(item: Mapping[str, JSON], where: str) -> str:
    content = item.get("content")
    if content is None:
        return ""
    if not isinstance(content, str):
        raise InvalidMessage(f"{where}.content: must be a string")
    return content


def _read_message(item: dict[str, JSON], role: str, where: str) -> Message:
    text = _content(item, where)
    parts: list[Part] = [TextPart(text)] if text else []
    for j, call in enumerate(as_list(item.get("tool_calls") or (), f"{where}.tool_calls")):
        parts.append(
            _read_call(as_dict(call, f"{where}.tool_calls[{j}]"), f"{where}.tool_calls[{j}]")
        )
    mine = {"fields": pick(item, *_KNOWN_MESSAGE)} if pick(item, *_KNOWN_MESSAGE) else {}
    return message(role, parts, with_own(mine, NS))


def _read_call(call: dict[str, JSON], where: str) -> ToolCallPart:
    function = as_dict(call.get("function", call), f"{where}.function")
    name = need(function, "name", str, where)
    raw = function.get("arguments", {})
    if isinstance(raw, str):
        arguments, kept = decode_arguments(raw)
    else:
        arguments, kept = raw, {}
    # A response's calls are flat ({name, arguments}); a request's wrap them in `function`.
    rest = pick(
        call, "id", "type", "function", *(() if "function" in call else ("name", "arguments"))
    )
    if rest:
        kept["fields"] = rest
    call_id = call.get("id")
    return ToolCallPart(
        call_id if isinstance(call_id, str) and call_id else new_id(),
        name,
        arguments,
        extra=with_own(kept, NS),
    )


def _read_result(item: dict[str, JSON], open_calls: list[ToolCallPart], where: str) -> Message:
    name = item.get("name") if isinstance(item.get("name"), str) else None
    call_id = item.get("tool_call_id")
    if not isinstance(call_id, str):
        matched = next((c for c in open_calls if c.name == name), None)
        if matched is None:
            raise InvalidMessage(f"{where}: a tool message needs a tool_call_id or a call's name")
        call_id = matched.id
    answered = next((c for c in open_calls if c.id == call_id), None)
    if answered is not None:
        open_calls.remove(answered)
    rest = pick(item, *_KNOWN_RESULT)
    part = ToolResultPart(
        call_id, _content(item, where), extra=with_own({"fields": rest} if rest else {}, NS)
    )
    if name is not None and (answered is None or answered.name != name):
        part.name = name
    return message("tool", [part])


def from_workers_ai_response(response: Mapping[str, JSON]) -> Message:
    """Read what a Workers AI chat model returned as one assistant message.

    Args:
        response: The result of `env.AI.run` (or the REST API's `result`):
            ``{"response": "...", "tool_calls": [{"name": ..., "arguments": {...}}]}``.

    Raises:
        InvalidMessage: If it holds neither text nor tool calls, or a call is malformed.
    """
    data = as_dict(response, "response")
    text = data.get("response")
    if text is not None and not isinstance(text, str):
        raise InvalidMessage("response.response: must be a string")
    parts: list[Part] = [TextPart(text)] if text else []
    for j, call in enumerate(as_list(data.get("tool_calls") or (), "response.tool_calls")):
        at = f"response.tool_calls[{j}]"
        parts.append(_read_call(as_dict(call, at), at))
    if not parts:
        raise InvalidMessage("response: holds neither text nor tool calls")
    return message("assistant", parts)
