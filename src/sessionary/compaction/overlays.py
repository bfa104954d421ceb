"""Compaction overlays: the stored record of one compaction, and how it shows (pure).

An overlay is a document in namespace ``compaction`` at session level, keyed by its id.
Its body holds the covered range of one branch (`first_id` .. `last_id`, and their depths:
the number of messages from the root to each), the summary, the synthetic message shown in
place of the range, and the tokens of the visible history before and after. The text
indexed for search is the summary, so summaries are searchable beside the raw messages.

Every session also keeps one index document (namespace ``compaction.index``, key
``overlays``) listing each overlay's id, range and depths, so a read finds the overlay that
applies to its branch with one small document read and a path read that starts right after
the overlay's last message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sessionary.compaction.planner import COMPACTION_PREFIX, SUMMARY_KEY
from sessionary.model import Message, TextPart, from_micros, to_micros

__all__ = [
    "INDEX_KEY",
    "INDEX_NAMESPACE",
    "NAMESPACE",
    "SUMMARY_HEADER",
    "Overlay",
    "candidates",
    "index_entry",
    "overlay_from_body",
    "overlay_to_body",
    "synthetic_message",
]

NAMESPACE = "compaction"
INDEX_NAMESPACE = "compaction.index"
INDEX_KEY = "overlays"
SUMMARY_HEADER = "[Summary of the earlier conversation, made by compaction]"


@dataclass(frozen=True, slots=True)
class Overlay:
    """One compaction of a branch range: `first_id`..`last_id` shown as `summary`.

    `first_depth` and `last_depth` count the messages from the root to each end (so the
    range holds `last_depth - first_depth + 1` stored messages). `supersedes` names the
    overlay this one widened, if any.
    """

    id: str
    first_id: str
    last_id: str
    first_depth: int
    last_depth: int
    summary: str
    role: str
    tokens_before: int
    tokens_after: int
    created_at: datetime
    supersedes: str | None = None

    @property
    def covered(self) -> int:
        """How many stored messages the overlay replaces."""
        return self.last_depth - self.first_depth + 1


def overlay_to_body(overlay: Overlay) -> dict[str, Any]:
    """Return an overlay as a document body."""
    return {
        "first_id": overlay.first_id,
        "last_id": overlay.last_id,
        "first_depth": overlay.first_depth,
        "last_depth": overlay.last_depth,
        "summary": overlay.summary,
        "role": overlay.role,
        "message": synthetic_message(overlay).to_dict(),
        "tokens_before": overlay.tokens_before,
        "tokens_after": overlay.tokens_after,
        "created_us": to_micros(overlay.created_at),
        "supersedes": overlay.supersedes,
    }


def overlay_from_body(overlay_id: str, body: Mapping[str, Any]) -> Overlay:
    """Return the overlay a document body holds.

    Raises:
        KeyError: If a field is missing.
        TypeError: If a field has the wrong type.
    """
    return Overlay(
        id=overlay_id,
        first_id=str(body["first_id"]),
        last_id=str(body["last_id"]),
        first_depth=int(body["first_depth"]),
        last_depth=int(body["last_depth"]),
        summary=str(body["summary"]),
        role=str(body.get("role") or "user"),
        tokens_before=int(body["tokens_before"]),
        tokens_after=int(body["tokens_after"]),
        created_at=from_micros(int(body["created_us"])),
        supersedes=body.get("supersedes"),
    )


def synthetic_message(overlay: Overlay, parent_id: str | None = None) -> Message:
    """Return the message shown in place of the overlay's range.

    Its id starts with ``compaction_`` and its metadata carries the overlay's record, so
    it is recognised as a summary (never conversation) and refused if echoed back.
    """
    info = {
        "id": overlay.id,
        "first_id": overlay.first_id,
        "last_id": overlay.last_id,
        "covered": overlay.covered,
        "summary": overlay.summary,
        "tokens_before": overlay.tokens_before,
        "tokens_after": overlay.tokens_after,
    }
    return Message(
        role=overlay.role,  # type: ignore[arg-type]  # checked by CompactionPolicy
        parts=[TextPart(f"{SUMMARY_HEADER}\n\n{overlay.summary}")],
        id=f"{COMPACTION_PREFIX}{overlay.id}",
        metadata={SUMMARY_KEY: info},
        created_at=overlay.created_at,
        parent_id=parent_id,
    )


def index_entry(overlay: Overlay) -> dict[str, Any]:
    """Return the overlay's line in the session's overlay index."""
    return {
        "id": overlay.id,
        "first_id": overlay.first_id,
        "last_id": overlay.last_id,
        "first_depth": overlay.first_depth,
        "last_depth": overlay.last_depth,
        "created_us": to_micros(overlay.created_at),
    }


def candidates(entries: Sequence[Mapping[str, Any]], path_length: int) -> list[Mapping[str, Any]]:
    """Return the index entries that may apply to a path of `path_length` messages.

    Deepest-ending first, and among equal ends the newest first: the first one whose last
    message is on the path is the overlay that applies (the newest covering one). Equal
    times (a clock that stands still, in tests) go by the index, where the later entry
    was added later.
    """
    fitting = [e for e in entries if int(e["last_depth"]) <= path_length]
    return sorted(reversed(fitting), key=lambda e: (-int(e["last_depth"]), -int(e["created_us"])))
