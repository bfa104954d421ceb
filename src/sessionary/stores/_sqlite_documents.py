"""The SQLite engine's documents: keyed, versioned JSON with an FTS5 index kept current.

Every write is one `BEGIN IMMEDIATE` transaction, so the version a write checks and
the one it adds cannot be raced by any other thread or process. See `_sqlite_schema`
for the tables.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from sessionary.errors import VersionConflict
from sessionary.model import to_micros
from sessionary.query import Query, to_fts5
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
    list_after,
    owner_key,
    restore_plan,
)
from sessionary.stores._sqlite_index import index_text
from sessionary.stores._sqlite_registry import SQLiteRegistry
from sessionary.stores._textmatch import document_hits, pool_size

__all__ = ["SQLiteDocuments"]

_OWNER = "d.level = ? AND d.tenant = ? AND d.user_id = ? AND d.owner = ?"
_LATEST = (
    f"SELECT {DOCUMENT_COLUMNS} FROM documents AS d JOIN document_versions AS v "
    "ON v.document_pk = d.pk AND v.version = d.version "
)
_VERSIONS = (
    f"SELECT {DOCUMENT_COLUMNS} FROM documents AS d JOIN document_versions AS v "
    "ON v.document_pk = d.pk "
)


class SQLiteDocuments(SQLiteRegistry):
    """Documents at session, user and app level, with every version kept."""

    def _doc_owner(
        self, db: sqlite3.Connection, scope: Scope, level: StateLevel, session_id: str | None
    ) -> OwnerKey:
        owner = owner_key(scope, level, session_id)
        if level == "session":
            self._session_pk(db, scope, owner[3])
        return owner

    def _doc_row(
        self, db: sqlite3.Connection, owner: OwnerKey, namespace: str, key: str
    ) -> tuple[int, int] | None:
        """Return (pk, latest version) of a document, or None."""
        row = db.execute(
            f"SELECT d.pk, d.version FROM documents AS d WHERE {_OWNER} "
            "AND d.namespace = ? AND d.doc_key = ?",
            (*owner, namespace, key),
        ).fetchone()
        return None if row is None else (int(row[0]), int(row[1]))

    def _add_version(
        self,
        db: sqlite3.Connection,
        owner: OwnerKey,
        prepared: PreparedDocument,
        version: int,
        updated_us: int,
    ) -> None:
        """Store one version; the document's row follows its highest version.

        The row keeps the version's text and, for its search index, the text's words
        (naming `search_version` tells the schema's triggers this release wrote them).
        """
        db.execute(
            "INSERT INTO documents (level, tenant, user_id, owner, namespace, doc_key, version, "
            "text) VALUES (?, ?, ?, ?, ?, ?, 0, '') "
            "ON CONFLICT (level, tenant, user_id, owner, namespace, doc_key) DO NOTHING",
            (*owner, prepared.namespace, prepared.key),
        )
        found = self._doc_row(db, owner, prepared.namespace, prepared.key)
        assert found is not None
        pk, latest = found
        db.execute(
            "INSERT INTO document_versions (document_pk, version, body, text, author, "
            "updated_us) VALUES (?, ?, ?, ?, ?, ?)",
            (pk, version, prepared.body_json, prepared.text, prepared.author, updated_us),
        )
        if version > latest:
            db.execute(
                "UPDATE documents SET version = ?1, text = ?2, search = ?3, search_version = ?1 "
                "WHERE pk = ?4",
                (version, prepared.text, index_text(prepared.text), pk),
            )

    def put_document(
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
        prepared = prepare_document(namespace, key, body, text, author, self.max_message_bytes)
        expected = check_expected_version(expected_version)
        with self._write() as db:
            owner = self._doc_owner(db, scope, level, session_id)
            found = self._doc_row(db, owner, prepared.namespace, prepared.key)
            current = 0 if found is None else found[1]
            if expected is not None and expected != current:
                raise VersionConflict(
                    f"document {namespace}/{key:.80} is at version {current}, not {expected}"
                )
            self._add_version(db, owner, prepared, current + 1, self._now_us())
            row = db.execute(
                _LATEST + f"WHERE {_OWNER} AND d.namespace = ? AND d.doc_key = ?",
                (*owner, prepared.namespace, prepared.key),
            ).fetchone()
        return document_from_row(row)

    def get_document(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str,
        key: str,
        version: int | None,
    ) -> Document | None:
        check_document_ref(namespace, key)
        wanted = check_document_version(version)
        with self._read() as db:
            owner = self._doc_owner(db, scope, level, session_id)
            where = f"WHERE {_OWNER} AND d.namespace = ? AND d.doc_key = ?"
            if wanted is None:
                row = db.execute(_LATEST + where, (*owner, namespace, key)).fetchone()
            else:
                row = db.execute(
                    _VERSIONS + where + " AND v.version = ?", (*owner, namespace, key, wanted)
                ).fetchone()
        return None if row is None else document_from_row(row)

    def list_documents(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str | None,
        limit: int,
        cursor: str | None,
    ) -> Page[Document]:
        check_limit(limit)
        after = list_after(namespace, cursor)
        sql = _LATEST + f"WHERE {_OWNER}"
        params: list[Any] = []
        if namespace is not None:
            sql += " AND d.namespace = ?"
            params.append(namespace)
        if after is not None:
            sql += " AND (d.namespace, d.doc_key) > (?, ?)"
            params.extend(after)
        sql += " ORDER BY d.namespace, d.doc_key LIMIT ?"
        with self._read() as db:
            owner = self._doc_owner(db, scope, level, session_id)
            rows = db.execute(sql, (*owner, *params, limit)).fetchall()
        return document_page([document_from_row(r) for r in rows], limit)

    def document_versions(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str,
        key: str,
    ) -> list[Document]:
        check_document_ref(namespace, key)
        with self._read() as db:
            owner = self._doc_owner(db, scope, level, session_id)
            rows = db.execute(
                _VERSIONS + f"WHERE {_OWNER} AND d.namespace = ? AND d.doc_key = ? "
                "ORDER BY v.version",
                (*owner, namespace, key),
            ).fetchall()
        return [document_from_row(r) for r in rows]

    def delete_document(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str,
        key: str,
    ) -> bool:
        check_document_ref(namespace, key)
        with self._write() as db:
            owner = self._doc_owner(db, scope, level, session_id)
            found = self._doc_row(db, owner, namespace, key)
            if found is None:
                return False
            db.execute("DELETE FROM documents WHERE pk = ?", (found[0],))
            return True

    def search_documents(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str | None,
        query: Query,
        limit: int,
    ) -> list[DocumentHit]:
        check_limit(limit)
        if namespace is not None:
            check_namespace(namespace)
        expression = to_fts5(query)
        sql = (
            "SELECT d.namespace, d.doc_key, d.version, d.text FROM documents_fts "
            "JOIN documents AS d ON d.pk = documents_fts.rowid "
            f"WHERE documents_fts MATCH ? AND {_OWNER} AND d.version > 0"
        )
        params: list[Any] = [expression]
        if namespace is not None:
            sql += " AND d.namespace = ?"
        sql += " ORDER BY d.namespace, d.doc_key LIMIT ?"  # candidates, ranked in Python
        with self._read() as db:
            owner = self._doc_owner(db, scope, level, session_id)
            tail = [namespace] if namespace is not None else []
            rows = db.execute(sql, (*params, *owner, *tail, pool_size(limit))).fetchall()
        return document_hits(query, rows, limit)

    def restore_document(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        versions: Sequence[Document],
    ) -> None:
        wanted = check_restored_versions(versions, self.max_message_bytes)
        with self._write() as db:
            owner = self._doc_owner(db, scope, level, session_id)
            if not wanted:
                return
            first = wanted[0][1]
            rows = db.execute(
                _VERSIONS + f"WHERE {_OWNER} AND d.namespace = ? AND d.doc_key = ?",
                (*owner, first.namespace, first.key),
            ).fetchall()
            stored = {doc.version: doc for doc in map(document_from_row, rows)}
            for doc, prepared in restore_plan(stored, wanted):
                self._add_version(db, owner, prepared, doc.version, to_micros(doc.updated_at))
