"""Documents on the SQL servers: the document methods of `AsyncSQLStore`, written once.

The sync twin is generated from this module (see `tools/async_to_sync.py`).

Layout (both servers): `documents` holds one row per document, keyed by its owner,
namespace and the SHA-256 of its key, with its latest version number and text (what
search indexes); `document_versions` one row per version. A write locks the document's
row (`SELECT ... FOR UPDATE`, the row seeded at version 0 first if missing) so writers
on any connection, process or machine queue on it: the version a write checks and the
one it adds cannot be raced, and no number is lost or given twice. A write to a session's
document also share-locks the session's row, so it cannot slip in beside a
`delete_session` and leave a document behind.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from sessionary.errors import SessionNotFound, StoreError, VersionConflict
from sessionary.model import to_micros
from sessionary.query import Query
from sessionary.records import Document, DocumentHit, Page, Scope, StateLevel
from sessionary.stores._common import (
    PreparedDocument,
    check_document_ref,
    check_document_version,
    check_expected_version,
    check_limit,
    check_namespace,
    check_restored_versions,
    prepare_document,
)
from sessionary.stores._documents import (
    DOCUMENT_COLUMNS,
    OwnerKey,
    document_from_row,
    document_page,
    key_hash,
    list_after,
    owner_key,
    restore_plan,
)
from sessionary.stores._sql_common import EXPIRY_COLUMNS, SCOPED, Dialect, expired_row

if TYPE_CHECKING:
    from sessionary.stores._sql_driver import AsyncTransaction

__all__ = ["AsyncSQLDocuments"]

_OWNER = "d.level = %s AND d.tenant = %s AND d.user_id = %s AND d.owner = %s"
_ONE = f"{_OWNER} AND d.namespace = %s AND d.key_hash = %s"
_LATEST = (
    f"SELECT {DOCUMENT_COLUMNS} FROM documents AS d JOIN document_versions AS v "
    "ON v.document_pk = d.pk AND v.version = d.version "
)
_VERSIONS = (
    f"SELECT {DOCUMENT_COLUMNS} FROM documents AS d JOIN document_versions AS v "
    "ON v.document_pk = d.pk "
)
_SEED_COLUMNS = (
    "level", "tenant", "user_id", "owner", "namespace", "doc_key", "key_hash", "version",
    "text", "search",
)  # fmt: skip
_SESSION_DOCUMENTS = "level = 'session' AND tenant = %s AND user_id = %s AND owner = %s"


class AsyncSQLDocuments:
    """The document methods of `AsyncSQLStore`, which provides the transactions."""

    max_message_bytes: int
    _dialect: Dialect

    def _begin(self) -> AbstractAsyncContextManager[AsyncTransaction]:
        """One transaction (the store's own); the store overrides it."""
        raise NotImplementedError

    async def _read_alone(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """One query as a transaction of its own (the store's own); the store overrides it."""
        raise NotImplementedError

    def _now_us(self) -> int:
        """The store's clock now, in microseconds; the store overrides it."""
        raise NotImplementedError

    async def _doc_owner(
        self,
        tx: AsyncTransaction,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        lock: bool = False,
    ) -> OwnerKey:
        """Who owns a document; a session's must exist (and is share-locked for a write)."""
        owner = owner_key(scope, level, session_id)
        if level == "session":
            suffix = self._dialect.share_lock if lock else ""
            row = await tx.fetchone(
                f"SELECT pk, {EXPIRY_COLUMNS} FROM sessions WHERE {SCOPED}{suffix}",
                (scope.tenant, scope.user, owner[3]),
            )
            if row is None or expired_row(row[1:], self._now_us()):
                raise SessionNotFound(f"no session {owner[3]!r} in this scope")
        return owner

    async def _lock_document(
        self, tx: AsyncTransaction, owner: OwnerKey, namespace: str, key: str
    ) -> tuple[int, int]:
        """Lock a document's row, made at version 0 if missing; return (pk, version)."""
        seed = self._dialect.insert_ignore("documents", _SEED_COLUMNS)
        digest = key_hash(key)
        params = (*owner, namespace, self._dialect.key_param(key), digest, 0, "", "")
        for _ in range(3):  # a concurrent delete may remove the row between the two
            await tx.execute(seed, params)
            row = await tx.fetchone(
                f"SELECT d.pk, d.version FROM documents AS d WHERE {_ONE} FOR UPDATE",
                (*owner, namespace, digest),
            )
            if row is not None:
                return int(row[0]), int(row[1])
        raise StoreError(f"document {namespace}/{key:.80} kept vanishing while being written")

    async def _add_version(
        self,
        tx: AsyncTransaction,
        pk: int,
        latest: int,
        prepared: PreparedDocument,
        version: int,
        updated_us: int,
    ) -> None:
        """Store one version; the document's row follows its highest version."""
        await tx.execute(
            "INSERT INTO document_versions (document_pk, version, body, text, author, "
            "updated_us) VALUES (%s, %s, %s, %s, %s, %s)",
            (pk, version, prepared.body_json, prepared.text, prepared.author, updated_us),
        )
        if version > latest:
            await tx.execute(
                "UPDATE documents SET version = %s, text = %s, search = %s WHERE pk = %s",
                (version, prepared.text, self._dialect.index_text(prepared.text), pk),
            )

    async def _delete_session_documents(
        self, tx: AsyncTransaction, scope: Scope, session_id: str
    ) -> None:
        """Delete a session's documents with their versions (inside `delete_session`)."""
        owner = (scope.tenant, scope.user, session_id)
        await tx.execute(
            "DELETE FROM document_versions WHERE document_pk IN "
            f"(SELECT pk FROM documents WHERE {_SESSION_DOCUMENTS})",
            owner,
        )
        await tx.execute(f"DELETE FROM documents WHERE {_SESSION_DOCUMENTS}", owner)

    async def put_document(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str,
        key: str,
        body: dict[str, Any],
        text: str,
        author: str,
        expected_version: int | None,
    ) -> Document:
        """Write a new version of a document and return it (see `AsyncStore`)."""
        prepared = prepare_document(namespace, key, body, text, author, self.max_message_bytes)
        expected = check_expected_version(expected_version)
        updated = self._now_us()
        async with self._begin() as tx:
            owner = await self._doc_owner(tx, scope, level, session_id, lock=True)
            pk, current = await self._lock_document(tx, owner, prepared.namespace, prepared.key)
            if expected is not None and expected != current:
                raise VersionConflict(
                    f"document {namespace}/{key:.80} is at version {current}, not {expected}"
                )
            await self._add_version(tx, pk, current, prepared, current + 1, updated)
        return prepared.stored(current + 1, updated)

    async def get_document(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str,
        key: str,
        version: int | None,
    ) -> Document | None:
        """Return a document's latest version (or the given one), or None."""
        check_document_ref(namespace, key)
        wanted = check_document_version(version)
        owner = owner_key(scope, level, session_id)
        params: tuple[Any, ...] = (*owner, namespace, key_hash(key))
        if wanted is None:
            sql = _LATEST + f"WHERE {_ONE} AND d.version > 0"
        else:
            sql, params = _VERSIONS + f"WHERE {_ONE} AND v.version = %s", (*params, wanted)
        if level != "session":
            rows = await self._read_alone(sql, params)
            return document_from_row(rows[0]) if rows else None
        # The session's row and the document in one statement: one round trip.
        rows = await self._read_alone(
            f"SELECT s.pk, found.* FROM sessions AS s LEFT JOIN ({sql}) AS found ON 1 = 1 "
            "WHERE s.tenant = %s AND s.user_id = %s AND s.id = %s",
            (*params, scope.tenant, scope.user, owner[3]),
        )
        if not rows:
            raise SessionNotFound(f"no session {owner[3]!r} in this scope")
        return None if rows[0][1] is None else document_from_row(rows[0][1:])

    async def list_documents(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str | None,
        limit: int,
        cursor: str | None,
    ) -> Page[Document]:
        """Return latest versions ordered by (namespace, key); namespace None lists all."""
        check_limit(limit)
        after = list_after(namespace, cursor)
        sql = _LATEST + f"WHERE {_OWNER} AND d.version > 0"
        params: list[Any] = []
        if namespace is not None:
            sql += " AND d.namespace = %s"
            params.append(namespace)
        if after is not None:
            sql += " AND (d.namespace > %s OR (d.namespace = %s AND d.doc_key > %s))"
            params += [after[0], after[0], self._dialect.key_param(after[1])]
        sql += " ORDER BY d.namespace, d.doc_key LIMIT %s"
        async with self._begin() as tx:
            owner = await self._doc_owner(tx, scope, level, session_id)
            rows = await tx.fetchall(sql, (*owner, *params, limit))
        return document_page([document_from_row(r) for r in rows], limit)

    async def document_versions(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str,
        key: str,
    ) -> list[Document]:
        """Return every stored version of a document, oldest first ([] if none)."""
        check_document_ref(namespace, key)
        async with self._begin() as tx:
            owner = await self._doc_owner(tx, scope, level, session_id)
            rows = await tx.fetchall(
                _VERSIONS + f"WHERE {_ONE} ORDER BY v.version", (*owner, namespace, key_hash(key))
            )
        return [document_from_row(r) for r in rows]

    async def delete_document(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str,
        key: str,
    ) -> bool:
        """Delete a document with all its versions; return whether it existed."""
        check_document_ref(namespace, key)
        async with self._begin() as tx:
            owner = await self._doc_owner(tx, scope, level, session_id, lock=True)
            row = await tx.fetchone(
                f"SELECT d.pk, d.version FROM documents AS d WHERE {_ONE} FOR UPDATE",
                (*owner, namespace, key_hash(key)),
            )
            if row is None:
                return False
            await tx.execute("DELETE FROM document_versions WHERE document_pk = %s", (row[0],))
            await tx.execute("DELETE FROM documents WHERE pk = %s", (row[0],))
        return int(row[1]) > 0

    async def search_documents(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str | None,
        query: Query,
        limit: int,
    ) -> list[DocumentHit]:
        """Return the best matches for `query` among latest versions, best first."""
        check_limit(limit)
        if namespace is not None:
            check_namespace(namespace)
        async with self._begin() as tx:
            owner = await self._doc_owner(tx, scope, level, session_id)
            sql, params = self._dialect.document_search_sql(owner, namespace, query, limit)
            rows = await tx.fetchall(sql, params)
        return self._dialect.document_hits(rows, query, limit)

    async def restore_document(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        versions: Sequence[Document],
    ) -> None:
        """Write a document's versions exactly as given; equal stored ones are skipped."""
        wanted = check_restored_versions(versions, self.max_message_bytes)
        async with self._begin() as tx:
            owner = await self._doc_owner(tx, scope, level, session_id, lock=True)
            if not wanted:
                return
            first = wanted[0][1]
            pk, latest = await self._lock_document(tx, owner, first.namespace, first.key)
            rows = await tx.fetchall(_VERSIONS + "WHERE d.pk = %s", (pk,))
            stored = {doc.version: doc for doc in map(document_from_row, rows)}
            for doc, prepared in restore_plan(stored, wanted):
                updated = to_micros(doc.updated_at)
                await self._add_version(tx, pk, latest, prepared, doc.version, updated)
                latest = max(latest, doc.version)
