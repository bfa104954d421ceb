"""The first messages of a session continued from a compacted one (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sessionary.compaction.overlays import SUMMARY_HEADER
from sessionary.compaction.planner import is_synthetic, summary_info
from sessionary.ids import new_id
from sessionary.model import Message, TextPart

__all__ = ["CONTINUED_KEY", "continuation"]

CONTINUED_KEY = "sessionary.continued_from"
"""Metadata key of the summary message a continued session starts with."""


def continuation(shown: Sequence[Message], session_id: str) -> list[Message]:
    """Return the messages a continuation of `session_id` starts with.

    `shown` is the old session's visible history after compaction: its summary becomes
    an ordinary message (a new id, the summary in the metadata under ``CONTINUED_KEY``),
    and the messages after it are chained behind it with their ids kept. Without a
    summary (nothing was compacted) the visible history is copied as it is.
    """
    messages: list[Message] = []
    parent: str | None = None
    for message in shown:
        if is_synthetic(message):
            info = summary_info(message)
            copy = Message(
                role=message.role,
                parts=[TextPart(f"{SUMMARY_HEADER}\n\n{info.get('summary', message.text)}")],
                id=new_id(),
                metadata={
                    CONTINUED_KEY: {
                        "session_id": session_id,
                        "compaction_id": info.get("id"),
                        "first_id": info.get("first_id"),
                        "last_id": info.get("last_id"),
                    }
                },
                created_at=message.created_at,
            )
        else:
            copy = replace(message, metadata=dict(message.metadata))
        copy.parent_id = parent
        messages.append(copy)
        parent = copy.id
    return messages
