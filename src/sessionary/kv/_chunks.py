"""Rolling loose entries into append-only chunks, trimming, and old-layout data (pure).

A roll-up writes the loose entries of the moment as new chunks of at most
`snapshot_frequency` messages each (one chunk, unless a large batch was appended),
deletes them and advances `next_chunk` in the meta entry, all in one commit: chunks
become visible to readers together with the meta entry that names them, so no reader
sees half a roll-up. A
chunk key left over by a writer that died before its commit lies outside the live range
and is overwritten by the next roll-up.

`max_messages` trimming walks from the oldest chunk: a chunk whose every message is cut
is deleted; in the chunk where the cut falls, the meta entry's `skip` counts the messages
cut from its front (the chunk itself is never rewritten, so a reader holding an older
meta entry never reads a chunk that changed under it). As in the old layout, a tool
result left at the front without its call is cut too.

Sessions written in the old layout (`layout` 1: one `snapshot` entry) are readable as
they are and are migrated by their next write: the snapshot is renamed `chunk:0`, in
the same commit as that write.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from sessionary.kv._layout import CHUNKED, Encoded, Meta, SessionKeys, chunk_of
from sessionary.model import Message
from sessionary.window import orphan_results, pair_safe_start

__all__ = [
    "TrimWalk",
    "plan_append_rolled",
    "plan_migration",
    "plan_roll_up",
    "split",
    "wants_older",
]


def plan_migration(
    keys: SessionKeys, meta: Meta, snapshot: str | None
) -> tuple[Meta, dict[str, str | None]]:
    """Return the meta entry in the chunked layout and the writes that move the snapshot.

    `snapshot` is the old layout's snapshot entry (None if the session never rolled up).
    A session already chunked is returned unchanged, with no writes.
    """
    if meta.layout == CHUNKED:
        return meta, {}
    moved = replace(meta, layout=CHUNKED, first_chunk=0, next_chunk=0, skip=0)
    if snapshot is None:
        return moved, {}
    return replace(moved, next_chunk=1), {keys.chunk(0): snapshot, keys.snapshot: None}


def split(items: list[Any], size: int) -> list[list[Any]]:
    """`items` in consecutive runs of at most `size` (none if `items` is empty)."""
    return [items[start : start + size] for start in range(0, len(items), size)]


@dataclass
class TrimWalk:
    """Where a `max_messages` trim cuts, found chunk by chunk from the oldest.

    The caller feeds the chunks it is asked for (`wanted`) until `wanted` is None. The
    chunks being rolled up (numbered from `meta.next_chunk`) are known from the start.
    """

    meta: Meta
    new_chunks: list[list[dict[str, Any]]]
    max_messages: int | None
    first: int = 0
    skip: int = 0
    excess: int = 0
    cut: int = 0
    trimming: bool = False
    dropped: list[int] = field(default_factory=list)
    _known: dict[int, list[dict[str, Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.first, self.skip = self.meta.first_chunk, self.meta.skip
        total = self.meta.count
        if self.max_messages is not None and total > self.max_messages:
            self.excess, self.trimming = total - self.max_messages, True
        for offset, chunk in enumerate(self.new_chunks):
            self._known[self.meta.next_chunk + offset] = chunk
        self._walk()

    @property
    def end(self) -> int:
        """The number after the last chunk, the new ones included."""
        return self.meta.next_chunk + len(self.new_chunks)

    @property
    def wanted(self) -> int | None:
        """The number of the stored chunk the walk needs next, or None when done."""
        if not self.trimming or self.first >= self.end:
            return None
        return None if self.first in self._known else self.first

    def feed(self, number: int, messages: list[dict[str, Any]]) -> None:
        """Give the walk the (whole) content of chunk `number`."""
        self._known[number] = messages
        self._walk()

    def _walk(self) -> None:
        while self.trimming and self.first < self.end:
            chunk = self._known.get(self.first)
            if chunk is None:
                return
            if self.excess > 0:
                taken = min(self.excess, len(chunk) - self.skip)
                self.excess -= taken
                self._advance(chunk, self.skip + taken)
            else:
                start = self.skip
                while start < len(chunk) and chunk[start].get("role") == "tool":
                    start += 1
                self._advance(chunk, start)
                if start < len(chunk):
                    self.trimming = False

    def _advance(self, chunk: list[dict[str, Any]], start: int) -> None:
        """Cut the current chunk up to `start`; drop it and go to the next if that is all."""
        self.cut += start - self.skip
        if start < len(chunk):
            self.skip = start
            return
        if self.first < self.meta.next_chunk:
            self.dropped.append(self.first)
        self.first, self.skip = self.first + 1, 0


def plan_roll_up(
    keys: SessionKeys, meta: Meta, runs: list[list[tuple[str, str]]], walk: TrimWalk
) -> dict[str, str | None]:
    """Return the writes that roll loose entries into new chunks, as `walk` trimmed them.

    `runs` are the loose entries split into chunks, oldest first; a chunk the trim
    wholly cut is not written.
    """
    writes: dict[str, str | None] = {key: None for run in runs for key, _ in run}
    writes.update(dict.fromkeys((keys.chunk(n) for n in walk.dropped), None))
    for number, run in enumerate(runs, meta.next_chunk):
        if number >= walk.first:
            writes[keys.chunk(number)] = chunk_of(run)
    new = replace(
        meta,
        version=meta.version + 1,
        since_snapshot=0,
        count=meta.count - walk.cut,
        first_chunk=walk.first,
        next_chunk=walk.end,
        skip=walk.skip,
    )
    writes[keys.meta] = new.encode()
    return writes


def plan_append_rolled(
    keys: SessionKeys,
    meta: Meta,
    loose: list[tuple[str, str]],
    batch: list[Encoded],
    frequency: int,
    ttl: float | None,
) -> tuple[Meta, dict[str, str | None]]:
    """The new meta entry and the writes of an append that rolls up in the same commit.

    `loose` are the session's loose entries (all of them, oldest first) when its meta
    entry was `meta`. They and the batch become new chunks of at most `frequency`, as an
    append and then a roll-up (with nothing to trim) would leave them; the batch is never
    written loose.
    """
    fresh = [(keys.message(meta.next_seq + n), item.text) for n, item in enumerate(batch)]
    runs = split(loose + fresh, frequency)
    writes: dict[str, str | None] = {key: None for key, _ in loose}
    for n, item in enumerate(batch):
        writes[keys.message_id(item.id)] = str(meta.next_seq + n)
    for number, run in enumerate(runs, meta.next_chunk):
        writes[keys.chunk(number)] = chunk_of(run)
    grown = meta.appended(len(batch), ttl)
    new = replace(grown, since_snapshot=0, next_chunk=meta.next_chunk + len(runs))
    writes[keys.meta] = new.encode()
    return new, writes


def wants_older(messages: list[Message], limit: int | None) -> bool:
    """Whether a history window of `limit` over `messages` could change with older ones."""
    if limit is None or len(messages) < limit:
        return True
    # `pair_safe_start` stops past 0 only where the window holds every call it needs.
    if len(messages) > limit and pair_safe_start(messages, len(messages) - limit) > 0:
        return False
    return bool(orphan_results(messages))
