"""The audit trail's records (pure: no I/O): one entry per change, and how it is stored.

An entry is kept as a document of the tenant (level ``app``) in the namespace
`AUDIT_NAMESPACE`, written once with `expected_version` 0 and never rewritten. Its key
starts with the time counted down from a far date, so the documents' key order, the
order stores list them in, is newest first. `sessionary.stores.audited` writes and
reads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sessionary.errors import InvalidInput
from sessionary.ids import new_id
from sessionary.model import from_micros, to_micros
from sessionary.records import Document

__all__ = ["AUDIT_NAMESPACE", "AuditEntry", "AuditFilter", "check_actor", "entry_key"]

AUDIT_NAMESPACE = "sessionary.audit"
"""The document namespace of the audit trail, at the tenant's (app) level."""

_COUNTDOWN = 10**17
"""Microseconds past the epoch a key counts down from (the year 5138)."""

MAX_ACTOR_LENGTH = 128


@dataclass(frozen=True)
class AuditEntry:
    """One change: who made it, when, to what.

    Attributes:
        id: The entry's key in the trail.
        at: When the change was recorded (UTC).
        actor: Who made it, as the caller named them.
        action: What was done: ``message.update``, ``message.delete``,
            ``messages.delete``, ``messages.clear``, ``session.delete``,
            ``session.update``, ``session.import``, ``state.update``, ``state.restore``,
            ``document.put``, ``document.delete``, ``document.restore``, ``user.erase``,
            ``tenant.erase`` (or one a caller records).
        user: The user whose data changed (the tenant is the trail's own).
        session_id: The session changed, if any.
        target: What within it: a message id, a state level, ``namespace/key``.
        detail: More about the change (ids deleted, keys patched, a version).
    """

    id: str
    at: datetime
    actor: str
    action: str
    user: str
    session_id: str | None = None
    target: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def to_body(self) -> dict[str, Any]:
        """Return the document body the entry is stored as."""
        return {
            "at": to_micros(self.at),
            "actor": self.actor,
            "action": self.action,
            "user": self.user,
            "session_id": self.session_id,
            "target": self.target,
            "detail": self.detail,
        }

    @classmethod
    def from_document(cls, doc: Document) -> AuditEntry:
        """Rebuild an entry from its stored document."""
        body = doc.body
        return cls(
            id=doc.key,
            at=from_micros(int(body["at"])),
            actor=str(body["actor"]),
            action=str(body["action"]),
            user=str(body["user"]),
            session_id=body.get("session_id"),
            target=body.get("target"),
            detail=dict(body.get("detail") or {}),
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the entry as JSON-ready data (the time in ISO 8601)."""
        data = self.to_body()
        data["at"] = self.at.isoformat()
        return {"id": self.id, **data}


@dataclass(frozen=True)
class AuditFilter:
    """Which entries a read returns; None matches anything."""

    user: str | None = None
    actor: str | None = None
    action: str | None = None
    session_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def matches(self, entry: AuditEntry) -> bool:
        """Whether `entry` passes every condition."""
        return (
            (self.user is None or entry.user == self.user)
            and (self.actor is None or entry.actor == self.actor)
            and (self.action is None or entry.action == self.action)
            and (self.session_id is None or entry.session_id == self.session_id)
            and (self.since is None or entry.at >= self.since)
            and (self.until is None or entry.at < self.until)
        )

    def is_past(self, entry: AuditEntry) -> bool:
        """Whether `entry`, and so every one after it (newest first), is before `since`."""
        return self.since is not None and entry.at < self.since


def entry_key(at: datetime) -> str:
    """Return a new entry's key: newest first in key order, unique."""
    return f"{_COUNTDOWN - to_micros(at):017d}-{new_id()}"


def check_actor(actor: object) -> str:
    """Return `actor` if it can name who made a change.

    Raises:
        InvalidInput: Unless it is 1 to 128 printable characters.
    """
    if (
        not isinstance(actor, str)
        or not actor
        or len(actor) > MAX_ACTOR_LENGTH
        or not actor.isprintable()
    ):
        raise InvalidInput("an actor must be 1 to 128 printable characters")
    return actor
