"""Retention: when a session with a TTL expires, and the clock that says so (pure).

A session may carry a TTL (`SessionInfo.ttl`, seconds). A *sliding* TTL counts from the
session's last activity (`updated_at`: every append, message edit, rename, usage or end
moves it); a *fixed* one from its creation. At `expires_at` the session disappears from
every read (get, list, search, history, state, documents) at once, before any sweeper has
deleted it; `sweep` then deletes it with everything it owns. Expiry is decided by the
store's clock: `system_clock` unless the store (or the manager that opened it) was given
another, e.g. a fake one in tests.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from datetime import UTC, datetime

from sessionary.errors import InvalidInput
from sessionary.model import to_micros
from sessionary.records import SessionInfo

__all__ = [
    "Clock",
    "check_ttl",
    "clock_us",
    "expires_us",
    "is_expired",
    "live_sql",
    "stored_ttl",
    "system_clock",
    "ttl_micros",
]

Clock = Callable[[], datetime]
"""A callable giving the time now, timezone-aware (`system_clock`, or a fake one)."""

MAX_TTL = 100 * 365 * 86400
"""The longest TTL accepted, in seconds (a hundred years)."""


def system_clock() -> datetime:
    """The time now, in UTC."""
    return datetime.now(UTC)


def clock_us(clock: Clock) -> int:
    """The clock's time now, in microseconds since the Unix epoch.

    Raises:
        InvalidInput: If the clock gives something else than an aware datetime.
    """
    if clock is system_clock:  # the common case, on every write: no datetime made
        return time.time_ns() // 1000
    now = clock()
    if not isinstance(now, datetime) or now.tzinfo is None:
        raise InvalidInput(f"a clock must return a timezone-aware datetime, got {now!r}")
    return to_micros(now)


def check_ttl(ttl: object, what: str = "ttl") -> float | None:
    """Return `ttl` as seconds (None: no TTL) if it is a positive number of seconds.

    Raises:
        InvalidInput: If it is not a positive, finite number up to a hundred years.
    """
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int | float):
        raise InvalidInput(f"{what} must be a number of seconds or None, got {ttl!r}")
    if not (math.isfinite(ttl) and 0 < ttl <= MAX_TTL):
        raise InvalidInput(f"{what} must be more than 0 and at most {MAX_TTL} seconds, got {ttl}")
    return float(ttl)


def ttl_micros(ttl: float | None) -> int | None:
    """A TTL in whole microseconds (at least one), as the stores keep it."""
    return None if ttl is None else max(1, round(ttl * 1_000_000))


def stored_ttl(ttl: float | None) -> float | None:
    """A TTL in seconds as a store reads it back: rounded by `ttl_micros`.

    A store keeping seconds (the in-memory one) keeps this, so it reports, and expires
    by, the same TTL as the stores keeping microseconds.
    """
    micros = ttl_micros(ttl)
    return None if micros is None else micros / 1_000_000


def expires_us(created_us: int, updated_us: int, ttl_us: int | None, sliding: bool) -> int | None:
    """When a session expires (None: never), in microseconds since the epoch."""
    if ttl_us is None:
        return None
    return (updated_us if sliding else created_us) + ttl_us


def is_expired(info: SessionInfo, now_us: int) -> bool:
    """Whether a session's row says it had expired at `now_us`."""
    moment = info.expires_at
    return moment is not None and to_micros(moment) <= now_us


def live_sql(mark: str, prefix: str = "") -> str:
    """An SQL condition true for a session row that has not expired at the time `mark` binds.

    `prefix` qualifies the columns (e.g. ``s.``); the row's `updated_us` must be its
    latest activity (SQLite's `sessions_now` view, the SQL servers' `sessions` table).
    """
    p = prefix
    return (
        f"({p}ttl_us IS NULL OR (CASE WHEN {p}ttl_sliding = 1 THEN {p}updated_us "
        f"ELSE {p}created_us END) + {p}ttl_us > {mark})"
    )
