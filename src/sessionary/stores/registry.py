"""Opening a store by URL; backends are imported only when their scheme is used.

| URL | backend |
| --- | --- |
| `sqlite:///relative/path.db`, `sqlite:////absolute/path.db`, or a plain path | SQLite file |
| `sqlite:///:memory:` | SQLite in memory (private to the store) |
| `memory://` / `memory://NAME` | in-process memory (private / shared by name) |

SQLite options go in the query string: `durability=full|normal`, `busy_timeout=SECONDS`,
`max_message_bytes=N`.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

from sessionary.errors import InvalidURL
from sessionary.stores.adapter import wrap_engine
from sessionary.stores.base import AsyncStore

__all__ = ["open_async_store"]

_LATER = ("postgresql", "postgres", "mysql", "mariadb", "redis", "rediss")


def _options(query: str, allowed: dict[str, type]) -> dict[str, object]:
    options: dict[str, object] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        kind = allowed.get(key)
        if kind is None:
            raise InvalidURL(f"unknown store option {key!r} (known: {', '.join(sorted(allowed))})")
        try:
            options[key] = kind(value)
        except ValueError:
            raise InvalidURL(
                f"store option {key}={value!r} is not a valid {kind.__name__}"
            ) from None
    return options


def open_async_store(url: str) -> AsyncStore:
    """Open the store a URL names.

    Args:
        url: `sqlite:///path.db`, `memory://`, or a plain file path (SQLite).

    Raises:
        InvalidURL: If the URL is malformed, has unknown options, or names no backend.
        StoreUnavailable: If the backend cannot be opened.
    """
    if not isinstance(url, str) or not url:
        raise InvalidURL(f"a store URL must be a non-empty string, got {url!r}")
    scheme, _, rest = url.partition("://")
    if not rest and "://" not in url:
        scheme, rest = "sqlite", "/" + url
    if scheme == "memory":
        from sessionary.stores.memory import open_memory_engine

        name, _, query = rest.partition("?")
        opts = _options(query, {"max_message_bytes": int})
        return wrap_engine(open_memory_engine(name, **opts))  # type: ignore[arg-type]
    if scheme == "sqlite":
        from sessionary.stores.sqlite import SQLiteEngine

        parts = urlsplit("sqlite://" + rest)
        if parts.netloc:
            raise InvalidURL(f"{url!r}: a sqlite URL has no host; use sqlite:///path.db")
        path = parts.path[1:] if parts.path.startswith("/") else parts.path
        if not path:
            raise InvalidURL(f"{url!r}: no database path; use sqlite:///path.db")
        opts = _options(
            parts.query, {"durability": str, "busy_timeout": float, "max_message_bytes": int}
        )
        return wrap_engine(SQLiteEngine(path, **opts))  # type: ignore[arg-type]
    if scheme in _LATER:
        raise InvalidURL(f"{url!r}: the {scheme} backend is not available in this version")
    raise InvalidURL(f"{url!r}: unknown store scheme {scheme!r}; use sqlite:/// or memory://")
