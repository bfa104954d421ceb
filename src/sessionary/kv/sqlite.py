"""The SQLite driver: one table in one file, shared safely by threads and processes.

Entries live in `kv(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID`, so a prefix listing
is one range scan of the primary key. The file runs in WAL mode with `synchronous=FULL`:
an acknowledged write has reached the disk. `commit` is one `BEGIN IMMEDIATE`
transaction, which takes SQLite's write lock before it reads the expected values, so
compare-and-set holds across every process that opens the file, and a writer that dies
mid-transaction leaves nothing behind (SQLite rolls the journal back).

`SQLiteDriver` is synchronous; `AsyncSQLiteDriver` runs one on a worker thread of its own
so that the event loop never waits on the disk.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from sessionary.kv.keys import check_key, check_prefix, check_value, prefix_end
from sessionary.stores._runner import AsyncRunner
from sessionary.stores._sqlite_fork import Carried
from sessionary.stores._sqlite_rows import store_error

__all__ = ["AsyncSQLiteDriver", "SQLiteDriver"]

_SCHEMA = "CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID"
_UPSERT = "INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = ?2"


class SQLiteDriver(Carried):
    """A key-value driver over one SQLite file; thread-safe and multi-process safe.

    A forked child opens the file again (see `sessionary.stores._sqlite_fork`).
    """

    def __init__(self, path: str, *, busy_timeout: float = 30.0) -> None:
        """Open (and if needed create) the database at `path`.

        Args:
            path: The database file (`:memory:` for a private, temporary one).
            busy_timeout: Seconds to wait for another process's write lock.

        Raises:
            StoreUnavailable: If the file cannot be opened or is not a database.
        """
        self.path = path
        self._lock = threading.RLock()
        self._busy_timeout = busy_timeout
        self._db = self._reconnect()
        self._carry()

    def _reconnect(self) -> sqlite3.Connection:
        """A connection to the file, set up (the table created if missing)."""
        try:
            db = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=self._busy_timeout
            )
        except sqlite3.Error as exc:
            raise store_error(self.path, exc) from exc
        try:
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = FULL")
            db.execute(_SCHEMA)
        except sqlite3.Error as exc:
            db.close()
            raise store_error(self.path, exc) from exc
        return db

    @contextmanager
    def _run(self, begin: str | None = None) -> Iterator[sqlite3.Connection]:
        """Hold the connection; with `begin`, inside one transaction committed on success."""
        with self._lock:
            db = self._db
            try:
                if begin is None:
                    yield db
                    return
                db.execute(begin)
                try:
                    yield db
                    db.execute("COMMIT")
                except BaseException:
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise store_error(self.path, exc) from exc

    def get(self, key: str) -> str | None:
        """Return the value stored under `key`, or None."""
        with self._run() as db:
            row = db.execute("SELECT value FROM kv WHERE key = ?", (check_key(key),)).fetchone()
        return None if row is None else str(row[0])

    def put(self, key: str, value: str) -> None:
        """Store `value` under `key`."""
        with self._run() as db:
            db.execute(_UPSERT, (check_key(key), check_value(value)))

    def delete(self, key: str) -> bool:
        """Remove `key`; return whether it was there."""
        with self._run() as db:
            return db.execute("DELETE FROM kv WHERE key = ?", (check_key(key),)).rowcount > 0

    def list_prefix(self, prefix: str) -> list[tuple[str, str]]:
        """Return every entry whose key starts with `prefix`, in key order."""
        end = prefix_end(check_prefix(prefix))
        sql, args = "SELECT key, value FROM kv WHERE key >= ?", [prefix]
        if end is not None:
            sql, args = sql + " AND key < ?", [prefix, end]
        with self._run() as db:
            rows: list[Any] = db.execute(sql + " ORDER BY key", args).fetchall()
        return [(str(k), str(v)) for k, v in rows]

    def commit(self, expect: Mapping[str, str | None], writes: Mapping[str, str | None]) -> bool:
        """Apply `writes` if every key in `expect` holds its value; see `KVDriver.commit`."""
        puts = [(check_key(k), check_value(v)) for k, v in writes.items() if v is not None]
        deletes = [(check_key(k),) for k, v in writes.items() if v is None]
        checks = [(check_key(k), v) for k, v in expect.items()]
        with self._run("BEGIN IMMEDIATE") as db:
            for key, wanted in checks:
                row = db.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
                if (None if row is None else row[0]) != wanted:
                    return False  # leaving the block commits an empty transaction
            db.executemany("DELETE FROM kv WHERE key = ?", deletes)
            db.executemany(_UPSERT, puts)
        return True

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()
            self._uncarry()


class AsyncSQLiteDriver:
    """The async face of `SQLiteDriver`: calls run in order on a worker thread."""

    def __init__(self, path: str, *, busy_timeout: float = 30.0) -> None:
        """Open (and if needed create) the database at `path`; see `SQLiteDriver`.

        Raises:
            StoreUnavailable: If the file cannot be opened or is not a database.
        """
        self.sync = SQLiteDriver(path, busy_timeout=busy_timeout)
        self._runner = AsyncRunner(blocking=True)

    async def get(self, key: str) -> str | None:
        """Return the value stored under `key`, or None."""
        return await self._runner.run(self.sync.get, key)

    async def put(self, key: str, value: str) -> None:
        """Store `value` under `key`."""
        await self._runner.run(self.sync.put, key, value)

    async def delete(self, key: str) -> bool:
        """Remove `key`; return whether it was there."""
        return await self._runner.run(self.sync.delete, key)

    async def list_prefix(self, prefix: str) -> list[tuple[str, str]]:
        """Return every entry whose key starts with `prefix`, in key order."""
        return await self._runner.run(self.sync.list_prefix, prefix)

    async def commit(
        self, expect: Mapping[str, str | None], writes: Mapping[str, str | None]
    ) -> bool:
        """Apply `writes` if every key in `expect` holds its value; see `AsyncKVDriver.commit`."""
        return await self._runner.run(self.sync.commit, expect, writes)

    async def close(self) -> None:
        """Close the connection and stop the worker thread."""
        await self._runner.close(self.sync.close)
