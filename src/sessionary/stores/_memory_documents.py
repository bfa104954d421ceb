"""The in-memory engine's documents: the reference behaviour for every other backend.

Versions are kept encoded (the body as JSON), as a database keeps them, so a caller's
later edits to a body never leak in and every read returns a fresh copy.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sessionary.errors import VersionConflict
from sessionary.model import from_micros, to_micros
from sessionary.query import Query
from sessionary.records import Document, DocumentHit, Page, Scope, StateLevel
from sessionary.retention import Clock, clock_us
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
    OwnerKey,
    document_page,
    list_after,
    owner_key,
    restore_plan,
)
from sessionary.stores._textmatch import document_hits, pool_size

__all__ = ["MemoryDocuments"]

_Versions = list["_Version"]


@dataclass(frozen=True, slots=True)
class _Version:
    version: int
    body: str
    text: str
    author: str
    updated_us: int

    def document(self, namespace: str, key: str) -> Document:
        return Document(
            namespace, key, json.loads(self.body), self.version, self.author,
            from_micros(self.updated_us), self.text,
        )  # fmt: skip


class MemoryDocuments:
    """Documents for `MemoryEngine`: per owner, per (namespace, key), a list of versions."""

    max_message_bytes: int
    clock: Clock
    _lock: threading.RLock
    _docs: dict[OwnerKey, dict[tuple[str, str], _Versions]]

    def _session(self, scope: Scope, session_id: str) -> Any:
        """The engine's session lookup (raising `SessionNotFound`); the engine overrides it."""
        raise NotImplementedError

    def _doc_owner(self, scope: Scope, level: StateLevel, session_id: str | None) -> OwnerKey:
        owner = owner_key(scope, level, session_id)
        if level == "session":
            self._session(scope, owner[3])
        return owner

    def _versions(self, owner: OwnerKey, namespace: str, key: str) -> _Versions:
        return self._docs.get(owner, {}).get((namespace, key), [])

    def _store_version(
        self, owner: OwnerKey, prepared: PreparedDocument, version: int, updated_us: int
    ) -> _Version:
        row = _Version(version, prepared.body_json, prepared.text, prepared.author, updated_us)
        versions = self._docs.setdefault(owner, {}).setdefault(
            (prepared.namespace, prepared.key), []
        )
        versions.append(row)
        versions.sort(key=lambda v: v.version)
        return row

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
        with self._lock:
            owner = self._doc_owner(scope, level, session_id)
            versions = self._versions(owner, prepared.namespace, prepared.key)
            current = versions[-1].version if versions else 0
            if expected is not None and expected != current:
                raise VersionConflict(
                    f"document {namespace}/{key:.80} is at version {current}, not {expected}"
                )
            row = self._store_version(owner, prepared, current + 1, clock_us(self.clock))
            return row.document(prepared.namespace, prepared.key)

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
        with self._lock:
            versions = self._versions(self._doc_owner(scope, level, session_id), namespace, key)
            for row in reversed(versions):
                if wanted is None or row.version == wanted:
                    return row.document(namespace, key)
        return None

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
        with self._lock:
            docs = self._docs.get(self._doc_owner(scope, level, session_id), {})
            names = sorted(
                name
                for name, versions in docs.items()
                if versions
                and (namespace is None or name[0] == namespace)
                and (after is None or name > after)
            )[:limit]
            found = [docs[name][-1].document(*name) for name in names]
        return document_page(found, limit)

    def document_versions(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str,
        key: str,
    ) -> list[Document]:
        check_document_ref(namespace, key)
        with self._lock:
            versions = self._versions(self._doc_owner(scope, level, session_id), namespace, key)
            return [row.document(namespace, key) for row in versions]

    def delete_document(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str,
        key: str,
    ) -> bool:
        check_document_ref(namespace, key)
        with self._lock:
            docs = self._docs.get(self._doc_owner(scope, level, session_id), {})
            return bool(docs.pop((namespace, key), None))

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
        rows: list[tuple[str, str, int, str]] = []
        with self._lock:
            docs = self._docs.get(self._doc_owner(scope, level, session_id), {})
            for name, versions in docs.items():
                if not versions or (namespace is not None and name[0] != namespace):
                    continue
                rows.append((name[0], name[1], versions[-1].version, versions[-1].text))
        rows.sort(key=lambda row: (row[0], row[1]))
        return document_hits(query, rows, limit, pool_size(limit))

    def restore_document(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        versions: Sequence[Document],
    ) -> None:
        wanted = check_restored_versions(versions, self.max_message_bytes)
        with self._lock:
            owner = self._doc_owner(scope, level, session_id)
            if not wanted:
                return
            name = (wanted[0][1].namespace, wanted[0][1].key)
            stored = {row.version: row.document(*name) for row in self._versions(owner, *name)}
            for doc, prepared in restore_plan(stored, wanted):
                self._store_version(owner, prepared, doc.version, to_micros(doc.updated_at))

    def _drop_session_documents(self, scope: Scope, session_id: str) -> None:
        self._docs.pop(("session", scope.tenant, scope.user, session_id), None)

    def _document_scope_rows(self) -> list[tuple[str, str]]:
        return [
            (tenant, user)
            for (level, tenant, user, _), docs in self._docs.items()
            if level != "session" and any(docs.values())
        ]
