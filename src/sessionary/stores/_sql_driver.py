"""What `AsyncSQLStore` needs of a server's driver: a pool of transactions.

The PostgreSQL and MySQL drivers (stores/postgres.py, stores/mysql.py) implement these
protocols structurally; the sync twins are generated from this module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

__all__ = ["AsyncDriver", "AsyncTransaction"]


class AsyncTransaction(Protocol):
    """One open transaction of a driver; statements use `%s` placeholders."""

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a statement; return the number of rows it changed.

        In a batched transaction the statement may be sent later (at the latest with the
        commit, its errors raised there) and the result is -1.
        """
        ...

    async def fetch_each(
        self, statements: Sequence[tuple[str, Sequence[Any]]]
    ) -> list[list[tuple[Any, ...]]]:
        """Run queries in order; return each one's rows (batched: in one round trip)."""
        ...

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        """Run a query; return its first row, or None."""
        ...

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run a query; return its rows."""
        ...

    async def insert(self, sql: str, params: Sequence[Any], key: str) -> int:
        """Run an INSERT of one row; return the value of its generated column `key`."""
        ...


class AsyncDriver(Protocol):
    """A connection pool to one database, mapping its exceptions onto sessionary's."""

    unlocks_early: bool
    """Whether `run_alone` can flush after a statement that committed without waiting for
    the flush (`Dialect.unlocked_append_sql`), known once started."""

    async def start(self, setup: Callable[[AsyncTransaction], Any]) -> None:
        """Open the pool and run `setup` (the migrations) once, before any transaction."""
        ...

    async def run_alone(
        self, sql: str, params: Sequence[Any], unlock_early: bool = False
    ) -> tuple[list[tuple[Any, ...]], int]:
        """Run one statement (a script, where the server allows) as a transaction of its own.

        Returns the rows of its last result and the rows it changed (inserted, updated
        or deleted), in total. `unlock_early`, where the driver `unlocks_early`: the
        statement commits without waiting for the flush, releasing its row locks before
        its commit is durable (others queued on those rows go on meanwhile); the driver
        still returns only once the commit is durable.
        """
        ...

    def transaction(self, batched: bool = False) -> AbstractAsyncContextManager[AsyncTransaction]:
        """Return a context that commits on success and rolls back on any exception.

        `batched`: the driver may send statements together, as few round trips as the
        results read allow (see `AsyncTransaction.execute`).
        """
        ...

    async def close(self) -> None:
        """Close every connection."""
        ...
