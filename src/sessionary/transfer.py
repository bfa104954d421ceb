"""Export and import: a scope's sessions, documents and state as JSON records, and back.

`export_records` yields, for a whole scope, first the user's and the app's state and
documents (every version), then each session: a `session` record (its row and state),
one `message` record per message, parents first, and one `document` record per version
of each of its documents, oldest first. `AsyncImporter` reads such records from any
iterable, one at a time, and writes each session whole, or not at all, as soon as its
records have been read, so an import holds one session in memory however large the
input. `AsyncSessionManager.export` and `import_records` are the public entry points.

Records::

    {"type": "state", "level": "user" | "app", "state": {"data": {...}, "version": 3}}
    {"type": "document", "level": "user" | "app", "document": {...}}
    {"type": "session", "session": {...}, "state": {"data": {...}, "version": 2}}
    {"type": "message", "session_id": "...", "message": {...}}
    {"type": "document", "session_id": "...", "document": {...}}
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from sessionary.errors import AlreadyExists, InvalidInput, SessionNotFound, Unsupported
from sessionary.model import Message, parse_message
from sessionary.records import (
    Document,
    Scope,
    SessionInfo,
    State,
    StateLevel,
    document_from_dict,
    document_to_dict,
    info_from_dict,
    info_to_dict,
)
from sessionary.stores._common import check_restored_versions
from sessionary.stores.base import DOCUMENTS, AsyncStore

__all__ = ["EXISTING", "AsyncImporter", "Existing", "export_records", "owner_documents"]

Existing = Literal["fail", "skip", "replace"]
EXISTING: tuple[Existing, ...] = ("fail", "skip", "replace")
_PAGE = 500
_SCOPE_LEVELS: tuple[StateLevel, ...] = ("user", "app")


async def owner_documents(
    store: AsyncStore,
    scope: Scope,
    level: StateLevel,
    session_id: str | None,
    namespace: str | None = None,
    *,
    versions: bool = True,
) -> AsyncIterator[Document]:
    """Yield one owner's documents by namespace and key: every version, or the latest."""
    if DOCUMENTS not in store.capabilities:
        return
    cursor: str | None = None
    while True:
        page = await store.list_documents(scope, level, session_id, namespace, _PAGE, cursor)
        for doc in page.items:
            if not versions:
                yield doc
                continue
            for version in await store.document_versions(
                scope, level, session_id, doc.namespace, doc.key
            ):
                yield version
        cursor = page.next_cursor
        if cursor is None:
            return


async def _scope_records(store: AsyncStore, scope: Scope) -> AsyncIterator[dict[str, Any]]:
    for level in _SCOPE_LEVELS:
        state = await store.get_state(scope, level, None)
        if state.version:
            data = {"data": state.data, "version": state.version}
            yield {"type": "state", "level": level, "state": data}
        async for document in owner_documents(store, scope, level, None):
            yield {"type": "document", "level": level, "document": document_to_dict(document)}


async def _session_records(
    store: AsyncStore, scope: Scope, session_id: str
) -> AsyncIterator[dict[str, Any]]:
    info = await store.get_session(scope, session_id)
    if info is None:
        raise SessionNotFound(f"no session {session_id!r} in this scope")
    state = await store.get_state(scope, "session", session_id)
    yield {
        "type": "session",
        "session": info_to_dict(info),
        "state": {"data": state.data, "version": state.version},
    }
    cursor: str | None = None
    while True:
        messages, cursor = await store.page_messages(scope, session_id, cursor, _PAGE)
        for message in messages:
            yield {"type": "message", "session_id": session_id, "message": message.to_dict()}
        if cursor is None:
            break
    async for document in owner_documents(store, scope, "session", session_id):
        yield {
            "type": "document",
            "session_id": session_id,
            "document": document_to_dict(document),
        }


async def export_records(
    store: AsyncStore, scope: Scope, session_ids: Sequence[str], *, whole_scope: bool
) -> AsyncIterator[dict[str, Any]]:
    """Yield the records of `session_ids`, after the scope's own with `whole_scope`.

    Raises:
        SessionNotFound: If a session is not in the scope (when its turn comes).
    """
    if whole_scope:
        async for record in _scope_records(store, scope):
            yield record
    for session_id in session_ids:
        async for record in _session_records(store, scope, session_id):
            yield record


@dataclass
class _Pending:
    """One session's records, read and checked, waiting for the next session to start."""

    info: SessionInfo
    state: State
    messages: list[Message] = field(default_factory=list)
    documents: list[Document] = field(default_factory=list)


def _session_record(record: Mapping[str, Any], number: int) -> _Pending:
    try:
        info = info_from_dict(record["session"])
        raw_state = record.get("state") or {}
        state = State(dict(raw_state.get("data") or {}), int(raw_state.get("version") or 0))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InvalidInput(f"record {number}: malformed session record: {exc}") from None
    return _Pending(info, state)


def _state_record(record: Mapping[str, Any], number: int) -> tuple[StateLevel, State]:
    level, raw = record.get("level"), record.get("state")
    if level not in _SCOPE_LEVELS or not isinstance(raw, Mapping):
        raise InvalidInput(f"record {number}: a state record needs a level (user or app)")
    try:
        return level, State(dict(raw.get("data") or {}), int(raw.get("version") or 0))
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"record {number}: malformed state record: {exc}") from None


def _document_record(record: Mapping[str, Any], number: int) -> Document:
    try:
        return document_from_dict(record["document"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInput(f"record {number}: malformed document record: {exc}") from None


def _message_record(record: Mapping[str, Any], number: int) -> Message:
    raw = record.get("message")
    if not isinstance(raw, Mapping):
        raise InvalidInput(f"record {number}: a message record needs a 'message' object")
    try:
        return parse_message(raw)
    except InvalidInput as exc:
        raise type(exc)(f"record {number}: {exc}") from None


def _grouped(documents: Iterable[Document]) -> list[list[Document]]:
    groups: dict[tuple[str, str], list[Document]] = {}
    for doc in documents:
        groups.setdefault((doc.namespace, doc.key), []).append(doc)
    return list(groups.values())


class AsyncImporter:
    """Writes export records into a scope as it reads them; see the module docstring.

    Args:
        store: Where to import.
        scope: The tenant and user that will own everything imported.
        existing: What to do with a session id the scope already holds: "fail" (raise
            `AlreadyExists`), "skip" (leave it as it is) or "replace" (delete it and
            import the exported one). A user or app state or document that differs
            from the exported one is never overwritten: it raises `VersionConflict`,
            unless `existing` is "skip".
    """

    def __init__(self, store: AsyncStore, scope: Scope, existing: Existing = "fail") -> None:
        if existing not in EXISTING:
            raise InvalidInput(f"existing must be one of {list(EXISTING)}, not {existing!r}")
        self.store, self.scope, self.existing = store, scope, existing
        self.imported: list[SessionInfo] = []
        self.restored = 0
        """How many user and app states and documents (versions) were written."""
        self._pending: _Pending | None = None
        self._scope_docs: list[Document] = []
        self._scope_level: StateLevel | None = None

    async def run(self, records: Iterable[Mapping[str, Any]]) -> list[SessionInfo]:
        """Import every record; return the rows of the sessions imported (not skipped).

        Raises:
            InvalidInput: If a record is malformed or out of order (every session
                before it stays imported).
            AlreadyExists: If a session id is taken and `existing` is "fail".
            VersionConflict: If a user or app state or document differs in the scope.
        """
        for number, record in enumerate(records, 1):
            await self._take(record, number)
        await self._flush_scope_documents()
        await self._flush_session()
        return self.imported

    async def _take(self, record: Mapping[str, Any], number: int) -> None:
        kind = record.get("type") if isinstance(record, Mapping) else None
        level = record.get("level") if isinstance(record, Mapping) else None
        if kind == "document" and level in _SCOPE_LEVELS:
            await self._take_scope_document(level, _document_record(record, number))
            return
        await self._flush_scope_documents()
        if kind == "session":
            await self._flush_session()
            self._pending = _session_record(record, number)
        elif kind == "state":
            await self._flush_session()
            await self._restore_state(*_state_record(record, number))
        elif kind in ("message", "document"):
            pending = self._pending
            if pending is None or record.get("session_id") != pending.info.id:
                raise InvalidInput(f"record {number}: a {kind} before its session record")
            if kind == "message":
                pending.messages.append(_message_record(record, number))
            else:
                pending.documents.append(_document_record(record, number))
        else:
            raise InvalidInput(f"record {number}: unknown record type {kind!r}")

    # ------------------------------------------------------------------ scope level

    async def _restore_state(self, level: StateLevel, state: State) -> None:
        current = await self.store.get_state(self.scope, level, None)
        if self.existing == "skip" and current.version and current != state:
            return
        await self.store.restore_state(self.scope, level, None, state)
        self.restored += 1

    async def _take_scope_document(self, level: StateLevel, document: Document) -> None:
        await self._flush_session()
        docs = self._scope_docs
        if docs and (self._scope_level, docs[0].namespace, docs[0].key) != (
            level,
            document.namespace,
            document.key,
        ):
            await self._flush_scope_documents()
        self._scope_level = level
        self._scope_docs.append(document)

    async def _flush_scope_documents(self) -> None:
        docs, level = self._scope_docs, self._scope_level
        if not docs or level is None:
            return
        self._scope_docs = []
        self._require_documents("the export has user or app documents")
        if self.existing == "skip":
            stored = await self.store.document_versions(
                self.scope, level, None, docs[0].namespace, docs[0].key
            )
            if stored:  # the scope's own copy stays, even if it differs
                return
        await self.store.restore_document(self.scope, level, None, docs)
        self.restored += len(docs)

    # ------------------------------------------------------------------ sessions

    def _require_documents(self, why: str) -> None:
        if DOCUMENTS not in self.store.capabilities:
            raise Unsupported(f"{why}; this store cannot hold documents")

    async def _flush_session(self) -> None:
        pending, self._pending = self._pending, None
        if pending is None:
            return
        info = pending.info
        if await self.store.get_session(self.scope, info.id) is not None:
            if self.existing == "skip":
                return
            if self.existing == "fail":
                raise AlreadyExists(f"session {info.id!r} is already in this scope")
        groups = _grouped(pending.documents)
        if groups:
            self._require_documents(f"session {info.id!r} has documents")
        for versions in groups:  # refuse bad documents before writing anything
            check_restored_versions(versions, self.store.max_message_bytes)
        if self.existing != "replace":
            self.imported.append(await self._write_session(pending))
            return
        # The store checks the messages only as it imports them, after the session they
        # replace is deleted: that one is kept here, and written back if they are refused.
        replaced = await self._read_session(info.id)
        await self.store.delete_session(self.scope, info.id)
        try:
            created = await self._write_session(pending)
        except BaseException:
            if replaced is not None:
                await self._write_session(replaced)
            raise
        self.imported.append(created)

    async def _write_session(self, pending: _Pending) -> SessionInfo:
        """Write one session whole, or not at all."""
        info = pending.info
        created = await self.store.import_session(self.scope, info, pending.messages, pending.state)
        try:
            for versions in _grouped(pending.documents):
                await self.store.restore_document(self.scope, "session", info.id, versions)
        except BaseException:
            await self.store.delete_session(self.scope, info.id)
            raise
        return created

    async def _read_session(self, session_id: str) -> _Pending | None:
        """One session of the scope, as an import of its export would hold it."""
        read: _Pending | None = None
        async for record in _session_records(self.store, self.scope, session_id):
            if record["type"] == "session":
                read = _session_record(record, 0)
            elif record["type"] == "message" and read is not None:
                read.messages.append(_message_record(record, 0))
            elif read is not None:
                read.documents.append(_document_record(record, 0))
        return read
