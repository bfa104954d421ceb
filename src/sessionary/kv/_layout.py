"""The incremental session layout: keys, the meta entry, and planning each write (pure).

Per session, under the prefix `sessions:<id>:`:

- `meta`: counters, the next sequence number, appends since the last roll-up, the
  owner, the state document and timestamps. Every write replaces it, so it is the commit
  point: a write is a `commit` that expects the meta entry the writer read.
- `msg:<seq>`: one loose entry per message appended since the last roll-up; `seq` is
  zero-padded to 12 digits, so a prefix listing returns the entries in order.
- `chunk:<n>`: the rolled-up messages, as append-only JSON arrays. Each roll-up writes
  one new chunk (the loose entries of the moment) and never rewrites an older one; the
  meta entry names the live range `[first_chunk, next_chunk)` and how many messages of
  the first chunk a `max_messages` trim has cut (`skip`). Chunks outside the range are
  invisible (a trim deletes them in the same commit).
- `snapshot`: the old layout's single snapshot (`layout` 1 in the meta entry); the first
  write to such a session renames it to `chunk:0` (see `sessionary.kv._chunks`).

`meta` and the loose entries share the key prefix `sessions:<id>:m`, so one prefix
listing reads them together at one instant; a history read adds only the chunks it needs,
newest first, and one listing of `sessions:<id>:` reads a session whole. Beside it,
`session-ids:<id>:<message id>` records each message id ever stored (its value is the
sequence number), so that an append can refuse a duplicate without reading the history.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from json.encoder import encode_basestring
from typing import Any

from sessionary.errors import InvalidInput, InvalidMessage, PayloadTooLarge, StoreError
from sessionary.ids import check_id
from sessionary.model import Message, check_message, load_message, plain_text
from sessionary.stores._common import DEFAULT_MAX_MESSAGE_BYTES, check_text
from sessionary.window import orphan_results, pair_safe_start

__all__ = [
    "Encoded",
    "KVSession",
    "Listing",
    "LooseAppend",
    "Meta",
    "Newest",
    "NewestRead",
    "RollUp",
    "SessionKeys",
    "check_user",
    "chunk_of",
    "decode_messages",
    "encode_messages",
    "chunk_messages",
    "history_window",
    "plan_append",
]

SEQ_DIGITS = 12
CHUNKED = 2  # the meta entry's `layout` once the snapshot is stored as chunks


@dataclass(frozen=True, slots=True)
class KVSession:
    """A session as `get_or_create` returns it: owner, every message, state, times."""

    session_id: str
    user_id: str | None
    messages: list[Message]
    state: dict[str, Any]
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class SessionKeys:
    """The keys of one session."""

    session_id: str

    @property
    def prefix(self) -> str:
        return f"sessions:{self.session_id}:"

    @property
    def meta(self) -> str:
        return self.prefix + "meta"

    @property
    def head(self) -> str:
        """The prefix of the meta entry and the loose entries, and of nothing else."""
        return self.prefix + "m"

    @property
    def snapshot(self) -> str:
        return self.prefix + "snapshot"

    @property
    def chunks(self) -> str:
        return self.prefix + "chunk:"

    def chunk(self, number: int) -> str:
        return f"{self.chunks}{number:0{SEQ_DIGITS}d}"

    @property
    def lock(self) -> str:
        """The short-lived claim of the writer that rolls up (a driver-side append)."""
        return self.prefix + "rolling"

    @property
    def loose(self) -> str:
        return self.prefix + "msg:"

    @property
    def ids(self) -> str:
        return f"session-ids:{self.session_id}:"

    def message(self, seq: int) -> str:
        return f"{self.loose}{seq:0{SEQ_DIGITS}d}"

    def message_id(self, message_id: str) -> str:
        return self.ids + message_id


@dataclass(frozen=True, slots=True)
class LooseAppend:
    """An append a driver may decide on its own side (`append_loose`), in one step.

    The driver reads the meta entry at `meta`; if it is a live session in the chunked
    layout, it skips each message whose id record (`ids` + id) exists, writes the others
    as loose entries (`loose` + the sequence number, zero-padded to `digits`) with their
    id records, and rewrites the meta entry's counters, times (`updated_at`,
    `expires_at`) and nothing else. If `since_snapshot` reaches `frequency` and `chunks`
    is given (no trim can be due), the driver rolls the loose entries up in the same step:
    it writes them as new chunks of at most `frequency` (keys `chunks` + the chunk number,
    zero-padded to `digits`), deletes them and advances the meta entry's `next_chunk`, as
    `sessionary.kv._chunks.plan_roll_up` would. Otherwise the writer that takes the
    short-lived `lock` is the one to roll up.
    """

    meta: str
    loose: str
    ids: str
    lock: str
    digits: int
    frequency: int
    chunks: str | None
    updated_at: float
    expires_at: float | None
    message_ids: list[str]
    texts: list[str]


@dataclass(frozen=True, slots=True)
class NewestRead:
    """A history read a driver may answer on its own side (`read_newest`), in one step.

    At one instant the driver reads the meta entry at `meta` and the newest `count`
    loose entries (keys `loose` + a sequence number), and says whether older loose
    entries exist. If none does and the meta entry is chunked and spelled as
    `Meta.encode` spells it, it also reads up to `chunk_count` of the newest live
    chunks (keys `chunks` + the chunk number, zero-padded to `digits`).
    """

    meta: str
    loose: str
    chunks: str
    digits: int
    count: int
    chunk_count: int


@dataclass(slots=True)
class Newest:
    """What a `NewestRead` (or a listing of the meta and loose entries) found."""

    meta_text: str | None
    loose: str  # the newest loose entries' messages, oldest first, as one JSON array
    more: bool  # whether the session has older loose entries than these
    chunks: list[str]  # the newest chunks' values, newest first (from `next_chunk - 1`)


@dataclass(frozen=True, slots=True)
class RollUp:
    """A roll-up a driver may merge into concurrent appends (`roll_up_commit`).

    The chunk fields `(first_chunk, next_chunk, skip)` must still be `before` (no other
    roll-up ran); they become `after`, `since_snapshot` drops by `rolled` and `count` by
    `cut`, and `lock` is released.
    """

    meta: str
    lock: str
    before: tuple[int, int, int]
    after: tuple[int, int, int]
    rolled: int
    cut: int


@dataclass(slots=True)
class Meta:
    """The meta entry of a session; `version` grows with every write."""

    created_at: float
    updated_at: float
    user_id: str | None = None
    state: dict[str, Any] = field(default_factory=dict)
    version: int = 0
    next_seq: int = 0
    since_snapshot: int = 0
    count: int = 0
    expires_at: float | None = None
    layout: int = 1  # 1: one `snapshot` entry (entries written before chunks); 2: chunks
    first_chunk: int = 0
    next_chunk: int = 0
    skip: int = 0  # messages of the first chunk cut by a trim

    @classmethod
    def new(cls, user_id: str | None) -> Meta:
        now = time.time()
        return cls(created_at=now, updated_at=now, user_id=user_id, layout=CHUNKED)

    @classmethod
    def decode(cls, text: str | None) -> Meta | None:
        """Return the meta entry in `text`, or None if absent or expired."""
        if text is None:
            return None
        try:
            meta = cls(**json.loads(text))
        except (ValueError, TypeError) as exc:
            raise StoreError(f"a session's meta entry is corrupt: {exc}") from exc
        return None if meta.expired() else meta

    def encode(self) -> str:
        """The entry as JSON, the fields in their order (written out: this runs per append).

        Raises:
            ValueError: If a time is not a finite number (as JSON would).
        """
        expires = self.expires_at
        if not (math.isfinite(self.created_at) and math.isfinite(self.updated_at)) or (
            expires is not None and not math.isfinite(expires)
        ):
            raise ValueError(f"a meta entry's times must be finite, got {self}")
        user = "null" if self.user_id is None else _text(self.user_id)
        state = "{}" if self.state == {} else _dump(self.state)
        # The counters lead, in this order, so that a server-side append (see
        # `sessionary.kv.redis`) can read and rewrite them without parsing the state.
        return (
            f'{{"layout":{self.layout},"version":{self.version},"next_seq":{self.next_seq},'
            f'"since_snapshot":{self.since_snapshot},"count":{self.count},'
            f'"first_chunk":{self.first_chunk},"next_chunk":{self.next_chunk},'
            f'"skip":{self.skip},"updated_at":{self.updated_at!r},'
            f'"expires_at":{"null" if expires is None else repr(expires)},'
            f'"created_at":{self.created_at!r},"user_id":{user},"state":{state}}}'
        )

    @staticmethod
    def leads_counters(text: str | None) -> bool:
        """Whether a stored meta entry is chunked and spelled as `encode` spells it now.

        Only such an entry can be rewritten on a driver's side (see `LooseAppend`).
        """
        return text is not None and text.startswith('{"layout":2,"version":')

    def expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= time.time()

    def touched(self, ttl: float | None, **changes: Any) -> Meta:
        """Return a copy with `changes`, the next version and fresh times."""
        now = time.time()
        expires = None if ttl is None else now + ttl
        return replace(
            self, **changes, version=self.version + 1, updated_at=now, expires_at=expires
        )

    def appended(self, size: int, ttl: float | None) -> Meta:
        """`touched` after `size` more messages (built directly: this runs per append)."""
        now = time.time()
        return Meta(
            self.created_at,
            now,
            self.user_id,
            self.state,
            self.version + 1,
            self.next_seq + size,
            self.since_snapshot + size,
            self.count + size,
            None if ttl is None else now + ttl,
            self.layout,
            self.first_chunk,
            self.next_chunk,
            self.skip,
        )

    def record(self, session_id: str, messages: list[Message]) -> KVSession:
        return KVSession(
            session_id=session_id,
            user_id=self.user_id,
            messages=messages,
            state=self.state,
            created_at=datetime.fromtimestamp(self.created_at, UTC),
            updated_at=datetime.fromtimestamp(self.updated_at, UTC),
        )


@dataclass(slots=True)
class Listing:
    """A session read whole by one prefix listing."""

    meta_text: str | None = None
    snapshot_text: str | None = None
    loose: list[tuple[str, str]] = field(default_factory=list)
    chunks: dict[int, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, keys: SessionKeys, entries: list[tuple[str, str]]) -> Listing:
        listing = cls()
        for key, value in entries:
            if key == keys.meta:
                listing.meta_text = value
            elif key == keys.snapshot:
                listing.snapshot_text = value
            elif key.startswith(keys.loose):
                listing.loose.append((key, value))
            elif key.startswith(keys.chunks) and key[len(keys.chunks) :].isdigit():
                listing.chunks[int(key[len(keys.chunks) :])] = value
        return listing

    def newest(self, count: int) -> Newest:
        """The meta entry and the newest `count` loose entries (a listing of `keys.head`)."""
        return Newest(self.meta_text, chunk_of(self.loose[-count:]), len(self.loose) > count, [])

    def loose_messages(self) -> list[dict[str, Any]]:
        """The loose entries, oldest first, as JSON data."""
        try:
            return [json.loads(text) for _, text in self.loose]
        except ValueError as exc:
            raise StoreError(f"a stored message is corrupt: {exc}") from exc

    def raw_messages(self, meta: Meta) -> list[dict[str, Any]]:
        """Every stored message, oldest first, as JSON data (a listing of the whole session)."""
        if meta.layout != CHUNKED:
            rolled = chunk_messages(self.snapshot_text) if self.snapshot_text else []
        else:
            rolled = []
            for number in range(meta.first_chunk, meta.next_chunk):
                text = self.chunks.get(number)
                if text is None:
                    raise StoreError(f"chunk {number} of a session is missing")
                rolled += chunk_messages(text, meta.skip if number == meta.first_chunk else 0)
        return [*rolled, *self.loose_messages()]


def chunk_of(loose: list[tuple[str, str]]) -> str:
    """The JSON array of the loose entries' messages, built without decoding them."""
    return "[" + ",".join(text for _, text in loose) + "]"


def chunk_messages(text: str, skip: int = 0) -> list[dict[str, Any]]:
    """The messages of a chunk (or of an old-layout snapshot), minus the first `skip`."""
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise StoreError(f"a stored chunk is corrupt: {exc}") from exc
    if not isinstance(raw, list):
        raise StoreError("a stored chunk is not a JSON array")
    return raw[skip:]


@dataclass(frozen=True, slots=True)
class Encoded:
    """A checked message and the JSON stored for it."""

    id: str
    text: str


_dump = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
"""Encode JSON compactly (one encoder: `json.dumps` with options builds one per call)."""
_text = encode_basestring
_load = json.JSONDecoder().decode
"""Decode JSON (one decoder: `json.loads` checks its argument's type before decoding)."""


def encode_messages(
    messages: Sequence[Message], max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
) -> list[Encoded]:
    """Check and encode messages before anything is written.

    Raises:
        InvalidMessage: If a message is malformed or two share an id.
        PayloadTooLarge: If a message is over `max_bytes` encoded.
    """
    if isinstance(messages, Message | str | bytes) or not isinstance(messages, Sequence):
        raise InvalidMessage("expected a sequence of messages")
    encoded: list[Encoded] = []
    ids: set[str] = set()  # not a scan of `encoded`: that made a batch quadratic
    for message in messages:
        check_message(message)
        if message.id in ids:
            raise InvalidMessage(f"message id {message.id!r} appears twice in one append")
        ids.add(message.id)
        try:
            text = message_json(message)
        except (TypeError, ValueError) as exc:
            raise InvalidMessage(f"message {message.id} holds a value that is not JSON") from exc
        if check_text(text, f"message {message.id}", InvalidMessage) > max_bytes:
            raise PayloadTooLarge(f"message {message.id} is over the limit of {max_bytes} bytes")
        encoded.append(Encoded(message.id, text))
    return encoded


def message_json(message: Message) -> str:
    """`message.to_dict()` as compact JSON; a plain text message is written directly.

    Raises:
        TypeError, ValueError: If some value cannot be encoded as JSON.
    """
    text = plain_text(message)
    if text is None:
        return _dump(message.to_dict())
    # Ids and roles need no escaping (`check_message` allows no such character).
    parent = "" if message.parent_id is None else f',"parent_id":{_text(message.parent_id)}'
    return (
        f'{{"id":"{message.id}","role":"{message.role}","parts":[{{"text":{_text(text)},'
        f'"type":"text"}}],"metadata":{{}},"created_at":"{message.created_at.isoformat()}"'
        f"{parent}}}"
    )


_CORRUPT = (InvalidInput, KeyError, TypeError, ValueError, AttributeError)
"""What rebuilding a stored message that is not what sessionary wrote raises."""


def decode_messages(raw: list[dict[str, Any]]) -> list[Message]:
    """Rebuild stored messages (trusted: each was checked when it was appended)."""
    try:
        return [load_message(data) for data in raw]
    except _CORRUPT as exc:
        raise StoreError(f"a stored message is corrupt: {exc!r}") from exc


def plan_append(
    keys: SessionKeys, meta: Meta, batch: list[Encoded], ttl: float | None
) -> tuple[Meta, dict[str, str | None], list[tuple[str, str]]]:
    """Return the new meta entry, the writes that append `batch`, and its loose entries."""
    writes: dict[str, str | None] = {}
    fresh = []
    for offset, item in enumerate(batch):
        seq = meta.next_seq + offset
        key = keys.message(seq)
        writes[key] = item.text
        writes[keys.message_id(item.id)] = str(seq)
        fresh.append((key, item.text))
    new = meta.appended(len(batch), ttl)
    writes[keys.meta] = new.encode()
    return new, writes, fresh


def history_window(messages: list[Message], limit: int | None) -> list[Message]:
    """Return the newest `limit` messages, never showing a tool result without its call.

    The window widens backwards to take in the call of any result in it. A result whose
    call is not stored at all (a `max_messages` trim dropped it) is left out instead.
    """
    start = 0 if limit is None else max(0, len(messages) - limit)
    if start > 0:
        start = pair_safe_start(messages, start)
    window = messages[start:]
    # `pair_safe_start` stops past 0 only where the window holds every call it needs.
    orphans = orphan_results(window) if start == 0 else set()
    while window and window[0].role == "tool" and orphans:
        if not {r.call_id for r in window[0].tool_results} <= orphans:
            break
        window = window[1:]
    return window


def check_user(user_id: str | None) -> str | None:
    """Return `user_id` if it is None or a valid id.

    Raises:
        InvalidId: If it is not.
    """
    return None if user_id is None else check_id(user_id, "user id")
