"""Predicted reads of a session's last messages: plain commands instead of a script (pure).

`history(limit=N)` reads the last N messages to a session's head (and the overlay index,
a session document). The `read_path_document` script does that in one call, but a
script costs Redis tens of microseconds however short (defining its helpers, moving
chunk text through Lua at ~2 ns a byte), and the read is the one users wait on. Where
the store can predict the layout, it sends one `MULTI`/`EXEC` of plain commands instead:
the meta fields the read needs, the loose entries and snapshot chunks that should hold
the path, and the document's version list and predicted latest version. `EXEC` runs
them as one atomic step, so the replies are a snapshot of one moment, as a script's are.

The prediction (a `Layout` per session) is what the last read saw: the head, `rolled`,
the path's seqs and the chunks that held them, the document's version. It asks for the
path's seqs, plus the next seqs past the head (`SLACK`, and as many as this store has
appended after the head since: messages appended since), as
loose entries when at or past the `rolled` seen, and for the chunks a roll-up of them
would have made (every `frequency` seqs from that `rolled`), else the chunk last seen
to hold them. The answer is then checked against the snapshot alone, never against
the prediction: the walk starts at the head the snapshot's meta names and follows each
entry's parent seq, and every entry must be where the snapshot's `rolled` says (a loose
entry asked for, or a chunk asked for whose span holds the seq: chunks never overlap,
so that is the chunk `read_path_document` would read); the walk stops at `first`, the
limit or the root, as the script's does. The document's latest version must be the one
asked for. An entry not asked for, a deleted one, a chunk in the old JSON form, a newer
document version: the prediction missed, and the store runs the script, which also
returns the layout it saw (`learn`) for the next read. A missing or expired session is
an answer, not a miss (`expired` is the scripts' `EXPIRY` rule, in Python).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from sessionary.kv._redis_wire import command
from sessionary.stores._redis_layout import SessionKeys

__all__ = ["SLACK", "Layout", "Layouts", "Plan", "answer", "expired", "learn"]

SLACK = 4
"""Messages appended since the last read (by others) that a prediction still covers."""

_LAYOUTS = 1024  # sessions whose layout a store remembers
_AHEAD = 60  # the most messages appended since a read that the next one predicts
_META = ("head", "first", "rolled", "row", "updated")
_TTL = re.compile(r'"ttl_us":\d')


def expired(row: str | None, updated: str | None, now: int) -> bool:
    """Whether a session's meta `row` and `updated` say it had expired at `now` (µs).

    The rule of `_redis_lua.EXPIRY` (and `sessionary.retention`): most rows have no TTL.
    """
    if row is None or not _TTL.search(row):
        return False
    data = json.loads(row)
    ttl, start = data.get("ttl_us"), data.get("created_us")
    if not isinstance(ttl, int):
        return False
    if data.get("ttl_sliding") is True:
        start = None if updated is None else int(updated)
    return start is not None and start + ttl <= now


@dataclass(slots=True)
class Layout:
    """Where the last read of a session found its path (see the module's docstring)."""

    head: int
    rolled: int
    seqs: list[int]  # the path, leaf first
    starts: list[int]  # the chunks that held part of it
    version: str  # the document's latest version ('' none)
    ahead: int = field(default=0, compare=False)  # messages this store appended since
    missed: bool = field(default=False, compare=False)  # the next read runs the script
    planned: tuple[str, int, Plan] | None = field(default=None, compare=False)


def learn(layout: str, entries: list[str], version: str) -> Layout:
    """The layout a `read_path_document` answer shows: its layout field and entries."""
    head, rolled, *starts = layout.split(" ")
    seqs = [int(head)] if entries else []
    seqs += [int(entry[: entry.index(" ")]) for entry in entries[:-1]]
    return Layout(int(head), int(rolled), seqs, [int(s) for s in starts], version)


@dataclass(slots=True)
class Plan:
    """One predicted read: the command to send and what it asks for."""

    command: list[bytes]
    replies: int  # how many replies it gets (the last one is `EXEC`'s)
    loose: list[int]  # seqs asked for as loose entries
    starts: list[int]  # chunk starts asked for
    version: str  # the document version asked for ('' none)


class Layouts:
    """The layouts of the sessions a store read, and the reads predicted from them.

    Args:
        frequency: The store's roll-up frequency (0: never).
    """

    def __init__(self, frequency: int) -> None:
        self.frequency = frequency
        self._known: dict[str, Layout] = {}

    def get(self, meta: str) -> Layout | None:
        return self._known.get(meta)

    def put(self, meta: str, layout: Layout | None) -> None:
        if layout is None:
            self._known.pop(meta, None)
            return
        if len(self._known) >= _LAYOUTS and meta not in self._known:
            self._known.clear()
        self._known[meta] = layout

    def appended(self, meta: str, count: int) -> None:
        """Note that this store appended `count` messages after a session's head.

        The next read then also asks for that many more seqs past the head seen; a
        session far ahead of what was seen is forgotten (its next read runs the script).
        """
        layout = self._known.get(meta)
        if layout is not None:
            layout.ahead += count
            layout.planned = None
            if layout.ahead > _AHEAD:
                del self._known[meta]

    def plan(self, session: SessionKeys, layout: Layout, member: str, limit: int) -> Plan:
        """The `MULTI`/`EXEC` that reads the `limit` last messages `layout` predicts.

        A layout keeps its plan: reads of a session that did not change send the same.
        """
        if layout.planned is not None and layout.planned[:2] == (member, limit):
            return layout.planned[2]
        keys, rolled, size = session.all, layout.rolled, self.frequency
        ahead = range(layout.head + SLACK + layout.ahead, layout.head, -1)
        seqs = [*ahead, *layout.seqs[:limit]]
        loose = [q for q in seqs if q >= rolled]
        starts = []
        for q in seqs:
            if q >= rolled:
                start = rolled + (q - rolled) // size * size if size else -1
            else:
                start = max((s for s in layout.starts if s <= q), default=-1)
            if start >= 0 and start not in starts:
                starts.append(start)
        parts = [["MULTI"], ["HMGET", keys[0], *_META]]
        if loose:
            parts.append(["HMGET", keys[2], *[f"{q:012d}" for q in loose]])
        if starts:
            parts.append(["HMGET", keys[3], *[str(s) for s in starts]])
        parts.append(["HGET", keys[11], member])
        if layout.version:
            parts.append(["HGET", keys[12], f"{member}\n{layout.version}"])
        parts.append(["EXEC"])
        sent = b"".join(piece for part in parts for piece in command(part))
        plan = Plan([sent], len(parts), loose, starts, layout.version)
        layout.planned = (member, limit, plan)
        return plan


def answer(
    plan: Plan, replies: list[Any], limit: int, now: int
) -> tuple[str, int, str, str, list[str], Layout | None] | None:
    """What `read_path_document` would answer given a predicted read's `EXEC` replies.

    Returns ('nosession', ...) for a missing or expired session, else ('ok', first,
    version, JSON, the entries from the head up, the layout seen); None if the
    prediction missed.
    """
    head, first, rolled, row, updated = replies[0]
    if head is None or expired(row, updated, now):
        return "nosession", 0, "", "", [], None
    if first is None or rolled is None:  # not a meta the scripts read: let them say
        return None
    at = 1
    loose: dict[int, str | None] = {}
    if plan.loose:
        loose = dict(zip(plan.loose, replies[at], strict=True))
        at += 1
    spans: list[tuple[int, list[str]]] = []
    if plan.starts:  # a chunk in the old JSON form is left out: the script reads those
        found = zip(plan.starts, replies[at], strict=True)
        spans = [(start, text.split("\n")[1:]) for start, text in found if text and text[0] == "\n"]
        at += 1
    document = _document(plan.version, replies[at:])
    if document is None:
        return None
    top = int(rolled)
    walked = _walk(int(head), int(first), top, limit, loose, spans)
    if walked is None:
        return None
    entries, seqs, used = walked
    layout = Layout(int(head), top, seqs, used, document[2])
    return "ok", int(first), document[0], document[1], entries, layout


def _document(asked: str, replies: list[Any]) -> tuple[str, str, str] | None:
    """The document's (version, JSON, latest listed version) as the script answers them.

    None if the prediction missed: the latest version is not the one `asked` for.
    """
    listed = replies[0]
    if listed is None:
        return "", "", ""
    latest = listed[listed.rfind(",") + 1 :]
    if not asked or latest != asked:
        return None
    value = replies[1] or ""  # a version listed but gone reads as none, as in the script
    return (latest if value else ""), value, latest


def _walk(
    seq: int,
    first: int,
    rolled: int,
    limit: int,
    loose: dict[int, str | None],
    spans: list[tuple[int, list[str]]],
) -> tuple[list[str], list[int], list[int]] | None:
    """The entries from `seq` up (`walk_up`'s), their seqs and the chunks that held them.

    None if one is not among those read (or is deleted).
    """
    entries: list[str] = []
    seqs: list[int] = []
    used: list[int] = []  # a chunk holds a run of seqs and the walk only goes down
    low = high = 0  # the span of the chunk `cut`, the last one used
    cut: list[str] = []
    while seq >= 0 and seq >= first and len(entries) < limit:
        if seq >= rolled:
            entry = loose.get(seq)
        else:
            if not low <= seq < high:
                for low, cut in spans:
                    high = low + len(cut)
                    if low <= seq < high:
                        used.append(low)
                        break
                else:
                    return None
            entry = cut[seq - low]
        if not entry:
            return None
        entries.append(entry)
        seqs.append(seq)
        seq = int(entry[: entry.index(" ")])
    return entries, seqs, used
