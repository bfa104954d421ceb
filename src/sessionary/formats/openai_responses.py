"""OpenAI Responses input and output items (`input=[...]` of `responses.create`).

A system or user message becomes one message item. An assistant message becomes its parts
in order: a `reasoning` item per reasoning part, `function_call` items for tool calls, and
message items for text. A tool message becomes one `function_call_output` item per result.
Reading gathers consecutive assistant-side items (messages, reasoning, calls, and item types
our model has no part for) into one assistant message, so `[reasoning, message,
function_call]` reads as one message, and each output item as one tool message.

Item ids, statuses, annotations, `encrypted_content` (kept as the reasoning signature) and
every other field are kept in `extra["openai_responses"]` and written back. A reasoning part
without an OpenAI reasoning item id cannot be sent and is reported, as are file parts from
the assistant, data parts, `is_error`, and metadata.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sessionary.errors import InvalidMessage
from sessionary.formats._shared import (
    Conversion,
    Losses,
    as_items,
    as_list,
    call_names,
    check_messages,
    data_url,
    decode_arguments,
    drop_name_if_implied,
    encode_arguments,
    message,
    need,
    output_text,
    own,
    paired,
    parse_data_url,
    pick,
    raw_block,
    raw_of,
    url_mime,
    with_own,
)
from sessionary.model import (
    FilePart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

__all__ = ["from_openai_responses", "to_openai_responses"]

NS = "openai_responses"
TARGET = "OpenAI Responses"
JSON = Any
_OUTPUTS = {"function_call_output": "function", "custom_tool_call_output": "custom"}


# ---------------------------------------------------------------- ours -> wire


def to_openai_responses(
    messages: Iterable[Message], *, strict: bool = False
) -> Conversion[list[dict[str, JSON]]]:
    """Write messages as OpenAI Responses input items.

    Args:
        messages: Our messages, in conversation order.
        strict: Raise instead of reporting what the format cannot carry.

    Returns:
        The input items, and what was dropped.

    Raises:
        InvalidMessage: If a message is malformed.
        LossyConversion: If `strict` and something cannot be carried.
    """
    losses = Losses(TARGET)
    checked = paired(check_messages(messages), losses)
    names = call_names(checked)
    out: list[dict[str, JSON]] = []
    for i, msg in enumerate(checked):
        where = f"messages[{i}]"
        losses.envelope(msg, NS, where)
        if msg.role == "assistant":
            out.extend(_assistant_items(msg, where, losses))
        elif msg.role == "tool":
            out.extend(_output_items(msg, names, where, losses))
        else:
            out.append(_input_item(msg, where, losses))
    return losses.finish(out, strict)


def _input_item(msg: Message, where: str, losses: Losses) -> dict[str, JSON]:
    mine = own(msg.extra, NS)
    blocks: list[dict[str, JSON]] = []
    for j, part in enumerate(msg.parts):
        block = _input_block(part, f"{where}.parts[{j}]", losses)
        if block is not None:
            blocks.append(block)
    item: dict[str, JSON] = dict(mine.get("fields") or {})
    item["role"] = mine.get("role", msg.role)
    single = len(blocks) == 1 and blocks[0].keys() == {"type", "text"}
    item["content"] = blocks[0]["text"] if single and mine.get("content") != "list" else blocks
    return item


def _input_block(part: Part, where: str, losses: Losses) -> dict[str, JSON] | None:
    raw = raw_of(part, NS)
    if raw is not None:
        return raw
    mine = own(part.extra, NS)
    if isinstance(part, TextPart):
        losses.extra(part.extra, NS, where)
        return {"type": "input_text", **mine, "text": part.text}
    if isinstance(part, FilePart):
        losses.extra(part.extra, NS, where)
        url_typed = part.url is None or part.mime_type == url_mime(part.url)
        if part.is_image and not url_typed and not mine.get("file_id"):
            losses.add(f"{where}.mime_type", f"{TARGET} cannot say an image URL's type")
        block = _file_block(part, mine)
        if block["type"] == "input_image" and part.filename is not None:
            losses.add(f"{where}.filename", f"{TARGET} images have no file name")
        return block
    losses.add(where, f"{TARGET} cannot carry a {part.type} part here")
    return None


def _file_block(part: FilePart, mine: dict[str, JSON]) -> dict[str, JSON]:
    fields = dict(mine.get("fields") or {})
    ref = "file_id" if mine.get("file_id") else None
    location = part.url if part.url is not None else data_url(part.mime_type, part.data or "")
    if part.is_image and fields.get("type") != "input_file":
        block = fields if "fields" in mine else {"detail": "auto"}
        return {**block, "type": "input_image", ref or "image_url": location}
    block = {**fields, "type": "input_file"}
    key = ref or ("file_url" if part.url is not None else "file_data")
    block[key] = location
    if part.filename is not None:
        block["filename"] = part.filename
    return block


def _assistant_items(msg: Message, where: str, losses: Losses) -> list[dict[str, JSON]]:
    items: list[dict[str, JSON]] = []
    for j, part in enumerate(msg.parts):
        at = f"{where}.parts[{j}]"
        raw = raw_of(part, NS)
        if raw is not None:
            items.append(raw)
            continue
        losses.extra(part.extra, NS, at)
        if isinstance(part, TextPart):
            _add_text(items, part)
        elif isinstance(part, ToolCallPart):
            items.append(_call_item(part))
        elif isinstance(part, ReasoningPart):
            _add_reasoning(items, part, at, losses)
        else:
            losses.add(at, f"{TARGET} cannot carry an assistant {part.type} part")
    return items


def _add_text(items: list[dict[str, JSON]], part: TextPart) -> None:
    mine = own(part.extra, NS)
    block = dict(mine.get("block") or {"type": "output_text", "annotations": []})
    block["refusal" if block.get("type") == "refusal" else "text"] = part.text
    if mine.get("in_item") and items and isinstance(items[-1].get("content"), list):
        items[-1]["content"].append(block)
    elif "item" in mine:
        item = dict(mine["item"])
        content = part.text if mine.get("string") else [block]
        items.append({**item, "role": "assistant", "content": content})
    else:
        items.append({"role": "assistant", "content": part.text})


def _call_item(part: ToolCallPart) -> dict[str, JSON]:
    mine = own(part.extra, NS)
    item = dict(mine.get("fields") or {})
    if mine.get("type") == "custom":
        item.update(type="custom_tool_call", call_id=part.id, name=part.name)
        item["input"] = output_text(part.arguments)
        return item
    item.update(type="function_call", call_id=part.id, name=part.name)
    item["arguments"] = encode_arguments(part.arguments, mine)
    return item


def _add_reasoning(
    items: list[dict[str, JSON]], part: ReasoningPart, where: str, losses: Losses
) -> None:
    mine = own(part.extra, NS)
    item = dict(mine.get("item") or {})
    if not isinstance(item.get("id"), str):
        losses.add(where, f"{TARGET} needs the reasoning item id of an OpenAI response")
        return
    summary = mine.get("summary")
    if not isinstance(summary, list) or _summary_text(summary) != part.text:
        summary = [{"type": "summary_text", "text": part.text}] if part.text else []
    item.update(type="reasoning", summary=summary)
    if part.signature is not None:
        item["encrypted_content"] = part.signature
    items.append(item)


def _summary_text(summary: list[JSON]) -> str:
    return "\n\n".join(str(s.get("text", "")) for s in summary if isinstance(s, Mapping))


def _output_items(
    msg: Message, names: Mapping[str, str], where: str, losses: Losses
) -> list[dict[str, JSON]]:
    items = []
    for j, part in enumerate(msg.parts):
        at = f"{where}.parts[{j}]"
        raw = raw_of(part, NS)
        if raw is not None:
            items.append(raw)
            continue
        if not isinstance(part, ToolResultPart):
            losses.add(at, f"{TARGET} cannot carry a {part.type} part in a tool message")
            continue
        losses.extra(part.extra, NS, at)
        if part.is_error:
            losses.add(f"{at}.is_error", f"{TARGET} cannot mark a tool result as an error")
        if drop_name_if_implied(part, names):
            losses.add(f"{at}.name", f"{TARGET} names a result only through its call")
        items.append(_output_item(part))
    return items


def _output_item(part: ToolResultPart) -> dict[str, JSON]:
    mine = own(part.extra, NS)
    item = dict(mine.get("fields") or {})
    kind = "custom_tool_call_output" if mine.get("type") == "custom" else "function_call_output"
    output = part.output
    if not (mine.get("content") == "list" and isinstance(output, list)):
        output = output_text(output)
    item.update(type=kind, call_id=part.call_id, output=output)
    return item


# ---------------------------------------------------------------- wire -> ours


def from_openai_responses(items: Iterable[Mapping[str, JSON] | Any]) -> list[Message]:
    """Read OpenAI Responses items (input items, or a response's `output`).

    Args:
        items: Items as dicts or the SDK's objects.

    Returns:
        Our messages; every field without a slot is kept in `extra`.

    Raises:
        InvalidMessage: If an item is malformed; the text says where.
    """
    reader = _Reader()
    for i, item in enumerate(as_items(as_list(items, "items"), "items")):
        reader.read(item, f"items[{i}]")
    reader.flush()
    return reader.out


class _Reader:
    """Groups consecutive assistant-side items into one assistant message."""

    def __init__(self) -> None:
        self.out: list[Message] = []
        self.parts: list[Part] = []

    def flush(self) -> None:
        if self.parts:
            self.out.append(message("assistant", self.parts))
            self.parts = []

    def read(self, item: dict[str, JSON], where: str) -> None:
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            role = need(item, "role", str, where)
            if role == "assistant":
                self.parts.extend(_read_assistant(item, where))
                return
            self.flush()
            self.out.append(_read_input(item, role, where))
        elif kind in _OUTPUTS:
            self.flush()
            self.out.append(message("tool", [_read_output(item, where)]))
        elif kind == "reasoning":
            self.parts.append(_read_reasoning(item))
        elif kind in ("function_call", "custom_tool_call"):
            self.parts.append(_read_call(item, where))
        else:
            self.parts.append(raw_block(item, NS))


def _read_input(item: dict[str, JSON], role: str, where: str) -> Message:
    if role not in ("system", "developer", "user"):
        raise InvalidMessage(f"{where}.role: unknown role {role!r}")
    mine: dict[str, JSON] = {}
    if pick(item, "role", "content"):
        mine["fields"] = pick(item, "role", "content")
    if role == "developer":
        mine["role"] = role
    content = item.get("content")
    if isinstance(content, str):
        parts: list[Part] = [TextPart(content)]
    else:
        blocks = as_items(content, f"{where}.content")
        if len(blocks) == 1 and blocks[0].keys() == {"type", "text"}:
            mine["content"] = "list"
        parts = [_read_block(b, f"{where}.content[{k}]") for k, b in enumerate(blocks)]
    return message("system" if role == "developer" else role, parts, with_own(mine, NS))


def _read_block(block: dict[str, JSON], where: str) -> Part:
    kind = block.get("type")
    if kind == "input_text" and isinstance(block.get("text"), str):
        rest = pick(block, "type", "text")
        return TextPart(block["text"], extra=with_own(rest, NS))
    if kind == "input_image":
        return _read_image(block, where)
    if kind == "input_file":
        part = _read_file(block)
        if part is not None:
            return part
    return raw_block(block, NS)


def _read_image(block: dict[str, JSON], where: str) -> Part:
    mine: dict[str, JSON] = {"fields": pick(block, "type", "image_url", "file_id")}
    if isinstance(block.get("file_id"), str):
        mine["file_id"] = True
        return FilePart("image/*", url=block["file_id"], extra={NS: mine})
    url = need(block, "image_url", str, where)
    parsed = parse_data_url(url)
    if parsed is not None and parsed[0].startswith("image/"):
        return FilePart(parsed[0], data=parsed[1], extra={NS: mine})
    return FilePart("image/*", url=url, extra={NS: mine})


def _read_file(block: dict[str, JSON]) -> Part | None:
    mine: dict[str, JSON] = {"fields": pick(block, "file_id", "file_url", "file_data", "filename")}
    filename = block.get("filename") if isinstance(block.get("filename"), str) else None
    refs = [k for k in ("file_id", "file_url", "file_data") if isinstance(block.get(k), str)]
    if len(refs) != 1:
        return None
    value = block[refs[0]]
    if refs[0] == "file_data":
        parsed = parse_data_url(value)
        if parsed is None:
            return None
        return FilePart(parsed[0], data=parsed[1], filename=filename, extra={NS: mine})
    if refs[0] == "file_id":
        mine["file_id"] = True
    return FilePart("application/octet-stream", url=value, filename=filename, extra={NS: mine})


def _read_assistant(item: dict[str, JSON], where: str) -> list[Part]:
    fields = pick(item, "role", "content")
    content = item.get("content")
    if isinstance(content, str):
        if not fields:
            return [TextPart(content)]
        return [TextPart(content, extra={NS: {"item": fields, "string": True}})]
    blocks = as_items(content, f"{where}.content")
    if not blocks:
        return [raw_block(item, NS)]
    parts: list[Part] = []
    for k, block in enumerate(blocks):
        key = "refusal" if block.get("type") == "refusal" else "text"
        text = need(block, key, str, f"{where}.content[{k}]")
        mine: dict[str, JSON] = {"block": pick(block, key)}
        mine.update({"item": fields} if k == 0 else {"in_item": True})
        parts.append(TextPart(text, extra={NS: mine}))
    return parts


def _read_reasoning(item: dict[str, JSON]) -> ReasoningPart:
    summary = item.get("summary") or []
    text = _summary_text(summary) if isinstance(summary, list) else ""
    mine: dict[str, JSON] = {"item": pick(item, "type", "summary", "encrypted_content")}
    if summary != ([{"type": "summary_text", "text": text}] if text else []):
        mine["summary"] = summary
    signature = item.get("encrypted_content")
    return ReasoningPart(text, signature if isinstance(signature, str) else None, extra={NS: mine})


def _read_call(item: dict[str, JSON], where: str) -> ToolCallPart:
    call_id = need(item, "call_id", str, where)
    name = need(item, "name", str, where)
    if item.get("type") == "custom_tool_call":
        fields = pick(item, "type", "call_id", "name", "input")
        mine: dict[str, JSON] = {"type": "custom", "fields": fields}
        return ToolCallPart(call_id, name, need(item, "input", str, where), extra={NS: mine})
    arguments, kept = decode_arguments(need(item, "arguments", str, where))
    fields = pick(item, "type", "call_id", "name", "arguments")
    mine = {**kept, "fields": fields} if fields else kept
    return ToolCallPart(call_id, name, arguments, extra=with_own(mine, NS))


def _read_output(item: dict[str, JSON], where: str) -> ToolResultPart:
    call_id = need(item, "call_id", str, where)
    mine: dict[str, JSON] = {}
    if pick(item, "type", "call_id", "output"):
        mine["fields"] = pick(item, "type", "call_id", "output")
    if _OUTPUTS[item["type"]] == "custom":
        mine["type"] = "custom"
    output = item.get("output", "")
    if isinstance(output, list):
        mine["content"] = "list"
        output = as_items(output, f"{where}.output")
    elif not isinstance(output, str):
        raise InvalidMessage(f"{where}.output: must be a string or a list")
    return ToolResultPart(call_id, output, extra=with_own(mine, NS))
