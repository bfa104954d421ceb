"""Logic every engine shares: checking and encoding input, and small result helpers."""

from __future__ import annotations

import gc
import json
import math
import re
from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from json.encoder import encode_basestring
from typing import Any

from sessionary.errors import (
    HeadConflict,
    InvalidDocument,
    InvalidInput,
    InvalidMessage,
    MessageHasChildren,
    MessageNotFound,
    PayloadTooLarge,
    VersionConflict,
)
from sessionary.ids import check_id
from sessionary.model import (
    Message,
    TextPart,
    check_message,
    encode_body,
    from_micros,
    message_text,
    plain_body,
    plain_text,
    to_micros,
)
from sessionary.records import (
    MAX_LIMIT,
    Document,
    Expected,
    Head,
    Scope,
    SessionFilter,
    SessionInfo,
    SessionUpdate,
    State,
    StateLevel,
    check_json,
    check_object,
    merge_patch,
)
from sessionary.retention import check_ttl

__all__ = [
    "check_ttl_update",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "MAX_AUTHOR_LENGTH",
    "MAX_KEY_LENGTH",
    "Prepared",
    "PreparedDocument",
    "check_delete",
    "check_document_key",
    "check_document_ref",
    "check_document_version",
    "check_expected_version",
    "check_filter",
    "check_head",
    "check_namespace",
    "check_restored_versions",
    "check_cost",
    "check_count",
    "check_limit",
    "check_totals",
    "check_session_fields",
    "check_restore",
    "check_stored_prefix",
    "encode_imported_state",
    "encode_json",
    "gc_paused",
    "has_children",
    "next_state",
    "path_and_document",
    "prepare_document",
    "prepare_messages",
    "scopes_from_rows",
    "state_owner",
    "stored_after_new",
    "surviving_ancestor",
]

DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024

_LABEL = re.compile(r"[^\x00-\x1f\x7f-\x9f]*\Z")  # no C0, DEL or C1 control


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


_PLAIN_BODY = len(encode_body(Message("user", [TextPart("")]))) - len(encode_basestring(""))
"""Bytes a one-text-part body adds around its quoted text: its size is checked as if encoded."""


def _plain_size(text: str, message_id: str, max_bytes: int) -> int:
    """Return the size of the JSON body a bare text message would have, or a bound on it.

    The exact size is only worked out when it could pass `max_bytes`: quoted, a character
    takes at most 6 bytes (a control character escaped as six).

    Raises:
        InvalidMessage: If the text holds a lone surrogate.
    """
    if not text.isascii():
        check_text(text, f"message {message_id}", InvalidMessage)
    bound = _PLAIN_BODY + 2 + 6 * len(text)
    if bound <= max_bytes:
        return bound
    return _PLAIN_BODY + len(encode_basestring(text).encode())


def prepare_messages(
    messages: Sequence[Message], max_bytes: int, *, plain: bool = False, indexed: bool = True
) -> list[Prepared]:
    """Check and encode messages before anything is written.

    With `plain`, a message that is one bare text part (see `plain_text`) gets an empty
    body: its text column says everything (the SQLite engine stores such messages so).
    Without `indexed` (a store with no search index), `text` is left empty.

    Raises:
        InvalidMessage: If a message is malformed or two share an id.
        PayloadTooLarge: If a message's encoded size is over `max_bytes`.
    """
    # A list, what sessions pass, is known to be a sequence without the ABC's slow check.
    if type(messages) is not list and (
        isinstance(messages, Message | str | bytes) or not isinstance(messages, Sequence)
    ):
        raise InvalidMessage("expected a sequence of messages")
    prepared: list[Prepared] = []
    seen: set[str] = set()
    for message in messages:
        check_message(message)
        if message.id in seen:
            raise InvalidMessage(f"message id {message.id!r} appears twice in one append")
        seen.add(message.id)
        text = plain_text(message)
        if text is not None and plain:
            body = ""
            size = _plain_size(text, message.id, max_bytes)
        else:
            if text is None:
                body = encode_body(message)
                text = message_text(message) if indexed else ""
            else:  # one bare text part: its body is the text quoted, its search text the text
                body = plain_body(text)
                text = text if indexed else ""
            size = check_text(body, f"message {message.id}", InvalidMessage)
        if size > max_bytes:
            raise PayloadTooLarge(
                f"message {message.id} is {size} bytes encoded; the limit is {max_bytes}"
            )
        prepared.append(Prepared(message, body, text, to_micros(message.created_at)))
    return prepared


def check_stored_prefix(prepared: Sequence[Prepared], stored: Container[str]) -> None:
    """Refuse a batch in which a message already stored follows a new one.

    A batch's stored messages may only come first: a caller re-sending the conversation
    with a new message at its end, or retrying a whole batch. The new ones then continue
    from the last stored one. A stored message after a new one cannot answer it (it
    answers what it answered when it was stored), and chaining through it would move
    the head back to it, dropping the new messages and all that followed it from
    history; so the whole batch is refused, before anything is written.

    Args:
        prepared: The batch, in order.
        stored: The batch's ids already stored in the session (any others are new).

    Raises:
        InvalidMessage: If a stored message follows a new one.
    """
    new_id: str | None = None
    for item in prepared:
        message_id = item.message.id
        if message_id not in stored:
            new_id = message_id
        elif new_id is not None:
            raise stored_after_new(message_id, new_id)


def stored_after_new(stored_id: str, new_id: str) -> InvalidMessage:
    """The error for a batch in which stored message `stored_id` comes right after new `new_id`."""
    return InvalidMessage(
        f"message {stored_id!r} is stored already, so it cannot answer the new message "
        f"{new_id!r} before it in the batch: stored messages may only come before every "
        "new one (nothing was stored)"
    )


def encode_json(value: Any, what: str, max_bytes: int) -> str:
    """Encode a JSON document, refusing non-JSON values and oversized documents.

    Raises:
        InvalidInput: If `value` holds something that is not JSON, a key that is not a
            string, or nests deeper than `MAX_JSON_DEPTH`.
        PayloadTooLarge: If the encoding is over `max_bytes`.
    """
    check_json(value, what)
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{what} must hold only JSON values: {exc}") from None
    if check_text(text, what) > max_bytes:
        raise PayloadTooLarge(f"{what} is over the limit of {max_bytes} bytes")
    return text


def check_limit(limit: int | None, what: str = "limit") -> None:
    """Raise `InvalidInput` unless `limit` is None or a whole number from 1 to `MAX_LIMIT`.

    The upper bound keeps every backend's answer the same: past it, SQLite's driver
    overflows, PostgreSQL and MySQL fail on their LIMIT arithmetic, while memory and
    Redis would answer.

    Raises:
        InvalidInput: If `limit` is not None or a whole number from 1 to `MAX_LIMIT`.
    """
    if limit is None:
        return
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"{what} must be a whole number from 1 to 2**31-1, got {limit!r}")


def check_filter(where: SessionFilter) -> None:
    """Check the fields of a `list` filter before any store compares them.

    A value of another type would be compared by each backend in its own way (no match,
    a truthy match, or a driver error), and a label no session can have (a control
    character, a lone surrogate) fails in some drivers: both are refused the same way.

    Raises:
        InvalidInput: If name, model or source is not None or a label, parent_session_id
            not None or a valid id, or ended not None, True or False.
    """
    for name in ("name", "model", "source"):
        check_label(getattr(where, name), f"the {name} filter")
    if where.parent_session_id is not None:
        check_id(where.parent_session_id, "parent session id")
    if where.ended is not None and not isinstance(where.ended, bool):
        raise InvalidInput(f"the ended filter must be True, False or None, got {where.ended!r}")


MAX_COUNT = (1 << 63) - 1
"""The largest token count a store keeps (a signed 64-bit integer, as SQL stores have)."""


def check_count(value: object, what: str) -> int:
    """Return `value` if it is a whole number from 0 to `MAX_COUNT`.

    Raises:
        InvalidInput: If it is not.
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise InvalidInput(f"{what} must be a whole number from 0 to 2**63-1, got {value!r}")
    return value


def check_totals(input_tokens: int, output_tokens: int, cost: float, update: Any) -> None:
    """Refuse a usage update whose new totals a store could not hold exactly.

    Raises:
        InvalidInput: If a token total would pass `MAX_COUNT` or the cost would not be finite.
    """
    check_count(input_tokens + update.add_input_tokens, "the input_tokens total")
    check_count(output_tokens + update.add_output_tokens, "the output_tokens total")
    check_cost(cost + update.add_cost, "the cost total")


def check_cost(value: object, what: str = "cost") -> float:
    """Return `value` as a float if it is a finite number of at least 0.

    Raises:
        InvalidInput: If it is not.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{what} must be a number, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise InvalidInput(f"{what} must be a finite number of at least 0, got {value!r}")
    return float(value)


def check_session_fields(info: SessionInfo) -> None:
    """Check a session row before it is stored: ids, labels, counters, times.

    Raises:
        InvalidInput: If a field has the wrong type or an impossible value.
    """
    check_id(info.id, "session id")
    for name in ("parent_session_id", "head_id"):
        if getattr(info, name) is not None:
            check_id(getattr(info, name), name.replace("_", " "))
    for name in ("name", "model", "source", "end_reason"):
        check_label(getattr(info, name), name)
    check_object(info.metadata, "session metadata")
    check_count(info.input_tokens, "input_tokens")
    check_count(info.output_tokens, "output_tokens")
    check_cost(info.cost)
    if isinstance(info.version, bool) or not isinstance(info.version, int) or info.version < 1:
        raise InvalidInput(
            f"a session version must be a whole number of at least 1, got {info.version!r}"
        )
    for name in ("created_at", "updated_at", "ended_at"):
        if getattr(info, name) is not None and not isinstance(getattr(info, name), datetime):
            raise InvalidInput(f"{name} must be a datetime")
    check_ttl(info.ttl)
    if not isinstance(info.ttl_sliding, bool):
        raise InvalidInput(f"ttl_sliding must be True or False, got {info.ttl_sliding!r}")


def check_ttl_update(update: SessionUpdate) -> None:
    """Check the TTL fields of a session update (ttl 0 removes the TTL).

    Raises:
        InvalidInput: If the TTL is not 0 or a positive number of seconds.
    """
    if update.ttl is not None and update.ttl != 0:
        check_ttl(update.ttl)
    if update.ttl_sliding is not None and not isinstance(update.ttl_sliding, bool):
        raise InvalidInput(f"ttl_sliding must be True or False, got {update.ttl_sliding!r}")


def check_text(value: str, what: str, error: type[InvalidInput] = InvalidInput) -> int:
    """Return the UTF-8 size of `value`, refusing text that is not valid Unicode.

    Raises:
        InvalidInput: (or `error`) If the text holds a lone surrogate.
    """
    if value.isascii():  # one byte a character, and no surrogate: nothing to encode
        return len(value)
    try:
        return len(value.encode())
    except UnicodeEncodeError:
        raise error(f"{what} is not valid Unicode (it holds a lone surrogate)") from None


def check_label(value: object, what: str) -> None:
    """Raise `InvalidInput` unless `value` is None or a one-line string of sane length.

    Raises:
        InvalidInput: If `value` is not a short single-line string of valid Unicode.
    """
    if value is None:
        return
    if not isinstance(value, str) or len(value) > 1000 or not _LABEL.match(value):
        raise InvalidInput(f"{what} must be a string of at most 1000 printable characters")
    check_text(value, what)


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


def next_state(
    current: State,
    patch: dict[str, Any],
    expected_version: int | None,
    what: str,
    max_bytes: int,
) -> tuple[State, str]:
    """Apply a merge patch to a state document: the new document and its JSON encoding.

    Every backend updates state by this one rule: the version must still be the expected
    one, the patch merges in (RFC 7396), the result must encode, the version goes up by 1.

    Raises:
        VersionConflict: If `expected_version` is given and is not `current.version`.
        InvalidInput: If the merged document cannot be encoded, or is too large.
    """
    if expected_version is not None and expected_version != current.version:
        raise VersionConflict(f"{what} is at version {current.version}, not {expected_version}")
    data = merge_patch(current.data, patch)
    return State(data, current.version + 1), encode_json(data, what, max_bytes)


def empty_state() -> State:
    """Return the state of a document never written."""
    return State({}, 0)


def check_restore(level: StateLevel, current: State, wanted: State) -> bool:
    """Return whether `restore_state` must write `wanted` over `current`.

    Raises:
        InvalidInput: If `wanted` is not a JSON object with a version of at least 1.
        VersionConflict: If a different document is already stored.
    """
    check_object(wanted.data, f"{level} state")
    version = wanted.version
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise InvalidInput(f"a restored state's version must be at least 1, not {version!r}")
    if current.version == 0:
        return True
    if current.version == version and current.data == wanted.data:
        return False
    raise VersionConflict(
        f"{level} state is already at version {current.version}; "
        f"it cannot be restored to version {version}"
    )


def encode_imported_state(state: State | None, max_bytes: int) -> str | None:
    """Check and encode the session state an import brings; None if it brings none.

    Raises:
        InvalidInput: If the state is not a JSON object with a version of at least 1.
        PayloadTooLarge: If it is over `max_bytes` encoded.
    """
    if state is None or not state.version:
        return None
    check_restore("session", empty_state(), state)
    return encode_json(state.data, "session state", max_bytes)


def scopes_from_rows(rows: Sequence[Sequence[str]]) -> list[Scope]:
    """Return the sorted, distinct scopes of (tenant, user) rows; user "" is the default."""
    pairs = {(tenant, user or "default") for tenant, user in rows}
    return [Scope(tenant, user) for tenant, user in sorted(pairs)]


# ---------------------------------------------------------------------- documents

MAX_KEY_LENGTH = 512
"""The longest document key, in characters."""
MAX_AUTHOR_LENGTH = 128
"""The longest document author, in characters."""

_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}\Z")


@dataclass(frozen=True, slots=True)
class PreparedDocument:
    """A checked document write: its fields, and its body encoded as a backend stores it."""

    namespace: str
    key: str
    body: dict[str, Any]
    body_json: str
    text: str
    author: str

    def stored(self, version: int, updated_us: int) -> Document:
        """Return the document this write stored as `version` at `updated_us`."""
        return Document(
            self.namespace, self.key, self.body, version, self.author,
            from_micros(updated_us), self.text,
        )  # fmt: skip


def check_document_ref(namespace: object, key: object) -> None:
    """Raise `InvalidDocument` unless `namespace` and `key` can name a document."""
    check_namespace(namespace)
    check_document_key(key)


def check_namespace(namespace: object) -> str:
    """Return `namespace` if it is a usable document namespace.

    A namespace is 1 to 128 characters of letters, digits, `_`, `.`, `:` and `-`,
    starting with a letter or digit.

    Raises:
        InvalidDocument: If it is not.
    """
    if not isinstance(namespace, str) or not _NAMESPACE.match(namespace):
        raise InvalidDocument(
            f"a document namespace must be 1 to 128 letters, digits, '_', '.', ':' or '-', "
            f"starting with a letter or digit; got {namespace!r}"
        )
    return namespace


def check_document_key(key: object) -> str:
    """Return `key` if it is a usable document key: 1 to 512 characters, no control ones.

    Raises:
        InvalidDocument: If it is not.
    """
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_LENGTH or not _LABEL.match(key):
        raise InvalidDocument(
            f"a document key must be 1 to {MAX_KEY_LENGTH} characters without control "
            f"characters; got {key!r:.80}"
        )
    check_text(key, "a document key", InvalidDocument)
    return key


def check_head(session_id: str, head: str | None, expected: Expected) -> None:
    """Raise `HeadConflict` unless `expected` is `ANY` or the session's head `head`."""
    if expected is not Head.ANY and expected != head:
        raise HeadConflict(f"session {session_id!r} head is {head!r}, not {expected!r}")


def check_expected_version(
    expected: object, error: type[InvalidInput] = InvalidDocument
) -> int | None:
    """Return `expected` if it is None or a whole number of at least 0.

    Documents and state take the same rule (their errors differ): a string, a float or a
    bool is refused, never compared with the stored version.

    Raises:
        InvalidDocument: (or `error`) If it is not.
    """
    if expected is None:
        return None
    if isinstance(expected, bool) or not isinstance(expected, int) or expected < 0:
        raise error(
            f"expected_version must be None or a whole number of at least 0, got {expected!r}"
        )
    return expected


def check_document_version(version: object) -> int | None:
    """Return `version` if it is None (the latest) or a whole number of at least 1.

    Raises:
        InvalidDocument: If it is not.
    """
    if version is None:
        return None
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise InvalidDocument(f"a document version must be at least 1, got {version!r}")
    return version


def _check_author(author: object) -> str:
    if not isinstance(author, str) or len(author) > MAX_AUTHOR_LENGTH or not _LABEL.match(author):
        raise InvalidDocument(
            f"a document author must be a string of at most {MAX_AUTHOR_LENGTH} printable "
            f"characters; got {author!r:.80}"
        )
    check_text(author, "a document author", InvalidDocument)
    return author


def prepare_document(
    namespace: object, key: object, body: object, text: object, author: object, max_bytes: int
) -> PreparedDocument:
    """Check a document write and encode its body, before anything is written.

    The encoded size of a document is its body's JSON plus its text, in UTF-8 bytes. The
    text may hold any character but NUL (the body may hold NUL: JSON escapes it).

    Raises:
        InvalidDocument: If a field is malformed.
        PayloadTooLarge: If the encoded document is over `max_bytes`.
    """
    namespace = check_namespace(namespace)
    key = check_document_key(key)
    checked = check_object(body, "a document body", InvalidDocument)
    if not isinstance(text, str):
        raise InvalidDocument(f"a document's text must be a string, not {type(text).__name__}")
    if "\x00" in text:  # PostgreSQL's text cannot hold it; refused everywhere alike
        raise InvalidDocument("a document's text may not hold NUL characters")
    size = check_text(text, "a document's text", InvalidDocument)
    try:
        body_json = json.dumps(checked, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:  # pragma: no cover - check_object refused these
        raise InvalidDocument(f"a document body must hold only JSON values: {exc}") from None
    size += check_text(body_json, "a document body", InvalidDocument)
    if size > max_bytes:
        raise PayloadTooLarge(
            f"document {namespace}/{key:.80} is {size} bytes encoded; the limit is {max_bytes}"
        )
    body_copy = json.loads(body_json)
    return PreparedDocument(namespace, key, body_copy, body_json, text, _check_author(author))


def check_restored_versions(
    versions: Sequence[Document], max_bytes: int
) -> list[tuple[Document, PreparedDocument]]:
    """Check the versions `restore_document` is given: one document, distinct versions.

    Returns:
        Each version with its checked write, in version order.

    Raises:
        InvalidDocument: If a version is malformed, two share a number, or they name
            more than one document.
        PayloadTooLarge: If a version is over `max_bytes` encoded.
    """
    if isinstance(versions, Document) or not isinstance(versions, Sequence):
        raise InvalidDocument("restore_document expects a sequence of Document versions")
    out: list[tuple[Document, PreparedDocument]] = []
    for doc in versions:
        if not isinstance(doc, Document):
            raise InvalidDocument(f"expected a Document, not {type(doc).__name__}")
        number = doc.version
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise InvalidDocument(f"a document version must be at least 1, not {number!r}")
        if not isinstance(doc.updated_at, datetime):
            raise InvalidDocument("a document version's updated_at must be a datetime")
        prepared = prepare_document(
            doc.namespace, doc.key, doc.body, doc.text, doc.author, max_bytes
        )
        out.append((doc, prepared))
    out.sort(key=lambda pair: pair[0].version)
    if len({(d.namespace, d.key) for d, _ in out}) > 1:
        raise InvalidDocument("restore_document writes the versions of one document at a time")
    if len({d.version for d, _ in out}) != len(out):
        raise InvalidDocument("restore_document was given the same version twice")
    return out


def check_delete(
    session_id: str,
    ids: Sequence[str],
    parents: Mapping[str, str | None],
    children: Iterable[tuple[str, str]],
) -> None:
    """Check that exactly `ids` may be deleted from a session (`delete_messages`).

    Args:
        session_id: The session, for the error text.
        ids: The messages to delete.
        parents: The parent of each of those found in the session.
        children: (parent, child) for every child of those found.

    Raises:
        MessageNotFound: If an id is not in the session.
        MessageHasChildren: If a child of one is not among them.
    """
    for message_id in ids:
        if message_id not in parents:
            raise MessageNotFound(f"no message {message_id!r} in session {session_id!r}")
    for parent, child in children:
        if child not in parents:
            raise has_children(parent, child)


def has_children(parent: str, child: str) -> MessageHasChildren:
    """Return the error for a delete that would leave `child` without its `parent`."""
    return MessageHasChildren(
        f"message {parent!r} has a child {child!r} that is not deleted with it: "
        f"delete both, or delete({parent!r}) to remove its whole subtree"
    )


def surviving_ancestor(head: str | None, parents: Mapping[str, str | None]) -> str | None:
    """Return `head`, or if it is deleted (a key of `parents`), its nearest kept ancestor."""
    while head is not None and head in parents:
        head = parents[head]
    return head


def path_and_document(
    engine: Any,
    scope: Scope,
    session_id: str,
    leaf: str | None,
    limit: int | None,
    namespace: str,
    key: str,
) -> tuple[list[Message], Document | None]:
    """`get_path_and_document` of an engine (memory, SQLite): its two reads, one after the other.

    An engine has no round trip to save, so it gives the two calls' answers and errors.
    """
    path: list[Message] = engine.get_path(scope, session_id, leaf, limit)
    document: Document | None = engine.get_document(
        scope, "session", session_id, namespace, key, None
    )
    return path, document
