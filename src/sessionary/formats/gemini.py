"""Google Gemini contents (`contents=` and `system_instruction` of `generate_content`).

System messages become the separate system instruction; user messages `user` contents;
assistant messages `model` contents (reasoning as `thought` parts with their
`thought_signature`); tool messages `function_response` parts of a `user` content, with
consecutive tool messages merged so that one content answers all the calls of a turn.
Output uses the Python SDK's snake_case keys and base64 strings for bytes; camelCase input
(the REST shape) is accepted and read as snake_case.

Gemini may omit function call ids. Reading gives such a call a generated id, remembered as
generated so it is never written back, and matches a response without an id to the first
unanswered call of the same name. A result's output is sent as `{"output": ...}` (or
`{"error": ...}` for an error); any other response object is kept as is. Not carried:
data parts, non-object tool arguments, and message metadata.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from sessionary.errors import InvalidMessage
from sessionary.formats._shared import (
    Conversion,
    Losses,
    as_dict,
    as_items,
    as_list,
    call_names,
    check_messages,
    foreign_signer,
    message,
    need,
    own,
    paired,
    pick,
    raw_block,
    raw_of,
    with_own,
)
from sessionary.ids import new_id
from sessionary.model import (
    FilePart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from sessionary.records import check_json

__all__ = ["GeminiPrompt", "from_gemini", "to_gemini"]

NS = "gemini"
TARGET = "Gemini"
JSON = Any


class GeminiPrompt(NamedTuple):
    """The `system_instruction` (a Content dict, or None) and `contents` of a request."""

    system_instruction: dict[str, JSON] | None
    contents: list[dict[str, JSON]]


# ---------------------------------------------------------------- ours -> wire


def to_gemini(messages: Iterable[Message], *, strict: bool = False) -> Conversion[GeminiPrompt]:
    """Write messages as Gemini contents and a system instruction.

    Args:
        messages: Our messages, in conversation order.
        strict: Raise instead of reporting what the format cannot carry.

    Returns:
        The system instruction and contents, and what was dropped.

    Raises:
        InvalidMessage: If a message is malformed.
        LossyConversion: If `strict` and something cannot be carried.
    """
    losses = Losses(TARGET)
    checked = paired(check_messages(messages), losses)
    names = call_names(checked)
    system: dict[str, JSON] | None = None
    contents: list[dict[str, JSON]] = []
    previous = ""
    for i, msg in enumerate(checked):
        where = f"messages[{i}]"
        losses.envelope(msg, NS, where)
        parts = [_part(p, names, f"{where}.parts[{j}]", losses) for j, p in enumerate(msg.parts)]
        # A bare empty text is refused; one carrying a thought signature is not.
        kept = [p for p in parts if p is not None and p != {"text": ""}]
        if len(kept) < len([p for p in parts if p is not None]):
            losses.add(where, f"{TARGET} refuses empty text parts")
        if not kept and msg.role != "system":
            if not msg.parts:
                losses.add(where, f"{TARGET} refuses a content without parts")
            continue
        if msg.role == "system":
            if contents:
                losses.add(where, "a system message after the first turn moves to the instruction")
            system = system or {**(own(msg.extra, NS).get("fields") or {}), "parts": []}
            system["parts"].extend(kept)
        elif msg.role == "tool" and previous == "tool":
            contents[-1]["parts"].extend(kept)
        else:
            role = "model" if msg.role == "assistant" else "user"
            contents.append(
                {**(own(msg.extra, NS).get("fields") or {}), "role": role, "parts": kept}
            )
        previous = msg.role if msg.role != "system" else previous
    return losses.finish(GeminiPrompt(system, contents), strict)


def _part(
    part: Part, names: Mapping[str, str], where: str, losses: Losses
) -> dict[str, JSON] | None:
    raw = raw_of(part, NS)
    if raw is not None:
        return raw
    losses.extra(part.extra, NS, where)
    mine = own(part.extra, NS)
    fields = dict(mine.get("part") or {})
    if isinstance(part, TextPart):
        return {**fields, "text": part.text}
    if isinstance(part, ReasoningPart):
        wire = {**fields, "text": part.text, "thought": True}
        signer = foreign_signer(part, NS)
        if signer is not None:
            losses.add(f"{where}.signature", f"{TARGET} refuses reasoning signed by {signer}")
        elif part.signature is not None:
            wire["thought_signature"] = part.signature
        return wire
    if isinstance(part, ToolCallPart):
        return {**fields, "function_call": _call(part, mine, where, losses)}
    if isinstance(part, ToolResultPart):
        if part.name is None and part.call_id not in names:
            losses.add(f"{where}.name", f"{TARGET} needs a tool name; the call id is sent")
        return {**fields, "function_response": _response(part, mine, names)}
    if isinstance(part, FilePart):
        return {**fields, **_file(part, mine)}
    losses.add(where, f"{TARGET} cannot carry a {part.type} part")
    return None


def _call(part: ToolCallPart, mine: dict[str, JSON], where: str, losses: Losses) -> dict[str, JSON]:
    if not isinstance(part.arguments, dict):
        losses.add(f"{where}.arguments", f"{TARGET} function call args must be an object")
    call = dict(mine.get("call") or {})
    call.update(name=part.name, args=part.arguments if isinstance(part.arguments, dict) else {})
    if not mine.get("generated_id"):
        call["id"] = part.id
    return call


def _response(
    part: ToolResultPart, mine: dict[str, JSON], names: Mapping[str, str]
) -> dict[str, JSON]:
    wire = dict(mine.get("response_fields") or {})
    wire["name"] = part.name or names.get(part.call_id) or part.call_id
    if mine.get("response") == "raw" and isinstance(part.output, dict) and not part.is_error:
        wire["response"] = part.output
    else:
        wire["response"] = {"error" if part.is_error else "output": part.output}
    if not mine.get("generated_id"):
        wire["id"] = part.call_id
    return wire


def _file(part: FilePart, mine: dict[str, JSON]) -> dict[str, JSON]:
    fields = dict(mine.get("file") or {})
    if part.filename is not None:
        fields["display_name"] = part.filename
    if part.url is not None:
        return {"file_data": {**fields, "file_uri": part.url, "mime_type": part.mime_type}}
    return {"inline_data": {**fields, "data": part.data, "mime_type": part.mime_type}}


# ---------------------------------------------------------------- wire -> ours


def from_gemini(
    contents: Iterable[Mapping[str, JSON] | Any], system_instruction: Any = None
) -> list[Message]:
    """Read Gemini contents (dicts or `google.genai.types.Content` objects).

    Args:
        contents: The contents of a request, or a candidate's `content` in a list.
        system_instruction: The system instruction: a string, or a Content with text parts.

    Returns:
        Our messages; every field without a slot is kept in `extra`.

    Raises:
        InvalidMessage: If a content or part is malformed; the text says where.
    """
    reader = _Reader()
    if system_instruction is not None:
        reader.out.append(_read_system(system_instruction))
    for i, content in enumerate(as_items(as_list(contents, "contents"), "contents")):
        check_json(content, f"contents[{i}]", InvalidMessage)  # `_snake` recurses
        reader.read(_snake(content), f"contents[{i}]")
    return reader.out


_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def _snake(value: JSON) -> JSON:
    """Return a wire value with camelCase keys renamed to snake_case, all the way down.

    The `args` and `response` objects are left alone: their keys are the tool's own.
    """
    if isinstance(value, list):
        return [_snake(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        name = _CAMEL.sub(r"_\1", key).lower()
        out[name] = item if name in ("args", "response") else _snake(item)
    return out


def _read_system(system: Any) -> Message:
    if isinstance(system, str):
        return message("system", [TextPart(system)])
    content = as_dict(system, "system_instruction")
    check_json(content, "system_instruction", InvalidMessage)
    content = _snake(content)
    parts = [
        _read_plain(p, "system_instruction") for p in as_items(content.get("parts", []), "parts")
    ]
    return message(
        "system",
        parts,
        with_own({"fields": pick(content, "parts")}, NS) if pick(content, "parts") else {},
    )


class _Reader:
    """Reads contents in order, pairing function responses with their calls."""

    def __init__(self) -> None:
        self.out: list[Message] = []
        self.pending: list[tuple[str, str]] = []  # unanswered calls: (name, id)

    def read(self, content: dict[str, JSON], where: str) -> None:
        role = content.get("role", "user")
        if role not in ("user", "model", "function", "tool"):
            raise InvalidMessage(f"{where}.role: unknown role {role!r}")
        extra = with_own({"fields": pick(content, "parts")}, NS) if pick(content, "parts") else {}
        parts = as_items(content.get("parts", []), f"{where}.parts")
        ours = [self.read_part(p, f"{where}.parts[{k}]") for k, p in enumerate(parts)]
        if role == "model":
            self.out.append(message("assistant", ours, extra))
            return
        first = len(self.out)
        for part in ours:
            kind = "tool" if isinstance(part, ToolResultPart) else "user"
            if len(self.out) > first and self.out[-1].role == kind:
                self.out[-1].parts.append(part)
            else:
                self.out.append(message(kind, [part]))
        if len(self.out) > first:
            self.out[first].extra = extra
        else:
            self.out.append(message("user", [], extra))

    def read_part(self, part: dict[str, JSON], where: str) -> Part:
        if "function_call" in part:
            return self.read_call(part, where)
        if "function_response" in part:
            return self.read_response(part, where)
        return _read_plain(part, where)

    def read_call(self, part: dict[str, JSON], where: str) -> ToolCallPart:
        call = as_dict(part["function_call"], f"{where}.function_call")
        name = need(call, "name", str, f"{where}.function_call")
        mine: dict[str, JSON] = {
            "part": pick(part, "function_call"),
            "call": pick(call, "name", "args", "id"),
        }
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            call_id, mine["generated_id"] = new_id(), True
        self.pending.append((name, call_id))
        return ToolCallPart(call_id, name, call.get("args") or {}, extra={NS: _compact(mine)})

    def read_response(self, part: dict[str, JSON], where: str) -> ToolResultPart:
        wire = as_dict(part["function_response"], f"{where}.function_response")
        name = need(wire, "name", str, f"{where}.function_response")
        mine: dict[str, JSON] = {"part": pick(part, "function_response")}
        mine["response_fields"] = pick(wire, "name", "response", "id")
        call_id = wire.get("id") if isinstance(wire.get("id"), str) and wire.get("id") else None
        matched = self.answer(name, call_id)
        if call_id is None:
            call_id, mine["generated_id"] = matched or new_id(), True
        output, is_error = _read_output(wire.get("response"), mine)
        result = ToolResultPart(call_id, output, is_error=is_error, extra={NS: _compact(mine)})
        if matched is None:
            result.name = name
        return result

    def answer(self, name: str, call_id: str | None) -> str | None:
        """Remove and return the id of the pending call this response answers."""
        for k, (pending_name, pending_id) in enumerate(self.pending):
            if pending_id == call_id or (call_id is None and pending_name == name):
                del self.pending[k]
                return pending_id if pending_name == name else None
        return None


def _read_output(response: JSON, mine: dict[str, JSON]) -> tuple[JSON, bool]:
    if isinstance(response, dict) and len(response) == 1:
        key = next(iter(response))
        if key in ("output", "error"):
            return response[key], key == "error"
    mine["response"] = "raw"
    return (response if response is not None else {}), False


def _compact(mine: dict[str, JSON]) -> dict[str, JSON]:
    return {k: v for k, v in mine.items() if v not in ({}, None)}


def _read_plain(part: dict[str, JSON], where: str) -> Part:
    signature = part.get("thought_signature")
    if isinstance(part.get("text"), str) and part.get("thought") is True:
        rest = pick(part, "text", "thought", "thought_signature")
        extra = with_own({"part": rest}, NS) if rest else {}
        kept = signature if isinstance(signature, str) else None
        return ReasoningPart(part["text"], kept, extra=extra)
    if isinstance(part.get("text"), str):
        rest = pick(part, "text")
        return TextPart(part["text"], extra=with_own({"part": rest}, NS) if rest else {})
    for key, url_key in (("inline_data", "data"), ("file_data", "file_uri")):
        if key in part and len(part) == 1:
            blob = as_dict(part[key], f"{where}.{key}")
            file = _read_file(blob, url_key)
            if file is not None:
                return file
    return raw_block(part, NS)


def _read_file(blob: dict[str, JSON], url_key: str) -> FilePart | None:
    mime, location = blob.get("mime_type"), blob.get(url_key)
    name = blob.get("display_name")
    if not isinstance(mime, str) or not isinstance(location, str):
        return None
    if name is not None and not isinstance(name, str):
        return None
    rest = pick(blob, "mime_type", url_key, "display_name")
    extra = with_own({"file": rest}, NS) if rest else {}
    if url_key == "data":
        return FilePart(mime, data=location, filename=name, extra=extra)
    return FilePart(mime, url=location, filename=name, extra=extra)
