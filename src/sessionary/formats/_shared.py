"""What every format module shares: the result type, loss reporting and small codecs.

Each provider module keeps the wire fields our model has no slot for under one key of a
part's or message's `extra`, named after the format (`"anthropic"`, `"gemini"`, ...), and
reads back only its own key. Wire blocks with no counterpart at all (a web search call, an
executable code part) become a `DataPart` whose `extra` marks it as that format's raw block,
and are written back unchanged. So reading a wire format never loses anything; writing one
reports, as a `Loss`, every field the target cannot carry.
"""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, NamedTuple, TypeVar

from sessionary.errors import InvalidMessage, LossyConversion
from sessionary.ids import new_id
from sessionary.model import (
    DataPart,
    Message,
    Part,
    ReasoningPart,
    ToolCallPart,
    ToolResultPart,
    check_message,
)
from sessionary.records import load_json

__all__ = [
    "Conversion",
    "Loss",
    "Losses",
    "as_dict",
    "as_items",
    "as_list",
    "call_names",
    "check_messages",
    "data_url",
    "decode_arguments",
    "encode_arguments",
    "foreign_signer",
    "own",
    "output_text",
    "paired",
    "parse_data_url",
    "url_mime",
    "raw_block",
    "raw_of",
    "with_own",
]

T = TypeVar("T")
JSON = Any


@dataclass(frozen=True)
class Loss:
    """One thing a conversion could not carry: `where` it was and `what` it was."""

    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


class Conversion(NamedTuple, Generic[T]):
    """The result of writing messages in a wire format.

    `value` is the wire data; `dropped` lists what the format could not carry (empty when
    the conversion is lossless). It unpacks as `value, dropped = to_...(messages)`.
    """

    value: T
    dropped: tuple[Loss, ...] = ()

    @property
    def lossless(self) -> bool:
        """Whether nothing was dropped."""
        return not self.dropped


@dataclass
class Losses:
    """Collects the losses of one conversion and builds its result."""

    target: str
    items: list[Loss] = field(default_factory=list)

    def add(self, where: str, what: str) -> None:
        """Record that `what` at `where` cannot be carried."""
        self.items.append(Loss(where, what))

    def extra(self, extra: Mapping[str, JSON], ns: str, where: str) -> None:
        """Record every key of `extra` other than the format's own `ns`."""
        for key in extra:
            if key != ns:
                self.add(f"{where}.extra[{key!r}]", f"{self.target} has no place for it")

    def envelope(self, message: Message, ns: str, where: str) -> None:
        """Record a message's metadata and foreign extra fields (formats without slots)."""
        if message.metadata:
            self.add(f"{where}.metadata", f"{self.target} has no place for message metadata")
        self.extra(message.extra, ns, where)

    def finish(self, value: T, strict: bool) -> Conversion[T]:
        """Return the conversion, or raise `LossyConversion` if strict and lossy.

        Raises:
            LossyConversion: If `strict` and something was dropped.
        """
        dropped = tuple(self.items)
        if strict and dropped:
            listed = "; ".join(str(loss) for loss in dropped[:5])
            more = f" (and {len(dropped) - 5} more)" if len(dropped) > 5 else ""
            raise LossyConversion(
                f"{self.target} cannot carry {len(dropped)} thing(s): {listed}{more}", dropped
            )
        return Conversion(value, dropped)


# ---------------------------------------------------------------- input checking


def check_messages(messages: Iterable[Message]) -> list[Message]:
    """Return `messages` as a list after checking each one.

    Raises:
        InvalidMessage: If an item is not a valid `Message`; the text says which.
    """
    if isinstance(messages, Mapping | str | bytes) or not isinstance(messages, Iterable):
        raise InvalidMessage("messages must be a list of Message objects")
    checked = list(messages)
    for i, message in enumerate(checked):
        try:
            check_message(message)
        except InvalidMessage as exc:
            raise InvalidMessage(f"messages[{i}]: {exc}") from None
    return checked


def as_dict(value: object, where: str) -> dict[str, JSON]:
    """Return a wire object as a plain dict: a mapping, or an SDK's pydantic model.

    Raises:
        InvalidMessage: If `value` is neither.
    """
    if isinstance(value, Mapping):
        return dict(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        dumped = dump(mode="json", exclude_none=True)
        if isinstance(dumped, dict):
            return dumped
    raise InvalidMessage(f"{where}: expected an object, not {type(value).__name__}")


def as_list(values: object, where: str) -> list[Any]:
    """Return what a caller passed as a list of wire items (any iterable but text or a dict).

    Raises:
        InvalidMessage: If `values` is None, text, a mapping or not iterable at all.
    """
    if isinstance(values, str | bytes | bytearray | Mapping) or not isinstance(values, Iterable):
        raise InvalidMessage(f"{where}: expected a list, not {type(values).__name__}")
    return list(values)


def as_items(values: object, where: str) -> list[dict[str, JSON]]:
    """Return a list of wire objects as plain dicts.

    Raises:
        InvalidMessage: If `values` is not a list (or tuple) of objects.
    """
    if not isinstance(values, list | tuple):
        raise InvalidMessage(f"{where}: expected a list, not {type(values).__name__}")
    return [as_dict(v, f"{where}[{i}]") for i, v in enumerate(values)]


def need(data: Mapping[str, JSON], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """Return `data[key]` if it has the type `kind`.

    Raises:
        InvalidMessage: If the key is missing or holds another type.
    """
    if key not in data:
        raise InvalidMessage(f"{where}.{key}: is required")
    value = data[key]
    if not isinstance(value, kind):
        raise InvalidMessage(f"{where}.{key}: has the wrong type {type(value).__name__}")
    return value


# ---------------------------------------------------------------- namespaced extras


def own(extra: Mapping[str, JSON], ns: str) -> dict[str, JSON]:
    """Return the fields a format `ns` kept in `extra` (empty if none)."""
    mine = extra.get(ns)
    return dict(mine) if isinstance(mine, Mapping) else {}


def with_own(values: Mapping[str, JSON], ns: str) -> dict[str, JSON]:
    """Return an `extra` dict holding `values` under `ns` (empty if there are none)."""
    return {ns: dict(values)} if values else {}


def raw_block(block: Mapping[str, JSON], ns: str) -> DataPart:
    """Wrap a wire block our model has no part for, to be written back unchanged."""
    kind = block.get("type")
    return DataPart(
        data=dict(block), name=kind if isinstance(kind, str) else None, extra={ns: "raw"}
    )


def raw_of(part: Part, ns: str) -> dict[str, JSON] | None:
    """Return the wire block a `raw_block` part holds for format `ns`, else None."""
    if isinstance(part, DataPart) and part.extra.get(ns) == "raw" and isinstance(part.data, dict):
        return dict(part.data)
    return None


def pick(data: Mapping[str, JSON], *known: str) -> dict[str, JSON]:
    """Return the entries of `data` whose keys are not in `known`."""
    return {k: v for k, v in data.items() if k not in known}


# ---------------------------------------------------------------- reasoning

# The formats whose reasoning parts always say, in `extra`, which provider signed them.
_SIGNERS = ("anthropic", "gemini", "openai_responses")


def foreign_signer(part: ReasoningPart, ns: str) -> str | None:
    """Return the other provider format whose signature `part` holds, if its extra says so.

    A signature (Anthropic's thinking signature, Gemini's thought signature, OpenAI's
    encrypted reasoning) is only valid for the provider that made it: sent to another, the
    request is refused.
    """
    if part.signature is None:
        return None
    return next((other for other in _SIGNERS if other != ns and other in part.extra), None)


# ---------------------------------------------------------------- values


_RAW_ARGUMENTS = "arguments_text"


def _decode_json(text: str) -> JSON:
    try:
        return load_json(text)
    except ValueError:  # not JSON, or too deep to decode: kept as the text it is
        return text


def decode_arguments(text: str) -> tuple[JSON, dict[str, JSON]]:
    """Parse tool-call arguments sent as JSON text.

    Returns the arguments and the fields to keep so that the exact text is written back
    (text that is not JSON, or JSON spaced differently from ours, is kept verbatim).
    """
    arguments = _decode_json(text)
    if json.dumps(arguments, ensure_ascii=False) == text:
        return arguments, {}
    return arguments, {_RAW_ARGUMENTS: text}


def encode_arguments(arguments: JSON, kept: Mapping[str, JSON]) -> str:
    """Return tool-call arguments as JSON text, reusing the original text if unchanged."""
    text = kept.get(_RAW_ARGUMENTS)
    if isinstance(text, str) and _decode_json(text) == arguments:
        return text
    return json.dumps(arguments, ensure_ascii=False)


def output_text(output: JSON) -> str:
    """Return a tool output as text: a string as is, other JSON as its JSON text."""
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)


_DATA_URL = re.compile(r"data:([^;,]+);base64,(.*)\Z", re.DOTALL)


def data_url(mime_type: str, data: str) -> str:
    """Return inline base64 `data` as a `data:` URL."""
    return f"data:{mime_type};base64,{data}"


def url_mime(url: str, fallback: str = "image/*") -> str:
    """Return the type read back for an image given by URL (guessed from its extension)."""
    guessed = mimetypes.guess_type(url)[0]
    return guessed if guessed and guessed.startswith("image/") else fallback


def parse_data_url(url: str) -> tuple[str, str] | None:
    """Return `(mime_type, base64 data)` of a base64 `data:` URL, else None."""
    match = _DATA_URL.match(url)
    if match is None:
        return None
    try:
        base64.b64decode(match.group(2), validate=True)
    except (binascii.Error, ValueError):
        return None
    return match.group(1), match.group(2)


# ---------------------------------------------------------------- tool pairing


def call_names(messages: Iterable[Message]) -> dict[str, str]:
    """Return the tool name of every tool call in `messages`, by call id."""
    return {
        part.id: part.name
        for message in messages
        for part in message.parts
        if isinstance(part, ToolCallPart)
    }


def paired(messages: list[Message], losses: Losses) -> list[Message]:
    """Return `messages` without the tool calls the conversation moved past unanswered.

    A call with no result before the next assistant message, or with none at all and a
    user message after it, was abandoned (the user interrupted it, say); OpenAI,
    Anthropic and Gemini refuse a request holding one. It is left out and reported, and
    so is a result that answers it only after that assistant message. A call still
    waiting at the end (nothing but tool messages after it) and a result whose call is
    not in `messages` at all are kept: the messages may be converted a few at a time.
    The messages keep their places (one may be left empty).
    """
    skip = _abandoned(messages)
    if not skip:
        return messages
    out = []
    for i, msg in enumerate(messages):
        kept = []
        for j, part in enumerate(msg.parts):
            if (i, j) not in skip:
                kept.append(part)
            else:
                what = "call" if isinstance(part, ToolCallPart) else "result"
                losses.add(f"messages[{i}].parts[{j}]", f"an abandoned tool {what}")
        out.append(replace(msg, parts=kept) if len(kept) < len(msg.parts) else msg)
    return out


def _abandoned(messages: list[Message]) -> set[tuple[int, int]]:
    """Return the (message, part) indexes of abandoned calls and of their late results."""
    found: set[tuple[int, int]] = set()
    waiting: dict[str, tuple[int, int]] = {}
    dropped: set[str] = set()
    passed: set[str] = set()  # waiting calls a user message came after
    for i, msg in enumerate(messages):
        if msg.role == "assistant":
            found.update(waiting.values())
            dropped.update(waiting)
            waiting, passed = {}, set()
        elif msg.role == "user":
            passed.update(waiting)
        for j, part in enumerate(msg.parts):
            if isinstance(part, ToolCallPart):
                waiting[part.id] = (i, j)
            elif isinstance(part, ToolResultPart):
                waiting.pop(part.call_id, None)
                if part.call_id in dropped:
                    found.add((i, j))
    found.update(at for call_id, at in waiting.items() if call_id in passed)
    return found


def result_name(part: ToolResultPart, names: Mapping[str, str]) -> str | None:
    """Return the tool name of a result: its own, else the name of its call."""
    return part.name if part.name is not None else names.get(part.call_id)


def drop_name_if_implied(part: ToolResultPart, names: Mapping[str, str]) -> bool:
    """Whether a result's name is lost when the wire only carries the call id."""
    return part.name is not None and names.get(part.call_id) != part.name


def message(role: str, parts: list[Part], extra: dict[str, JSON] | None = None) -> Message:
    """Return a new message read from a wire format (fresh id and time)."""
    built = Message(role=role, parts=parts, id=new_id(), extra=extra or {})  # type: ignore[arg-type]
    check_message(built)
    return built
