"""The SQLite engine's plumbing: the connection, its settings, migrations, transactions.

Durability: the file runs in WAL mode with `synchronous=FULL` by default, so every
acknowledged write has reached the disk. `durability="normal"` keeps the database
consistent after any crash but may lose the last writes on power loss (not on a process
crash) in exchange for several times the write rate.

Concurrency: every write is one `BEGIN IMMEDIATE` transaction, so writers in any number
of threads and processes are serialised by SQLite's own lock, and whatever a write reads
(a session's head, a state version) cannot change before it commits.

Read-only: `readonly=True` opens the file with SQLite's `mode=ro`, changes no setting and
runs no migration, and refuses a file that is not a sessionary database at the schema
version this code reads, so a reader (e.g. `sessionary ls`) never changes the file it is
pointed at; any write through it fails with `StoreUnavailable`.

No migration: `migrate=False` opens an existing file (`mode=rw`: a missing one is not
created) for reading and writing, and refuses it, unchanged, unless its schema is at
this code's version, as a reader does; the schema is applied by someone else.

Fork: a forked child opens the file again (see `_sqlite_fork`).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

from sessionary.errors import InvalidInput, SchemaError, SessionNotFound
from sessionary.records import Scope
from sessionary.retention import Clock, clock_us, system_clock
from sessionary.stores._common import DEFAULT_MAX_MESSAGE_BYTES
from sessionary.stores._rows import now_us
from sessionary.stores._sqlite_fork import Carried
from sessionary.stores._sqlite_index import register_words
from sessionary.stores._sqlite_rows import store_error
from sessionary.stores._sqlite_schema import FILLS, MIGRATIONS, statements

__all__ = ["SQLiteBase"]

_APPLY_HINT = (
    "migrate=false leaves the schema alone: apply `sessionary schema --print` to it, "
    "or open it once without migrate=false"
)


class SQLiteBase(Carried):
    """One connection to one SQLite file, shared by the threads of one store."""

    def __init__(
        self,
        path: str,
        *,
        durability: str = "full",
        busy_timeout: float = 30.0,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        readonly: bool = False,
        migrate: bool = True,
        clock: Clock = system_clock,
    ) -> None:
        if durability not in ("full", "normal"):
            raise InvalidInput(f"durability must be 'full' or 'normal', not {durability!r}")
        self.path = path
        self.max_message_bytes = max_message_bytes
        self.clock = clock
        self._lock = threading.RLock()
        self._mode = "ro" if readonly else None if migrate else "rw"
        self._busy_timeout = busy_timeout
        self._durability = durability
        self._db = self._connect()
        try:
            if readonly:
                self._check_schema("open it for writing once to migrate it")
            elif not migrate:
                self._check_schema(_APPLY_HINT)
                _configure(self._db, durability)
            else:
                _configure(self._db, durability)
                self._migrate()
        except sqlite3.Error as exc:
            self._db.close()
            raise store_error(path, exc) from exc
        except BaseException:
            self._db.close()
            raise
        self._carry()

    def _connect(self) -> sqlite3.Connection:
        """A new connection to the file, in the mode the store was opened with."""
        path, mode = self.path, self._mode
        try:
            db = sqlite3.connect(
                path if mode is None else f"file:{quote(path)}?mode={mode}",
                uri=mode is not None,
                isolation_level=None,
                check_same_thread=False,
                timeout=self._busy_timeout,
                cached_statements=256,
            )
        except sqlite3.Error as exc:
            raise store_error(path, exc) from exc
        register_words(db)  # what the search indexes hold, for SQL that fills them
        return db

    def _reconnect(self) -> sqlite3.Connection:
        db = self._connect()
        if self._mode != "ro":
            try:
                _configure(db, self._durability)
            except sqlite3.Error as exc:
                db.close()
                raise store_error(self.path, exc) from exc
        return db

    @property
    def inline_lock(self) -> threading.RLock:
        """The lock every engine call holds.

        An async caller may run a short read inline while it is free (see
        `sessionary.stores._runner.AsyncRunner`).
        """
        return self._lock

    def _migrate(self) -> None:
        with self._write() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_us INTEGER NOT NULL)"
            )
            (current,) = db.execute(
                "SELECT coalesce(max(version), 0) FROM schema_migrations"
            ).fetchone()
            latest = MIGRATIONS[-1][0]
            if current > latest:
                raise SchemaError(
                    f"{self.path} has schema version {current}, newer than this sessionary "
                    f"understands ({latest}); upgrade sessionary"
                )
            for version, name, sql in MIGRATIONS:
                if version <= current:
                    continue
                for statement in statements(sql) + statements(FILLS.get(version, "")):
                    db.execute(statement)
                db.execute(
                    "INSERT INTO schema_migrations (version, name, applied_us) VALUES (?, ?, ?)",
                    (version, name, now_us()),
                )

    def _check_schema(self, hint: str) -> None:
        """Refuse, changing nothing, a file that is not at the schema version this code reads.

        `hint` says how to bring an older file up to date.
        """
        with self._read() as db:
            table = db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
            ).fetchone()
            if table is None:
                raise SchemaError(f"{self.path} is not a sessionary database ({hint})")
            (current,) = db.execute(
                "SELECT coalesce(max(version), 0) FROM schema_migrations"
            ).fetchone()
        latest = MIGRATIONS[-1][0]
        if current != latest:
            raise SchemaError(
                f"{self.path} has schema version {current} and this sessionary reads version "
                f"{latest}; {hint}"
                if current < latest
                else f"{self.path} has schema version {current}, newer than this sessionary "
                f"understands ({latest}); upgrade sessionary"
            )

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, holding SQLite's write lock from its first statement.

        Anything that fails, the COMMIT included, rolls the whole transaction back.
        """
        with self._lock:
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
                try:
                    yield db
                    db.execute("COMMIT")
                except BaseException:
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise store_error(self.path, exc) from exc

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: every statement in it sees the same snapshot."""
        with self._lock:
            db = self._db
            try:
                db.execute("BEGIN")
                try:
                    yield db
                finally:
                    if db.in_transaction:
                        db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise store_error(self.path, exc) from exc

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()
            self._uncarry()

    def _now_us(self) -> int:
        """The store's clock now, in microseconds (what writes stamp, what expiry checks)."""
        return clock_us(self.clock)

    def _session_pk(
        self, db: sqlite3.Connection, scope: Scope, session_id: str, live: bool = True
    ) -> int:
        """A session's pk; an expired session counts as missing unless `live` is False."""
        row = db.execute(
            "SELECT pk, ttl_us, ttl_sliding, created_us FROM sessions "
            "WHERE tenant = ? AND user_id = ? AND id = ?",
            (scope.tenant, scope.user, session_id),
        ).fetchone()
        if row is None or (live and row[1] is not None and self._expired(db, row)):
            raise SessionNotFound(f"no session {session_id!r} in this scope")
        return int(row[0])

    def _expired(self, db: sqlite3.Connection, row: Sequence[Any]) -> bool:
        """Whether the session (pk, ttl_us, ttl_sliding, created_us) of `row` has expired."""
        start = row[3]
        if row[2]:  # sliding: from the latest activity, which the view works out
            start = db.execute(
                "SELECT updated_us FROM sessions_now WHERE pk = ?", (row[0],)
            ).fetchone()[0]
        return int(start) + int(row[1]) <= self._now_us()


def _configure(db: sqlite3.Connection, durability: str) -> None:
    db.execute("PRAGMA journal_mode = WAL")
    db.execute(f"PRAGMA synchronous = {durability.upper()}")
    db.execute("PRAGMA foreign_keys = OFF")
    # A delete overwrites what it frees with zeros: SQLite otherwise leaves a deleted
    # row's bytes in free space and freed pages, where an erased user's text would stay
    # readable in the file.
    db.execute("PRAGMA secure_delete = ON")
