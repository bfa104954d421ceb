"""Copying everything one store holds into another: `migrate`, then `verify`.

`migrate` walks the source scope by scope and copies each session whole (its row, every
message on every branch, its state) with the store's atomic `import_session`, then the
scope's user state and its tenant's app state with `restore_state`, which writes a
document exactly (data and version) and never overwrites a different one.

Because a session is imported whole or not at all, an interrupted run leaves only whole
sessions behind, and running it again skips them: a session the target already holds with
the same message count and head is left as it is. A target session that differs is an
error unless `replace` is set, in which case it is deleted and copied again. Run it
while nothing writes to the source; `verify` then compares per-scope counts.

Documents (blocks, compactions, the frozen prompt, agent state) of every level are copied
with every version, by `restore_document`, which skips versions already there: they are
copied for skipped sessions too, so a run interrupted between a session and its documents
completes. `verify` compares their numbers (documents, and versions by latest number).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sessionary._sync.stores.base import Store
from sessionary.errors import AlreadyExists, Unsupported
from sessionary.model import Message
from sessionary.records import Document, Scope, SessionFilter, StateLevel
from sessionary.stores.base import DOCUMENTS

__all__ = [
    "MigrationProgress",
    "MigrationResult",
    "Mismatch",
    "ScopeCounts",
    "count_scopes",
    "migrate",
    "verify",
]

_PAGE = 200
_EVERY = SessionFilter()


@dataclass(frozen=True, slots=True)
class MigrationProgress:
    """How far a migration has got, reported after each session."""

    sessions_done: int
    sessions_total: int
    messages_copied: int


@dataclass(slots=True)
class MigrationResult:
    """What a migration did; skipped sessions were already in the target."""

    scopes: int = 0
    sessions_copied: int = 0
    sessions_skipped: int = 0
    messages_copied: int = 0
    states_copied: int = 0
    documents_copied: int = 0


@dataclass(frozen=True, slots=True)
class ScopeCounts:
    """What one scope holds, as `verify` compares it."""

    sessions: int = 0
    messages: int = 0
    user_state_version: int = 0
    app_state_version: int = 0
    documents: int = 0
    document_versions: int = 0

    def describe(self) -> str:
        """Return the counts as words, e.g. `3 sessions, 20 messages, user state v2`."""
        words = [_plural(self.sessions, "session"), _plural(self.messages, "message")]
        words.append(f"user state v{self.user_state_version}")
        words.append(f"app state v{self.app_state_version}")
        words.append(
            f"{_plural(self.documents, 'document')} ({_plural(self.document_versions, 'version')})"
        )
        return ", ".join(words)


@dataclass(frozen=True, slots=True)
class Mismatch:
    """A scope whose counts differ between the source and the target."""

    scope: Scope
    source: ScopeCounts
    target: ScopeCounts

    def describe(self) -> str:
        """Return the mismatch as one line."""
        return (
            f"tenant {self.scope.tenant!r} user {self.scope.user!r}: source has "
            f"{self.source.describe()}; target has {self.target.describe()}"
        )


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _session_ids(store: Store, scope: Scope) -> list[str]:
    ids: list[str] = []
    cursor: str | None = None
    while True:
        page = store.list_sessions(scope, _EVERY, _PAGE, cursor)
        ids.extend(info.id for info in page.items)
        cursor = page.next_cursor
        if cursor is None:
            return ids


def _messages(store: Store, scope: Scope, session_id: str) -> list[Message]:
    messages: list[Message] = []
    cursor: str | None = None
    while True:
        page, cursor = store.page_messages(scope, session_id, cursor, _PAGE)
        messages.extend(page)
        if cursor is None:
            return messages


def _copy_session(
    source: Store, target: Store, scope: Scope, session_id: str, replace: bool
) -> int | None:
    """Copy one session whole; return its message count, or None if it was skipped."""
    info = source.get_session(scope, session_id)
    if info is None:  # deleted since it was listed
        return None
    existing = target.get_session(scope, session_id)
    if existing is not None:
        if (existing.message_count, existing.head_id) == (info.message_count, info.head_id):
            return None
        if not replace:
            raise AlreadyExists(
                f"session {session_id!r} of tenant {scope.tenant!r} user {scope.user!r} is "
                f"already in the target with {_plural(existing.message_count, 'message')} "
                f"(the source has {info.message_count}); pass --replace to copy it again"
            )
        target.delete_session(scope, session_id)
    messages = _messages(source, scope, session_id)
    state = source.get_state(scope, "session", session_id)
    target.import_session(scope, info, messages, state)
    return len(messages)


def _copy_state(source: Store, target: Store, scope: Scope, level: StateLevel) -> int:
    """Copy a user or app state document; return 1 if there was one to copy."""
    state = source.get_state(scope, level, None)
    if not state.version:
        return 0
    target.restore_state(scope, level, None, state)
    return 1


def _owners(session_ids: list[str]) -> list[tuple[StateLevel, str | None]]:
    """Every document owner of a scope: its sessions, its user, its tenant's app."""
    owners: list[tuple[StateLevel, str | None]] = [("session", sid) for sid in session_ids]
    return [*owners, ("user", None), ("app", None)]


def _document_pages(
    store: Store, scope: Scope, level: StateLevel, session_id: str | None
) -> Iterator[list[Document]]:
    """Yield the latest versions of one owner's documents, a page at a time."""
    if DOCUMENTS not in store.capabilities:
        return
    cursor: str | None = None
    while True:
        page = store.list_documents(scope, level, session_id, None, _PAGE, cursor)
        yield page.items
        cursor = page.next_cursor
        if cursor is None:
            return


def _copy_documents(
    source: Store, target: Store, scope: Scope, level: StateLevel, session_id: str | None
) -> int:
    """Copy every version of one owner's documents; return how many documents."""
    copied = 0
    for page in _document_pages(source, scope, level, session_id):
        if page and DOCUMENTS not in target.capabilities:
            raise Unsupported("the target store has no documents; the source has some")
        for doc in page:
            versions = source.document_versions(scope, level, session_id, doc.namespace, doc.key)
            target.restore_document(scope, level, session_id, versions)
            copied += 1
    return copied


def migrate(
    source: Store,
    target: Store,
    *,
    replace: bool = False,
    on_progress: Callable[[MigrationProgress], None] | None = None,
) -> MigrationResult:
    """Copy every scope, session, message, state and document from `source` to `target`.

    Safe to run again after an interruption: sessions already copied are skipped.

    Args:
        source: The store to copy from; nothing in it is changed.
        target: The store to copy into.
        replace: Delete and copy again a target session that differs from the source's.
        on_progress: Called after each session with how far the copy has got.

    Raises:
        AlreadyExists: If the target holds a session that differs (without `replace`).
        VersionConflict: If the target holds a different user or app state document, or
            a different version of a document.
        Unsupported: If the source has documents and the target cannot store them.
    """
    plan = [(scope, _session_ids(source, scope)) for scope in source.list_scopes()]
    total = sum(len(ids) for _, ids in plan)
    result = MigrationResult(scopes=len(plan))
    tenants: set[str] = set()
    for scope, ids in plan:
        for session_id in ids:
            copied = _copy_session(source, target, scope, session_id, replace)
            if copied is None:
                result.sessions_skipped += 1
            else:
                result.sessions_copied += 1
                result.messages_copied += copied
            if copied is not None or target.get_session(scope, session_id) is not None:
                docs = _copy_documents(source, target, scope, "session", session_id)
                result.documents_copied += docs
            if on_progress is not None:
                done = result.sessions_copied + result.sessions_skipped
                on_progress(MigrationProgress(done, total, result.messages_copied))
        result.states_copied += _copy_state(source, target, scope, "user")
        result.documents_copied += _copy_documents(source, target, scope, "user", None)
        if scope.tenant not in tenants:
            tenants.add(scope.tenant)
            result.states_copied += _copy_state(source, target, scope, "app")
            result.documents_copied += _copy_documents(source, target, scope, "app", None)
    return result


def count_scopes(store: Store) -> dict[Scope, ScopeCounts]:
    """Return the counts `verify` compares, for every scope of a store."""
    counts: dict[Scope, ScopeCounts] = {}
    for scope in store.list_scopes():
        sessions = messages = 0
        ids: list[str] = []
        cursor: str | None = None
        while True:
            page = store.list_sessions(scope, _EVERY, _PAGE, cursor)
            sessions += len(page.items)
            messages += sum(info.message_count for info in page.items)
            ids.extend(info.id for info in page.items)
            cursor = page.next_cursor
            if cursor is None:
                break
        user = store.get_state(scope, "user", None).version
        app = store.get_state(scope, "app", None).version
        latest = [
            doc.version
            for level, sid in _owners(ids)
            for page in _document_pages(store, scope, level, sid)
            for doc in page
        ]
        counts[scope] = ScopeCounts(sessions, messages, user, app, len(latest), sum(latest))
    return counts


def verify(source: Store, target: Store) -> list[Mismatch]:
    """Return the scopes of `source` whose counts differ in `target`; empty if none do."""
    theirs = count_scopes(target)
    return [
        Mismatch(scope, ours, theirs.get(scope, ScopeCounts()))
        for scope, ours in count_scopes(source).items()
        if theirs.get(scope, ScopeCounts()) != ours
    ]
