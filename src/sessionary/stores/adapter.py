"""Adapts a backend to the store protocol: the seam that owns a store's loop affinity.

Engines (the in-memory and SQLite backends) do their work synchronously; `wrap_engine`
forwards each protocol method to the engine through a runner, which for async code is
the engine's own worker thread. Stores on a server (SQL servers, Redis) speak, in async
code, through drivers bound to one event loop; `wrap_store` runs such a store on a loop
of its own (see `sessionary.stores._home_loop`), so that every store answers on whatever
loop calls it, in any thread. Either way one store call is one hand-over, and a closed
store refuses calls with `Closed`. The sync twin of this module is generated; its
runners call the engine or store directly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from sessionary.errors import Closed
from sessionary.retention import Clock, system_clock
from sessionary.stores._home_loop import AsyncHomeLoop
from sessionary.stores._runner import AsyncRunner
from sessionary.stores.base import AsyncStore

__all__ = ["STORE_METHODS", "AsyncEngineStore", "AsyncLoopStore", "wrap_engine", "wrap_store"]

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
    "get_path_and_document",
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
    "erase",
    "sweep",
)


QUICK_LIMIT = 200
"""A path read of at most this many messages counts as quick."""


def _always(*args: Any) -> bool:
    del args
    return True


def _short_path(scope: Any, session_id: str, leaf: str | None, limit: int | None) -> bool:
    del scope, session_id, leaf
    return isinstance(limit, int) and limit <= QUICK_LIMIT


def _short_path_and_document(
    scope: Any, session_id: str, leaf: str | None, limit: int | None, *document: str
) -> bool:
    del document
    return _short_path(scope, session_id, leaf, limit)


QUICK_READS: dict[str, Callable[..., bool]] = {
    "get_session": _always,
    "get_message": _always,
    "get_path": _short_path,
    "get_path_and_document": _short_path_and_document,
    "get_path_length": _always,
    "get_state": _always,
    "get_document": _always,
}
"""Reads of a row or a bounded path: inline when the engine is idle (see `AsyncRunner`)."""


class AsyncEngineStore:
    """A store whose methods run a synchronous engine's methods of the same names.

    Each protocol method is bound per instance by the runner: the async runner wraps the
    engine's method in a coroutine; the sync runner hands back the engine's own method,
    so a sync call costs nothing over calling the engine.
    """

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.capabilities: frozenset[str] = engine.capabilities
        self.max_message_bytes: int = engine.max_message_bytes
        # What the engine stamps and expires by; what sits above it (compaction) stamps too.
        self.clock: Clock = getattr(engine, "clock", system_clock)
        self._runner = AsyncRunner(engine.blocking, getattr(engine, "inline_lock", None))
        for name in STORE_METHODS:
            setattr(self, name, self._runner.bind(getattr(engine, name), QUICK_READS.get(name)))

    async def close(self) -> None:
        """Close the engine and stop its worker; idempotent, from any loop or thread."""
        await self._runner.close(self.engine.close)
        _refuse_calls(self)

    async def __aenter__(self) -> AsyncEngineStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


class AsyncLoopStore:
    """A store whose driver is bound to one event loop, on a loop of its own.

    Its runner builds the store and hands each call to it: for async code on the store's
    own loop, for sync code directly (sync drivers are not bound to a loop). Other
    attributes of the store (a backend's own methods, such as Redis's `roll_up`) are
    reached through this object too.

    Args:
        open_store: Builds the store, without I/O (again in a forked child).
    """

    def __init__(self, open_store: Callable[[], AsyncStore]) -> None:
        self._home = AsyncHomeLoop(open_store)
        store = self._home.resident
        self.capabilities: frozenset[str] = store.capabilities
        self.max_message_bytes: int = store.max_message_bytes
        for name in STORE_METHODS:
            setattr(self, name, self._home.bind(name))
        self._home.close_with(self)

    def __getattr__(self, name: str) -> Any:
        if name == "_home" or name.startswith("__"):
            raise AttributeError(name)
        return self._home.attribute(name)

    async def close(self) -> None:
        """Close the store's connections; idempotent, from any loop or thread."""
        await self._home.close()
        _refuse_calls(self)

    async def __aenter__(self) -> AsyncLoopStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


async def _refused(*args: Any) -> Any:
    raise Closed("the store is closed; open a new one")


def _refuse_calls(store: object) -> None:
    """After close: every protocol method raises `Closed` without reaching the backend."""
    for name in STORE_METHODS:
        setattr(store, name, _refused)


def wrap_engine(engine: Any) -> AsyncStore:
    """Return `engine` behind the store protocol."""
    return cast(AsyncStore, AsyncEngineStore(engine))


def wrap_store(open_store: Callable[[], AsyncStore]) -> AsyncStore:
    """Return the store `open_store` builds, run on a loop of its own (see `AsyncLoopStore`)."""
    return cast(AsyncStore, AsyncLoopStore(open_store))
