# This file was generated from src/sessionary/stores/adapter.py by tools/async_to_sync.py.
# Do not edit it: edit the source and run `python tools/async_to_sync.py`.
"""Adapts a synchronous engine to the store protocol.

Engines (the in-memory and SQLite backends) do their work synchronously; this adapter
forwards each protocol method to the engine through a runner, which for async code is
the engine's own worker thread. The sync twin of this module is generated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from sessionary._sync.stores.base import Store
from sessionary.stores._runner import Runner

__all__ = ["STORE_METHODS", "EngineStore", "wrap_engine"]

STORE_METHODS = (
    "create_session",
    "get_session",
    "list_sessions",
    "update_session",
    "delete_session",
    "append",
    "update_message",
    "delete_message",
    "delete_messages",
    "clear_messages",
    "get_message",
    "get_path",
    "get_children",
    "get_path_length",
    "set_head",
    "page_messages",
    "search",
    "get_state",
    "update_state",
    "import_session",
    "restore_state",
    "list_scopes",
    "put_document",
    "get_document",
    "list_documents",
    "document_versions",
    "delete_document",
    "search_documents",
    "restore_document",
)


QUICK_LIMIT = 200
"""A path read of at most this many messages counts as quick."""


def _always(*args: Any) -> bool:
    del args
    return True


def _short_path(scope: Any, session_id: str, leaf: str | None, limit: int | None) -> bool:
    del scope, session_id, leaf
    return isinstance(limit, int) and limit <= QUICK_LIMIT


QUICK_READS: dict[str, Callable[..., bool]] = {
    "get_session": _always,
    "get_message": _always,
    "get_path": _short_path,
    "get_path_length": _always,
    "get_state": _always,
    "get_document": _always,
}
"""Reads of a row or a bounded path: inline when the engine is idle (see `Runner`)."""


class EngineStore:
    """A store whose methods run a synchronous engine's methods of the same names.

    Each protocol method is bound per instance by the runner: the async runner wraps the
    engine's method in a coroutine; the sync runner hands back the engine's own method,
    so a sync call costs nothing over calling the engine.
    """

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.capabilities: frozenset[str] = engine.capabilities
        self.max_message_bytes: int = engine.max_message_bytes
        self._runner = Runner(engine.blocking, getattr(engine, "inline_lock", None))
        for name in STORE_METHODS:
            setattr(self, name, self._runner.bind(getattr(engine, name), QUICK_READS.get(name)))

    def close(self) -> None:
        """Close the engine and stop its worker."""
        self._runner.close(self.engine.close)

    def __enter__(self) -> EngineStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def wrap_engine(engine: Any) -> Store:
    """Return `engine` behind the store protocol."""
    return cast(Store, EngineStore(engine))
