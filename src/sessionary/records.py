"""Plain records the stores return: sessions, pages, search hits, state, scope."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, Final, Generic, Literal, TypeAlias, TypeVar

from sessionary.errors import InvalidInput, InvalidPatch
from sessionary.ids import check_id

__all__ = [
    "ANY",
    "HEAD",
    "MAX_JSON_DEPTH",
    "MAX_LIMIT",
    "Document",
    "DocumentHit",
    "Expected",
    "Head",
    "Page",
    "Parent",
    "Scope",
    "SearchHit",
    "mark_spans",
    "SessionFilter",
    "SessionInfo",
    "SessionUpdate",
    "State",
    "StateLevel",
    "check_json",
    "check_object",
    "check_patch",
    "decode_cursor",
    "document_from_dict",
    "document_to_dict",
    "encode_cursor",
    "info_from_dict",
    "info_to_dict",
    "load_json",
    "merge_patch",
]

T = TypeVar("T")
StateLevel = Literal["session", "user", "app"]


class Head(Enum):
    """The type of the sentinels `HEAD` and `ANY`."""

    HEAD = "HEAD"
    ANY = "ANY"


HEAD: Final = Head.HEAD
"""Pass as `parent` to append after the session's head (the default)."""

ANY: Final = Head.ANY
"""Pass as `expected_head` to append whatever the head is (the default)."""

Parent: TypeAlias = str | Literal[Head.HEAD] | None
Expected: TypeAlias = str | Literal[Head.ANY] | None


@dataclass(frozen=True, slots=True)
class Scope:
    """Who owns data: a tenant (the application) and a user within it."""

    tenant: str = "default"
    user: str = "default"

    def __post_init__(self) -> None:
        check_id(self.tenant, "tenant")
        check_id(self.user, "user")


@dataclass(slots=True)
class SessionInfo:
    """A session's registry row."""

    id: str
    name: str | None = None
    parent_session_id: str | None = None
    model: str | None = None
    source: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    ended_at: datetime | None = None
    end_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    head_id: str | None = None
    message_count: int = 0
    version: int = 1
    ttl: float | None = None
    """Seconds the session lives (see `sessionary.retention`); None: forever."""
    ttl_sliding: bool = True
    """The TTL counts from the last activity (True) or from creation (False)."""

    @property
    def expires_at(self) -> datetime | None:
        """When the session expires by its TTL (None: never, or not yet stored)."""
        start = self.updated_at if self.ttl_sliding else self.created_at
        if self.ttl is None or start is None:
            return None
        return start + timedelta(seconds=self.ttl)


@dataclass(frozen=True, slots=True)
class SessionUpdate:
    """A change to a session's registry row; `None` fields are left as they are."""

    name: str | None = None
    metadata: dict[str, Any] | None = None
    end_reason: str | None = None
    ended_at: datetime | None = None
    add_input_tokens: int = 0
    add_output_tokens: int = 0
    add_cost: float = 0.0
    ttl: float | None = None
    """A new TTL in seconds; 0 removes the TTL (the session lives forever)."""
    ttl_sliding: bool | None = None


@dataclass(frozen=True, slots=True)
class SessionFilter:
    """Which sessions `list` returns; every set field must match."""

    name: str | None = None
    model: str | None = None
    source: str | None = None
    parent_session_id: str | None = None
    ended: bool | None = None


@dataclass(slots=True)
class Page(Generic[T]):
    """One page of results; pass `next_cursor` back to get the next page."""

    items: list[T]
    next_cursor: str | None = None

    def __iter__(self) -> Any:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One message matching a search.

    Attributes:
        session_id: The session holding the message (a message copied into a fork is
            one hit per session that holds it).
        message_id: The message's id.
        role: The message's role.
        snippet: A window of the message's text as its author wrote it (runs of
            whitespace shown as one space, "…" where text was left out); nothing in it
            marks the hits.
        rank: The share of the text's words that the query matched, in (0, 1]; higher
            is better, and it means the same on every store.
        created_at: When the message was created.
        spans: The matched words, as ``(start, end)`` offsets into `snippet`
            (``snippet[start:end]``), in order; style them to highlight the hits.
    """

    session_id: str
    message_id: str
    role: str
    snippet: str
    rank: float
    created_at: datetime
    spans: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class State:
    """A JSON state document and its version (0 before the first write)."""

    data: dict[str, Any]
    version: int = 0


@dataclass(frozen=True, slots=True)
class Document:
    """One version of a keyed JSON document owned by a session, a user or an app.

    Documents are the storage under blocks, compaction overlays, the frozen system prompt
    and agent state. `namespace` groups them (e.g. ``block``, ``compaction``), `key` names
    one within its namespace, `body` is a JSON object and `text` is what full-text search
    indexes ("" for nothing). Every write makes a new `version` (1, 2, ...); the older
    versions stay readable until the document is deleted. `author` says who or what wrote
    this version (e.g. ``model``, ``user``, ``system``, a tool name).
    """

    namespace: str
    key: str
    body: dict[str, Any]
    version: int
    author: str
    updated_at: datetime
    text: str = ""


@dataclass(frozen=True, slots=True)
class DocumentHit:
    """One document (its latest version) matching a search.

    `snippet`, `rank` and `spans` are as `SearchHit`'s: the author's text with the
    matched words' offsets beside it, and a rank in (0, 1], higher is better.
    """

    namespace: str
    key: str
    snippet: str
    rank: float
    version: int
    spans: tuple[tuple[int, int], ...] = ()


HIT_MARKS = ("«", "»")
"""What `mark_spans` puts around a hit by default: characters markdown gives no meaning."""


def mark_spans(
    snippet: str, spans: Sequence[tuple[int, int]], marks: tuple[str, str] = HIT_MARKS
) -> str:
    """Return `snippet` with each span wrapped in `marks`, for readers of plain text.

    `SearchHit.spans` are offsets, so a renderer that can style text (a terminal, a web
    page) should style them instead. Plain text for a model marks them in-band with
    characters that markdown gives no meaning: ``«hit»``.

    Examples:
        >>> mark_spans("see **/var/log/app.log**", ((8, 11),))
        'see **/«var»/log/app.log**'
    """
    out: list[str] = []
    at = 0
    for start, end in spans:
        out += [snippet[at:start], marks[0], snippet[start:end], marks[1]]
        at = end
    out.append(snippet[at:])
    return "".join(out)


def encode_cursor(*values: Any) -> str:
    """Return an opaque page cursor holding `values`."""
    raw = json.dumps(list(values), separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, *types: type) -> list[Any]:
    """Return the values an `encode_cursor` cursor holds, checking each one's type.

    Raises:
        InvalidInput: If the cursor was not made by `encode_cursor` with values of `types`.
    """
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        values = load_json(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, TypeError, AttributeError):
        raise InvalidInput("the page cursor is malformed") from None
    if not isinstance(values, list) or len(values) != len(types):
        raise InvalidInput("the page cursor is malformed")
    for value, kind in zip(values, types, strict=True):
        if not isinstance(value, kind) or isinstance(value, bool):
            raise InvalidInput("the page cursor is malformed")
    return values


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply a JSON merge patch (RFC 7396) to `target` and return the result.

    Objects merge key by key, `None` deletes a key, anything else replaces. The inputs
    are not modified.
    """
    if not isinstance(patch, Mapping):
        return patch
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


MAX_LIMIT = 2**31 - 1
"""The largest `limit` any call takes (history, list, search, pages): the largest signed
32-bit integer, which every server takes in LIMIT and arithmetic on it, and a Lua script
on Redis holds exactly. Larger is `InvalidInput` on every store, never an overflow."""

MAX_JSON_DEPTH = 100
"""The deepest any JSON value a caller gives may nest: objects and arrays inside each
other, the outermost counting 1 (`{"a": [1]}` is 2 deep). The limit of MySQL's JSON
type; far below where Python's recursion limit would break encoding and decoding."""

_CONTAINERS = (dict, list, tuple)


def check_json(value: Any, what: str, error: type[InvalidInput] = InvalidInput) -> None:
    """Raise `error` if `value` nests deeper than `MAX_JSON_DEPTH` or has a non-str key.

    The walk visits containers only and recurses at most `MAX_JSON_DEPTH` deep, so it
    cannot itself run out of stack; the JSON encoder that runs next refuses the values
    that are not JSON (sets, NaN, objects) in C. A key that is not a string is refused
    here because the encoder would turn it into one (`1` into `"1"`): the value would
    not come back as it went in.

    Raises:
        InvalidInput: (or the given subclass) Saying where and what is wrong.
    """
    if isinstance(value, _CONTAINERS):
        _walk(value, 1, what, error)


def _walk(value: Any, depth: int, what: str, error: type[InvalidInput]) -> None:
    if depth > MAX_JSON_DEPTH:
        raise error(f"{what} nests deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise error(f"{what} has a key that is not a string: {key!r:.80}")
            if isinstance(item, _CONTAINERS):
                _walk(item, depth + 1, what, error)
    else:
        for item in value:
            if isinstance(item, _CONTAINERS):
                _walk(item, depth + 1, what, error)


def load_json(text: str | bytes) -> Any:
    """`json.loads`, except that a document too deep to decode raises `ValueError` too.

    Python's decoder meets a document nested about a thousand levels deep with a
    `RecursionError`; every caller of this one handles `ValueError` as "not JSON".

    Raises:
        ValueError: If `text` is not JSON or is nested too deep to decode.
        TypeError: If `text` is not a str or bytes.
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("the JSON is nested too deep to decode") from None


def check_object(value: Any, what: str, error: type[InvalidInput] = InvalidInput) -> dict[str, Any]:
    """Return `value` as a dict if it is a JSON object, else raise `error`.

    A JSON object here is a mapping with string keys whose values are JSON (no sets,
    no NaN, no objects of other types), nested at most `MAX_JSON_DEPTH` deep.

    Raises:
        InvalidInput: (or the given subclass) If `value` is not a JSON object.
    """
    if not isinstance(value, Mapping):
        raise error(f"{what} must be an object, not {type(value).__name__}")
    if not isinstance(value, dict):
        value = dict(value)
    check_json(value, what, error)
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise error(f"{what} must hold only JSON values: {exc}") from None
    return dict(value)


def check_patch(patch: Any) -> dict[str, Any]:
    """Return `patch` if it is a JSON object, else raise `InvalidPatch`.

    Raises:
        InvalidPatch: If the patch is not a JSON object of JSON values, nested at most
            `MAX_JSON_DEPTH` deep.
    """
    return check_object(patch, "a state patch", InvalidPatch)


_INFO_TIMES = ("created_at", "updated_at", "ended_at")
_INFO_FIELDS = tuple(SessionInfo.__dataclass_fields__)


def info_to_dict(info: SessionInfo) -> dict[str, Any]:
    """Return a session row as JSON-ready data (times as ISO 8601 strings)."""
    data: dict[str, Any] = {name: getattr(info, name) for name in _INFO_FIELDS}
    for name in _INFO_TIMES:
        moment = data[name]
        data[name] = moment.isoformat() if moment is not None else None
    return data


def info_from_dict(data: Mapping[str, Any]) -> SessionInfo:
    """Build a session row from `info_to_dict` data; unknown keys are ignored.

    Raises:
        ValueError: If a time is not ISO 8601.
        TypeError: If `data` is not a mapping.
    """
    if not isinstance(data, Mapping):
        raise TypeError("a session record must be an object")
    values = {name: data[name] for name in _INFO_FIELDS if name in data}
    for name in _INFO_TIMES:
        if values.get(name) is not None:
            values[name] = datetime.fromisoformat(values[name])
    return SessionInfo(**values)


def document_to_dict(document: Document) -> dict[str, Any]:
    """Return one document version as JSON-ready data (its time as ISO 8601)."""
    return {
        "namespace": document.namespace,
        "key": document.key,
        "version": document.version,
        "author": document.author,
        "updated_at": document.updated_at.isoformat(),
        "body": document.body,
        "text": document.text,
    }


def document_from_dict(data: Mapping[str, Any]) -> Document:
    """Build a document version from `document_to_dict` data; unknown keys are ignored.

    The fields' values are checked by the store that writes the document.

    Raises:
        KeyError: If a field is missing.
        ValueError: If the time is not ISO 8601.
        TypeError: If `data` is not a mapping or the time is not a string.
    """
    if not isinstance(data, Mapping):
        raise TypeError("a document record must be an object")
    return Document(
        namespace=data["namespace"],
        key=data["key"],
        body=data["body"],
        version=data["version"],
        author=data["author"],
        updated_at=datetime.fromisoformat(data["updated_at"]),
        text=data.get("text", ""),
    )
