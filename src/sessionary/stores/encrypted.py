"""Encryption at rest: a store wrapper that seals bodies before they reach any backend.

`AsyncEncryptedStore` wraps any store (SQLite, PostgreSQL, MySQL, Redis, memory, or one
of your own) and implements the same protocol. What it seals, with AES-GCM under the
keyring's current key (see `sessionary.crypto`):

- a message's parts, metadata and unknown fields (its id, role, parent and time stay in
  clear: the tree is built from them). The stored message holds one data part with the
  ciphertext, plus, for a tool message, empty tool results with their call ids, which a
  tool message must carry;
- state documents (session, user, app), stored as ``{"sealed": ...}``;
- documents (blocks, overlays, agent state): body and text.

Session rows (name, model, source, metadata, counters) stay in clear, as do documents'
namespaces, keys, versions and authors, and a message's tool call ids. AES-GCM does not
hide lengths: a sealed value is as long as its plaintext (in UTF-8, base64-encoded) plus a
fixed overhead, so the size of each message, state and document can be read off the store.

Search works only over what you choose to keep in clear: `index` returns the text of a
message to put in the search index (default: none, so message search finds nothing), and
`index_document` the text of a document. That text is stored unencrypted.

Each ciphertext is bound to its record (scope, session, message id and role; state level;
document namespace and key), so one moved onto another row does not open. A wrong key,
a missing key or an altered value raise `DecryptionFailed` (`UnknownKey` for a key id not
in the keyring), never a garbled value. A record that is already sealed (one exported or
copied without the keys) is refused (`InvalidInput`) rather than sealed again, which would
store the ciphertext as its content.

Rotation: put the new key first in the keyring (current) and keep the old ones; reads
open each record with the key it names. `rotate()` rewrites every message and state
sealed with another key, and gives each such document a new latest version under the
current key (its older versions keep their key). With `reencrypt_on_read`, a record read
under an old key is rewritten as it is read. Rewriting a message counts as activity on
its session (its `updated_at` moves); rewriting a state bumps its version.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sessionary.crypto import Encryption, Rotation, is_sealed
from sessionary.errors import (
    DecryptionFailed,
    InvalidDocument,
    InvalidInput,
    InvalidMessage,
    MessageNotFound,
    SessionNotFound,
    VersionConflict,
)
from sessionary.model import (
    DataPart,
    Message,
    TextPart,
    ToolResultPart,
    decode_body,
    from_micros,
    to_micros,
)
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
    check_patch,
    merge_patch,
)
from sessionary.stores._common import (
    check_expected_version,
    encode_json,
    prepare_document,
    prepare_messages,
)
from sessionary.stores.base import AsyncStore

__all__ = ["SEALED_PART", "AsyncEncryptedStore"]

SEALED_PART = "sessionary.sealed"
"""The name of the data part that holds a message's ciphertext."""

_SEALED_KEY = "sealed"
_PAGE = 200
_LEVELS: tuple[StateLevel, ...] = ("app", "user", "session")


def _message_binding(scope: Scope, session_id: str, message: Message) -> tuple[str, ...]:
    return ("message", scope.tenant, scope.user, session_id, message.id, message.role)


def _state_binding(
    scope: Scope, level: StateLevel, session_id: str | None
) -> tuple[str | None, ...]:
    return ("state", scope.tenant, scope.user, level, session_id if level == "session" else None)


def _document_binding(
    scope: Scope, level: StateLevel, session_id: str | None, namespace: str, key: str
) -> tuple[str | None, ...]:
    owner = session_id if level == "session" else None
    return ("document", scope.tenant, scope.user, level, owner, namespace, key)


_ALREADY_SEALED = (
    "is already encrypted: it was read without the keys (an export or a copy made "
    "without them); import it without encryption, or export it again with the keys"
)
"""Why a sealed value is refused: sealing it again would store ciphertext as content."""


def _is_sealed_body(data: object) -> bool:
    """Whether a state's data or a document's body is the stored form of a sealed one."""
    return isinstance(data, dict) and len(data) == 1 and is_sealed(data.get(_SEALED_KEY))


def _sealed_of(message: Message) -> str | None:
    for part in message.parts:
        if isinstance(part, DataPart) and part.name == SEALED_PART and isinstance(part.data, str):
            return part.data
    return None


class AsyncEncryptedStore:
    """A store that encrypts message bodies, state and documents on their way to `inner`.

    Args:
        inner: The store that keeps the ciphertext.
        encryption: The keyring and what to keep in clear (see `Encryption`).
        owns_inner: Close `inner` when this store is closed.
    """

    def __init__(
        self, inner: AsyncStore, encryption: Encryption, *, owns_inner: bool = True
    ) -> None:
        self.inner = inner
        self.encryption = encryption
        self.keyring = encryption.keyring
        self._owns_inner = owns_inner
        self.capabilities: frozenset[str] = inner.capabilities
        # The ciphertext is base64 (4/3 of the body) in a JSON envelope.
        self.max_message_bytes: int = max(0, (inner.max_message_bytes - 512) * 3 // 4)

    def __getattr__(self, name: str) -> Any:
        if name == "inner" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    async def close(self) -> None:
        """Close the inner store if this wrapper owns it."""
        if self._owns_inner:
            await self.inner.close()

    async def __aenter__(self) -> AsyncEncryptedStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ messages

    def seal_message(self, scope: Scope, session_id: str, message: Message) -> Message:
        """Return the stored form of `message`: its body sealed, its index text in clear.

        Raises:
            InvalidMessage: If the message is malformed.
            PayloadTooLarge: If its body is over `max_message_bytes`.
        """
        if _sealed_of(message) is not None:
            raise InvalidMessage(f"message {message.id!r} {_ALREADY_SEALED}")
        (prepared,) = prepare_messages([message], self.max_message_bytes, indexed=False)
        sealed = self.keyring.seal(prepared.body, _message_binding(scope, session_id, message))
        parts: list[Any] = [DataPart(data=sealed, name=SEALED_PART)]
        text = self.encryption.index(message) if self.encryption.index else None
        if message.role == "tool":
            calls = [p.call_id for p in message.tool_results]  # checked: at least one
            parts += [ToolResultPart(call_id=c, output="") for c in calls]
            if text:
                parts[1] = ToolResultPart(call_id=calls[0], output=text)
        elif text:
            parts.append(TextPart(text))
        return Message(
            role=message.role,
            parts=parts,
            id=message.id,
            created_at=message.created_at,
            parent_id=message.parent_id,
        )

    def open_message(self, scope: Scope, session_id: str, stored: Message) -> Message:
        """Return the message a stored one holds.

        Raises:
            DecryptionFailed: If it does not open (or is not sealed, without
                `accept_plaintext`).
        """
        sealed = _sealed_of(stored)
        if sealed is None:
            if self.encryption.accept_plaintext:
                return stored
            raise DecryptionFailed(f"message {stored.id!r} is not encrypted")
        body = self.keyring.open(sealed, _message_binding(scope, session_id, stored))
        return decode_body(
            stored.id, stored.role, to_micros(stored.created_at), body, stored.parent_id
        )

    async def _open_messages(
        self, scope: Scope, session_id: str, stored: Sequence[Message]
    ) -> list[Message]:
        opened = [self.open_message(scope, session_id, m) for m in stored]
        if self.encryption.reencrypt_on_read:
            for old, new in zip(stored, opened, strict=True):
                if self._is_stale(_sealed_of(old)):
                    # Rewriting is a favour of the read, which does not fail with it.
                    with contextlib.suppress(Exception):
                        await self._rewrite_message(scope, session_id, old, new)
        return opened

    def _is_stale(self, sealed: str | None) -> bool:
        if sealed is None:
            return self.encryption.accept_plaintext
        return self.keyring.key_of(sealed) != self.keyring.current

    async def _rewrite_message(
        self, scope: Scope, session_id: str, stored: Message, message: Message
    ) -> bool:
        """Seal `message` (read as `stored`) anew, unless it changed since; say if it was.

        A message edited meanwhile was sealed by its writer with the current key and
        must keep that edit; one deleted meanwhile needs no rewrite. The store has no
        conditional update, so the check is a read just before the write: an edit
        landing between the two is still overwritten.
        """
        sealed = self.seal_message(scope, session_id, message)
        now = await self.inner.get_message(scope, session_id, stored.id)
        if now != stored:
            return False
        with contextlib.suppress(MessageNotFound, SessionNotFound):
            await self.inner.update_message(scope, session_id, sealed)
            return True
        return False

    async def append(
        self,
        scope: Scope,
        session_id: str,
        messages: Sequence[Message],
        parent: Parent,
        expected_head: Expected,
    ) -> list[Message]:
        """Seal and append `messages` (see `AsyncStore.append`)."""
        sealed = [self.seal_message(scope, session_id, m) for m in messages]
        stored = await self.inner.append(scope, session_id, sealed, parent, expected_head)
        return await self._open_messages(scope, session_id, stored)

    async def update_message(self, scope: Scope, session_id: str, message: Message) -> Message:
        """Seal and replace a stored message."""
        sealed = self.seal_message(scope, session_id, message)
        stored = await self.inner.update_message(scope, session_id, sealed)
        return self.open_message(scope, session_id, stored)

    async def get_message(self, scope: Scope, session_id: str, message_id: str) -> Message | None:
        """Return one message, opened."""
        stored = await self.inner.get_message(scope, session_id, message_id)
        if stored is None:
            return None
        return (await self._open_messages(scope, session_id, [stored]))[0]

    async def get_path(
        self, scope: Scope, session_id: str, leaf: str | None, limit: int | None
    ) -> list[Message]:
        """Return a path of messages, opened."""
        stored = await self.inner.get_path(scope, session_id, leaf, limit)
        return await self._open_messages(scope, session_id, stored)

    async def get_path_and_document(
        self,
        scope: Scope,
        session_id: str,
        leaf: str | None,
        limit: int | None,
        namespace: str,
        key: str,
    ) -> tuple[list[Message], Document | None]:
        """Return a path of messages and a session's document, both opened.

        One call to the inner store where it has the method, else its two calls.
        """
        both = getattr(self.inner, "get_path_and_document", None)
        if both is None:
            path = await self.get_path(scope, session_id, leaf, limit)
            return path, await self.get_document(scope, "session", session_id, namespace, key, None)
        stored, doc = await both(scope, session_id, leaf, limit, namespace, key)
        path = await self._open_messages(scope, session_id, stored)
        if doc is None:
            return path, None
        return path, await self._opened_latest(scope, "session", session_id, doc)

    async def get_children(self, scope: Scope, session_id: str, message_id: str) -> list[Message]:
        """Return a message's children, opened."""
        stored = await self.inner.get_children(scope, session_id, message_id)
        return await self._open_messages(scope, session_id, stored)

    async def page_messages(
        self, scope: Scope, session_id: str, cursor: str | None, limit: int
    ) -> tuple[list[Message], str | None]:
        """Return a page of messages, opened."""
        stored, next_cursor = await self.inner.page_messages(scope, session_id, cursor, limit)
        return await self._open_messages(scope, session_id, stored), next_cursor

    async def import_session(
        self,
        scope: Scope,
        info: SessionInfo,
        messages: Sequence[Message],
        state: State | None,
    ) -> SessionInfo:
        """Create a session whole, its messages and state sealed."""
        sealed = [self.seal_message(scope, info.id, m) for m in messages]
        if state is not None:
            state = self._seal_state(scope, "session", info.id, state.data, state.version)
        return await self.inner.import_session(scope, info, sealed, state)

    # ------------------------------------------------------------------ state

    def _seal_state(
        self, scope: Scope, level: StateLevel, session_id: str | None, data: Any, version: int
    ) -> State:
        if _is_sealed_body(data):
            raise InvalidInput(f"the {level} state {_ALREADY_SEALED}")
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        sealed = self.keyring.seal(text, _state_binding(scope, level, session_id))
        return State({_SEALED_KEY: sealed}, version)

    def _open_state(
        self, scope: Scope, level: StateLevel, session_id: str | None, stored: State
    ) -> State:
        if stored.version == 0 and not stored.data:
            return stored
        sealed = stored.data.get(_SEALED_KEY) if len(stored.data) == 1 else None
        if not is_sealed(sealed):
            if self.encryption.accept_plaintext:
                return stored
            raise DecryptionFailed(f"the {level} state is not encrypted")
        text = self.keyring.open(sealed, _state_binding(scope, level, session_id))
        return State(json.loads(text), stored.version)

    async def get_state(self, scope: Scope, level: StateLevel, session_id: str | None) -> State:
        """Return a state document, opened."""
        stored = await self.inner.get_state(scope, level, session_id)
        state = self._open_state(scope, level, session_id, stored)
        if self.encryption.reencrypt_on_read and self._state_is_stale(stored):
            with contextlib.suppress(VersionConflict):
                return await self._write_state(scope, level, session_id, state.data, stored.version)
        return state

    def _state_is_stale(self, stored: State) -> bool:
        if stored.version == 0 and not stored.data:
            return False
        return self._is_stale(stored.data.get(_SEALED_KEY) if len(stored.data) == 1 else None)

    async def _write_state(
        self, scope: Scope, level: StateLevel, session_id: str | None, data: Any, version: int
    ) -> State:
        """Replace the state of version `version` with `data`, sealed; return it opened."""
        sealed = self._seal_state(scope, level, session_id, data, version)
        patch: dict[str, Any] = {_SEALED_KEY: sealed.data[_SEALED_KEY]}
        if self.encryption.accept_plaintext:  # a plaintext state loses its keys in the patch
            stored = await self.inner.get_state(scope, level, session_id)
            if stored.version == version:
                patch.update({k: None for k in stored.data if k != _SEALED_KEY})
        written = await self.inner.update_state(scope, level, session_id, patch, version)
        return State(data, written.version)

    async def update_state(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        patch: dict[str, Any],
        expected_version: int | None,
    ) -> State:
        """Merge-patch a state: read and open it, patch it here, seal and write it back.

        The write is conditional on the version read, so a concurrent writer is never
        overwritten: with `expected_version` None it retries on a conflict.
        """
        patch = check_patch(patch)
        expected_version = check_expected_version(expected_version, InvalidInput)
        while True:
            current = await self.get_state(scope, level, session_id)
            if expected_version is not None and current.version != expected_version:
                raise VersionConflict(
                    f"the {level} state is at version {current.version}, not {expected_version}"
                )
            data = merge_patch(current.data, patch)
            encode_json(data, f"{level} state", self.max_message_bytes)
            try:
                return await self._write_state(scope, level, session_id, data, current.version)
            except VersionConflict:
                if expected_version is not None:
                    raise

    async def restore_state(
        self, scope: Scope, level: StateLevel, session_id: str | None, state: State
    ) -> State:
        """Write a state exactly as given (sealed); one already equal is left as it is."""
        current = await self.get_state(scope, level, session_id)
        if current == state:
            return current
        encode_json(state.data, f"{level} state", self.max_message_bytes)
        sealed = self._seal_state(scope, level, session_id, state.data, state.version)
        await self.inner.restore_state(scope, level, session_id, sealed)
        return state

    # ------------------------------------------------------------------ documents

    def _seal_document(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        doc: Document,
    ) -> Document:
        if _is_sealed_body(doc.body):
            raise InvalidDocument(f"document {doc.namespace}/{doc.key} {_ALREADY_SEALED}")
        binding = _document_binding(scope, level, session_id, doc.namespace, doc.key)
        payload = json.dumps({"body": doc.body, "text": doc.text}, ensure_ascii=False)
        clear = self.encryption.index_document
        text = clear(doc.namespace, doc.key, doc.text) if clear else ""
        return replace(doc, body={_SEALED_KEY: self.keyring.seal(payload, binding)}, text=text)

    def _open_document(
        self, scope: Scope, level: StateLevel, session_id: str | None, stored: Document
    ) -> Document:
        sealed = stored.body.get(_SEALED_KEY) if len(stored.body) == 1 else None
        if not is_sealed(sealed):
            if self.encryption.accept_plaintext:
                return stored
            raise DecryptionFailed(f"document {stored.namespace}/{stored.key} is not encrypted")
        binding = _document_binding(scope, level, session_id, stored.namespace, stored.key)
        payload = json.loads(self.keyring.open(sealed, binding))
        return replace(stored, body=payload["body"], text=payload["text"])

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
        """Seal and write a new version of a document."""
        # The inner store checks namespace, key, author and version; the body and text
        # are checked here, before they are sealed out of its sight.
        prepare_document(namespace, key, body, text, author, self.max_message_bytes)
        draft = Document(namespace, key, body, 0, author, from_micros(0), text)
        sealed = self._seal_document(scope, level, session_id, draft)
        stored = await self.inner.put_document(
            scope,
            level,
            session_id,
            namespace,
            key,
            sealed.body,
            sealed.text,
            author,
            expected_version,
        )
        return replace(stored, body=body, text=text)

    async def get_document(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str,
        key: str,
        version: int | None,
    ) -> Document | None:
        """Return a document's version, opened."""
        stored = await self.inner.get_document(scope, level, session_id, namespace, key, version)
        if stored is None:
            return None
        if version is not None:
            return self._open_document(scope, level, session_id, stored)
        return await self._opened_latest(scope, level, session_id, stored)

    async def _opened_latest(
        self, scope: Scope, level: StateLevel, session_id: str | None, stored: Document
    ) -> Document:
        """A document's latest version opened, rewritten first if stale and asked to."""
        doc = self._open_document(scope, level, session_id, stored)
        if self.encryption.reencrypt_on_read and self._document_is_stale(stored):
            with contextlib.suppress(VersionConflict):
                return await self._rewrite_document(scope, level, session_id, doc)
        return doc

    def _document_is_stale(self, stored: Document) -> bool:
        return self._is_stale(stored.body.get(_SEALED_KEY) if len(stored.body) == 1 else None)

    async def _rewrite_document(
        self, scope: Scope, level: StateLevel, session_id: str | None, doc: Document
    ) -> Document:
        sealed = self._seal_document(scope, level, session_id, doc)
        stored = await self.inner.put_document(
            scope,
            level,
            session_id,
            doc.namespace,
            doc.key,
            sealed.body,
            sealed.text,
            doc.author,
            doc.version,
        )
        return replace(stored, body=doc.body, text=doc.text)

    async def list_documents(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str | None,
        limit: int,
        cursor: str | None,
    ) -> Page[Document]:
        """Return latest versions, opened."""
        page = await self.inner.list_documents(scope, level, session_id, namespace, limit, cursor)
        items = [self._open_document(scope, level, session_id, d) for d in page.items]
        return Page(items, page.next_cursor)

    async def document_versions(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str,
        key: str,
    ) -> list[Document]:
        """Return every version of a document, opened."""
        stored = await self.inner.document_versions(scope, level, session_id, namespace, key)
        return [self._open_document(scope, level, session_id, d) for d in stored]

    async def restore_document(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        versions: Sequence[Document],
    ) -> None:
        """Write a document's versions (sealed); versions already stored and equal are skipped."""
        if not versions:
            return await self.inner.restore_document(scope, level, session_id, versions)
        first = versions[0]
        held = await self.document_versions(scope, level, session_id, first.namespace, first.key)
        have = {d.version: d for d in held}
        todo = [v for v in versions if have.get(v.version) != v]
        sealed = [self._seal_document(scope, level, session_id, v) for v in todo]
        return await self.inner.restore_document(scope, level, session_id, sealed)

    # ------------------------------------------------------------------ rotation

    async def rotate(self) -> Rotation:
        """Rewrite every record sealed with a key other than the current one.

        Messages and states are rewritten in place; a document gets a new latest version
        under the current key. Safe to run again, or beside writers: a record changed
        meanwhile is left to its writer, who sealed it with the current key (states and
        documents by their versions; a message by reading it again just before its
        rewrite, so only an edit landing between that read and the write is lost).
        """
        done = Rotation()
        for scope in await self.inner.list_scopes():
            for level in _LEVELS[:2]:
                await self._rotate_owner(scope, level, None, done)
            cursor: str | None = None
            while True:
                page = await self.inner.list_sessions(scope, SessionFilter(), _PAGE, cursor)
                for info in page.items:
                    await self._rotate_messages(scope, info.id, done)
                    await self._rotate_owner(scope, "session", info.id, done)
                if page.next_cursor is None:
                    break
                cursor = page.next_cursor
        return done

    async def _rotate_messages(self, scope: Scope, session_id: str, done: Rotation) -> None:
        cursor: str | None = None
        while True:
            stored, cursor = await self.inner.page_messages(scope, session_id, cursor, _PAGE)
            for message in stored:
                if self._is_stale(_sealed_of(message)):
                    opened = self.open_message(scope, session_id, message)
                    done.messages += await self._rewrite_message(scope, session_id, message, opened)
            if cursor is None:
                return

    async def _rotate_owner(
        self, scope: Scope, level: StateLevel, session_id: str | None, done: Rotation
    ) -> None:
        stored = await self.inner.get_state(scope, level, session_id)
        if self._state_is_stale(stored):
            state = self._open_state(scope, level, session_id, stored)
            with contextlib.suppress(VersionConflict):
                await self._write_state(scope, level, session_id, state.data, stored.version)
                done.states += 1
        if "documents" in self.capabilities:
            await self._rotate_documents(scope, level, session_id, done)

    async def _rotate_documents(
        self, scope: Scope, level: StateLevel, session_id: str | None, done: Rotation
    ) -> None:
        cursor: str | None = None
        while True:
            page = await self.inner.list_documents(scope, level, session_id, None, _PAGE, cursor)
            for stored in page.items:
                if self._document_is_stale(stored):
                    doc = self._open_document(scope, level, session_id, stored)
                    with contextlib.suppress(VersionConflict):
                        await self._rewrite_document(scope, level, session_id, doc)
                        done.documents += 1
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    # ------------------------------------------------------------------ passed through

    async def create_session(self, scope: Scope, info: SessionInfo) -> SessionInfo:
        """Create a session (its row is not encrypted)."""
        return await self.inner.create_session(scope, info)

    async def get_session(self, scope: Scope, session_id: str) -> SessionInfo | None:
        """Return a session's row."""
        return await self.inner.get_session(scope, session_id)

    async def list_sessions(
        self, scope: Scope, where: SessionFilter, limit: int, cursor: str | None
    ) -> Page[SessionInfo]:
        """Return sessions, most recently active first."""
        return await self.inner.list_sessions(scope, where, limit, cursor)

    async def update_session(
        self, scope: Scope, session_id: str, update: SessionUpdate
    ) -> SessionInfo:
        """Update a session's row."""
        return await self.inner.update_session(scope, session_id, update)

    async def delete_session(self, scope: Scope, session_id: str) -> bool:
        """Delete a session and everything it owns."""
        return await self.inner.delete_session(scope, session_id)

    async def delete_message(self, scope: Scope, session_id: str, message_id: str) -> list[str]:
        """Delete a message and its descendants."""
        return await self.inner.delete_message(scope, session_id, message_id)

    async def delete_messages(
        self, scope: Scope, session_id: str, message_ids: Sequence[str]
    ) -> list[str]:
        """Delete exactly these messages."""
        return await self.inner.delete_messages(scope, session_id, message_ids)

    async def clear_messages(self, scope: Scope, session_id: str) -> int:
        """Delete every message of a session."""
        return await self.inner.clear_messages(scope, session_id)

    async def get_path_length(self, scope: Scope, session_id: str, leaf: str | None) -> int:
        """Return the length of a path."""
        return await self.inner.get_path_length(scope, session_id, leaf)

    async def set_head(
        self, scope: Scope, session_id: str, message_id: str | None, expected_head: Expected = ANY
    ) -> None:
        """Move a session's head (if it is still `expected_head`)."""
        await self.inner.set_head(scope, session_id, message_id, expected_head)

    async def search(
        self,
        scope: Scope,
        query: Query,
        limit: int,
        session_id: str | None,
        role: str | None,
    ) -> list[SearchHit]:
        """Search the text kept in clear by `Encryption.index`."""
        return await self.inner.search(scope, query, limit, session_id, role)

    async def search_documents(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str | None,
        query: Query,
        limit: int,
    ) -> list[DocumentHit]:
        """Search the document text kept in clear by `Encryption.index_document`."""
        return await self.inner.search_documents(scope, level, session_id, namespace, query, limit)

    async def delete_document(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str,
        key: str,
    ) -> bool:
        """Delete a document with all its versions."""
        return await self.inner.delete_document(scope, level, session_id, namespace, key)

    async def list_scopes(self) -> list[Scope]:
        """Return every scope that owns data."""
        return await self.inner.list_scopes()
