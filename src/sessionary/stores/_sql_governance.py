"""Erasure and retention on the SQL servers: methods of `AsyncSQLStore`, written once.

The sync twin is generated from this module (see `tools/async_to_sync.py`).

Erasure locks the scope's session rows first (`SELECT ... FOR UPDATE`), as every write
to a session does, so an append under way either commits before the erasure reads the
messages or waits and then finds no session; no message outlives its session.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from sessionary.records import Scope
from sessionary.stores._sql_common import CHUNK

if TYPE_CHECKING:
    from sessionary.stores._sql_driver import AsyncTransaction

__all__ = ["AsyncSQLGovernance"]


class AsyncSQLGovernance:
    """The erasure and retention methods of `AsyncSQLStore`, which provides transactions."""

    def _begin(self) -> AbstractAsyncContextManager[AsyncTransaction]:
        """One transaction (the store's own); the store overrides it."""
        raise NotImplementedError

    async def erase(self, scope: Scope, whole_tenant: bool) -> int:
        """Delete everything of the scope's user (or with `whole_tenant` its tenant).

        Returns:
            How many sessions were deleted.
        """
        where = "tenant = %s" if whole_tenant else "tenant = %s AND user_id = %s"
        params = (scope.tenant,) if whole_tenant else (scope.tenant, scope.user)
        async with self._begin() as tx:
            rows = await tx.fetchall(f"SELECT pk FROM sessions WHERE {where} FOR UPDATE", params)
            await _delete_sessions(tx, [int(row[0]) for row in rows])
            await tx.execute(f"DELETE FROM states WHERE {where}", params)
            await tx.execute(
                "DELETE FROM document_versions WHERE document_pk IN "
                f"(SELECT pk FROM documents WHERE {where})",
                params,
            )
            await tx.execute(f"DELETE FROM documents WHERE {where}", params)
        return len(rows)


async def _delete_sessions(tx: AsyncTransaction, pks: list[int]) -> None:
    """Delete locked session rows and their messages (a trigger drops MySQL's index rows)."""
    for start in range(0, len(pks), CHUNK):
        chunk = pks[start : start + CHUNK]
        marks = ", ".join(["%s"] * len(chunk))
        await tx.execute(f"DELETE FROM messages WHERE session_pk IN ({marks})", chunk)
        await tx.execute(f"DELETE FROM sessions WHERE pk IN ({marks})", chunk)
