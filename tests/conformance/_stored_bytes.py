"""Everything a store holds, as text, read past sessionary with each backend's own client.

For checking what reaches the disk or the server (encryption at rest). SQLite is read
as the bytes of its files (free pages and the WAL included); the servers through
`_raw_dump`. The in-memory store has no bytes of its own: its raw form is what a plain
store object hands back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _raw_dump import raw_dump

import sessionary


def raw_text(url: str, plain: Any) -> str:
    """Return every stored value of the store at `url` (`plain`: its unencrypted store)."""
    kind = url.split(":", 1)[0]
    if kind == "memory":
        return _memory(plain)
    if kind == "sqlite":
        return _sqlite(url)
    return "\n".join(raw_dump(url, sessionary.SessionManager(plain)))


def _memory(plain: Any) -> str:
    manager = sessionary.SessionManager(plain)
    pieces = [json.dumps(list(manager.export(i.id)), default=str) for i in manager.list().items]
    for level in ("app", "user"):
        pieces.append(json.dumps(plain.get_state(manager.scope, level, None).data))
        for doc in plain.list_documents(manager.scope, level, None, None, 500, None).items:
            pieces.append(json.dumps([doc.body, doc.text]))
    return "\n".join(pieces)


def _sqlite(url: str) -> str:
    path = Path(url.removeprefix("sqlite:///").split("?")[0])
    blobs = [p.read_bytes() for p in (path, Path(f"{path}-wal")) if p.exists()]
    return "\n".join(b.decode("utf-8", "replace") for b in blobs)
