"""Rows to records for every SQL backend: session rows, message rows, small helpers."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from sessionary.model import Message, decode_body, from_micros
from sessionary.records import SessionInfo
from sessionary.stores._common import gc_paused

__all__ = [
    "FOREVER",
    "SESSION_COLUMNS",
    "decode_rows",
    "first",
    "message_from_row",
    "now_us",
    "session_from_row",
    "stored_copy",
]

FOREVER = 1 << 62
SESSION_COLUMNS = (
    "pk, id, name, parent_session_id, model, source, metadata, created_us, updated_us, "
    "ended_us, end_reason, input_tokens, output_tokens, cost, "
    "head_id, message_count, version"
)


def now_us() -> int:
    """Return the time now in microseconds since the Unix epoch."""
    return time.time_ns() // 1000


def stored_copy(message: Message, parent_id: str | None) -> Message:
    """Return a shallow copy of `message` that records its parent (cheaper than copy.copy)."""
    stored = object.__new__(Message)
    stored.__dict__.update(message.__dict__)
    stored.parent_id = parent_id
    return stored


def first(row: Sequence[Any]) -> Any:
    """Return a row's first column (a sort key)."""
    return row[0]


def message_from_row(row: Sequence[Any]) -> Message:
    """Decode a (id, role, created_us, data, parent id) row."""
    return decode_body(row[0], row[1], row[2], row[3], row[4])


def decode_rows(rows: Sequence[Sequence[Any]]) -> list[Message]:
    """Decode many (id, role, created_us, data, parent id) rows, the collector paused."""
    with gc_paused():
        return [decode_body(r[0], r[1], r[2], r[3], r[4]) for r in rows]


def session_from_row(row: Sequence[Any]) -> SessionInfo:
    """Decode a row of `SESSION_COLUMNS`."""
    return SessionInfo(
        id=row[1],
        name=row[2],
        parent_session_id=row[3],
        model=row[4],
        source=row[5],
        metadata=json.loads(row[6]),
        created_at=from_micros(row[7]),
        updated_at=from_micros(row[8]),
        ended_at=from_micros(row[9]) if row[9] is not None else None,
        end_reason=row[10],
        input_tokens=row[11],
        output_tokens=row[12],
        cost=row[13],
        head_id=row[14],
        message_count=row[15],
        version=row[16],
    )
