# This file was generated from src/sessionary/stores/_sql_governance.py by tools/async_to_sync.py.
# Do not edit it: edit the source and run `python tools/async_to_sync.py`.
"""Erasure and retention on the SQL servers: methods of `SQLStore`, written once.

The sync twin is generated from this module (see `tools/async_to_sync.py`).

Erasure locks the scope's session rows first (`SELECT ... FOR UPDATE`), as every write
to a session does, so an append under way either commits before the erasure reads the
messages or waits and then finds no session; no message outlives its session.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from sessionary.records import Scope
from sessionary.stores._sql_common import CHUNK

if TYPE_CHECKING:
    from sessionary._sync.stores._sql_driver import Transaction

__all__ = ["SQLGovernance"]


class SQLGovernance:
    """The erasure and retention methods of `SQLStore`, which provides transactions."""

    def _begin(self) -> AbstractContextManager[Transaction]:
        """One transaction (the store's own); the store overrides it."""
        raise NotImplementedError

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
