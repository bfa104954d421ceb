"""Pydantic AI: its message history stored as sessionary messages, and back.

`to_messages` and `from_messages` convert between a list of `ModelMessage` (what
`result.all_messages()` returns and `agent.run(message_history=...)` takes) and sessionary
messages. `SessionaryMessageHistory` (and `AsyncSessionaryMessageHistory`) load and save a
session's history around a run::

    history = SessionaryMessageHistory("chat-42", "sqlite:///chat.db")
    result = agent.run_sync("Hello", message_history=history.load())
    history.save(result.new_messages())

A `ModelResponse` becomes one assistant message: text, thinking (as reasoning), tool calls.
A `ModelRequest` becomes one message per run of parts of the same role: system prompts a
system message, user prompts a user message (images and documents as file parts), tool
returns and tool retries a tool message whose results answer the calls by id. So the stored
history reads like any other conversation, and is searchable and branchable.

The round trip is exact: every field Pydantic AI sets that has no sessionary slot is kept in
the part's `extra["pydantic_ai"]` (or the message's `metadata["pydantic_ai"]`), and parts
with no sessionary counterpart are kept whole in data parts. Exact means equal to what
Pydantic AI's own `ModelMessagesTypeAdapter` gives back from its JSON.

Closing: a history opened from a URL is terminal after `close()`: `load` and `save` then
raise `sessionary.Closed` (a RuntimeError) and closing again does nothing; a history over
your own manager is left usable, and the manager open. Either class may be used from any
thread; the async one from any event loop.

Needs `pip install 'sessionary[pydantic-ai]'`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sessionary._sync.manager import SessionManager
from sessionary.errors import InvalidMessage, SessionNotFound
from sessionary.integrations._common import (
    DEFAULT_URL,
    Lifecycle,
    append_async,
    append_sync,
    close_async,
    close_sync,
    encode_name,
    install_hint,
    open_async_manager,
    open_sync_manager,
)
from sessionary.manager import AsyncSessionManager
from sessionary.model import (
    DataPart,
    FilePart,
    Message,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

try:
    from pydantic import ValidationError
    from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
except ImportError as exc:  # pragma: no cover - exercised by a test that hides the package
    raise install_hint("pydantic-ai-slim", "pydantic-ai", exc) from exc

__all__ = [
    "AsyncSessionaryMessageHistory",
    "SessionaryMessageHistory",
    "from_messages",
    "to_messages",
]

NS = "pydantic_ai"  # the key of Pydantic AI's own fields in extra and metadata
_ITEM = "pydantic_ai_item"  # an item of a user prompt's content list
JSON = Any
_FILE_KINDS = frozenset({"image-url", "audio-url", "document-url", "video-url", "binary"})


# ---------------------------------------------------------------- Pydantic AI -> sessionary


def _compact(fields: dict[str, JSON]) -> dict[str, JSON]:
    return {k: v for k, v in fields.items() if v is not None}


def _rest(data: dict[str, JSON], *mapped: str) -> dict[str, JSON]:
    return _compact({k: v for k, v in data.items() if k not in mapped})


def _item_part(item: JSON) -> Part:
    """Return the part one item of a user prompt's content list becomes."""
    if isinstance(item, str):
        return TextPart(item, extra={_ITEM: {}})
    if isinstance(item, dict) and item.get("kind") in _FILE_KINDS:
        media = item.get("media_type")
        if isinstance(media, str):
            source = {"data": item["data"]} if item["kind"] == "binary" else {"url": item["url"]}
            rest = _rest(item, "data", "url", "media_type")
            return FilePart(mime_type=media, **source, extra={_ITEM: rest})
    return DataPart(item, name=NS, extra={_ITEM: "raw"})


def _request_part(data: dict[str, JSON]) -> tuple[Role | None, list[Part]]:
    """Return the role and parts one request part becomes (role None: joins its neighbours)."""
    kind = data.get("part_kind")
    content = data.get("content")
    if kind == "system-prompt" and isinstance(content, str):
        return "system", [TextPart(content, extra={NS: _rest(data, "content")})]
    if kind == "user-prompt":
        if isinstance(content, str):
            return "user", [TextPart(content, extra={NS: _rest(data, "content")})]
        if isinstance(content, list) and content:
            parts = [_item_part(item) for item in content]
            parts[0].extra[NS] = {**_rest(data, "content"), "content": "list"}
            return "user", parts
        return "user", [DataPart(data, name=NS, extra={NS: "raw"})]
    if isinstance(data.get("tool_call_id"), str) and isinstance(data.get("tool_name"), str):
        return "tool", [_tool_result(data)]
    if kind in ("retry-prompt", "retry-feedback") and isinstance(content, str):
        return "user", [TextPart(content, extra={NS: _rest(data, "content")})]
    return None, [DataPart(data, name=NS, extra={NS: "raw"})]


def _tool_result(data: dict[str, JSON]) -> ToolResultPart:
    outcome = data.get("outcome", "success")
    failed = data.get("part_kind") == "retry-prompt" or outcome not in (None, "success")
    return ToolResultPart(
        call_id=data["tool_call_id"],
        output=data.get("content"),
        is_error=failed,
        name=data["tool_name"],
        extra={NS: _rest(data, "tool_call_id", "tool_name", "content")},
    )


def _response_part(data: dict[str, JSON]) -> Part:
    kind = data.get("part_kind")
    content = data.get("content")
    if kind == "text" and isinstance(content, str):
        return TextPart(content, extra={NS: _rest(data, "content")})
    if kind == "thinking" and isinstance(content, str):
        signature = data.get("signature")
        extra = {NS: _rest(data, "content", "signature")}
        return ReasoningPart(
            content, signature if isinstance(signature, str) else None, extra=extra
        )
    if kind == "tool-call" and data.get("tool_call_id") and data.get("tool_name"):
        rest = _rest(data, "tool_call_id", "tool_name", "args")
        return ToolCallPart(
            data["tool_call_id"], data["tool_name"], data.get("args"), extra={NS: rest}
        )
    return DataPart(data, name=NS, extra={NS: "raw"})


def _groups(parts: list[dict[str, JSON]]) -> list[tuple[Role, list[Part]]]:
    """Split a request's parts into runs of one role each."""
    groups: list[tuple[Role, list[Part]]] = []
    for data in parts:
        role, converted = _request_part(data)
        if groups and (role is None or role == groups[-1][0]):
            groups[-1][1].extend(converted)
        else:
            groups.append((role or "system", converted))
    return groups or [("user", [])]


def _message_fields(data: dict[str, JSON]) -> tuple[dict[str, JSON], datetime | None]:
    fields = _rest(data, "parts")
    stamp = data.get("timestamp")
    return fields, datetime.fromisoformat(stamp) if isinstance(stamp, str) else None


def _convert(data: dict[str, JSON]) -> list[Message]:
    fields, stamp = _message_fields(data)
    if data.get("kind") == "response":
        groups: list[tuple[Role, list[Part]]] = [
            ("assistant", [_response_part(p) for p in data["parts"]])
        ]
    else:
        groups = _groups(data["parts"])
    messages = []
    for index, (role, parts) in enumerate(groups):
        metadata = {NS: fields if index == 0 else {"continued": True}}
        message = Message(role=role, parts=parts, metadata=metadata)
        if stamp is not None:
            message.created_at = stamp
        messages.append(message)
    return messages


def _dump(messages: Sequence[ModelMessage]) -> list[dict[str, JSON]]:
    try:
        dumped: list[dict[str, JSON]] = ModelMessagesTypeAdapter.dump_python(
            list(messages), mode="json"
        )
    except Exception as exc:
        raise InvalidMessage(f"not a list of Pydantic AI messages: {exc}") from None
    return dumped


def to_messages(messages: Sequence[ModelMessage]) -> list[Message]:
    """Return the sessionary messages for a Pydantic AI message history.

    Raises:
        InvalidMessage: If `messages` is not a list of Pydantic AI messages.
    """
    return [converted for data in _dump(messages) for converted in _convert(data)]


# ---------------------------------------------------------------- sessionary -> Pydantic AI


def _part_data(part: Part) -> dict[str, JSON]:
    """Return the Pydantic AI part data one of our parts stands for (a new part)."""
    mine = part.extra.get(NS)
    if mine == "raw" and isinstance(part, DataPart):
        return dict(part.data)
    fields = dict(mine) if isinstance(mine, dict) else {}
    if isinstance(part, ToolCallPart):
        fields.setdefault("part_kind", "tool-call")
        return {**fields, "tool_name": part.name, "args": part.arguments, "tool_call_id": part.id}
    if isinstance(part, ToolResultPart):
        return _result_data(part, fields)
    if isinstance(part, ReasoningPart):
        fields.setdefault("part_kind", "thinking")
        return {**fields, "content": part.text, "signature": part.signature}
    text = part.text if isinstance(part, TextPart) else ""
    return {**fields, "content": text}


def _result_data(part: ToolResultPart, fields: dict[str, JSON]) -> dict[str, JSON]:
    fields.setdefault("part_kind", "tool-return")
    if part.is_error and fields["part_kind"] == "tool-return":
        fields.setdefault("outcome", "failed")
    return {
        **fields,
        "tool_name": part.name or "",
        "content": part.output,
        "tool_call_id": part.call_id,
    }


def _item_data(part: Part) -> JSON:
    mine = part.extra.get(_ITEM)
    if isinstance(part, DataPart):
        return part.data
    if isinstance(part, FilePart):
        fields = dict(mine) if isinstance(mine, dict) else {}
        if part.data is not None:
            fields.setdefault("kind", "binary")
            return {**fields, "data": part.data, "media_type": part.mime_type}
        fields.setdefault("kind", _url_kind(part.mime_type))
        return {**fields, "url": part.url, "media_type": part.mime_type}
    return part.text if isinstance(part, TextPart) else None


def _url_kind(mime: str) -> str:
    for prefix in ("image", "audio", "video"):
        if mime.startswith(prefix + "/"):
            return f"{prefix}-url"
    return "document-url"


_DEFAULT_KIND: dict[str, str] = {"system": "system-prompt", "user": "user-prompt"}


def _request_parts(message: Message) -> list[dict[str, JSON]]:
    """Return the request parts one system, user or tool message stands for."""
    out: list[dict[str, JSON]] = []
    for part in message.parts:
        if _ITEM in part.extra and NS not in part.extra and out and "items" in out[-1]:
            out[-1]["items"].append(_item_data(part))
            continue
        if _ITEM in part.extra:
            out.append({**part.extra.get(NS, {}), "items": [_item_data(part)]})
            continue
        data = _part_data(part)
        if "part_kind" not in data and message.role in _DEFAULT_KIND:
            if not isinstance(part, TextPart | FilePart):
                continue  # a data part written by another client: not shown to a model
            data = _foreign_part(part, message.role)
        out.append(data)
    for data in out:
        if "items" in data:
            data["content"] = data.pop("items")
            data.setdefault("part_kind", "user-prompt")
    return out


def _foreign_part(part: Part, role: str) -> dict[str, JSON]:
    """Return the request part for a text or file part written by another sessionary client."""
    if isinstance(part, FilePart):
        return {"part_kind": "user-prompt", "content": [_item_data(part)]}
    return {
        "part_kind": _DEFAULT_KIND[role],
        "content": part.text if isinstance(part, TextPart) else "",
    }


def _response_parts(message: Message) -> list[dict[str, JSON]]:
    out = []
    for part in message.parts:
        data = _part_data(part)
        if "part_kind" not in data:
            if not isinstance(part, TextPart):
                continue  # a data or file part written by another client
            data["part_kind"] = "text"
        out.append(data)
    return out


def _message_data(message: Message) -> tuple[dict[str, JSON], bool]:
    """Return a message's Pydantic AI message fields and whether it continues the previous."""
    mine = message.metadata.get(NS)
    continued = isinstance(mine, dict) and mine.get("continued") is True
    fields = dict(mine) if isinstance(mine, dict) and not continued else {}
    fields.setdefault("kind", "response" if message.role == "assistant" else "request")
    return fields, continued


def from_messages(messages: Sequence[Message]) -> list[ModelMessage]:
    """Return the Pydantic AI message history for sessionary messages.

    Messages written by `to_messages` give back exactly the history they were made from.
    Messages written by other clients read as requests and responses by role.

    Raises:
        InvalidMessage: If the stored fields no longer validate as Pydantic AI messages.
    """
    out: list[dict[str, JSON]] = []
    for message in messages:
        fields, continued = _message_data(message)
        parts = _response_parts(message) if message.role == "assistant" else _request_parts(message)
        if continued and out and out[-1]["kind"] == "request":
            out[-1]["parts"].extend(parts)
        else:
            out.append({**fields, "parts": parts})
    try:
        return ModelMessagesTypeAdapter.validate_json(json.dumps(out))
    except ValidationError as exc:
        raise InvalidMessage(f"the stored history is not a Pydantic AI history: {exc}") from None


# ---------------------------------------------------------------- loading and saving


class SessionaryMessageHistory:
    """Loads and saves a Pydantic AI message history kept in one sessionary session.

    Args:
        session_id: The session that holds the history (created on the first save): any
            non-empty string. One that is not a sessionary id (an e-mail address,
            `thread:42/1`) names the sessionary session `x.` + its UTF-8 in hex;
            `session_id` stays as given.
        store: A store URL or a `SessionManager`.
        tenant: Overrides the manager's tenant (or the URL's default).
        user: Overrides the manager's user (or the URL's default).

    Raises:
        InvalidId: If `session_id` is empty, or too long to store.
    """

    def __init__(
        self,
        session_id: str,
        store: SessionManager | str = DEFAULT_URL,
        *,
        tenant: str | None = None,
        user: str | None = None,
    ) -> None:
        self._id = encode_name(session_id, "session_id")
        self.session_id = session_id
        self.manager, owned = open_sync_manager(store, tenant, user)
        self._life = Lifecycle(type(self).__name__, owned)

    def load(self, limit: int | None = None) -> list[ModelMessage]:
        """Return the session's history for `agent.run(message_history=...)`.

        Args:
            limit: Only the latest `limit` stored messages (widened so that no tool return
                is separated from its call).

        Raises:
            Closed: If the history was closed (also a RuntimeError).
        """
        self._life.check_open()
        try:
            stored = self.manager.session(self._id).history(limit=limit)
        except SessionNotFound:
            return []
        return from_messages(stored)

    def save(self, messages: Sequence[ModelMessage]) -> list[Message]:
        """Append messages (e.g. `result.new_messages()`) atomically; return them as stored.

        Raises:
            Closed: If the history was closed (also a RuntimeError).
        """
        self._life.check_open()
        return append_sync(self.manager, self._id, to_messages(messages))

    def close(self) -> None:
        """Close the store if this history opened it from a URL (a no-op after the first)."""
        close_sync(self._life, self.manager)


class AsyncSessionaryMessageHistory:
    """The async twin of `SessionaryMessageHistory`, over an `AsyncSessionManager`."""

    def __init__(
        self,
        session_id: str,
        store: AsyncSessionManager | str = DEFAULT_URL,
        *,
        tenant: str | None = None,
        user: str | None = None,
    ) -> None:
        self._id = encode_name(session_id, "session_id")
        self.session_id = session_id
        self.manager, owned = open_async_manager(store, tenant, user)
        self._life = Lifecycle(type(self).__name__, owned)

    async def load(self, limit: int | None = None) -> list[ModelMessage]:
        """Return the session's history for `agent.run(message_history=...)`."""
        self._life.check_open()
        try:
            stored = await self.manager.session(self._id).history(limit=limit)
        except SessionNotFound:
            return []
        return from_messages(stored)

    async def save(self, messages: Sequence[ModelMessage]) -> list[Message]:
        """Append messages (e.g. `result.new_messages()`) atomically; return them as stored."""
        self._life.check_open()
        return await append_async(self.manager, self._id, to_messages(messages))

    async def close(self) -> None:
        """Close the store if this history opened it from a URL (a no-op after the first)."""
        await close_async(self._life, self.manager)
