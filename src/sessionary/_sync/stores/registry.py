# This file was generated from src/sessionary/stores/registry.py by tools/async_to_sync.py.
# Do not edit it: edit the source and run `python tools/async_to_sync.py`.
"""Opening a store by URL; backends are imported only when their scheme is used.

| URL | backend |
| --- | --- |
| `sqlite:///relative/path.db`, `sqlite:////absolute/path.db`, or a plain path | SQLite file |
| `sqlite:///:memory:` | SQLite in memory (private to the store) |
| `memory://` / `memory://NAME` | in-process memory (private / shared by name) |

SQLite options go in the query string: `durability=full|normal`, `busy_timeout=SECONDS`,
`max_message_bytes=N`. `sessionary.stores.urls` parses URLs without opening anything.
"""

from __future__ import annotations

from sessionary._sync.stores.adapter import wrap_engine
from sessionary._sync.stores.base import Store
from sessionary.stores.urls import parse_store_url

__all__ = ["open_store"]


def open_store(url: str) -> Store:
    """Open the store a URL names.

    Args:
        url: `sqlite:///path.db`, `memory://`, or a plain file path (SQLite).

    Raises:
        InvalidURL: If the URL is malformed, has unknown options, or names no backend.
        StoreUnavailable: If the backend cannot be opened.
    """
    parsed = parse_store_url(url)
    if parsed.scheme == "memory":
        from sessionary.stores.memory import open_memory_engine

        return wrap_engine(open_memory_engine(parsed.location, **parsed.options))  # type: ignore[arg-type]
    from sessionary.stores.sqlite import SQLiteEngine

    return wrap_engine(SQLiteEngine(parsed.location, **parsed.options))  # type: ignore[arg-type]
