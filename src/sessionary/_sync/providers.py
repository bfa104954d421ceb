# This file was generated from src/sessionary/providers.py by tools/async_to_sync.py.
# Do not edit it: edit the source and run `python tools/async_to_sync.py`.
"""Block providers kept in a store as documents, on every backend with `documents`.

A block is owned, like state, by a session, a user (shared by all of the user's
sessions) or the app (shared by all of the tenant's users), and never seen outside its
tenant and user. Storage follows the shared document conventions:

- a writable block is the document ``block/<label>``, body ``{"content": ...}``;
- a skill or searchable block's entries are the documents ``block.<label>/<key>``, body
  ``{"title", "description", "content"}``, indexed as title + newline + content.

Every write is a new version with its author, so a block can be read as of any version.
`SessionHistory` is the searchable block over the messages of the user's sessions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sessionary._sync.stores.base import DOCUMENT_SEARCH, DOCUMENTS, SEARCH, Store
from sessionary.blocks import BlockVersion, Entry, EntryHit, check_label
from sessionary.errors import InvalidInput, Unsupported, VersionConflict
from sessionary.query import parse_query
from sessionary.records import Document, Scope, SearchHit, StateLevel

__all__ = [
    "SessionHistory",
    "StoredBlock",
    "StoredEntries",
    "StoredSearch",
    "StoredSkills",
]

BLOCK_NAMESPACE = "block"
_PAGE = 200
_COUNT_CAP = 1000
_UPDATE_ATTEMPTS = 8


def _require(store: Store, capability: str, what: str) -> None:
    if capability not in store.capabilities:
        raise Unsupported(
            f"{what} needs a store with the {capability!r} capability; "
            f"this store has {sorted(store.capabilities)}"
        )


class _Owned:
    """Where a provider's documents live: a store, a scope and an owner level."""

    def __init__(
        self,
        store: Store,
        scope: Scope,
        level: StateLevel = "session",
        session_id: str | None = None,
        label: str | None = None,
    ) -> None:
        _require(store, DOCUMENTS, "a stored block")
        if level == "session" and session_id is None:
            raise InvalidInput("a session-level block needs a session id")
        self.store, self.scope, self.level = store, scope, level
        self.session_id = session_id if level == "session" else None
        self.label = None if label is None else check_label(label)

    def init(self, label: str) -> None:
        """Take the block's label, unless one was given when the provider was made."""
        if self.label is None:
            self.label = check_label(label)

    def _label(self) -> str:
        if self.label is None:
            raise InvalidInput("the provider has no label yet: pass one, or add it to a session")
        return self.label

    def _owner(self) -> tuple[Scope, StateLevel, str | None]:
        return self.scope, self.level, self.session_id


class StoredBlock(_Owned):
    """A writable block stored as the versioned document ``block/<label>``.

    Args:
        store: A store with the `documents` capability.
        scope: The tenant and user the block belongs to.
        level: "session", "user" or "app": who shares the block.
        session_id: The owning session, for level "session".
        label: The block's label (default: the label it is added under).

    Raises:
        Unsupported: If the store has no documents.
    """

    def _document(self, version: int | None = None) -> Document | None:
        return self.store.get_document(*self._owner(), BLOCK_NAMESPACE, self._label(), version)

    def get(self) -> str | None:
        """Return the latest content, or None if never written."""
        found = self._document()
        return None if found is None else str(found.body.get("content", ""))

    def set(self, content: str, author: str) -> None:
        """Write a new version."""
        self._put(content, author, None)

    def update(self, change: Callable[[str], str], author: str) -> str:
        """Write `change(current)` as a new version atomically, retrying if raced; return it.

        `change` may raise to write nothing (e.g. a token limit).
        """
        for _ in range(_UPDATE_ATTEMPTS):
            found = self._document()
            current = "" if found is None else str(found.body.get("content", ""))
            content = change(current)
            try:
                self._put(content, author, 0 if found is None else found.version)
            except VersionConflict:
                continue
            return content
        raise VersionConflict(f"block {self._label()!r} kept changing; try again")

    def _put(self, content: str, author: str, expected: int | None) -> None:
        self.store.put_document(
            *self._owner(),
            BLOCK_NAMESPACE,
            self._label(),
            {"content": content},
            content,
            author,
            expected,
        )

    def versions(self) -> list[BlockVersion]:
        """Return every version, oldest first."""
        found = self.store.document_versions(*self._owner(), BLOCK_NAMESPACE, self._label())
        return [_version(doc) for doc in found]

    def get_version(self, version: int) -> str | None:
        """Return the content as of `version`, or None if there is no such version."""
        found = self._document(version)
        return None if found is None else str(found.body.get("content", ""))


def _version(doc: Document) -> BlockVersion:
    return BlockVersion(doc.version, doc.author, doc.updated_at, str(doc.body.get("content", "")))


def _entry(doc: Document) -> Entry:
    body: dict[str, Any] = doc.body
    return Entry(
        doc.key,
        str(body.get("title", "")),
        str(body.get("description", "")),
        str(body.get("content", "")),
    )


class StoredEntries(_Owned):
    """The keyed entries of a block, stored as documents ``block.<label>/<key>``."""

    def _namespace(self) -> str:
        return f"{BLOCK_NAMESPACE}.{self._label()}"

    def entries(self) -> list[Entry]:
        """Return every entry (latest versions), ordered by key."""
        found: list[Entry] = []
        cursor: str | None = None
        while True:
            page = self.store.list_documents(*self._owner(), self._namespace(), _PAGE, cursor)
            found.extend(_entry(doc) for doc in page.items)
            cursor = page.next_cursor
            if cursor is None:
                return found

    def load(self, key: str) -> str | None:
        """Return an entry's content, or None."""
        doc = self.store.get_document(*self._owner(), self._namespace(), key, None)
        return None if doc is None else _entry(doc).content

    def put(self, entry: Entry, author: str) -> None:
        """Write an entry (a new version of it if the key exists)."""
        body = {"title": entry.title, "description": entry.description, "content": entry.content}
        text = f"{entry.title}\n{entry.content}"
        self.store.put_document(
            *self._owner(), self._namespace(), entry.key, body, text, author, None
        )

    def entry_versions(self, key: str) -> list[Document]:
        """Return every stored version of one entry, oldest first."""
        return self.store.document_versions(*self._owner(), self._namespace(), key)


class StoredSkills(StoredEntries):
    """A skill block: entries listed by key and description, loaded with `load_context`.

    The arguments are those of `StoredBlock`.
    """


class StoredSearch(StoredEntries):
    """A searchable block: entries the model finds with `search_context`.

    The arguments are those of `StoredBlock`.

    Raises:
        Unsupported: If the store has no full-text search over documents.
    """

    def __init__(
        self,
        store: Store,
        scope: Scope,
        level: StateLevel = "session",
        session_id: str | None = None,
        label: str | None = None,
    ) -> None:
        super().__init__(store, scope, level, session_id, label)
        _require(store, DOCUMENT_SEARCH, "a searchable block")

    def get(self) -> str | None:
        """Return how many entries the block holds."""
        count, cursor = 0, None
        while count < _COUNT_CAP:
            page = self.store.list_documents(*self._owner(), self._namespace(), _PAGE, cursor)
            count += len(page.items)
            cursor = page.next_cursor
            if cursor is None:
                return f"{count} entries; find them with search_context."
        return f"More than {_COUNT_CAP} entries; find them with search_context."

    def search(self, query: str, limit: int) -> list[EntryHit]:
        """Return the entries best matching `query` (see `sessionary.query`)."""
        hits = self.store.search_documents(
            *self._owner(), self._namespace(), parse_query(query), limit
        )
        return [EntryHit(hit.key, hit.snippet, rank=hit.rank, spans=hit.spans) for hit in hits]


class SessionHistory:
    """A readonly searchable block over the messages of every session of one user.

    Args:
        store: A store with message search.
        scope: The tenant and user whose sessions are searched.

    Raises:
        Unsupported: If the store has no message search.
    """

    def __init__(self, store: Store, scope: Scope) -> None:
        _require(store, SEARCH, "a searchable history block")
        self.store, self.scope = store, scope

    def get(self) -> str | None:
        """Return what the block offers."""
        return "The messages of your past sessions with this user; find them with search_context."

    def search(self, query: str, limit: int) -> list[EntryHit]:
        """Return the messages best matching `query`, keyed ``<session id>/<message id>``."""
        hits = self.store.search(self.scope, parse_query(query), limit, None, None)
        return [_history_hit(hit) for hit in hits]


def _history_hit(hit: SearchHit) -> EntryHit:
    """A message hit as a history entry: its role before its snippet, spans moved along."""
    head = f"[{hit.role}] "
    spans = tuple((a + len(head), b + len(head)) for a, b in hit.spans)
    return EntryHit(f"{hit.session_id}/{hit.message_id}", head + hit.snippet, "", hit.rank, spans)
