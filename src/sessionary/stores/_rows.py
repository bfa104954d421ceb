"""Rows to records for every SQL backend: session rows, message rows, small helpers."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from sessionary.model import Message, decode_body, from_micros, to_micros
from sessionary.records import Page, Scope, SessionFilter, SessionInfo, decode_cursor, encode_cursor
from sessionary.retention import live_sql
from sessionary.stores._common import gc_paused

__all__ = [
    "FOREVER",
    "SESSION_COLUMNS",
    "decode_rows",
    "first",
    "list_sql",
    "message_from_row",
    "now_us",
    "session_from_row",
    "session_page",
    "stored_copy",
]

FOREVER = 1 << 62
SESSION_COLUMNS = (
    "pk, id, name, parent_session_id, model, source, metadata, created_us, updated_us, "
    "ended_us, end_reason, input_tokens, output_tokens, cost, "
    "head_id, message_count, version, ttl_us, ttl_sliding"
)

_SESSION_WIDTH = len(SESSION_COLUMNS.split(","))


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
        ttl=None if row[17] is None else row[17] / 1_000_000,
        ttl_sliding=bool(row[18]),
    )


def list_sql(
    scope: Scope,
    where: SessionFilter,
    limit: int,
    cursor: str | None,
    mark: str = "%s",
    order: str = "updated_us",
    table: str = "sessions",
    now_us: int | None = None,
    bucket: tuple[str, str] | None = None,
) -> tuple[str, list[Any]]:
    """The statement listing sessions, most recently active first, one row past `limit`.

    `mark` is the driver's placeholder (`%s`, or `?` for sqlite3). `order` is the column
    that ranks activity (SQLite ranks by `active_us`, which it selects after the others).
    `table` is where the rows come from (SQLite reads its `sessions_now` view). With
    `now_us`, sessions expired by then are left out. `bucket` is a coarser ranking column
    that an index keeps in order, and its value for a given `order` value (see
    `Dialect.activity_bucket`): rows are read by it, then sorted by `order` within it.
    """
    clauses = [f"tenant = {mark}", f"user_id = {mark}"]
    params: list[Any] = [scope.tenant, scope.user]
    if now_us is not None:
        clauses.append(live_sql(mark))
        params.append(now_us)
    for column in ("name", "model", "source", "parent_session_id"):
        value = getattr(where, column)
        if value is not None:
            clauses.append(f"{column} = {mark}")
            params.append(value)
    if where.ended is not None:
        clauses.append("end_reason IS NOT NULL" if where.ended else "end_reason IS NULL")
    ranks = order if bucket is None else f"{bucket[0]}, {order}"
    if cursor is not None:
        after_us, after_id = decode_cursor(cursor, int, str)
        after = f"{mark}, {mark}" if bucket is None else f"{bucket[1].format(mark)}, {mark}, {mark}"
        clauses.append(f"({ranks}, id) < ({after})")
        params.extend([after_us, after_id] if bucket is None else [after_us, after_us, after_id])
    columns = SESSION_COLUMNS if order == "updated_us" else f"{SESSION_COLUMNS}, {order}"
    sql = (
        f"SELECT {columns} FROM {table} WHERE {' AND '.join(clauses)} "
        f"ORDER BY {ranks.replace(',', ' DESC,')} DESC, id DESC LIMIT {mark}"
    )
    return sql, [*params, limit + 1]


def session_page(rows: Sequence[Sequence[Any]], limit: int) -> Page[SessionInfo]:
    """A page of sessions from `list_sql`'s rows (one past `limit` means there are more).

    The cursor holds the last row's ranking column: its extra column when `list_sql`
    ranked by another one than `updated_us`.
    """
    items = [session_from_row(r) for r in rows[:limit]]
    last = items[-1] if items and len(rows) > limit else None
    if last is None or last.updated_at is None:
        return Page(items, None)
    row = rows[limit - 1]
    rank = row[len(row) - 1] if len(row) > _SESSION_WIDTH else to_micros(last.updated_at)
    return Page(items, encode_cursor(rank, last.id))
