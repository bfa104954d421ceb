"""The audit trail: an append-only log of who changed what, kept in the store itself.

`AsyncAuditedStore` wraps a store and, after each change below succeeds, appends an
entry (`sessionary.audit_entry.AuditEntry`) naming its actor: message updates and
deletes, clearing a session, deleting a session, changing a session's row (its name,
metadata, end or TTL; not its usage counters), state patches, document writes and
deletes (blocks, compaction overlays, prompts and agent state are documents), and what
an import writes (sessions, states and documents restored). Appends, moving a session's
head, and reads are not logged. The trail itself cannot be written or deleted through
the audited store (`InvalidInput`): only `AsyncAuditLog` adds to it, so no crafted
document or import file can forge or remove an entry. `AsyncAuditLog.record` lets other
code log a change of its own (an erasure, say) and `AsyncAuditLog.entries` reads the
trail with filters.

The trail is a set of documents of the tenant (level ``app``), so it lives on every
backend with documents and goes wherever the store's data goes (export, `migrate`;
with encryption at rest it is encrypted too); an export holding a trail is imported
through a manager that is not audited. An entry is written once with
`expected_version` 0: the API never rewrites it. An entry is written after its change,
not in the same transaction: a crash between the two leaves the change unlogged.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast

from sessionary.audit_entry import (
    AUDIT_NAMESPACE,
    AuditEntry,
    AuditFilter,
    check_actor,
    entry_key,
)
from sessionary.errors import InvalidInput, Unsupported, VersionConflict
from sessionary.model import Message
from sessionary.records import Document, Scope, SessionInfo, SessionUpdate, State, StateLevel
from sessionary.stores.base import DOCUMENTS, AsyncStore

__all__ = ["AsyncAuditLog", "AsyncAuditedStore"]

_PAGE = 200
_SESSION_CHANGES = ("name", "metadata", "end_reason", "ended_at", "ttl", "ttl_sliding")
"""The fields of a `SessionUpdate` whose change is logged (usage counters are not)."""


def _not_the_trail(namespace: str) -> None:
    if namespace == AUDIT_NAMESPACE:
        raise InvalidInput(
            f"the namespace {AUDIT_NAMESPACE!r} is the audit trail, which only the audit log writes"
        )


class AsyncAuditLog:
    """Writes and reads the audit trail of a store.

    Args:
        store: The store that keeps the trail (an audited store's inner store is used,
            so that writing the trail is not itself logged).

    Raises:
        Unsupported: If the store has no documents.
    """

    def __init__(self, store: AsyncStore) -> None:
        while isinstance(store, AsyncAuditedStore):
            store = store.inner
        if DOCUMENTS not in store.capabilities:
            raise Unsupported("the audit trail needs a store with documents")
        self.store = store

    async def record(
        self,
        scope: Scope,
        actor: str,
        action: str,
        *,
        session_id: str | None = None,
        target: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> AuditEntry:
        """Append one entry to the trail of `scope`'s tenant and return it.

        Raises:
            InvalidInput: If the actor or action is malformed.
        """
        check_actor(actor)
        check_actor(action)
        while True:
            now = datetime.now(UTC)
            entry = AuditEntry(
                entry_key(now), now, actor, action, scope.user, session_id, target, detail or {}
            )
            try:
                await self.store.put_document(
                    scope, "app", None, AUDIT_NAMESPACE, entry.id, entry.to_body(), "", actor, 0
                )
            except VersionConflict:  # the same key from another process: take a new one
                continue
            return entry

    async def entries(
        self, scope: Scope, where: AuditFilter, limit: int | None = 100
    ) -> list[AuditEntry]:
        """Return the entries of `scope`'s tenant that `where` matches, newest first."""
        found: list[AuditEntry] = []
        cursor: str | None = None
        while True:
            page = await self.store.list_documents(
                scope, "app", None, AUDIT_NAMESPACE, _PAGE, cursor
            )
            for doc in page.items:
                entry = AuditEntry.from_document(doc)
                if where.is_past(entry):
                    return found
                if where.matches(entry):
                    found.append(entry)
                    if limit is not None and len(found) >= limit:
                        return found
            if page.next_cursor is None:
                return found
            cursor = page.next_cursor


class AsyncAuditedStore:
    """A store that logs each change made through it, in the name of `actor`.

    Every method not written here is the inner store's own (reads and appends).

    Args:
        inner: The store that keeps the data and the trail.
        actor: Who the changes are made by (1 to 128 printable characters).

    Raises:
        InvalidInput: If `actor` is malformed.
        Unsupported: If the store has no documents.
    """

    def __init__(self, inner: AsyncStore, actor: str) -> None:
        self.inner = inner
        self.actor = check_actor(actor)
        self.log = AsyncAuditLog(inner)
        self.capabilities: frozenset[str] = inner.capabilities
        self.max_message_bytes: int = inner.max_message_bytes

    def __getattr__(self, name: str) -> Any:
        if name == "inner" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def as_store(self) -> AsyncStore:
        """Return this object typed as the store protocol."""
        return cast(AsyncStore, self)

    async def _record(self, scope: Scope, action: str, **fields: Any) -> None:
        await self.log.record(scope, self.actor, action, **fields)

    async def update_message(self, scope: Scope, session_id: str, message: Message) -> Message:
        """Replace a message's body, and log it."""
        updated = await self.inner.update_message(scope, session_id, message)
        await self._record(scope, "message.update", session_id=session_id, target=message.id)
        return updated

    async def delete_message(self, scope: Scope, session_id: str, message_id: str) -> list[str]:
        """Delete a message and its descendants, and log it."""
        deleted = await self.inner.delete_message(scope, session_id, message_id)
        await self._record(
            scope,
            "message.delete",
            session_id=session_id,
            target=message_id,
            detail={"deleted": deleted},
        )
        return deleted

    async def delete_messages(
        self, scope: Scope, session_id: str, message_ids: Sequence[str]
    ) -> list[str]:
        """Delete exactly these messages, and log it."""
        deleted = await self.inner.delete_messages(scope, session_id, message_ids)
        await self._record(
            scope, "messages.delete", session_id=session_id, detail={"deleted": deleted}
        )
        return deleted

    async def clear_messages(self, scope: Scope, session_id: str) -> int:
        """Delete every message of a session, and log it."""
        count = await self.inner.clear_messages(scope, session_id)
        await self._record(scope, "messages.clear", session_id=session_id, detail={"count": count})
        return count

    async def erase(self, scope: Scope, whole_tenant: bool) -> int:
        """Erase a user or a whole tenant, then log it.

        The entry is written after the erasure, so an erased tenant's trail starts
        again with the record of its erasure (who, when, how many sessions).
        """
        erase = getattr(self.inner, "erase", None)
        if erase is None:
            raise Unsupported(f"{type(self.inner).__name__} has no erase method; it cannot erase")
        count = int(await erase(scope, whole_tenant))
        action = "tenant.erase" if whole_tenant else "user.erase"
        await self._record(scope, action, detail={"sessions": count})
        return count

    async def delete_session(self, scope: Scope, session_id: str) -> bool:
        """Delete a session, and log it if it existed."""
        existed = await self.inner.delete_session(scope, session_id)
        if existed:
            await self._record(scope, "session.delete", session_id=session_id)
        return existed

    async def update_session(
        self, scope: Scope, session_id: str, update: SessionUpdate
    ) -> SessionInfo:
        """Update a session's row, and log which fields changed (usage alone is not logged)."""
        info = await self.inner.update_session(scope, session_id, update)
        changed = [f for f in _SESSION_CHANGES if getattr(update, f) is not None]
        if changed:
            await self._record(
                scope, "session.update", session_id=session_id, detail={"changed": changed}
            )
        return info

    async def import_session(
        self,
        scope: Scope,
        info: SessionInfo,
        messages: Sequence[Message],
        state: State | None,
    ) -> SessionInfo:
        """Create a session whole, and log it."""
        created = await self.inner.import_session(scope, info, messages, state)
        await self._record(
            scope, "session.import", session_id=info.id, detail={"messages": len(messages)}
        )
        return created

    async def restore_state(
        self, scope: Scope, level: StateLevel, session_id: str | None, state: State
    ) -> State:
        """Write a state exactly as given, and log it."""
        restored = await self.inner.restore_state(scope, level, session_id, state)
        await self._record(
            scope,
            "state.restore",
            session_id=session_id,
            target=level,
            detail={"version": state.version},
        )
        return restored

    async def restore_document(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        versions: Sequence[Document],
    ) -> None:
        """Write a document's versions, and log it; the audit trail's are refused."""
        for version in versions:
            _not_the_trail(version.namespace)
        await self.inner.restore_document(scope, level, session_id, versions)
        if versions:
            await self._record(
                scope,
                "document.restore",
                session_id=session_id,
                target=f"{versions[0].namespace}/{versions[0].key}",
                detail={"level": level, "versions": [v.version for v in versions]},
            )

    async def update_state(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        patch: dict[str, Any],
        expected_version: int | None,
    ) -> Any:
        """Merge-patch a state, and log which keys it set and deleted (not their values)."""
        state = await self.inner.update_state(scope, level, session_id, patch, expected_version)
        await self._record(
            scope,
            "state.update",
            session_id=session_id,
            target=level,
            detail={
                "set": sorted(k for k, v in patch.items() if v is not None),
                "deleted": sorted(k for k, v in patch.items() if v is None),
                "version": state.version,
            },
        )
        return state

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
        """Write a document version (a block, an overlay, ...), and log it.

        Raises:
            InvalidInput: If `namespace` is the audit trail's.
        """
        _not_the_trail(namespace)
        doc = await self.inner.put_document(
            scope, level, session_id, namespace, key, body, text, author, expected_version
        )
        await self._record(
            scope,
            "document.put",
            session_id=session_id,
            target=f"{namespace}/{key}",
            detail={"level": level, "version": doc.version, "author": author},
        )
        return doc

    async def delete_document(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str,
        key: str,
    ) -> bool:
        """Delete a document with its versions, and log it if it existed.

        Raises:
            InvalidInput: If `namespace` is the audit trail's.
        """
        _not_the_trail(namespace)
        existed = await self.inner.delete_document(scope, level, session_id, namespace, key)
        if existed:
            await self._record(
                scope,
                "document.delete",
                session_id=session_id,
                target=f"{namespace}/{key}",
                detail={"level": level},
            )
        return existed

    async def close(self) -> None:
        """Close the inner store."""
        await self.inner.close()
