"""OpenAI Chat Completions messages (`messages=[...]` of `chat.completions.create`).

Each of our messages becomes one wire message, except a tool message, which becomes one
`tool` message per result, so an assistant's `tool_calls` are followed by one `tool`
message per call. Reading creates one message per wire message. A `developer` message is
read as a system message that remembers its role.

Not carried: reasoning parts, data parts, a result's `is_error`, a result's name when it
differs from its call's, a URL image's type when it cannot be told from the URL, and
message metadata; each is reported in `Conversion.dropped`. Non-string tool outputs are
sent as JSON text and read back as that text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sessionary.errors import InvalidMessage
from sessionary.formats._shared import (
    Conversion,
    Losses,
    as_dict,
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

__all__ = ["from_openai_chat", "to_openai_chat"]

NS = "openai_chat"
TARGET = "OpenAI Chat"
JSON = Any
_AUDIO_FORMATS = {"audio/wav": "wav", "audio/mpeg": "mp3"}
_AUDIO_MIMES = {v: k for k, v in _AUDIO_FORMATS.items()}


# ---------------------------------------------------------------- ours -> wire


def to_openai_chat(
    messages: Iterable[Message], *, strict: bool = False
) -> Conversion[list[dict[str, JSON]]]:
    """Write messages as OpenAI Chat Completions messages.

    Args:
        messages: Our messages, in conversation order.
        strict: Raise instead of reporting what the format cannot carry.

    Returns:
        The wire messages, and what was dropped.

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
        if msg.role == "tool":
            out.extend(_tool_messages(msg, names, where, losses))
            continue
        reported = len(losses.items)
        wire = _message(msg, where, losses)
        if msg.role == "assistant" and not any(wire.get(key) for key in _SAYS_SOMETHING):
            # OpenAI refuses an assistant message with neither content nor tool calls.
            if len(losses.items) == reported:
                losses.add(where, f"{TARGET} refuses an assistant message without content")
            continue
        out.append(wire)
    return losses.finish(out, strict)


_SAYS_SOMETHING = ("content", "tool_calls", "refusal", "audio", "function_call")


def _message(msg: Message, where: str, losses: Losses) -> dict[str, JSON]:
    mine = own(msg.extra, NS)
    wire: dict[str, JSON] = dict(mine.get("fields") or {})
    wire["role"] = mine.get("role", msg.role)
    calls: list[dict[str, JSON]] = []
    blocks: list[dict[str, JSON]] = []
    for j, part in enumerate(msg.parts):
        at = f"{where}.parts[{j}]"
        if isinstance(part, ToolCallPart):
            calls.append(_tool_call(part, at, losses))
        else:
            block = _block(part, msg.role, at, losses)
            if block is not None:
                blocks.append(block)
    _set_content(wire, blocks, mine.get("content"), msg.role)
    if calls:
        wire["tool_calls"] = calls
    return wire


def _set_content(
    wire: dict[str, JSON], blocks: list[dict[str, JSON]], hint: JSON, role: str
) -> None:
    if hint == "null":
        wire["content"] = None
    elif hint == "list" or len(blocks) > 1:
        wire["content"] = blocks
    elif blocks and blocks[0].keys() == {"type", "text"}:
        wire["content"] = blocks[0]["text"]
    elif blocks:
        wire["content"] = blocks
    elif hint != "absent" and role != "assistant":
        wire["content"] = ""


def _tool_call(part: ToolCallPart, where: str, losses: Losses) -> dict[str, JSON]:
    mine = own(part.extra, NS)
    losses.extra(part.extra, NS, where)
    fields = dict(mine.get("fields") or {})
    if mine.get("type") == "custom":
        custom = {"name": part.name, "input": output_text(part.arguments)}
        return {**fields, "id": part.id, "type": "custom", "custom": custom}
    function = {"name": part.name, "arguments": encode_arguments(part.arguments, mine)}
    return {**fields, "id": part.id, "type": "function", "function": function}


_ALLOWED = {
    "system": {"text"},
    "user": {"text", "image_url", "input_audio", "file"},
    "assistant": {"text", "refusal"},
    "tool": {"text"},
}


def _block(part: Part, role: str, where: str, losses: Losses) -> dict[str, JSON] | None:
    raw = raw_of(part, NS)
    if raw is not None:
        return raw
    if isinstance(part, ReasoningPart):
        losses.add(where, f"{TARGET} has no reasoning in requests")
        return None
    block = _text_block(part) if isinstance(part, TextPart) else None
    if isinstance(part, FilePart):
        block = _file_block(part, where, losses)
    if block is None or block["type"] not in _ALLOWED[role]:
        losses.add(where, f"a {role} message of {TARGET} cannot carry a {part.type} part")
        return None
    losses.extra(part.extra, NS, where)
    return block


def _text_block(part: TextPart) -> dict[str, JSON]:
    mine = own(part.extra, NS)
    if mine.pop("refusal", False):
        return {**mine, "type": "refusal", "refusal": part.text}
    return {**mine, "type": "text", "text": part.text}


def _file_block(part: FilePart, where: str, losses: Losses) -> dict[str, JSON] | None:
    mine = own(part.extra, NS)
    fields = dict(mine.get("fields") or {})
    as_file = "file" in mine
    if part.is_image and not as_file:
        return _image_block(part, mine, fields, where, losses)
    if not as_file and part.data is not None and part.mime_type in _AUDIO_FORMATS:
        audio = {"data": part.data, "format": _AUDIO_FORMATS[part.mime_type]}
        if part.filename is not None:
            losses.add(f"{where}.filename", f"{TARGET} audio has no file name")
        return {**fields, "type": "input_audio", "input_audio": audio}
    file: dict[str, JSON] = dict(mine.get("file") or {})
    if part.url is not None and mine.get("file_id"):
        file["file_id"] = part.url
    elif part.data is not None:
        plain = mine.get("plain_base64")
        file["file_data"] = part.data if plain else data_url(part.mime_type, part.data)
    else:
        losses.add(where, f"{TARGET} cannot send a non-image file by URL")
        return None
    if part.filename is not None:
        file["filename"] = part.filename
    return {**fields, "type": "file", "file": file}


def _image_block(
    part: FilePart, mine: dict[str, JSON], fields: dict[str, JSON], where: str, losses: Losses
) -> dict[str, JSON]:
    image: dict[str, JSON] = dict(mine.get("image_url") or {})
    if part.url is not None:
        image["url"] = part.url
        if part.mime_type != url_mime(part.url):
            losses.add(f"{where}.mime_type", f"{TARGET} cannot say an image URL's type")
    else:
        image["url"] = data_url(part.mime_type, part.data or "")
    if part.filename is not None:
        losses.add(f"{where}.filename", f"{TARGET} images have no file name")
    return {**fields, "type": "image_url", "image_url": image}


def _tool_messages(
    msg: Message, names: Mapping[str, str], where: str, losses: Losses
) -> list[dict[str, JSON]]:
    out = []
    for j, part in enumerate(msg.parts):
        at = f"{where}.parts[{j}]"
        if not isinstance(part, ToolResultPart):
            if raw_of(part, NS) is None:
                losses.add(at, f"a tool message of {TARGET} cannot carry a {part.type} part")
            continue
        losses.extra(part.extra, NS, at)
        if part.is_error:
            losses.add(f"{at}.is_error", f"{TARGET} cannot mark a tool result as an error")
        if drop_name_if_implied(part, names):
            losses.add(f"{at}.name", f"{TARGET} names a result only through its call")
        mine = own(part.extra, NS)
        content = part.output
        if not (mine.get("content") == "list" and isinstance(content, list)):
            content = output_text(content)
        wire = {**(mine.get("fields") or {}), "role": "tool", "tool_call_id": part.call_id}
        wire["content"] = content
        out.append(wire)
    return out


# ---------------------------------------------------------------- wire -> ours


def from_openai_chat(items: Iterable[Mapping[str, JSON] | Any]) -> list[Message]:
    """Read OpenAI Chat Completions messages (dicts or the SDK's objects).

    Args:
        items: Wire messages, as sent in `messages=` or returned in `choices[].message`.

    Returns:
        Our messages; every wire field without a slot is kept in `extra`.

    Raises:
        InvalidMessage: If a wire message is malformed; the text says where.
    """
    wire = as_items(as_list(items, "items"), "items")
    return [_read(item, f"items[{i}]") for i, item in enumerate(wire)]


_KNOWN_MESSAGE = ("role", "content", "tool_calls", "tool_call_id")


def _read(item: dict[str, JSON], where: str) -> Message:
    role = need(item, "role", str, where)
    mine: dict[str, JSON] = {}
    if pick(item, *_KNOWN_MESSAGE):
        mine["fields"] = pick(item, *_KNOWN_MESSAGE)
    if role == "tool":
        return _read_tool(item, mine, where)
    if role not in ("system", "developer", "user", "assistant"):
        raise InvalidMessage(f"{where}.role: unknown role {role!r}")
    if role == "developer":
        mine["role"] = "developer"
    parts = _read_content(item, mine, where)
    for j, call in enumerate(as_list(item.get("tool_calls") or (), f"{where}.tool_calls")):
        parts.append(_read_call(as_dict(call, f"{where}.tool_calls[{j}]"), where))
    ours = "system" if role == "developer" else role
    return message(ours, parts, with_own(mine, NS))


def _read_content(item: dict[str, JSON], mine: dict[str, JSON], where: str) -> list[Part]:
    if "content" not in item:
        mine["content"] = "absent"
        return []
    content = item["content"]
    if content is None:
        mine["content"] = "null"
        return []
    if isinstance(content, str):
        return [TextPart(content)]
    blocks = as_items(content, f"{where}.content")
    if (
        len(blocks) == 1
        and blocks[0].get("type") == "text"
        and blocks[0].keys() == {"type", "text"}
    ) or not blocks:
        mine["content"] = "list"
    return [_read_block(b, f"{where}.content[{k}]") for k, b in enumerate(blocks)]


def _read_block(block: dict[str, JSON], where: str) -> Part:
    kind = block.get("type")
    if kind == "text":
        return TextPart(
            need(block, "text", str, where), extra=with_own(pick(block, "type", "text"), NS)
        )
    if kind == "refusal":
        rest = pick(block, "type", "refusal")
        return TextPart(need(block, "refusal", str, where), extra={NS: {**rest, "refusal": True}})
    if kind == "image_url":
        return _read_image(block, where)
    if kind == "input_audio":
        audio = as_dict(need(block, "input_audio", Mapping, where), where)
        mime = _AUDIO_MIMES.get(audio.get("format", ""))
        if (
            mime is not None
            and isinstance(audio.get("data"), str)
            and audio.keys() == {"data", "format"}
        ):
            fields = pick(block, "type", "input_audio")
            return FilePart(
                mime, data=audio["data"], extra=with_own({"fields": fields} if fields else {}, NS)
            )
    if kind == "file":
        part = _read_file(block, where)
        if part is not None:
            return part
    return raw_block(block, NS)


def _read_image(block: dict[str, JSON], where: str) -> Part:
    image = as_dict(need(block, "image_url", Mapping, where), f"{where}.image_url")
    url = need(image, "url", str, f"{where}.image_url")
    mine: dict[str, JSON] = {}
    if pick(block, "type", "image_url"):
        mine["fields"] = pick(block, "type", "image_url")
    mine["image_url"] = pick(image, "url")
    parsed = parse_data_url(url)
    if parsed is not None and parsed[0].startswith("image/"):
        return FilePart(parsed[0], data=parsed[1], extra={NS: mine})
    return FilePart(url_mime(url), url=url, extra={NS: mine})


def _read_file(block: dict[str, JSON], where: str) -> Part | None:
    file = as_dict(need(block, "file", Mapping, where), f"{where}.file")
    mine: dict[str, JSON] = {"file": pick(file, "file_id", "file_data", "filename")}
    if pick(block, "type", "file"):
        mine["fields"] = pick(block, "type", "file")
    filename = file.get("filename") if isinstance(file.get("filename"), str) else None
    if isinstance(file.get("file_id"), str) and "file_data" not in file:
        mine["file_id"] = True
        return FilePart(
            "application/octet-stream", url=file["file_id"], filename=filename, extra={NS: mine}
        )
    data = file.get("file_data")
    if not isinstance(data, str) or "file_id" in file:
        return None
    parsed = parse_data_url(data)
    if parsed is None:
        mine["plain_base64"] = True
        parsed = ("application/octet-stream", data)
    return FilePart(parsed[0], data=parsed[1], filename=filename, extra={NS: mine})


def _read_call(call: dict[str, JSON], where: str) -> ToolCallPart:
    call_id = need(call, "id", str, where)
    fields = pick(call, "id", "type", "function", "custom")
    if call.get("type") == "custom":
        custom = as_dict(need(call, "custom", Mapping, where), where)
        mine: dict[str, JSON] = {"type": "custom", "fields": fields}
        return ToolCallPart(
            call_id, need(custom, "name", str, where), custom.get("input", ""), extra={NS: mine}
        )
    function = as_dict(need(call, "function", Mapping, where), f"{where}.function")
    arguments, kept = decode_arguments(need(function, "arguments", str, f"{where}.function"))
    mine = {**kept, "fields": fields} if fields else kept
    return ToolCallPart(
        call_id,
        need(function, "name", str, f"{where}.function"),
        arguments,
        extra=with_own(mine, NS),
    )


def _read_tool(item: dict[str, JSON], mine: dict[str, JSON], where: str) -> Message:
    call_id = need(item, "tool_call_id", str, where)
    content = item.get("content", "")
    if isinstance(content, list):
        mine["content"] = "list"
        content = as_items(content, f"{where}.content")
    elif not isinstance(content, str):
        raise InvalidMessage(f"{where}.content: must be a string or a list")
    part = ToolResultPart(call_id, content, extra=with_own(mine, NS))
    return message("tool", [part])
