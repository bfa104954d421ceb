"""sessionary itself: the sync API, the async API, and the sync API at ``durability=normal``."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.subject import RECENT, AsyncSubject, SyncSubject, sqlite_pragmas
from bench.workload import Turn, read_texts

__all__ = ["SessionaryAsync", "SessionaryNormal", "SessionarySync"]


def _message(turn: Turn) -> Any:
    from sessionary import Message

    return Message.user(turn.text) if turn.role == "user" else Message.assistant(turn.text)


class SessionarySync(SyncSubject):
    key = "sync"
    label = "sessionary (sync)"
    filename = "sessionary.db"
    query = ""

    def url(self) -> str:
        return f"sqlite:///{self.path.resolve()}{self.query}"

    def open(self) -> None:
        from sessionary import SessionManager

        self.manager = SessionManager(self.url())
        self.session = self.manager.create(name="bench")

    def durability(self) -> dict[str, str]:
        return _observed_durability(self.manager, self.path)

    def close(self) -> None:
        self.manager.close()

    def fill(self, turns: Sequence[Turn]) -> None:
        self.session.append_all([_message(turn) for turn in turns])

    def prepare(self, turn: Turn) -> Any:
        return _message(turn)

    def append(self, item: Any) -> None:
        self.session.append(item)

    def recent(self) -> int:
        return read_texts(self.session.history(limit=RECENT))

    def full(self) -> int:
        return read_texts(self.session.history())


class SessionaryNormal(SessionarySync):
    key = "normal"
    label = "sessionary (sync, durability=normal)"
    baseline = "rawnormal"
    query = "?durability=normal"


class SessionaryAsync(AsyncSubject):
    key = "async"
    label = "sessionary (async)"
    filename = "sessionary.db"

    def url(self) -> str:
        return f"sqlite:///{self.path.resolve()}"

    async def aopen(self) -> None:
        from sessionary import AsyncSessionManager

        self.manager = AsyncSessionManager(self.url())
        self.session = await self.manager.create(name="bench")

    def durability(self) -> dict[str, str]:
        return _observed_durability(self.manager, self.path)

    async def aclose(self) -> None:
        await self.manager.close()

    async def afill(self, turns: Sequence[Turn]) -> None:
        await self.session.append_all([_message(turn) for turn in turns])

    def prepare(self, turn: Turn) -> Any:
        return _message(turn)

    async def append(self, item: Any) -> None:
        await self.session.append(item)

    async def recent(self) -> int:
        return read_texts(await self.session.history(limit=RECENT))

    async def full(self) -> int:
        return read_texts(await self.session.history())


def _observed_durability(manager: Any, path: Path) -> dict[str, str]:
    """Ask sessionary's own connection; failing that, ask the file (journal mode only)."""
    engine = getattr(getattr(manager, "store", None), "engine", None)
    conn = getattr(engine, "_db", None)  # private: read-only use, to report the truth
    if isinstance(conn, sqlite3.Connection):
        with engine._lock:  # type: ignore[union-attr]
            found = sqlite_pragmas(conn)
        return {**found, "source": "PRAGMA on sessionary's own connection"}
    # journal_mode=WAL is stored in the file, so a second connection sees it; `synchronous`
    # is per connection and cannot be seen from outside.
    probe = sqlite3.connect(path)
    try:
        found = sqlite_pragmas(probe)
    finally:
        probe.close()
    return {
        **found,
        "synchronous": "not observable",
        "source": "journal mode from the file",
    }
