"""LangChain: a chat message history stored in a sessionary session.

`SessionaryChatMessageHistory` is a `BaseChatMessageHistory`, so it drops into
`RunnableWithMessageHistory` or any code that takes one::

    history = SessionaryChatMessageHistory("chat-42", "sqlite:///chat.db")
    history.add_messages([HumanMessage("hi"), AIMessage("hello")])

Each LangChain message becomes one sessionary `Message`, so the conversation is searchable,
branchable and shared with every other sessionary client. The conversion is lossless:
content (a string or a list of blocks), tool calls, tool results and their status come back
as they went in, and every other field LangChain sets (`additional_kwargs`,
`response_metadata`, `usage_metadata`, `artifact`, `name`, ...) is kept under the message's
`metadata["langchain"]`.

As LangChain's own histories (`InMemoryChatMessageHistory` and the persistent ones), every
add appends all of its messages after the head, in order, duplicates included: adding the
same message twice stores it twice, and a message reusing an id already in the history is
stored all the same. So the history gives each message a sessionary id of its own and keeps
LangChain's id (None included) in `metadata["langchain"]["id"]`, from which it comes back
exactly. Histories stored by earlier releases, which made a usable LangChain id the
message's id, read back the same. `from_langchain` alone still makes a usable LangChain id
the message's id, for code that appends to a session itself and wants a re-sent message
stored once.

The history's `session_id` is any non-empty string, as in LangChain: one that is not a
sessionary id (an e-mail address, `thread:42/1`) names the sessionary session `x.` + its
UTF-8 in hex, and the history's `session_id` stays as given.

Closing: a history opened from a URL is terminal after `close()` (or `aclose()`): every
method then raises `sessionary.Closed` (a RuntimeError) and closing again does nothing; a
history over your own manager is left usable, and the manager open.

Needs `pip install 'sessionary[langchain]'`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any, cast

from sessionary._sync.manager import SessionManager
from sessionary.errors import InvalidId, InvalidMessage, SessionNotFound
from sessionary.ids import check_id, new_id
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
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict
except ImportError as exc:  # pragma: no cover - exercised by a test that hides the package
    raise install_hint("langchain-core", "langchain", exc) from exc

__all__ = [
    "SessionaryChatMessageHistory",
    "from_langchain",
    "to_langchain",
]

_KEY = "langchain"  # the metadata key holding LangChain's own fields
_ROLE_OF_TYPE: dict[str, Role] = {
    "human": "user",
    "HumanMessageChunk": "user",
    "ai": "assistant",
    "AIMessageChunk": "assistant",
    "system": "system",
    "SystemMessageChunk": "system",
    "tool": "tool",
    "ToolMessageChunk": "tool",
    # A function message (OpenAI's legacy function calling) answers a call that has no id,
    # so it cannot be a tool result paired with its call: it is kept as user-side text.
    "function": "user",
    "FunctionMessageChunk": "user",
}
_AI_TYPES = frozenset({"ai", "AIMessageChunk"})
_CHAT_ROLES = frozenset({"user", "assistant", "system"})
_TYPE_OF_ROLE = {"user": "human", "assistant": "ai", "system": "system", "tool": "tool"}
# Where a part came from in a list of content blocks, so the list is rebuilt exactly.
_BLOCK = "langchain_block"


# ---------------------------------------------------------------- LangChain -> sessionary


def _is_usable_id(value: object) -> bool:
    try:
        check_id(value)
    except InvalidId:
        return False
    return True


def _role(kind: str, data: dict[str, Any]) -> Role:
    role = _ROLE_OF_TYPE.get(kind)
    if role is not None:
        return role
    if kind in ("chat", "ChatMessageChunk") and data.get("role") in _CHAT_ROLES:
        return cast(Role, data["role"])
    if kind in ("chat", "ChatMessageChunk"):
        return "user"  # a custom role: kept in the LangChain fields, shown as user text
    raise InvalidMessage(f"LangChain message type {kind!r} has no sessionary role")


def _block_part(block: Any, role: Role) -> Part:
    """Return the part one content block becomes (a data part when nothing else fits)."""
    if isinstance(block, str):
        return TextPart(block, extra={_BLOCK: "str"})
    if not isinstance(block, dict):
        raise InvalidMessage(f"a LangChain content block must be a str or dict, not {block!r}")
    kind = block.get("type")
    rest = {k: v for k, v in block.items() if k != "type"}
    if kind == "text" and isinstance(block.get("text"), str):
        text = rest.pop("text")
        return TextPart(text, extra={**rest, _BLOCK: "text"})
    if kind == "reasoning" and role == "assistant" and isinstance(block.get("reasoning"), str):
        text = rest.pop("reasoning")
        return ReasoningPart(text, extra={**rest, _BLOCK: "reasoning"})
    if role != "system" and kind in ("image", "file", "audio", "video"):
        part = _file_part(kind, rest)
        if part is not None:
            return part
    return DataPart(block, name=_KEY)


def _file_part(kind: str, rest: dict[str, Any]) -> FilePart | None:
    mime = rest.get("mime_type")
    url, data = rest.get("url"), rest.get("base64")
    if not isinstance(mime, str) or (url is None) == (data is None):
        return None
    if not isinstance(url or data, str):
        return None
    extra = {k: v for k, v in rest.items() if k not in ("mime_type", "url", "base64")}
    return FilePart(mime_type=mime, url=url, data=data, extra={**extra, _BLOCK: kind})


def _content_parts(content: Any, role: Role, fields: dict[str, Any]) -> list[Part]:
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    if isinstance(content, list):
        fields["content"] = "list"
        return [_block_part(block, role) for block in content]
    raise InvalidMessage(f"LangChain content must be a str or a list, not {type(content).__name__}")


def _tool_call_parts(calls: list[dict[str, Any]]) -> list[Part]:
    parts: list[Part] = []
    for call in calls:
        extra = {k: v for k, v in call.items() if k not in ("name", "args", "id", "type")}
        call_id = call.get("id")
        if not call_id:
            extra["langchain_id"] = call_id  # LangChain allows a call without an id
            call_id = new_id()
        parts.append(
            ToolCallPart(id=call_id, name=call["name"], arguments=call["args"], extra=extra)
        )
    return parts


def _tool_result(data: dict[str, Any]) -> ToolResultPart:
    status = data.pop("status", "success")
    part = ToolResultPart(
        call_id=data.pop("tool_call_id"),
        output=data.pop("content"),
        is_error=status == "error",
        name=data.get("name"),
    )
    if status not in ("success", "error"):
        part.extra["langchain_status"] = status
    return part


def from_langchain(message: BaseMessage) -> Message:
    """Return the sessionary message for one LangChain message (the inverse of `to_langchain`).

    A LangChain id that is a valid sessionary id becomes the message's id; any other (or
    none) gets a new id, and LangChain's is kept in `metadata["langchain"]["id"]`.

    Raises:
        InvalidMessage: If the message has no sessionary counterpart (a `RemoveMessage`,
            which deletes rather than says something) or holds a value that is not JSON.
    """
    return _converted(message, keep_id=True)


def _appended(message: BaseMessage) -> Message:
    """Return the message a history appends: an id of its own, LangChain's in its metadata.

    A history stores every message it is given, as LangChain's do. Were LangChain's id
    the message's, a message whose id the session holds already would not be stored
    (and a batch with one after a new message would be refused).
    """
    return _converted(message, keep_id=False)


def _converted(message: BaseMessage, keep_id: bool) -> Message:
    if not isinstance(message, BaseMessage):
        raise InvalidMessage(f"expected a LangChain message, not {type(message).__name__}")
    dumped = message_to_dict(message)
    kind, data = dumped["type"], dict(dumped["data"])
    role = _role(kind, data)
    fields: dict[str, Any] = {}
    if role == "tool":
        parts: list[Part] = [_tool_result(data)]
    else:
        parts = _content_parts(data.pop("content"), role, fields)
    if role == "assistant":
        parts += _tool_call_parts(data.pop("tool_calls", None) or [])
    if kind != _TYPE_OF_ROLE[role]:
        fields["type"] = kind
    data.pop("type", None)
    lc_id = data.pop("id", None)
    message_id = lc_id if keep_id and _is_usable_id(lc_id) else new_id()
    if message_id != lc_id:
        fields["id"] = lc_id
    fields.update((k, v) for k, v in data.items() if v not in (None, {}, []))
    metadata = {_KEY: fields} if fields else {}
    return Message(role=role, parts=parts, id=message_id, metadata=metadata)


# ---------------------------------------------------------------- sessionary -> LangChain


def _block(part: Part) -> Any:
    """Return the content block a part stands for (None: not shown to a model)."""
    origin = part.extra.get(_BLOCK)
    extra = {k: v for k, v in part.extra.items() if k != _BLOCK}
    if isinstance(part, TextPart):
        return part.text if origin == "str" else {"type": "text", "text": part.text, **extra}
    if isinstance(part, ReasoningPart):
        return {"type": "reasoning", "reasoning": part.text, **extra}
    if isinstance(part, FilePart):
        kind = origin or ("image" if part.is_image else "file")
        source = {"url": part.url} if part.url is not None else {"base64": part.data}
        return {"type": kind, **source, "mime_type": part.mime_type, **extra}
    if isinstance(part, DataPart) and part.name == _KEY:
        return part.data
    return None


def _content(message: Message, as_list: bool) -> str | list[Any]:
    shown = [p for p in message.parts if not isinstance(p, ToolCallPart | ToolResultPart)]
    if not as_list and all(isinstance(p, TextPart) and _BLOCK not in p.extra for p in shown):
        return "\n".join(cast(TextPart, p).text for p in shown)
    return [b for b in (_block(p) for p in shown) if b is not None]


def _tool_calls(message: Message) -> list[dict[str, Any]]:
    calls = []
    for part in message.tool_calls:
        extra = dict(part.extra)
        call_id = extra.pop("langchain_id") if "langchain_id" in extra else part.id
        calls.append(
            {"name": part.name, "args": part.arguments, "id": call_id, "type": "tool_call", **extra}
        )
    return calls


def _tool_messages(message: Message, fields: dict[str, Any]) -> list[dict[str, Any]]:
    records = []
    for index, part in enumerate(message.tool_results):
        status = part.extra.get("langchain_status", "error" if part.is_error else "success")
        data = {
            **fields,
            "content": part.output,
            "tool_call_id": part.call_id,
            "status": status,
        }
        if part.name is not None:
            data.setdefault("name", part.name)
        if index and data["id"] is not None:  # several results in one message: one id each
            data["id"] = f"{data['id']}.{index}"
        records.append(data)
    return records


def to_langchain(message: Message) -> list[BaseMessage]:
    """Return the LangChain messages for one sessionary message.

    A message written by `from_langchain` gives back exactly the message it was made from.
    Any other message gives one LangChain message, except a tool message with several
    results, which gives one `ToolMessage` per result.
    """
    fields = dict(message.metadata.get(_KEY) or {})
    kind = fields.pop("type", _TYPE_OF_ROLE[message.role])
    as_list = fields.pop("content", None) == "list"
    fields.setdefault("id", message.id)
    if message.role == "tool":
        records = _tool_messages(message, fields)
    else:
        data = {**fields, "content": _content(message, as_list)}
        if kind in _AI_TYPES or message.tool_calls:
            data["tool_calls"] = _tool_calls(message)
        records = [data]
    return messages_from_dict([{"type": kind, "data": data} for data in records])


def _to_langchain_all(messages: Sequence[Message]) -> list[BaseMessage]:
    return [converted for message in messages for converted in to_langchain(message)]


# ---------------------------------------------------------------- the history


class SessionaryChatMessageHistory(BaseChatMessageHistory):
    """A LangChain chat history kept in one sessionary session.

    The session is created on the first write. `messages` is the session's history (the
    path from the root to the head), so a `checkout` or a branch made with sessionary
    changes what LangChain sees next. Every add appends all of its messages after the
    head, as LangChain's own histories do (see the module docstring).

    Args:
        session_id: The session that holds the history: any non-empty string (see the
            module docstring); `session_id` stays as given.
        store: A store URL, a `SessionManager`, or an `AsyncSessionManager`. With a sync
            manager or URL every method works (the async ones in a worker thread); with an
            async manager only the async methods (`aget_messages`, `aadd_messages`,
            `aclear`) do, natively.
        tenant: Overrides the manager's tenant (or the URL's default).
        user: Overrides the manager's user (or the URL's default).

    Raises:
        InvalidId: If `session_id` is empty, or too long to store.
        InvalidURL: If `store` is neither a URL nor a manager.
    """

    def __init__(
        self,
        session_id: str,
        store: SessionManager | AsyncSessionManager | str = DEFAULT_URL,
        *,
        tenant: str | None = None,
        user: str | None = None,
    ) -> None:
        super().__init__()
        self._id = encode_name(session_id, "session_id")
        self.session_id = session_id
        self._sync: SessionManager | None = None
        self._async: AsyncSessionManager | None = None
        if isinstance(store, AsyncSessionManager):
            self._async, owned = open_async_manager(store, tenant, user)
        else:
            self._sync, owned = open_sync_manager(store, tenant, user)
        self._life = Lifecycle(type(self).__name__, owned)

    def _manager(self) -> SessionManager:
        self._life.check_open()
        if self._sync is None:
            raise TypeError(
                "this history was made with an AsyncSessionManager: use aget_messages, "
                "aadd_messages and aclear, or pass a SessionManager or a URL"
            )
        return self._sync

    def _amanager(self) -> AsyncSessionManager | None:
        self._life.check_open()
        return self._async

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The session's history as LangChain messages, oldest first."""
        try:
            history = self._manager().session(self._id).history()
        except SessionNotFound:
            return []
        return _to_langchain_all(history)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append every message after the head, in order, atomically (all of them or none)."""
        append_sync(self._manager(), self._id, [_appended(m) for m in messages])

    def clear(self) -> None:
        """Delete every message of the session (its state and registry row stay)."""
        with contextlib.suppress(SessionNotFound):
            self._manager().session(self._id).clear()

    async def aget_messages(self) -> list[BaseMessage]:
        """The session's history as LangChain messages, oldest first."""
        manager = self._amanager()
        if manager is None:
            return await super().aget_messages()
        try:
            history = await manager.session(self._id).history()
        except SessionNotFound:
            return []
        return _to_langchain_all(history)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append every message after the head, in order, atomically (all of them or none)."""
        manager = self._amanager()
        if manager is None:
            return await super().aadd_messages(messages)
        await append_async(manager, self._id, [_appended(m) for m in messages])

    async def aclear(self) -> None:
        """Delete every message of the session (its state and registry row stay)."""
        manager = self._amanager()
        if manager is None:
            return await super().aclear()
        with contextlib.suppress(SessionNotFound):
            await manager.session(self._id).clear()

    def close(self) -> None:
        """Close the store if this history opened it from a URL (a no-op after the first).

        A history made with an `AsyncSessionManager` it opened is closed with `aclose`.
        """
        if self._sync is not None:
            close_sync(self._life, self._sync)

    async def aclose(self) -> None:
        """Close the store if this history opened it from a URL (a no-op after the first)."""
        if self._async is not None:
            await close_async(self._life, self._async)
        else:
            self.close()
