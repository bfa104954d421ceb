"""Identifiers: generated ids are time-ordered; caller ids are checked before use.

Generated ids are UUIDv7 strings: the first 48 bits are the Unix time in milliseconds,
so ids sort by creation time, and a per-process counter keeps ids made within one
millisecond in order too.
"""

from __future__ import annotations

import os
import re
import threading
import time

from sessionary.errors import InvalidId

__all__ = ["MAX_ID_LENGTH", "check_id", "new_id"]

MAX_ID_LENGTH = 128
_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*\Z")

_lock = threading.Lock()
_last_ms = 0
_counter = 0
_VERSION_BITS = (0x7 << 76) | (0b10 << 62)
"""The UUID's version (7) and variant (RFC 4122) fields."""
_RANDOM_MASK = (1 << 62) - 1


def new_id() -> str:
    """Return a new time-ordered id (a UUIDv7 string), monotonic within this process."""
    global _last_ms, _counter
    entropy = int.from_bytes(os.urandom(10), "big")  # one read: a counter's start, then 62 bits
    with _lock:
        now_ms = time.time_ns() // 1_000_000
        if now_ms <= _last_ms:
            _counter += 1
            if _counter > 0xFFF:  # 4096 ids in one millisecond: borrow the next one
                _last_ms += 1
                _counter = 0
            now_ms = _last_ms
        else:
            _last_ms = now_ms
            _counter = (entropy >> 64) & 0x3FF
        counter = _counter
    value = (now_ms << 80) | (counter << 64) | _VERSION_BITS | (entropy & _RANDOM_MASK)
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def check_id(value: object, what: str = "id") -> str:
    """Return `value` if it is a usable id, else raise `InvalidId`.

    An id is 1 to 128 characters of letters, digits, `_`, `.` and `-`, starting with a
    letter or digit. Separators such as `:` and `/` are refused so that an id can never
    reach into another key's namespace.

    Args:
        value: The candidate id.
        what: What the id names, for the error message.

    Raises:
        InvalidId: If `value` is not a usable id.
    """
    if not isinstance(value, str):
        raise InvalidId(f"{what} must be a string, not {type(value).__name__}")
    if not value or len(value) > MAX_ID_LENGTH:
        raise InvalidId(f"{what} must be 1 to {MAX_ID_LENGTH} characters long, got {len(value)}")
    if not _ID_PATTERN.match(value):
        raise InvalidId(
            f"{what} {value!r} may hold only letters, digits, '_', '.' and '-', "
            "and must start with a letter or digit"
        )
    return value
