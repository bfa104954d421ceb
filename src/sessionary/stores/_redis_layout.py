"""The Redis store's keys, entries and rows (pure: no I/O).

Every key starts with the store's namespace, then length-prefixed parts, as the
`ScopedDriver` of `sessionary.kv` does: `<ns>:t:<len>:<tenant>:` for a tenant, then
`u:<len>:<user>:` for a user, then `s:<len>:<session id>:` for a session. A part's length
comes before it, so no id (whatever it holds) can make one owner's keys a prefix of
another's. `_redis_lua` lists the keys of a session and what each holds.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sessionary.model import Message, decode_body, from_micros, to_micros
from sessionary.records import Scope, SessionInfo, StateLevel
from sessionary.retention import ttl_micros
from sessionary.stores._common import Prepared

__all__ = [
    "ScopeKeys",
    "SessionKeys",
    "entry_message",
    "entry_text",
    "meta_info",
    "order_member",
    "row_text",
]

_MESSAGE_PARTS = ("meta", "ids", "loose", "snap", "chunks", "kids", "order")
_OTHER_PARTS = ("state", "docs", "dhead", "dver")
_SESSION_PARTS = _MESSAGE_PARTS + _OTHER_PARTS
META_FIELDS = ("row", "updated", "headid", "count")
"""The meta fields a session's registry row is read from."""


def _part(kind: str, value: str) -> str:
    return f"{kind}:{len(value)}:{value}:"


@dataclass(frozen=True, slots=True)
class ScopeKeys:
    """The keys of one scope: its registry, its user and app state, and the scopes set."""

    namespace: str
    scope: Scope

    @property
    def tenant(self) -> str:
        return f"{self.namespace}:{_part('t', self.scope.tenant)}"

    @property
    def user(self) -> str:
        return self.tenant + _part("u", self.scope.user)

    @property
    def registry(self) -> str:
        return self.user + "sessions"

    @property
    def scopes(self) -> str:
        return f"{self.namespace}:scopes"

    @property
    def member(self) -> str:
        """This scope's member in the scopes set."""
        return f"{self.scope.tenant} {self.scope.user}"

    def session(self, session_id: str) -> SessionKeys:
        return SessionKeys(self, session_id, self.user + _part("s", session_id))

    def owner(self, level: StateLevel, session_id: str | None) -> str:
        """The prefix of the state and documents of a session, this user or this app."""
        if level == "session":
            assert session_id is not None
            return self.session(session_id).prefix
        return self.user if level == "user" else self.tenant + "app:"


@dataclass(frozen=True, slots=True)
class SessionKeys:
    """The keys of one session, in the order the session scripts receive them."""

    scope: ScopeKeys
    session_id: str
    prefix: str

    @property
    def meta(self) -> str:
        return self.prefix + "meta"

    @property
    def state(self) -> str:
        return self.prefix + "state"

    @property
    def own(self) -> list[str]:
        """Every key that belongs to the session (what a TTL expires)."""
        return [self.prefix + name for name in _SESSION_PARTS]

    @property
    def all(self) -> list[str]:
        """The keys a session script is given, in the order `_redis_lua` describes."""
        return [*self.messages, self.scope.registry, self.scope.scopes, *self._others]

    @property
    def append(self) -> list[str]:
        """The keys the append script needs without a TTL: the message keys, the registry."""
        return [*self.messages, self.scope.registry]

    @property
    def lean(self) -> list[str]:
        """The keys of the append script's lean path: meta, ids, loose, the registry."""
        return [*self.messages[:3], self.scope.registry]

    @property
    def messages(self) -> list[str]:
        return [self.prefix + name for name in _MESSAGE_PARTS]

    @property
    def _others(self) -> list[str]:
        return [self.prefix + name for name in _OTHER_PARTS]


def order_member(depth: int, seq: int) -> str:
    """The member of the order set that stands for a message (as the scripts write it)."""
    return f"{depth:08d}:{seq:012d}"


def entry_text(parent_seq: int, depth: int, parent_id: str | None, item: Prepared) -> str:
    """The entry stored for a message: a header the scripts read, then the body."""
    message = item.message
    return (
        f"{parent_seq} {depth} {message.role} {parent_id or '-'} {message.id} "
        f"{item.created_us} {item.body}"
    )


def entry_message(entry: str, first: int) -> Message:
    """Rebuild the message an entry holds; a parent trimmed away (seq < first) reads as None."""
    parent_seq, _, role, parent_id, message_id, created, body = entry.split(" ", 6)
    parent = None if parent_id == "-" or int(parent_seq) < first else parent_id
    return decode_body(message_id, role, int(created), body, parent)


def row_text(info: SessionInfo) -> str:
    """The registry row of a session as JSON (head, count and update time live beside it)."""
    row = {
        "name": info.name,
        "parent_session_id": info.parent_session_id,
        "model": info.model,
        "source": info.source,
        "metadata": info.metadata,
        "created_us": None if info.created_at is None else to_micros(info.created_at),
        "ended_us": None if info.ended_at is None else to_micros(info.ended_at),
        "end_reason": info.end_reason,
        "input_tokens": info.input_tokens,
        "output_tokens": info.output_tokens,
        "cost": info.cost,
        "version": info.version,
        "ttl_us": ttl_micros(info.ttl),
        "ttl_sliding": info.ttl_sliding,
    }
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def meta_info(session_id: str, fields: Sequence[Any]) -> SessionInfo:
    """Build a registry row from the meta fields named by `META_FIELDS`."""
    row, updated, head_id, count = fields
    data = json.loads(row)
    created, ended = data.pop("created_us"), data.pop("ended_us")
    ttl_us = data.pop("ttl_us", None)  # rows written before retention have none
    data["ttl"] = None if ttl_us is None else ttl_us / 1_000_000
    return SessionInfo(
        id=session_id,
        created_at=None if created is None else from_micros(created),
        updated_at=from_micros(int(updated)),
        ended_at=None if ended is None else from_micros(ended),
        head_id=head_id or None,
        message_count=int(count),
        **data,
    )
