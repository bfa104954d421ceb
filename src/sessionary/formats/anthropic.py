"""Anthropic Messages (`system=` and `messages=` of `messages.create`).

System messages become the separate `system` prompt (a system message after the first
turn is moved there and reported). Tool messages become `tool_result` blocks of a user
turn, and consecutive messages of the same wire role are merged into one turn, so turns
alternate and results sit in the user turn after their `tool_use`. Reading splits a user
turn back into a tool message (its `tool_result` blocks) and a user message (the rest).

Thinking blocks keep their signature; redacted thinking is a reasoning part whose signature
holds the redacted data. Reasoning without a signature, or signed by another provider
(OpenAI's encrypted reasoning), cannot be sent and is reported, as are empty text blocks and
messages left with no content (the API refuses both: they are left out), data parts,
files other than images, PDFs and plain text, non-object tool arguments,
a result's name, and message metadata.
"""

from __future__ import annotations

import base64
import binascii
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
    drop_name_if_implied,
    foreign_signer,
    message,
    need,
    output_text,
    own,
    paired,
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

__all__ = ["AnthropicPrompt", "from_anthropic", "to_anthropic"]

NS = "anthropic"
TARGET = "Anthropic Messages"
JSON = Any


class AnthropicPrompt(NamedTuple):
    """The `system` and `messages` arguments of an Anthropic request."""

    system: str | list[dict[str, JSON]] | None
    messages: list[dict[str, JSON]]


# ---------------------------------------------------------------- ours -> wire


def to_anthropic(
    messages: Iterable[Message], *, strict: bool = False
) -> Conversion[AnthropicPrompt]:
    """Write messages as an Anthropic `(system, messages)` pair.

    Args:
        messages: Our messages, in conversation order.
        strict: Raise instead of reporting what the format cannot carry.

    Returns:
        The system prompt and the alternating turns, and what was dropped.

    Raises:
        InvalidMessage: If a message is malformed.
        LossyConversion: If `strict` and something cannot be carried.
    """
    losses = Losses(TARGET)
    checked = paired(check_messages(messages), losses)
    names = call_names(checked)
    system: list[tuple[Message, str]] = []
    turns: list[dict[str, JSON]] = []
    for i, msg in enumerate(checked):
        where = f"messages[{i}]"
        losses.envelope(msg, NS, where)
        if msg.role == "system":
            if turns:
                losses.add(where, "a system message after the first turn moves to the prompt")
            system.append((msg, where))
            continue
        blocks = [_block(p, names, f"{where}.parts[{j}]", losses) for j, p in enumerate(msg.parts)]
        kept = [b for b in blocks if b is not None and not _empty_text(b)]
        if len(kept) < len([b for b in blocks if b is not None]):
            losses.add(where, f"{TARGET} refuses empty text blocks")
        if kept:
            _add_turn(turns, msg, kept, where, losses)
        elif not msg.parts:
            losses.add(where, f"{TARGET} refuses a message without content")
    return losses.finish(AnthropicPrompt(_system(system, losses), turns), strict)


def _system(
    system: list[tuple[Message, str]], losses: Losses
) -> str | list[dict[str, JSON]] | None:
    blocks: list[dict[str, JSON]] = []
    for msg, where in system:
        for j, part in enumerate(msg.parts):
            block = _block(part, {}, f"{where}.parts[{j}]", losses)
            if block is not None:
                blocks.append(block)
    if not system:
        return None
    hint = own(system[0][0].extra, NS).get("content")
    if len(blocks) == 1 and blocks[0].keys() == {"type", "text"} and hint != "list":
        return str(blocks[0]["text"])
    return blocks


def _empty_text(block: Mapping[str, JSON]) -> bool:
    return block.get("type") == "text" and block.get("text") == ""


def _add_turn(
    turns: list[dict[str, JSON]],
    msg: Message,
    blocks: list[dict[str, JSON]],
    where: str,
    losses: Losses,
) -> None:
    role = "assistant" if msg.role == "assistant" else "user"
    if turns and turns[-1]["role"] == role:
        last = turns[-1]
        if isinstance(last["content"], str):
            last["content"] = [{"type": "text", "text": last["content"]}]
        last["content"].extend(blocks)
        if role == "user" and _results_first(last["content"]):
            losses.add(where, f"{TARGET} needs tool results before the rest of a user turn")
        return
    mine = own(msg.extra, NS)
    plain = len(blocks) == 1 and blocks[0].keys() == {"type", "text"}
    content: JSON = blocks[0]["text"] if plain and mine.get("content") != "list" else blocks
    turns.append({**(mine.get("fields") or {}), "role": role, "content": content})


def _results_first(content: list[dict[str, JSON]]) -> bool:
    """Move a user turn's tool results before its other blocks; whether any moved."""
    results = [b for b in content if b.get("type") == "tool_result"]
    ordered = results + [b for b in content if b.get("type") != "tool_result"]
    if ordered == content:
        return False
    content[:] = ordered
    return True


def _block(
    part: Part, names: Mapping[str, str], where: str, losses: Losses
) -> dict[str, JSON] | None:
    raw = raw_of(part, NS)
    if raw is not None:
        return raw
    losses.extra(part.extra, NS, where)
    mine = own(part.extra, NS)
    if isinstance(part, TextPart):
        return {"type": "text", **mine, "text": part.text}
    if isinstance(part, ReasoningPart):
        return _thinking(part, mine, where, losses)
    if isinstance(part, ToolCallPart):
        if not isinstance(part.arguments, dict):
            losses.add(f"{where}.arguments", f"{TARGET} tool input must be an object")
        arguments = part.arguments if isinstance(part.arguments, dict) else {}
        return {"type": "tool_use", **mine, "id": part.id, "name": part.name, "input": arguments}
    if isinstance(part, ToolResultPart):
        return _tool_result(part, mine, names, where, losses)
    if isinstance(part, FilePart):
        return _file(part, mine, where, losses)
    losses.add(where, f"{TARGET} cannot carry a {part.type} part")
    return None


def _thinking(
    part: ReasoningPart, mine: dict[str, JSON], where: str, losses: Losses
) -> dict[str, JSON] | None:
    if part.signature is None:
        losses.add(where, f"{TARGET} needs the signature of Anthropic thinking")
        return None
    signer = foreign_signer(part, NS)
    if signer is not None:
        losses.add(where, f"{TARGET} refuses reasoning signed by {signer}")
        return None
    if mine.get("type") == "redacted_thinking":
        return {**mine, "data": part.signature}
    return {"type": "thinking", **mine, "thinking": part.text, "signature": part.signature}


def _tool_result(
    part: ToolResultPart,
    mine: dict[str, JSON],
    names: Mapping[str, str],
    where: str,
    losses: Losses,
) -> dict[str, JSON]:
    if drop_name_if_implied(part, names):
        losses.add(f"{where}.name", f"{TARGET} names a result only through its call")
    hint = mine.pop("content", None)
    block: dict[str, JSON] = {"type": "tool_result", **mine, "tool_use_id": part.call_id}
    if hint == "list" and isinstance(part.output, list):
        block["content"] = part.output
    elif not (hint == "absent" and part.output == ""):
        block["content"] = output_text(part.output)
    if part.is_error:
        block["is_error"] = True
    return block


def _file(
    part: FilePart, mine: dict[str, JSON], where: str, losses: Losses
) -> dict[str, JSON] | None:
    kind = "image" if part.is_image else "document"
    if part.url is not None:
        if part.mime_type != (url_mime(part.url) if part.is_image else "application/pdf"):
            losses.add(f"{where}.mime_type", f"{TARGET} cannot say a URL file's type")
        source: dict[str, JSON] = {"type": "url", "url": part.url}
    elif part.mime_type == "text/plain":
        source = _text_source(part.data or "", where, losses) or {}
    elif part.is_image or part.mime_type == "application/pdf":
        source = {"type": "base64", "media_type": part.mime_type, "data": part.data}
    else:
        losses.add(where, f"{TARGET} cannot carry a {part.mime_type} file")
        return None
    block: dict[str, JSON] = {"type": kind, **mine, "source": source}
    if part.filename is not None:
        if kind == "image":
            losses.add(f"{where}.filename", f"{TARGET} images have no file name")
        else:
            block["title"] = part.filename
    return block if source else None


def _text_source(data: str, where: str, losses: Losses) -> dict[str, JSON] | None:
    try:
        text = base64.b64decode(data, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        losses.add(where, f"{TARGET} plain-text documents must be UTF-8")
        return None
    return {"type": "text", "media_type": "text/plain", "data": text}


# ---------------------------------------------------------------- wire -> ours


def from_anthropic(
    messages: Iterable[Mapping[str, JSON] | Any], system: str | Iterable[Any] | None = None
) -> list[Message]:
    """Read Anthropic turns (dicts or the SDK's objects) and an optional system prompt.

    Args:
        messages: The `messages` of a request (a response's `content` can be passed as
            `[{"role": "assistant", "content": response.content}]`).
        system: The `system` prompt: a string or a list of text blocks.

    Returns:
        Our messages; every field without a slot is kept in `extra`.

    Raises:
        InvalidMessage: If a turn or block is malformed; the text says where.
    """
    out: list[Message] = []
    if system is not None:
        out.append(_read_system(system))
    for i, turn in enumerate(as_items(as_list(messages, "messages"), "messages")):
        out.extend(_read_turn(turn, f"messages[{i}]"))
    return out


def _read_system(system: str | Iterable[Any]) -> Message:
    if isinstance(system, str):
        return message("system", [TextPart(system)])
    blocks = as_items(as_list(system, "system"), "system")
    parts = [_read_block(b, f"system[{k}]") for k, b in enumerate(blocks)]
    plain = len(blocks) == 1 and blocks[0].keys() == {"type", "text"}
    return message("system", parts, with_own({"content": "list"} if plain else {}, NS))


def _read_turn(turn: dict[str, JSON], where: str) -> list[Message]:
    role = need(turn, "role", str, where)
    if role not in ("user", "assistant"):
        raise InvalidMessage(f"{where}.role: must be 'user' or 'assistant', not {role!r}")
    mine: dict[str, JSON] = {}
    if pick(turn, "role", "content"):
        mine["fields"] = pick(turn, "role", "content")
    content = turn.get("content")
    if isinstance(content, str):
        return [message(role, [TextPart(content)], with_own(mine, NS))]
    blocks = as_items(content, f"{where}.content")
    parts = [_read_block(b, f"{where}.content[{k}]") for k, b in enumerate(blocks)]
    if len(blocks) == 1 and blocks[0].keys() == {"type", "text"}:
        mine["content"] = "list"
    if role == "assistant" or not parts:
        return [message(role, parts, with_own(mine, NS))]
    out = _split_user(parts)
    out[0].extra = with_own(mine, NS)
    return out


def _split_user(parts: list[Part]) -> list[Message]:
    out: list[Message] = []
    for part in parts:
        role = "tool" if isinstance(part, ToolResultPart) else "user"
        if out and out[-1].role == role:
            out[-1].parts.append(part)
        else:
            out.append(message(role, [part]))
    return out


def _read_block(block: dict[str, JSON], where: str) -> Part:
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return TextPart(block["text"], extra=with_own(pick(block, "type", "text"), NS))
    if kind == "thinking":
        signature = need(block, "signature", str, where)
        rest = pick(block, "type", "thinking", "signature")
        return ReasoningPart(
            need(block, "thinking", str, where), signature, extra=with_own(rest, NS)
        )
    if kind == "redacted_thinking":
        return ReasoningPart("", need(block, "data", str, where), extra={NS: pick(block, "data")})
    if kind == "tool_use":
        rest = pick(block, "type", "id", "name", "input")
        call = ToolCallPart(need(block, "id", str, where), need(block, "name", str, where))
        call.arguments, call.extra = block.get("input", {}), with_own(rest, NS)
        return call
    if kind == "tool_result":
        return _read_result(block, where)
    if kind in ("image", "document"):
        part = _read_file(block, where)
        if part is not None:
            return part
    return raw_block(block, NS)


def _read_result(block: dict[str, JSON], where: str) -> ToolResultPart:
    rest = pick(block, "type", "tool_use_id", "content", "is_error")
    if block.get("is_error") is False:
        rest["is_error"] = False
    content = block.get("content", "")
    if "content" not in block:
        rest["content"] = "absent"
    elif isinstance(content, list):
        rest["content"] = "list"
        content = as_items(content, f"{where}.content")
    elif not isinstance(content, str):
        raise InvalidMessage(f"{where}.content: must be a string or a list")
    call_id = need(block, "tool_use_id", str, where)
    return ToolResultPart(
        call_id, content, is_error=bool(block.get("is_error")), extra=with_own(rest, NS)
    )


def _read_file(block: dict[str, JSON], where: str) -> FilePart | None:
    source = as_dict(need(block, "source", Mapping, where), f"{where}.source")
    rest = pick(block, "type", "source", "title")
    title = block.get("title") if block["type"] == "document" else None
    if title is not None and not isinstance(title, str):
        return None
    kind, extra = source.get("type"), with_own(rest, NS)
    if kind == "url" and isinstance(source.get("url"), str) and source.keys() == {"type", "url"}:
        mime = url_mime(source["url"]) if block["type"] == "image" else "application/pdf"
        return FilePart(mime, url=source["url"], filename=title, extra=extra)
    if source.keys() != {"type", "media_type", "data"} or not isinstance(source["data"], str):
        return None
    if kind == "base64" and isinstance(source["media_type"], str):
        return FilePart(source["media_type"], data=source["data"], filename=title, extra=extra)
    if kind == "text" and source["media_type"] == "text/plain":
        try:
            encoded = source["data"].encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: kept as the raw block it is
            return None
        data = base64.b64encode(encoded).decode("ascii")
        return FilePart("text/plain", data=data, filename=title, extra=extra)
    return None
