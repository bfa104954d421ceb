# This file was generated from src/sessionary/stores/base.py by tools/async_to_sync.py.
# Do not edit it: edit the source and run `python tools/async_to_sync.py`.
"""The store protocol: the one seam between sessionary and a storage backend.

Everything above a store (sessions, the manager, the CLI) is written once against this
protocol. Every method takes the caller's `Scope` first and never touches data outside
it. A backend that lacks a capability leaves its name out of `capabilities` and raises
`Unsupported` from the methods that need it.

A store of your own is a supported extension point: any object with these methods and
attributes plugs in with ``SessionManager(my_store)`` (or, for a synchronous store
implementing `sessionary.Store`, the same protocol without `async`,
``SessionManager(my_store)``); the manager never closes a store it was given.

- **Required** (the core): the attributes `capabilities` and `max_message_bytes`;
  sessions (`create_session`, `get_session`, `list_sessions`, `update_session`,
  `delete_session`); messages (`append`, `update_message`, `delete_message`,
  `delete_messages`, `clear_messages`, `get_message`, `get_path`, `get_children`,
  `get_path_length`, `set_head`, `page_messages`); state (`get_state`, `update_state`,
  `restore_state`); copying (`import_session`, `list_scopes`); and `close`.
- **Capability ``search``**: `search`.
- **Capability ``documents``**: `put_document`, `get_document`, `list_documents`,
  `document_versions`, `delete_document`, `restore_document`; with
  **``document_search``** also `search_documents`.

- **Optional**: `erase(scope, whole_tenant)`, which deletes everything of the scope's
  user (or its whole tenant) and returns how many sessions went; without it the
  manager's `erase_user` and `erase_tenant` raise `Unsupported`. And retention
  (`sessionary.retention`): keeping `SessionInfo.ttl` and `ttl_sliding` (and
  `SessionUpdate`'s), hiding an expired session from every read and write, and
  `sweep(limit)`, which deletes up to `limit` expired sessions and returns how many;
  without `sweep` the manager's `sweep` raises `Unsupported`. And
  `get_path_and_document(scope, session_id, leaf, limit, namespace, key)`, which returns
  what ``get_path(scope, session_id, leaf, limit)`` and ``get_document(scope, "session",
  session_id, namespace, key, None)`` return, as a pair, with the errors of those two
  calls: the one read a bounded `Session.history` needs (the messages and the compaction
  index), in one round trip where the backend can. Without it sessionary makes the two
  calls.

A store without a capability still answers its methods, with `Unsupported`:
`sessionary.stores.minimal` has mixins (`NoSearch`, `NoDocuments`) that do it.

Above the store, sessionary checks ids (`sessionary.ids.check_id`), parents, roles,
limits, patches and queries, and never passes a compaction summary as a message. The
store checks the rest and does each write atomically: every message with
`sessionary.model.check_message`, and its encoded body (`sessionary.model.encode_body`)
against `max_message_bytes` (`PayloadTooLarge`); missing sessions and messages
(`SessionNotFound`, `MessageNotFound`); a taken session id (`AlreadyExists`); a moved
head (`HeadConflict`) and a stale state version (`VersionConflict`). An error changes
nothing. The in-memory engine (`sessionary.stores.memory`) is the reference behaviour,
and `tests/conformance/` is the specification: `test_custom_store.py` there runs it
against a store written outside the library.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from sessionary.model import Message
from sessionary.query import Query
from sessionary.records import (
    ANY,
    Document,
    DocumentHit,
    Expected,
    Page,
    Parent,
    Scope,
    SearchHit,
    SessionFilter,
    SessionInfo,
    SessionUpdate,
    State,
    StateLevel,
)

__all__ = ["DOCUMENTS", "DOCUMENT_SEARCH", "SEARCH", "Store"]

SEARCH = "search"
"""Capability: full-text search over messages."""

DOCUMENTS = "documents"
"""Capability: keyed, versioned documents (`put_document` and the methods beside it)."""

DOCUMENT_SEARCH = "document_search"
"""Capability: full-text search over documents (`search_documents`)."""


class Store(Protocol):
    """What a backend implements; see the module's text for what is required.

    The conformance suite (`tests/conformance/`) fixes the exact behaviour.
    """

    capabilities: frozenset[str]
    max_message_bytes: int

    def create_session(self, scope: Scope, info: SessionInfo) -> SessionInfo:
        """Create a session; raise `AlreadyExists` if the id is taken in this scope."""
        ...

    def get_session(self, scope: Scope, session_id: str) -> SessionInfo | None:
        """Return a session's row, or None."""
        ...

    def list_sessions(
        self, scope: Scope, where: SessionFilter, limit: int, cursor: str | None
    ) -> Page[SessionInfo]:
        """Return sessions, most recently active first."""
        ...

    def update_session(self, scope: Scope, session_id: str, update: SessionUpdate) -> SessionInfo:
        """Apply `update` to a session's row and return the new row."""
        ...

    def delete_session(self, scope: Scope, session_id: str) -> bool:
        """Delete a session with its messages, state, documents and search rows."""
        ...

    def append(
        self,
        scope: Scope,
        session_id: str,
        messages: Sequence[Message],
        parent: Parent,
        expected_head: Expected,
    ) -> list[Message]:
        """Append a chain of messages atomically; ids already stored are kept as they are.

        Stored ids may only come before every new one, which then continue from the last
        of them; a stored id after a new one raises `InvalidMessage`, and nothing is
        written.
        """
        ...

    def update_message(self, scope: Scope, session_id: str, message: Message) -> Message:
        """Replace a stored message's parts and metadata."""
        ...

    def delete_message(self, scope: Scope, session_id: str, message_id: str) -> list[str]:
        """Delete a message and its descendants; return the deleted ids."""
        ...

    def delete_messages(
        self, scope: Scope, session_id: str, message_ids: Sequence[str]
    ) -> list[str]:
        """Delete exactly these messages (distinct ids), atomically; return their ids.

        Every child of each must be among them, so no message is left without its parent:
        otherwise raise `MessageHasChildren`; an id not in the session raises
        `MessageNotFound`; either way nothing is deleted. A head among them moves to its
        nearest ancestor that stays (none: the session's head becomes None).
        """
        ...

    def clear_messages(self, scope: Scope, session_id: str) -> int:
        """Delete every message of a session; return how many."""
        ...

    def get_message(self, scope: Scope, session_id: str, message_id: str) -> Message | None:
        """Return one message, or None."""
        ...

    def get_path(
        self, scope: Scope, session_id: str, leaf: str | None, limit: int | None
    ) -> list[Message]:
        """Return the last `limit` messages of the root-to-`leaf` path (leaf None: the head)."""
        ...

    def get_children(self, scope: Scope, session_id: str, message_id: str) -> list[Message]:
        """Return a message's children, oldest first."""
        ...

    def get_path_length(self, scope: Scope, session_id: str, leaf: str | None) -> int:
        """Return the number of messages from the root to `leaf` (None: the head)."""
        ...

    def set_head(
        self, scope: Scope, session_id: str, message_id: str | None, expected_head: Expected = ANY
    ) -> None:
        """Make `message_id` the session's head.

        With `expected_head` (an id, or None for a session with no head), only while
        the head is still that, checked as the head moves: else raise `HeadConflict`
        and move nothing. A store that predates the argument is called without it.
        """
        ...

    def page_messages(
        self, scope: Scope, session_id: str, cursor: str | None, limit: int
    ) -> tuple[list[Message], str | None]:
        """Return a page of all the session's messages, parents first, and the next cursor.

        The order is by depth, then insertion, on every backend: importing the pages
        elsewhere and paging again gives the same order.
        """
        ...

    def search(
        self,
        scope: Scope,
        query: Query,
        limit: int,
        session_id: str | None,
        role: str | None,
    ) -> list[SearchHit]:
        """Return the best matches for `query`, best first."""
        ...

    def get_state(self, scope: Scope, level: StateLevel, session_id: str | None) -> State:
        """Return a state document (empty with version 0 if never written)."""
        ...

    def update_state(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        patch: dict[str, Any],
        expected_version: int | None,
    ) -> State:
        """Merge-patch a state document; raise `VersionConflict` on a stale version."""
        ...

    def restore_state(
        self, scope: Scope, level: StateLevel, session_id: str | None, state: State
    ) -> State:
        """Write a state document exactly as given (data and version), for copying stores.

        A missing document (version 0) is written; one already equal to `state` is left
        as it is; any other raises `VersionConflict`, so a copy never overwrites.
        """
        ...

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
        """Write a new version of a document and return it.

        The owner is `level` with `session_id` (only for ``session``, which must exist),
        as for state. `expected_version` None writes unconditionally; 0 requires that the
        document does not exist; N requires that its latest version is N. A mismatch
        raises `VersionConflict` and writes nothing.

        `namespace` matches ``[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}``; `key` is 1 to 512
        characters without control characters; `body` is a JSON object; `text` any
        string without NUL; `author` at most 128 printable characters. A malformed
        argument raises `InvalidDocument` (a negative `expected_version` too); a body's
        JSON plus the text over `max_message_bytes` (UTF-8) raises `PayloadTooLarge`.
        """
        ...

    def get_document(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str,
        key: str,
        version: int | None,
    ) -> Document | None:
        """Return a document's latest version (or the given one), or None."""
        ...

    def list_documents(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str | None,
        limit: int,
        cursor: str | None,
    ) -> Page[Document]:
        """Return latest versions ordered by (namespace, key); namespace None lists all."""
        ...

    def document_versions(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str,
        key: str,
    ) -> list[Document]:
        """Return every stored version of a document, oldest first ([] if none)."""
        ...

    def delete_document(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str,
        key: str,
    ) -> bool:
        """Delete a document with all its versions; return whether it existed."""
        ...

    def search_documents(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str | None,
        query: Query,
        limit: int,
    ) -> list[DocumentHit]:
        """Return the best matches for `query` among latest versions, best first.

        Needs the `document_search` capability; raises `Unsupported` without it.
        """
        ...

    def restore_document(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        versions: Sequence[Document],
    ) -> None:
        """Write a document's versions exactly as given (all one key), for copying stores.

        Versions already stored and equal are skipped, so a re-run is safe; a stored
        version that differs raises `VersionConflict`.
        """
        ...

    def list_scopes(self) -> list[Scope]:
        """Return every scope that owns a session, a user state or a user document, sorted.

        A tenant with an app state or app document is also listed with the default user.
        """
        ...

    def import_session(
        self,
        scope: Scope,
        info: SessionInfo,
        messages: Sequence[Message],
        state: State | None,
    ) -> SessionInfo:
        """Create a session whole: its row, its messages (parents first) and its state."""
        ...

    def close(self) -> None:
        """Release the backend's connections."""
        ...
