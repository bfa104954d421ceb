"""Messages and their typed parts: plain data, validated at the boundary.

A message is `{id, role, parts, metadata, created_at}`. Parts carry a `type`
discriminator: `text`, `reasoning`, `tool_call`, `tool_result`, `file` and `data`.
Fields this version does not know are kept in `extra` and written back unchanged,
so a payload from a newer writer survives a round trip through an older one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from json.encoder import encode_basestring
from typing import Any, ClassVar, Literal, TypeAlias, cast

from sessionary.errors import InvalidId, InvalidMessage
from sessionary.ids import check_id, new_id
from sessionary.records import check_json, check_object

__all__ = [
    "ROLES",
    "DataPart",
    "FilePart",
    "Message",
    "Part",
    "ReasoningPart",
    "Role",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
    "from_micros",
    "message_text",
    "parse_message",
    "to_micros",
]

Role = Literal["system", "user", "assistant", "tool"]
ROLES: frozenset[str] = frozenset({"system", "user", "assistant", "tool"})
JSON: TypeAlias = Any


def _now() -> datetime:
    return datetime.now(UTC)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_micros(moment: datetime) -> int:
    """Return `moment` as whole microseconds since the Unix epoch (exact; naive = UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH  # whole units: dividing by a timedelta costs several times more
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(micros: int) -> datetime:
    """Return the UTC datetime `micros` microseconds after the Unix epoch (exact)."""
    return _EPOCH + timedelta(0, 0, micros)


@dataclass
class TextPart:
    """Visible text."""

    text: str
    type: Literal["text"] = "text"
    extra: dict[str, JSON] = field(default_factory=dict, repr=False)


@dataclass
class ReasoningPart:
    """The model's reasoning; `signature` carries a provider's opaque proof, if any."""

    text: str
    signature: str | None = None
    type: Literal["reasoning"] = "reasoning"
    extra: dict[str, JSON] = field(default_factory=dict, repr=False)


@dataclass
class ToolCallPart:
    """A call the model asks for: `arguments` is JSON (usually an object)."""

    id: str
    name: str
    arguments: JSON = field(default_factory=dict)
    type: Literal["tool_call"] = "tool_call"
    extra: dict[str, JSON] = field(default_factory=dict, repr=False)


@dataclass
class ToolResultPart:
    """The result of the tool call `call_id`: `output` is a string or JSON."""

    call_id: str
    output: JSON
    is_error: bool = False
    name: str | None = None
    type: Literal["tool_result"] = "tool_result"
    extra: dict[str, JSON] = field(default_factory=dict, repr=False)


@dataclass
class FilePart:
    """A file or image, by `url` or inline base64 `data`."""

    mime_type: str
    url: str | None = None
    data: str | None = None
    filename: str | None = None
    type: Literal["file"] = "file"
    extra: dict[str, JSON] = field(default_factory=dict, repr=False)

    @property
    def is_image(self) -> bool:
        """Whether the file is an image."""
        return self.mime_type.startswith("image/")


@dataclass
class DataPart:
    """Application data that rides along with a message and is not shown to a model."""

    data: JSON
    name: str | None = None
    type: Literal["data"] = "data"
    extra: dict[str, JSON] = field(default_factory=dict, repr=False)


Part: TypeAlias = TextPart | ReasoningPart | ToolCallPart | ToolResultPart | FilePart | DataPart


@dataclass
class Message:
    """One message of a conversation.

    `id` and `created_at` are generated when not given. `parent_id` is filled in by the
    store when a message is read back; on append the `parent` argument decides.
    """

    role: Role
    parts: list[Part] = field(default_factory=list)
    id: str = field(default_factory=new_id)
    metadata: dict[str, JSON] = field(default_factory=dict)
    created_at: datetime = field(default_factory=_now)
    parent_id: str | None = field(default=None, compare=False)
    extra: dict[str, JSON] = field(default_factory=dict, repr=False)

    _KNOWN: ClassVar[frozenset[str]] = frozenset(
        {"id", "role", "parts", "metadata", "created_at", "parent_id", "content"}
    )

    @classmethod
    def system(cls, text: str, **kwargs: Any) -> Message:
        """Return a system message holding `text`."""
        return cls(role="system", parts=[TextPart(text)], **kwargs)

    @classmethod
    def user(cls, text: str, **kwargs: Any) -> Message:
        """Return a user message holding `text`."""
        return cls(role="user", parts=[TextPart(text)], **kwargs)

    @classmethod
    def assistant(
        cls, text: str = "", *, tool_calls: list[ToolCallPart] | None = None, **kwargs: Any
    ) -> Message:
        """Return an assistant message with `text` and any `tool_calls`."""
        parts: list[Part] = [TextPart(text)] if text else []
        parts.extend(tool_calls or [])
        return cls(role="assistant", parts=parts, **kwargs)

    @classmethod
    def tool(
        cls,
        call_id: str,
        output: JSON,
        *,
        is_error: bool = False,
        name: str | None = None,
        **kwargs: Any,
    ) -> Message:
        """Return a tool message answering the call `call_id` with `output`."""
        part = ToolResultPart(call_id=call_id, output=output, is_error=is_error, name=name)
        return cls(role="tool", parts=[part], **kwargs)

    @property
    def text(self) -> str:
        """The message's text parts joined by newlines."""
        # Read back as plain text and not decoded: the stored text is the answer. (A plain
        # attribute read first, so that an ordinary message never builds its `__dict__`.)
        if getattr(self, "_stored", None) == "" and "parts" not in self.__dict__:
            return self._text  # type: ignore[attr-defined,no-any-return]
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        """The tool calls this message makes."""
        if getattr(self, "_stored", None) == "" and "parts" not in self.__dict__:
            return []  # read back as plain text and not decoded: one text part, no calls
        return [p for p in self.parts if isinstance(p, ToolCallPart)]

    @property
    def tool_results(self) -> list[ToolResultPart]:
        """The tool results this message carries."""
        if getattr(self, "_stored", None) == "" and "parts" not in self.__dict__:
            return []  # read back as plain text and not decoded: one text part, no results
        return [p for p in self.parts if isinstance(p, ToolResultPart)]

    def to_dict(self) -> dict[str, JSON]:
        """Return the message as JSON-ready data (the inverse of `Message.from_dict`)."""
        data: dict[str, JSON] = dict(self.extra)
        data.update(
            id=self.id,
            role=self.role,
            parts=[part_to_dict(p) for p in self.parts],
            metadata=self.metadata,
            created_at=self.created_at.isoformat(),
        )
        if self.parent_id is not None:
            data["parent_id"] = self.parent_id
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, JSON]) -> Message:
        """Build a message from JSON data, validating it.

        A plain `"content": "text"` is accepted in place of `parts`.

        Raises:
            InvalidMessage: If the data is not a valid message; the text says where.
        """
        return parse_message(data)


# ---------------------------------------------------------------- parsing and checking

_PART_FIELDS: dict[str, tuple[type, dict[str, tuple[type | tuple[type, ...], bool]]]] = {
    # type: (class, {field: (allowed types, required)})
    "text": (TextPart, {"text": (str, True)}),
    "reasoning": (ReasoningPart, {"text": (str, True), "signature": ((str, type(None)), False)}),
    "tool_call": (
        ToolCallPart,
        {"id": (str, True), "name": (str, True), "arguments": (object, False)},
    ),
    "tool_result": (
        ToolResultPart,
        {
            "call_id": (str, True),
            "output": (object, True),
            "is_error": (bool, False),
            "name": ((str, type(None)), False),
        },
    ),
    "file": (
        FilePart,
        {
            "mime_type": (str, True),
            "url": ((str, type(None)), False),
            "data": ((str, type(None)), False),
            "filename": ((str, type(None)), False),
        },
    ),
    "data": (DataPart, {"data": (object, True), "name": ((str, type(None)), False)}),
}


_FIELDS_BY_CLASS = {cls: (kind, fields) for kind, (cls, fields) in _PART_FIELDS.items()}


def _fail(where: str, problem: str) -> InvalidMessage:
    return InvalidMessage(f"{where}: {problem}")


def _parse_part(raw: JSON, where: str) -> Part:
    if isinstance(raw, str):
        return TextPart(raw)
    if not isinstance(raw, Mapping):
        raise _fail(where, f"a part must be an object, not {type(raw).__name__}")
    kind = raw.get("type")
    spec = _PART_FIELDS.get(kind) if isinstance(kind, str) else None
    if spec is None:
        known = ", ".join(sorted(_PART_FIELDS))
        raise _fail(f"{where}.type", f"unknown part type {kind!r} (known: {known})")
    cls, fields = spec
    values: dict[str, JSON] = {}
    for name, (allowed, required) in fields.items():
        if name not in raw:
            if required:
                raise _fail(f"{where}.{name}", "is required")
            continue
        if allowed is not object and not isinstance(raw[name], allowed):
            raise _fail(f"{where}.{name}", f"has the wrong type {type(raw[name]).__name__}")
        values[name] = raw[name]
    extra = {k: v for k, v in raw.items() if k not in fields and k != "type"}
    part = cast(Part, cls(**values, extra=extra))
    _check_part(part, where)
    return part


def _parse_parts(data: Mapping[str, JSON]) -> list[Part]:
    if "parts" in data:
        raw_parts = data["parts"]
        if not isinstance(raw_parts, list):
            raise _fail("parts", f"must be a list, not {type(raw_parts).__name__}")
        return [_parse_part(p, f"parts[{i}]") for i, p in enumerate(raw_parts)]
    content = data.get("content")
    if isinstance(content, str):
        return [TextPart(content)]
    raise _fail("parts", "is required (or a string 'content')")


def _parse_time(value: JSON) -> datetime:
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise _fail("created_at", f"{value!r} is not an ISO 8601 timestamp") from None
    else:
        raise _fail("created_at", f"must be an ISO 8601 string, not {type(value).__name__}")
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def parse_message(data: Mapping[str, JSON]) -> Message:
    """Build and validate a message from JSON data.

    Raises:
        InvalidMessage: If the data is not a valid message; the text says where.
    """
    if not isinstance(data, Mapping):
        raise InvalidMessage(f"a message must be an object, not {type(data).__name__}")
    kwargs: dict[str, Any] = {"role": data.get("role"), "parts": _parse_parts(data)}
    if data.get("id") is not None:
        kwargs["id"] = data["id"]
    if data.get("metadata") is not None:
        kwargs["metadata"] = data["metadata"]
    if data.get("created_at") is not None:
        kwargs["created_at"] = _parse_time(data["created_at"])
    parent = data.get("parent_id")
    message = Message(
        **kwargs,
        parent_id=parent if isinstance(parent, str) else None,
        extra={k: v for k, v in data.items() if k not in Message._KNOWN},
    )
    check_message(message)
    return message


def _check_fields(part: Part, where: str) -> None:
    kind, fields = _FIELDS_BY_CLASS[type(part)]
    if part.type != kind:
        raise _fail(f"{where}.type", f"a {type(part).__name__} has type {kind!r}")
    for name, (allowed, required) in fields.items():
        value = getattr(part, name)
        if allowed is object or (value is None and not required):
            continue
        if not isinstance(value, allowed):
            raise _fail(f"{where}.{name}", f"has the wrong type {type(value).__name__}")
    if not isinstance(part.extra, dict):
        raise _fail(f"{where}.extra", "must be a dict")


def _check_part(part: Part, where: str) -> None:
    _check_fields(part, where)
    if isinstance(part, ToolCallPart):
        if not part.id or not part.name:
            raise _fail(where, "a tool call needs a non-empty id and name")
    elif isinstance(part, ToolResultPart):
        if not part.call_id:
            raise _fail(where, "a tool result needs a non-empty call_id")
    elif isinstance(part, FilePart) and (part.url is None) == (part.data is None):
        raise _fail(where, "a file part needs exactly one of url and data")


_ROLE_RULES: dict[str, Callable[[Part], bool]] = {
    "system": lambda p: isinstance(p, TextPart | DataPart),
    "user": lambda p: not isinstance(p, ToolCallPart | ToolResultPart | ReasoningPart),
    "assistant": lambda p: not isinstance(p, ToolResultPart),
    "tool": lambda p: isinstance(p, ToolResultPart | DataPart),
}


def check_message(message: Message) -> None:
    """Raise `InvalidMessage` unless `message` is well formed.

    Checks the id, the role, each part's fields, which parts each role may carry, and
    that metadata and every JSON value (tool arguments and outputs, data, unknown
    fields) has string keys and nests at most `MAX_JSON_DEPTH` deep. The encoder
    refuses the other values that are not JSON when the message is stored.

    Raises:
        InvalidMessage: If the message is malformed; the text says where.
    """
    if not isinstance(message, Message):
        raise InvalidMessage(f"expected a Message, not {type(message).__name__}")
    try:
        check_id(message.id, "message id")
    except InvalidId as exc:
        raise InvalidMessage(str(exc)) from None
    if message.role not in ROLES:
        raise _fail("role", f"{message.role!r} is not one of {sorted(ROLES)}")
    if _is_plain_part(message):
        if message.parts[0].extra:
            check_json(message.parts[0].extra, "parts[0]", InvalidMessage)
    else:
        _check_parts(message)
    _check_message_json(message)
    if not isinstance(message.created_at, datetime):
        raise _fail("created_at", "must be a datetime")


def _check_message_json(message: Message) -> None:
    """Check the message's own JSON: its metadata and its unknown fields."""
    if not isinstance(message.metadata, dict):
        raise _fail("metadata", "must be an object")
    if message.metadata:
        check_object(message.metadata, "metadata", InvalidMessage)
    if message.extra:
        if not isinstance(message.extra, dict):
            raise _fail("extra", "must be a dict")
        check_json(message.extra, "the message's unknown fields", InvalidMessage)


_JSON_FIELDS: dict[type, str] = {
    ToolCallPart: "arguments",
    ToolResultPart: "output",
    DataPart: "data",
}
"""The part fields that hold any JSON value."""


def _check_part_values(part: Part, where: str) -> None:
    """Check the nesting and the keys of a part's JSON values (see `check_json`).

    Their other values are refused when the message is encoded.
    """
    if part.extra:
        check_json(part.extra, where, InvalidMessage)
    name = _JSON_FIELDS.get(type(part))
    if name is not None:
        value = getattr(part, name)
        if isinstance(value, dict | list | tuple):
            check_json(value, f"{where}.{name}", InvalidMessage)


def _is_plain_part(message: Message) -> bool:
    """Whether `message` has exactly one well-formed text part a non-tool role may carry.

    The common case, checked without the general per-part machinery; anything else takes
    `_check_parts`, which also says what is wrong.
    """
    parts = message.parts
    if type(parts) is not list or len(parts) != 1 or message.role == "tool":
        return False
    part = parts[0]
    return (
        type(part) is TextPart
        and part.type == "text"
        and type(part.text) is str
        and type(part.extra) is dict
    )


def _check_parts(message: Message) -> None:
    if not isinstance(message.parts, list):
        raise _fail("parts", "must be a list")
    allowed = _ROLE_RULES[message.role]
    for i, part in enumerate(message.parts):
        if not isinstance(
            part, TextPart | ReasoningPart | ToolCallPart | ToolResultPart | FilePart | DataPart
        ):
            raise _fail(f"parts[{i}]", f"is not a part: {type(part).__name__}")
        _check_part(part, f"parts[{i}]")
        _check_part_values(part, f"parts[{i}]")
        if not allowed(part):
            raise _fail(f"parts[{i}]", f"a {message.role} message cannot carry a {part.type} part")
    if message.role == "tool" and not message.tool_results:
        raise _fail("parts", "a tool message needs at least one tool_result part")


# ---------------------------------------------------------------- storage encoding


def part_to_dict(part: Part) -> dict[str, JSON]:
    """Return a part as JSON-ready data, with its unknown fields restored."""
    data: dict[str, JSON] = dict(part.extra)
    for name in _PART_FIELDS[part.type][1]:
        value = getattr(part, name)
        if value is not None or name in ("output", "data"):
            data[name] = value
    data["type"] = part.type
    if isinstance(part, ToolResultPart) and not part.is_error:
        data.pop("is_error", None)
    return data


_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
"""One encoder for every body: `json.dumps` with options builds a new encoder per call."""
_encode_text = encode_basestring
"""How `_encode` writes a string (it does not escape non-ASCII text)."""


_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
"""JSON's string scanner (in C): a string's decoded text and where its closing quote ends."""
_PLAIN_HEAD = '{"parts":[{"text":"'
_PLAIN_TAIL = ',"type":"text"}]}'
"""A plain-text message's body (see `plain_text`) is its text as a JSON string between these."""
_PLAIN_OPEN = _PLAIN_HEAD[:-1]


def plain_body_text(body: str) -> str | None:
    """Return the text of a body `encode_body` wrote for a plain-text message, else None.

    The inverse of its shortcut: the JSON string between `_PLAIN_HEAD` and `_PLAIN_TAIL`,
    if it spans all of the space between them (a body of several text parts starts and
    ends the same way, but its first string ends sooner). One scan of the string in C,
    where decoding the whole body builds its part, dicts and lists in Python.
    """
    if body.startswith(_PLAIN_HEAD) and body.endswith(_PLAIN_TAIL):
        text, end = _scanstring(body, len(_PLAIN_HEAD))
        if end == len(body) - len(_PLAIN_TAIL):
            return text
    return None


def plain_text(message: Message) -> str | None:
    """Return the text of a checked message that is one bare text part, else None.

    Such a message (no metadata, no unknown fields on it or its part) is fully described
    by its role and text, so a store may keep the text alone instead of a JSON body.
    """
    if message.metadata or message.extra or len(message.parts) != 1:
        return None
    part = message.parts[0]
    if type(part) is not TextPart or part.extra:
        return None
    return part.text


def plain_body(text: str) -> str:
    """Return the body `encode_body` writes for a message that is just `text` (`plain_text`).

    The common case, as `_encode` would write it, built directly.
    """
    return f"{_PLAIN_OPEN}{_encode_text(text)}{_PLAIN_TAIL}"


def encode_body(message: Message) -> str:
    """Return the JSON stored for a message's body: parts, metadata and unknown fields.

    Raises:
        InvalidMessage: If some value cannot be encoded as JSON.
    """
    text = plain_text(message)
    if text is not None:
        return plain_body(text)
    body: dict[str, JSON] = dict(message.extra)
    body["parts"] = [part_to_dict(p) for p in message.parts]
    if message.metadata:
        body["metadata"] = message.metadata
    try:
        return _encode(body)
    except (TypeError, ValueError) as exc:
        raise InvalidMessage(
            f"message {message.id} holds a value that is not JSON: {exc}"
        ) from None


_DECODERS: dict[str, tuple[type, frozenset[str]]] = {
    kind: (cls, frozenset(fields) | {"type"}) for kind, (cls, fields) in _PART_FIELDS.items()
}
_raw_decode = json.JSONDecoder().raw_decode


def _load_part(raw: dict[str, JSON]) -> Part:
    """Rebuild a stored part without re-checking it (it was checked when written).

    The parsed dict becomes the instance's `__dict__`; fields left out when the part was
    written (None values) fall back to the dataclass's class-level defaults.
    """
    cls, known = _DECODERS[raw["type"]]
    if raw.keys() <= known:
        raw["extra"] = {}
        values = raw
    else:
        values = {k: v for k, v in raw.items() if k in known}
        values["extra"] = {k: v for k, v in raw.items() if k not in known}
    part: Any = object.__new__(cls)
    part.__dict__ = values
    return cast(Part, part)


def decode_body(id: str, role: str, created_us: int, body: str, parent_id: str | None) -> Message:
    """Rebuild a stored message from its columns and body JSON (trusted: checked on write)."""
    data = _raw_decode(body)[0]
    message = object.__new__(Message)
    message.__dict__ = {
        "role": role,
        "parts": [_load_part(p) for p in data.pop("parts", ())],
        "id": id,
        "metadata": data.pop("metadata", None) or {},
        "created_at": _EPOCH + timedelta(0, 0, created_us),
        "parent_id": parent_id,
        "extra": data,
    }
    return message


def load_message(data: dict[str, JSON]) -> Message:
    """Rebuild a message from the `to_dict` data a store wrote (trusted: checked on write).

    `data` becomes the message's unknown fields once its known ones are taken out. Data
    of another shape (no `parts` list, no `created_at` text, a `content` string) is
    parsed and checked by `parse_message` instead.

    Raises:
        KeyError, TypeError, ValueError: If trusted data lacks an id or role, names an
            unknown part type, or holds a timestamp that is not ISO 8601.
        InvalidMessage: If data of another shape is not a valid message.
    """
    parts, created = data.get("parts"), data.get("created_at")
    if type(parts) is not list or type(created) is not str or "content" in data:
        return parse_message(data)
    moment = datetime.fromisoformat(created)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    parts = [_load_part(p) for p in parts]
    message = object.__new__(Message)
    if data.keys() <= _STORED and "role" in data and "id" in data:
        # The usual case: the data becomes the message's fields, as in `_load_part`.
        data["parts"], data["created_at"], data["extra"] = parts, moment, {}
        data.setdefault("parent_id", None)
        if not data.setdefault("metadata", {}):
            data["metadata"] = {}
        message.__dict__ = data
        return message
    message.__dict__ = {
        "role": data.pop("role"),
        "parts": parts,
        "id": data.pop("id"),
        "metadata": data.pop("metadata", None) or {},
        "created_at": moment,
        "parent_id": data.pop("parent_id", None),
        "extra": {k: v for k, v in data.items() if k not in ("parts", "created_at")},
    }
    return message


_STORED = frozenset({"id", "role", "parts", "metadata", "created_at", "parent_id"})
"""The fields `Message.to_dict` writes (and only those, for a message without extras)."""


_DEFERRED = frozenset({"parts", "metadata", "created_at", "extra"})


def decode_lazy(
    id: str, role: str, created_us: int, body: str, parent_id: str | None, text: str | None
) -> Message:
    """Rebuild a stored message whose body is decoded on first use (trusted: checked on write).

    `body` is its JSON body, or "" for a message `plain_text` described by `text`. Until
    `parts`, `metadata`, `created_at` or `extra` is first read, the message holds only
    its id, role, parent and the undecoded columns, so a read that only counts, filters
    by role or passes messages on costs no decoding. Decoding keeps any field already
    assigned.

    The columns are set as attributes, one by one, not as a dict of their own: CPython
    keeps them in the message's inline values (keys shared by every `Message`), so a
    message holds no dict until one is asked for, and a long history read allocates one
    object per message, ~170 bytes smaller and built in half the time. The role is the
    one string of its name (`ROLES`), not a copy per message.
    """
    message = object.__new__(Message)
    message.role = _ROLE_NAMES.get(role, role)  # type: ignore[assignment]
    message.id = id
    message.parent_id = parent_id
    message._stored = body  # type: ignore[attr-defined]
    message._created_us = created_us  # type: ignore[attr-defined]
    message._text = text  # type: ignore[attr-defined]
    return message


def decode_lazy_chain(rows: Iterable[Sequence[Any]], parent_id: str | None) -> list[Message]:
    """`decode_lazy` for rows (id, role, created_us, body, text) that form one chain.

    Each message's parent is the one before it (the first's is `parent_id`). The same
    attributes are set in the same order as `decode_lazy` sets them (so every message
    shares its keys), in one loop with no call per message: a 100,000-message history
    decodes in about half the time of a `decode_lazy` call per row.
    """
    out: list[Message] = []
    append, new, names = out.append, object.__new__, _ROLE_NAMES.get
    for message_id, role, created_us, body, text in rows:
        message = new(Message)
        message.role = names(role, role)
        message.id = message_id
        message.parent_id = parent_id
        message._stored = body  # type: ignore[attr-defined]
        message._created_us = created_us  # type: ignore[attr-defined]
        message._text = text  # type: ignore[attr-defined]
        append(message)
        parent_id = message_id
    return out


_ROLE_NAMES: dict[str, str] = {role: role for role in ROLES}
"""Each role's one string, which a message read back shares instead of a copy of its own."""


class _Deferred:
    """A field of a message read by `decode_lazy`, decoded from its columns on first use.

    A non-data descriptor, as `functools.cached_property` is: a message that holds the
    field in its `__dict__` (every message but an undecoded one) never reaches it. A
    `__getattr__` on `Message` would do the same, but CPython then takes its slow path
    for every attribute read of every message (it specialises no reads on a class with
    a custom attribute hook), appends included.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, message: Message | None, owner: type | None = None) -> Any:
        if message is None:
            return self
        fields = message.__dict__
        stored = fields.get("_stored")
        if stored is None:  # a field deleted from an ordinary message
            raise AttributeError(f"'Message' object has no attribute {self.name!r}")
        _decode_stored(fields, stored)
        return fields[self.name]


# A stored part leaves out its None fields, and `_load_part` lets a missing one fall back
# to a class attribute. `arguments` defaults to a fresh dict, so the dataclass gives it no
# class attribute: one set here (after `@dataclass`, which would take it for the default)
# makes a call stored with null arguments read back as None.
ToolCallPart.arguments = None

# Set after `@dataclass` has run: in the class body it would take them for defaults.
for _name in _DEFERRED:
    setattr(Message, _name, _Deferred(_name))


def _decode_stored(fields: dict[str, Any], body: str) -> None:
    created_us = fields.pop("_created_us")
    text = fields.pop("_text")
    if body == "":
        part = object.__new__(TextPart)
        part.__dict__ = {"text": text, "type": "text", "extra": {}}
        decoded: dict[str, Any] = {"parts": [part], "metadata": {}, "extra": {}}
    else:
        data = _raw_decode(body)[0]
        decoded = {
            "parts": [_load_part(p) for p in data.pop("parts", ())],
            "metadata": data.pop("metadata", None) or {},
        }
        decoded["extra"] = data
    decoded["created_at"] = _EPOCH + timedelta(0, 0, created_us)
    for name, value in decoded.items():
        fields.setdefault(name, value)
    fields.pop("_stored", None)


def _json_text(value: JSON) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def message_text(message: Message) -> str:
    """Return the text a search index holds for a message.

    Text parts, tool call names and arguments, and tool outputs are indexed; reasoning,
    files and data parts are not.
    """
    pieces: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            pieces.append(part.text)
        elif isinstance(part, ToolCallPart):
            pieces.append(f"{part.name} {_json_text(part.arguments)}")
        elif isinstance(part, ToolResultPart):
            pieces.append(_json_text(part.output))
    return "\n".join(p for p in pieces if p)
