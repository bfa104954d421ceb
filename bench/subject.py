"""What the runner needs from a library under test: build, append, read, report durability.

A *subject* is one library at one session depth, with its own directory and database file.
Sync and async libraries share one interface: the async base runs each timed batch inside one
event loop and times every ``await`` separately, so the loop's start-up is never measured.
"""

from __future__ import annotations

import asyncio
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from time import perf_counter
from typing import Any, ClassVar

from bench.workload import Turn

__all__ = ["RECENT", "AsyncSubject", "Subject", "SyncSubject", "sqlite_pragmas"]

RECENT = 20  # the `limit` of the short history read
_WAL_PAGES = 1_100  # a little past SQLite's default auto-checkpoint size of 1,000 pages


def sqlite_pragmas(conn: Any) -> dict[str, str]:
    """Read the durability-relevant pragmas of an open ``sqlite3`` connection."""
    journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
    sync_level = conn.execute("PRAGMA synchronous").fetchone()[0]
    names = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
    return {"journal_mode": str(journal).upper(), "synchronous": names.get(sync_level, "?")}


class Subject(ABC):
    """One library at one depth. Subclasses set the class attributes."""

    key: ClassVar[str]  # short name used on the command line
    label: ClassVar[str]  # column title in the report
    api: ClassVar[str]  # "sync" or "async"
    filename: ClassVar[str]  # the SQLite database file, inside ``directory``
    baseline: ClassVar[str] = "raw"  # the raw sqlite3 subject with the same durability

    def __init__(self, directory: Path, depth: int) -> None:
        self.directory = directory
        self.path = directory / self.filename
        self.depth = depth
        self.stored = 0  # messages the subject holds, checked against what reads return
        directory.mkdir(parents=True, exist_ok=True)

    @abstractmethod
    def open(self) -> None: ...

    @abstractmethod
    def fill(self, turns: Sequence[Turn]) -> None:
        """Store ``turns`` as one batch: the fast path used only to build depth."""

    def fill_done(self) -> None:  # noqa: B027 - an optional hook, not an abstract one
        """Finish building (a subject that buffers while filling writes here)."""

    @abstractmethod
    def durability(self) -> dict[str, str]:
        """Return the journal mode and synchronous level the library really runs with."""

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def time_appends(self, turns: Sequence[Turn], deadline: float) -> list[float]:
        """Append each turn in its own call; return seconds per call; stop past ``deadline``."""

    @abstractmethod
    def time_recent(self, count: int, deadline: float) -> list[float]:
        """Read the last ``RECENT`` messages ``count`` times; return seconds per read."""

    @abstractmethod
    def time_full(self, count: int, deadline: float) -> list[float]:
        """Read the whole history ``count`` times; return seconds per read."""

    def settle(self) -> bool:
        """Bring the WAL to its steady state from a second connection; return whether it did.

        A long-running database reuses a WAL file that has already grown to the auto-checkpoint
        size (1,000 pages), and a commit that overwrites WAL space syncs faster than one that
        grows the file. A freshly built small database has not got there yet, a large one has,
        and a library that writes more pages per commit gets there sooner. So every subject
        starts timing the same way: one scratch transaction grows the WAL past the checkpoint
        size, the scratch table is dropped, and a RESTART checkpoint makes the next writer
        start again at the WAL's beginning.
        """
        conn = sqlite3.connect(self.path, isolation_level=None)
        try:
            (page_size,) = conn.execute("PRAGMA page_size").fetchone()
            conn.execute("CREATE TABLE bench_wal_scratch (filler BLOB)")
            conn.execute(
                "INSERT INTO bench_wal_scratch VALUES (zeroblob(?))", (_WAL_PAGES * page_size,)
            )
            conn.execute("DROP TABLE bench_wal_scratch")
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()
        finally:
            conn.close()
        return bool(busy == 0)

    def size_bytes(self) -> int:
        """Return the bytes on disk of everything in the subject's directory."""
        return sum(path.stat().st_size for path in self.directory.iterdir() if path.is_file())

    def _check(self, what: str, got: int, expected: int) -> None:
        if got != expected:
            raise AssertionError(
                f"{self.label} at depth {self.depth}: {what} returned {got}, expected {expected}"
            )


class SyncSubject(Subject):
    """A library called directly from this thread."""

    api = "sync"

    @abstractmethod
    def prepare(self, turn: Turn) -> Any:
        """Build the library's message object (outside the timed call)."""

    @abstractmethod
    def append(self, item: Any) -> None: ...

    @abstractmethod
    def recent(self) -> int:
        """Read the last ``RECENT`` messages; return how many came back."""

    @abstractmethod
    def full(self) -> int:
        """Read the whole history; return how many messages came back."""

    def time_appends(self, turns: Sequence[Turn], deadline: float) -> list[float]:
        samples = []
        for turn in turns:
            item = self.prepare(turn)
            start = perf_counter()
            self.append(item)
            end = perf_counter()
            samples.append(end - start)
            self.stored += 1
            if end > deadline:
                break
        return samples

    def time_recent(self, count: int, deadline: float) -> list[float]:
        return self._time_read(self.recent, min(RECENT, self.stored), count, deadline)

    def time_full(self, count: int, deadline: float) -> list[float]:
        return self._time_read(self.full, self.stored, count, deadline)

    def _time_read(self, read: Any, expected: int, count: int, deadline: float) -> list[float]:
        samples = []
        for _ in range(count):
            start = perf_counter()
            got = read()
            end = perf_counter()
            samples.append(end - start)
            self._check(read.__name__, got, expected)
            if end > deadline:
                break
        return samples


class AsyncSubject(Subject):
    """A library whose calls are awaited; every timed batch runs inside ``loop``."""

    api = "async"

    def __init__(self, directory: Path, depth: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(directory, depth)
        self.loop = loop

    @abstractmethod
    def prepare(self, turn: Turn) -> Any: ...

    @abstractmethod
    async def aopen(self) -> None: ...

    @abstractmethod
    async def afill(self, turns: Sequence[Turn]) -> None: ...

    @abstractmethod
    async def aclose(self) -> None: ...

    @abstractmethod
    async def append(self, item: Any) -> None: ...

    @abstractmethod
    async def recent(self) -> int: ...

    @abstractmethod
    async def full(self) -> int: ...

    def open(self) -> None:
        self.loop.run_until_complete(self.aopen())

    def fill(self, turns: Sequence[Turn]) -> None:
        self.loop.run_until_complete(self.afill(turns))

    def close(self) -> None:
        self.loop.run_until_complete(self.aclose())

    def time_appends(self, turns: Sequence[Turn], deadline: float) -> list[float]:
        return self.loop.run_until_complete(self._time_appends(turns, deadline))

    def time_recent(self, count: int, deadline: float) -> list[float]:
        expected = min(RECENT, self.stored)
        return self.loop.run_until_complete(self._time_read(self.recent, expected, count, deadline))

    def time_full(self, count: int, deadline: float) -> list[float]:
        return self.loop.run_until_complete(
            self._time_read(self.full, self.stored, count, deadline)
        )

    async def _time_appends(self, turns: Sequence[Turn], deadline: float) -> list[float]:
        samples = []
        for turn in turns:
            item = self.prepare(turn)
            start = perf_counter()
            await self.append(item)
            end = perf_counter()
            samples.append(end - start)
            self.stored += 1
            if end > deadline:
                break
        return samples

    async def _time_read(
        self, read: Any, expected: int, count: int, deadline: float
    ) -> list[float]:
        samples = []
        for _ in range(count):
            start = perf_counter()
            got = await read()
            end = perf_counter()
            samples.append(end - start)
            self._check(read.__name__, got, expected)
            if end > deadline:
                break
        return samples
