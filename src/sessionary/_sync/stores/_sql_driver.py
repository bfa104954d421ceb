# This file was generated from src/sessionary/stores/_sql_driver.py by tools/async_to_sync.py.
# Do not edit it: edit the source and run `python tools/async_to_sync.py`.
"""What `SQLStore` needs of a server's driver: a pool of transactions.

The PostgreSQL and MySQL drivers (stores/postgres.py, stores/mysql.py) implement these
protocols structurally; the sync twins are generated from this module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

__all__ = ["Driver", "Transaction"]


class Transaction(Protocol):
    """One open transaction of a driver; statements use `%s` placeholders."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a statement; return the number of rows it changed.

        In a batched transaction the statement may be sent later (at the latest with the
        commit, its errors raised there) and the result is -1.
        """
        ...

    def fetch_each(
        self, statements: Sequence[tuple[str, Sequence[Any]]]
    ) -> list[list[tuple[Any, ...]]]:
        """Run queries in order; return each one's rows (batched: in one round trip)."""
        ...

    def fetchone(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        """Run a query; return its first row, or None."""
        ...

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run a query; return its rows."""
        ...

    def insert(self, sql: str, params: Sequence[Any], key: str) -> int:
        """Run an INSERT of one row; return the value of its generated column `key`."""
        ...


class Driver(Protocol):
    """A connection pool to one database, mapping its exceptions onto sessionary's."""

    unlocks_early: bool
    """Whether `run_alone` can flush after a statement that committed without waiting for
    the flush (`Dialect.unlocked_append_sql`), known once started."""

    def start(self, setup: Callable[[Transaction], Any]) -> None:
        """Open the pool and run `setup` (the migrations) once, before any transaction."""
        ...

    def run_alone(
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

    def transaction(self, batched: bool = False) -> AbstractContextManager[Transaction]:
        """Return a context that commits on success and rolls back on any exception.

        `batched`: the driver may send statements together, as few round trips as the
        results read allow (see `Transaction.execute`).
        """
        ...

    def close(self) -> None:
        """Close every connection."""
        ...
