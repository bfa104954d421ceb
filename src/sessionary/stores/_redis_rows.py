"""Planning and decoding for the Redis store (pure: no I/O).

What the store's scripts are given (an imported session laid out as chunks and loose
entries) and what they return (stored entries) is built and read here, so the store
module holds only the conversation with the server.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sessionary.errors import InvalidInput
from sessionary.model import Message
from sessionary.records import SessionFilter, SessionInfo
from sessionary.stores._common import Prepared, gc_paused
from sessionary.stores._redis_layout import entry_message, entry_text, order_member
from sessionary.stores._rows import stored_copy

__all__ = ["ImportPlan", "import_plan", "matches", "settings_problem", "state_text"]


def settings_problem(snapshot_frequency: object, max_messages: object, ttl: object) -> str | None:
    """Why the store settings are unusable, or None if they are fine."""
    if isinstance(snapshot_frequency, bool) or not isinstance(snapshot_frequency, int):
        return f"snapshot_frequency must be a whole number, got {snapshot_frequency!r}"
    if snapshot_frequency < 0:
        return f"snapshot_frequency must be 0 (never) or more, got {snapshot_frequency!r}"
    if max_messages is not None and (
        isinstance(max_messages, bool) or not isinstance(max_messages, int) or max_messages < 1
    ):
        return f"max_messages must be None or a positive whole number, got {max_messages!r}"
    if ttl is not None and (
        isinstance(ttl, bool) or not isinstance(ttl, int | float) or not ttl > 0
    ):
        return f"ttl must be None or a positive number of seconds, got {ttl!r}"
    return None


def state_text(version: int, encoded_data: str) -> str:
    """The stored form of a state document: its version and its (encoded) data."""
    return f'{{"v":{version},"d":{encoded_data}}}'


def stored_messages(prepared: Sequence[Prepared], replies: Sequence[str]) -> list[Message]:
    """The messages an append stored, from the script's reply for each one.

    A reply `+<parent id>` means the message was stored now under that parent (`-`:
    none); any other reply is the entry already stored under that id, returned as is.
    """
    out: list[Message] = []
    for item, reply in zip(prepared, replies, strict=True):
        if reply.startswith("+"):
            parent = reply[1:]
            out.append(stored_copy(item.message, None if parent == "-" else parent))
        else:
            out.append(entry_message(reply, 0))
    return out


def matches(info: SessionInfo, where: SessionFilter) -> bool:
    """Whether a session's row passes every set field of `where`."""
    checks = (
        (where.name, info.name),
        (where.model, info.model),
        (where.source, info.source),
        (where.parent_session_id, info.parent_session_id),
    )
    if any(want is not None and want != have for want, have in checks):
        return False
    return where.ended is None or where.ended == (info.end_reason is not None)


@dataclass(slots=True)
class ImportPlan:
    """An imported session as the import script stores it."""

    head_args: list[Any] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)
    loose: list[str] = field(default_factory=list)
    kids: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)

    @property
    def section_args(self) -> list[Any]:
        counts = [len(self.chunks) // 2, len(self.loose) // 2, len(self.kids) // 2]
        return [*counts, *self.chunks, *self.loose, *self.kids, *self.ids]


def import_plan(prepared: Sequence[Prepared], head_id: str | None, frequency: int) -> ImportPlan:
    """Lay out a whole session: sequence numbers in order, full chunks, the rest loose.

    The run (see `_redis_lua`) is the longest chain of messages at the end, each answering
    the one before: those get no order member, and no child at its parent's seq plus one
    is listed among its children, as appends would have written them.

    Raises:
        InvalidInput: If a message names a parent that is not earlier in the import, or
            the head is not among the messages.
    """
    seqs: dict[str, tuple[int, int]] = {}
    entries: list[str] = []
    children: dict[int, list[str]] = {}
    placed: list[tuple[int, int]] = []  # (parent seq, depth) per seq
    with gc_paused():
        for seq, item in enumerate(prepared):
            parent = item.message.parent_id
            if parent is not None and parent not in seqs:
                raise InvalidInput(
                    f"message {item.message.id!r} names parent {parent!r}, "
                    "which is not earlier in the import"
                )
            parent_seq, parent_depth = seqs[parent] if parent is not None else (-1, -1)
            depth = parent_depth + 1
            seqs[item.message.id] = (seq, depth)
            entries.append(entry_text(parent_seq, depth, parent, item))
            if parent_seq >= 0 and seq != parent_seq + 1:
                children.setdefault(parent_seq, []).append(str(seq))
            placed.append((parent_seq, depth))
    base = len(placed) - 1
    while base > 0 and placed[base][0] == base - 1:
        base -= 1
    plan = ImportPlan()
    for seq, item in enumerate(prepared):
        member = order_member(placed[seq][1], seq) if seq < base else ""
        plan.ids += [item.message.id, str(seq), member]
    if head_id is not None and head_id not in seqs:
        raise InvalidInput(f"head {head_id!r} is not among the imported messages")
    rolled = len(entries) - len(entries) % frequency if frequency else 0
    for start in range(0, rolled, frequency or 1):
        plan.chunks += [
            str(start),
            "\n" + "\n".join(entries[start : start + frequency]),
        ]
    for seq in range(rolled, len(entries)):
        plan.loose += [f"{seq:012d}", entries[seq]]
    for parent_seq, kids in children.items():
        plan.kids += [f"{parent_seq:012d}", ",".join(kids)]
    head_seq = seqs[head_id][0] if head_id is not None else -1
    run = [str(base), str(placed[base][1])] if placed else ["", ""]
    plan.head_args = [head_seq, head_id or "", len(entries), rolled, *run]
    return plan
