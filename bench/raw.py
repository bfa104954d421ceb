"""The ceiling: plain ``sqlite3``, one ``BEGIN IMMEDIATE; INSERT; COMMIT`` per message.

Same durability as sessionary's default (WAL, ``synchronous=FULL``) and a row shaped like
sessionary's: integer key, session reference, text id, parent reference, role, JSON body,
creation time. The per-message work a library cannot avoid (a fresh id, a timestamp, the JSON
encoding) happens inside the timed call, as it does in every library. Ids are time-ordered (as
sessionary's UUIDv7 ids are): a random id would land all over the unique index and make the
ceiling sink as the table grows.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.subject import RECENT, AsyncSubject, SyncSubject, sqlite_pragmas
from bench.workload import Turn

__all__ = ["SCHEMA", "WORKER", "RawNormal", "RawOnWorker", "RawSqlite"]

WORKER = "rawworker"  # the key of raw sqlite3 called through a worker thread

SCHEMA = """\
CREATE TABLE sessions (
    pk INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);
CREATE TABLE messages (
    pk INTEGER PRIMARY KEY,
    session_pk INTEGER NOT NULL REFERENCES sessions (pk),
    id TEXT NOT NULL UNIQUE,
    parent_pk INTEGER REFERENCES messages (pk),
    role TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL
);"""

_INSERT = (
    "INSERT INTO messages (session_pk, id, parent_pk, role, body, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)


class RawSqlite(SyncSubject):
    key = "raw"
    label = "raw sqlite3 (sync)"
    filename = "raw.db"
    synchronous = "FULL"

    def open(self) -> None:
        self.conn = sqlite3.connect(self.path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(f"PRAGMA synchronous={self.synchronous}")
        self.conn.executescript(SCHEMA)
        self.conn.execute(
            "INSERT INTO sessions (id, created_at) VALUES (?, ?)", (_new_id(), _now())
        )
        self.session_pk = 1
        self.leaf_pk: int | None = None

    def durability(self) -> dict[str, str]:
        return {**sqlite_pragmas(self.conn), "source": "PRAGMA on its connection (set by us)"}

    def close(self) -> None:
        self.conn.close()

    def fill(self, turns: Sequence[Turn]) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        for turn in turns:
            self._insert(turn)
        self.conn.execute("COMMIT")

    def prepare(self, turn: Turn) -> Turn:
        return turn

    def append(self, item: Turn) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        self._insert(item)
        self.conn.execute("COMMIT")

    def _insert(self, turn: Turn) -> None:
        body = json.dumps({"role": turn.role, "content": turn.text})
        row = (self.session_pk, _new_id(), self.leaf_pk, turn.role, body, _now())
        self.leaf_pk = self.conn.execute(_INSERT, row).lastrowid

    def recent(self) -> int:
        rows = self.conn.execute(
            "SELECT body FROM messages WHERE session_pk = ? ORDER BY pk DESC LIMIT ?",
            (self.session_pk, RECENT),
        ).fetchall()
        return len([json.loads(body) for (body,) in reversed(rows)])

    def full(self) -> int:
        rows = self.conn.execute(
            "SELECT body FROM messages WHERE session_pk = ? ORDER BY pk", (self.session_pk,)
        ).fetchall()
        return len([json.loads(body) for (body,) in rows])


class RawOnWorker(AsyncSubject):
    """Raw sqlite3's own calls, awaited through the worker thread sessionary's async store uses.

    Nothing of sessionary's work is in it: the same connection, statements and durability as
    `RawSqlite`, run on one worker thread of sessionary's runner (`stores._runner`), each call
    handed off from the event loop and its result handed back. So its append rate is the
    ceiling of an async API over the blocking sqlite3 module on this machine, when one call is
    awaited at a time: what the thread hand-off alone leaves of raw's rate.
    """

    key = WORKER
    label = "raw sqlite3 on a worker thread (async)"
    filename = RawSqlite.filename

    def __init__(self, directory: Path, depth: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(directory, depth, loop)
        from sessionary.stores._runner import AsyncRunner  # private: the async store's own

        self.raw = RawSqlite(directory, depth)
        self.runner = AsyncRunner(blocking=True)
        # The connection is made on the worker, so every call must go there too.
        self.on_worker = {
            name: self.runner.bind(getattr(self.raw, name))
            for name in ("open", "fill", "append", "recent", "full", "durability")
        }

    async def aopen(self) -> None:
        await self.on_worker["open"]()

    def durability(self) -> dict[str, str]:
        found: dict[str, str] = self.loop.run_until_complete(self.on_worker["durability"]())
        return found

    async def aclose(self) -> None:
        await self.runner.close(self.raw.close)

    async def afill(self, turns: Sequence[Turn]) -> None:
        await self.on_worker["fill"](turns)

    def prepare(self, turn: Turn) -> Any:
        return turn

    async def append(self, item: Any) -> None:
        await self.on_worker["append"](item)

    async def recent(self) -> int:
        got: int = await self.on_worker["recent"]()
        return got

    async def full(self) -> int:
        got: int = await self.on_worker["full"]()
        return got


def _new_id() -> str:
    """Return 32 hex digits: nanoseconds since the epoch, then 64 random bits."""
    return f"{time.time_ns():016x}{os.urandom(8).hex()}"


def _now() -> str:
    return datetime.now(UTC).isoformat()


class RawNormal(RawSqlite):
    """The same at ``synchronous=NORMAL``: the baseline for sessionary's ``durability=normal``."""

    key = "rawnormal"
    label = "raw sqlite3 (sync, synchronous=NORMAL)"
    baseline = "rawnormal"
    synchronous = "NORMAL"
