"""Keys for the key-value layer: checking them, ordering them, and scoping them (pure).

Keys are strings compared by code point, which is also the byte order of their UTF-8
encoding, so every driver (a dict, SQLite's BINARY collation, Redis's lexicographic
sorted sets) lists them in the same order. `:` is the separator between key parts.
"""

from __future__ import annotations

from sessionary.errors import InvalidInput

__all__ = [
    "MAX_KEY_LENGTH",
    "SEPARATOR",
    "check_key",
    "check_prefix",
    "check_value",
    "prefix_end",
    "tenant_prefix",
]

SEPARATOR = ":"
MAX_KEY_LENGTH = 4096
_LAST = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)


def check_key(key: object, what: str = "key") -> str:
    """Return `key` if it is a usable key: a non-empty string of valid Unicode.

    Raises:
        InvalidInput: If it is not.
    """
    if not isinstance(key, str):
        raise InvalidInput(f"a {what} must be a string, not {type(key).__name__}")
    if not key or len(key) > MAX_KEY_LENGTH:
        raise InvalidInput(f"a {what} must be 1 to {MAX_KEY_LENGTH} characters long")
    _check_unicode(key, what)
    return key


def check_prefix(prefix: object) -> str:
    """Return `prefix` if it is a string of valid Unicode (empty lists every key).

    Raises:
        InvalidInput: If it is not.
    """
    if not isinstance(prefix, str):
        raise InvalidInput(f"a key prefix must be a string, not {type(prefix).__name__}")
    _check_unicode(prefix, "key prefix")
    return prefix


def check_value(value: object) -> str:
    """Return `value` if it is a string of valid Unicode (what drivers store).

    Raises:
        InvalidInput: If it is not.
    """
    if not isinstance(value, str):
        raise InvalidInput(f"a value must be a string, not {type(value).__name__}")
    _check_unicode(value, "value")
    return value


def _check_unicode(text: str, what: str) -> None:
    try:
        text.encode()
    except UnicodeEncodeError:
        raise InvalidInput(f"a {what} holds a lone surrogate (not valid Unicode)") from None


def prefix_end(prefix: str) -> str | None:
    """Return the smallest string greater than every string that starts with `prefix`.

    None means there is no such string (the prefix is empty or all U+10FFFF): the range
    of keys with that prefix is unbounded above.
    """
    while prefix and ord(prefix[-1]) == _LAST:
        prefix = prefix[:-1]
    if not prefix:
        return None
    point = ord(prefix[-1]) + 1
    if point in _SURROGATES:
        point = _SURROGATES.stop
    return prefix[:-1] + chr(point)


def tenant_prefix(tenant: object) -> str:
    """Return the key prefix of a tenant's namespace: `tenant:<length>:<tenant>:`.

    The length makes the prefixes of two different tenants never prefixes of each other,
    whatever characters (separators included) the tenant ids hold: after `tenant:`, the
    digits up to the first `:` fix how many characters the id spans.

    Raises:
        InvalidInput: If the tenant is not a non-empty string of valid Unicode.
    """
    check_key(tenant, "tenant id")
    assert isinstance(tenant, str)
    return f"tenant{SEPARATOR}{len(tenant)}{SEPARATOR}{tenant}{SEPARATOR}"
