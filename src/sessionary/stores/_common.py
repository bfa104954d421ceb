"""Logic every engine shares: checking and encoding input, and small result helpers."""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sessionary.errors import InvalidInput, InvalidMessage, PayloadTooLarge
from sessionary.ids import check_id
from sessionary.model import Message, check_message, encode_body, message_text, to_micros
from sessionary.records import SessionInfo, State, StateLevel, check_object

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "HIGHLIGHT",
    "Prepared",
    "check_limit",
    "check_session_fields",
    "encode_json",
    "gc_paused",
    "prepare_messages",
    "state_owner",
]

DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
HIGHLIGHT = ("**", "**")
"""What marks a matched word in a search snippet."""

_LABEL = re.compile(r"[^\x00-\x1f\x7f]*\Z")


@dataclass(slots=True)
class Prepared:
    """A checked message with the columns a backend stores."""

    message: Message
    body: str
    text: str
    created_us: int


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while many messages are decoded.

    Decoding a long history allocates several small containers per message, which sets
    off repeated collections that scan every object alive; those cost about as much as
    the decoding itself. Nothing decoded here forms a reference cycle, so deferring the
    collector until the batch is done loses nothing. The previous state is restored.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def prepare_messages(messages: Sequence[Message], max_bytes: int) -> list[Prepared]:
    """Check and encode messages before anything is written.

    Raises:
        InvalidMessage: If a message is malformed or two share an id.
        PayloadTooLarge: If a message's encoded size is over `max_bytes`.
    """
    if isinstance(messages, Message | str | bytes) or not isinstance(messages, Sequence):
        raise InvalidMessage("expected a sequence of messages")
    prepared: list[Prepared] = []
    seen: set[str] = set()
    for message in messages:
        check_message(message)
        if message.id in seen:
            raise InvalidMessage(f"message id {message.id!r} appears twice in one append")
        seen.add(message.id)
        body = encode_body(message)
        if len(body) * 4 > max_bytes and len(body.encode()) > max_bytes:
            raise PayloadTooLarge(
                f"message {message.id} is {len(body.encode())} bytes encoded; "
                f"the limit is {max_bytes}"
            )
        prepared.append(
            Prepared(message, body, message_text(message), to_micros(message.created_at))
        )
    return prepared


def encode_json(value: Any, what: str, max_bytes: int) -> str:
    """Encode a JSON document, refusing non-JSON values and oversized documents.

    Raises:
        InvalidInput: If `value` holds something that is not JSON.
        PayloadTooLarge: If the encoding is over `max_bytes`.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{what} must hold only JSON values: {exc}") from None
    if len(text.encode()) > max_bytes:
        raise PayloadTooLarge(f"{what} is over the limit of {max_bytes} bytes")
    return text


def check_limit(limit: int | None, what: str = "limit") -> None:
    """Raise `InvalidInput` unless `limit` is None or a positive int.

    Raises:
        InvalidInput: If `limit` is not None or a positive int.
    """
    if limit is None:
        return
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInput(f"{what} must be a positive integer, got {limit!r}")


def check_session_fields(info: SessionInfo) -> None:
    """Check a new session's id and labels.

    Raises:
        InvalidInput: If a field has the wrong type or holds control characters.
    """
    check_id(info.id, "session id")
    if info.parent_session_id is not None:
        check_id(info.parent_session_id, "parent session id")
    for name in ("name", "model", "source", "end_reason"):
        check_label(getattr(info, name), name)
    check_object(info.metadata, "session metadata")


def check_label(value: object, what: str) -> None:
    """Raise `InvalidInput` unless `value` is None or a one-line string of sane length.

    Raises:
        InvalidInput: If `value` is not a short single-line string.
    """
    if value is None:
        return
    if not isinstance(value, str) or len(value) > 1000 or not _LABEL.match(value):
        raise InvalidInput(f"{what} must be a string of at most 1000 printable characters")


def state_owner(level: StateLevel, session_id: str | None) -> str:
    """Return the key part that says whose state a document is.

    Raises:
        InvalidInput: If the level is unknown or a session level has no session id.
    """
    if level == "session":
        if session_id is None:
            raise InvalidInput("session state needs a session id")
        return session_id
    if level in ("user", "app"):
        return ""
    raise InvalidInput(f"state level must be 'session', 'user' or 'app', not {level!r}")


def empty_state() -> State:
    """Return the state of a document never written."""
    return State({}, 0)
