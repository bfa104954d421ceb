# This file was generated from src/sessionary/stores/_sql_governance.py by tools/async_to_sync.py.
# Do not edit it: edit the source and run `python tools/async_to_sync.py`.
"""Erasure and retention on the SQL servers: methods of `SQLStore`, written once.

The sync twin is generated from this module (see `tools/async_to_sync.py`).

The sweeper takes a batch of expired sessions with `FOR UPDATE SKIP LOCKED`, so sweepers
in several processes take different sessions and never wait on one another; a session an
append holds is left for the next sweep. Erasure locks the scope's session rows first
(`SELECT ... FOR UPDATE`), as every write to a session does, so an append under way either
commits before the erasure reads the messages or waits and then finds no session; no
message outlives its session.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from sessionary.errors import StoreError, StoreUnavailable
from sessionary.kv._backoff import Backoff
from sessionary.records import Scope
from sessionary.retention import live_sql
from sessionary.stores._common import check_limit
from sessionary.stores._sql_common import CHUNK, STATE_KEY

if TYPE_CHECKING:
    from sessionary._sync.stores._sql_driver import Transaction

__all__ = ["SQLGovernance"]

_RETRIES = 5
"""How often a sweep's batch is tried again after the server broke a deadlock with it."""


class SQLGovernance:
    """The erasure and retention methods of `SQLStore`, which provides transactions."""

    def _begin(self) -> AbstractContextManager[Transaction]:
        """One transaction (the store's own); the store overrides it."""
        raise NotImplementedError

    def _now_us(self) -> int:
        """The store's clock now, in microseconds; the store overrides it."""
        raise NotImplementedError

    def _delete_session_documents(self, tx: Transaction, scope: Scope, session_id: str) -> None:
        """Delete a session's documents; `SQLDocuments` provides it."""
        raise NotImplementedError

    def sweep(self, limit: int) -> int:
        """Delete up to `limit` expired sessions of every scope, with all they own.

        Returns:
            How many sessions were deleted.
        """
        check_limit(limit)
        backoff = Backoff("sweep")
        while True:
            try:
                return self._sweep_batch(limit)
            except StoreUnavailable:
                raise
            except StoreError:
                # MySQL can pick sweepers as deadlock victims; the batch rolled back whole.
                if backoff.attempts >= _RETRIES:
                    raise
                backoff.wait()

    def _sweep_batch(self, limit: int) -> int:
        """One transaction of `sweep`."""
        with self._begin() as tx:
            rows = tx.fetchall(
                "SELECT pk, tenant, user_id, id FROM sessions WHERE ttl_us IS NOT NULL "
                f"AND NOT {live_sql('%s')} LIMIT %s FOR UPDATE SKIP LOCKED",
                (self._now_us(), limit),
            )
            # One session at a time by its keys, as delete_session does: statements over
            # many keys at once made concurrent sweepers deadlock on MySQL.
            for _, tenant, user, session_id in rows:
                tx.execute(
                    f"DELETE FROM states WHERE {STATE_KEY}", ("session", tenant, user, session_id)
                )
                self._delete_session_documents(tx, Scope(tenant, user), session_id)
            _delete_sessions(tx, [int(row[0]) for row in rows])
        return len(rows)

    def erase(self, scope: Scope, whole_tenant: bool) -> int:
        """Delete everything of the scope's user (or with `whole_tenant` its tenant).

        Returns:
            How many sessions were deleted.
        """
        where = "tenant = %s" if whole_tenant else "tenant = %s AND user_id = %s"
        params = (scope.tenant,) if whole_tenant else (scope.tenant, scope.user)
        with self._begin() as tx:
            rows = tx.fetchall(f"SELECT pk FROM sessions WHERE {where} FOR UPDATE", params)
            _delete_sessions(tx, [int(row[0]) for row in rows])
            tx.execute(f"DELETE FROM states WHERE {where}", params)
            tx.execute(
                "DELETE FROM document_versions WHERE document_pk IN "
                f"(SELECT pk FROM documents WHERE {where})",
                params,
            )
            tx.execute(f"DELETE FROM documents WHERE {where}", params)
        return len(rows)


def _delete_sessions(tx: Transaction, pks: list[int]) -> None:
    """Delete locked session rows and their messages (a trigger drops MySQL's index rows)."""
    for start in range(0, len(pks), CHUNK):
        chunk = pks[start : start + CHUNK]
        marks = ", ".join(["%s"] * len(chunk))
        tx.execute(f"DELETE FROM messages WHERE session_pk IN ({marks})", chunk)
        tx.execute(f"DELETE FROM sessions WHERE pk IN ({marks})", chunk)
