"""What every engine shares about documents, apart from checking input (see `_common`).

A document is owned like a state document: (level, tenant, user, owner), where the user
is "" for an app-level document (the tenant's, whoever the user) and the owner is the
session id for a session-level one, "" otherwise. Its versions are numbered 1, 2, ...;
every backend keeps one row for the document (its latest version number and text, which
is what search indexes and what a lock is taken on) and one row per version.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from sessionary.errors import VersionConflict
from sessionary.model import from_micros, to_micros
from sessionary.records import Document, Page, Scope, StateLevel, decode_cursor, encode_cursor
from sessionary.stores._common import PreparedDocument, check_namespace, state_owner

__all__ = [
    "DOCUMENT_COLUMNS",
    "OwnerKey",
    "document_from_row",
    "document_page",
    "key_hash",
    "list_after",
    "owner_key",
    "restore_plan",
    "same_version",
]

OwnerKey = tuple[str, str, str, str]
"""(level, tenant, user or "" for app level, session id or "")."""

DOCUMENT_COLUMNS = "d.namespace, d.doc_key, v.body, v.version, v.author, v.updated_us, v.text"
"""A document version as `document_from_row` decodes it (`d` the document, `v` a version)."""


def owner_key(scope: Scope, level: StateLevel, session_id: str | None) -> OwnerKey:
    """Return who owns a document, by the rules of state documents.

    Raises:
        InvalidInput: If the level is unknown or a session level has no session id.
    """
    owner = state_owner(level, session_id)
    return (level, scope.tenant, scope.user if level != "app" else "", owner)


def key_hash(key: str) -> bytes:
    """The SHA-256 of a key's UTF-8: what SQL servers keep a document unique by.

    A key can be 512 characters (2 KB of UTF-8), too long for a server's index entry,
    and MySQL's collations ignore trailing spaces; the hash is short and exact.
    """
    return hashlib.sha256(key.encode()).digest()


def document_from_row(row: Sequence[Any]) -> Document:
    """Decode a (namespace, key, body, version, author, updated_us, text) row."""
    key = row[1]
    if isinstance(key, bytes | bytearray):  # MySQL keeps keys as VARBINARY
        key = bytes(key).decode()
    return Document(
        namespace=row[0],
        key=key,
        body=json.loads(row[2]),
        version=int(row[3]),
        author=row[4],
        updated_at=from_micros(int(row[5])),
        text=row[6],
    )


def list_after(namespace: str | None, cursor: str | None) -> tuple[str, str] | None:
    """Check a `list_documents` call; return the (namespace, key) its cursor is after.

    Raises:
        InvalidDocument: If `namespace` is malformed.
        InvalidInput: If the cursor is malformed.
    """
    if namespace is not None:
        check_namespace(namespace)
    if cursor is None:
        return None
    after_namespace, after_key = decode_cursor(cursor, str, str)
    return after_namespace, after_key


def document_page(documents: list[Document], limit: int) -> Page[Document]:
    """A page of documents, with a cursor when it is full."""
    if len(documents) < limit:
        return Page(documents, None)
    last = documents[-1]
    return Page(documents, encode_cursor(last.namespace, last.key))


def same_version(stored: Document, wanted: Document, prepared: PreparedDocument) -> bool:
    """Whether a stored version is the one `restore_document` was asked to write."""
    return (
        stored.version == wanted.version
        and stored.body == prepared.body
        and stored.text == prepared.text
        and stored.author == prepared.author
        and to_micros(stored.updated_at) == to_micros(wanted.updated_at)
    )


def restore_plan(
    stored: Mapping[int, Document], wanted: Sequence[tuple[Document, PreparedDocument]]
) -> list[tuple[Document, PreparedDocument]]:
    """Return the versions `restore_document` must write: those not stored yet.

    Raises:
        VersionConflict: If a version is stored already and differs.
    """
    out: list[tuple[Document, PreparedDocument]] = []
    for doc, prepared in wanted:
        found = stored.get(doc.version)
        if found is None:
            out.append((doc, prepared))
        elif not same_version(found, doc, prepared):
            raise VersionConflict(
                f"document {doc.namespace}/{doc.key:.80} already has a different "
                f"version {doc.version}; it cannot be restored over it"
            )
    return out
