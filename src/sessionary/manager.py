"""The session manager: the registry of a scope's sessions, and search across them.

`AsyncSessionManager` is the source; `sessionary.SessionManager` is its generated
synchronous twin with the same method names.
"""

from __future__ import annotations

import builtins
import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping
from datetime import datetime
from typing import Any, cast

from sessionary._context_api import AsyncHistoryToolsMixin
from sessionary.audit_entry import AuditEntry, AuditFilter
from sessionary.blocks import SessionConfig
from sessionary.compaction.overlays import Overlay
from sessionary.compaction.planner import safe_cuts
from sessionary.compaction.policy import CompactionPolicy
from sessionary.compaction.split import continuation
from sessionary.crypto import Encryption
from sessionary.errors import (
    AlreadyExists,
    InvalidInput,
    InvalidURL,
    SessionNotFound,
    Unsupported,
)
from sessionary.ids import check_id, new_id
from sessionary.model import Message
from sessionary.query import parse_query
from sessionary.records import (
    ANY,
    HEAD,
    Document,
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
    check_object,
    check_patch,
)
from sessionary.retention import Clock, check_ttl
from sessionary.session import AsyncSession, check_role
from sessionary.stores._common import (
    check_cost,
    check_count,
    check_expected_version,
    check_filter,
    check_limit,
)
from sessionary.stores.audited import AsyncAuditedStore, AsyncAuditLog
from sessionary.stores.base import DOCUMENTS, AsyncStore
from sessionary.stores.encrypted import AsyncEncryptedStore
from sessionary.stores.registry import open_async_store
from sessionary.transfer import AsyncImporter, Existing, export_records, owner_documents
from sessionary.window import splits_tool_turn

__all__ = ["DEFAULT_URL", "AsyncSessionManager"]

DEFAULT_URL = "sqlite:///sessionary.db"


class AsyncSessionManager(AsyncHistoryToolsMixin):
    """Creates, finds, forks and searches the sessions of one scope (tenant and user).

    Args:
        store: A store URL (`sqlite:///path.db`, `memory://`, ...) or an open store. A
            store opened here from a URL is closed by `close`; one passed in is not.
        tenant: The application that owns the data.
        user: The user within the tenant.
        config: The context blocks, prompt caching and tools of every session it opens.
        compaction: How its sessions compact (see `CompactionPolicy`).
        ttl: Seconds each session this manager creates lives (see `sessionary.retention`);
            None (the default): forever. `create` and `set_ttl` set one session's.
        ttl_sliding: Count that TTL from each session's last activity (the default), or
            with False from its creation.
        clock: What the store opened here from a URL takes as the time now when it
            decides expiry (default: the system clock); for tests. An open store gets
            its clock where it is built.
        encryption: Encrypt message bodies, state and documents at rest with these keys
            (see `sessionary.stores.encrypted`); the store is wrapped, and closed with
            the wrapper if this manager opened it.
        audit: Log who changed what (message updates and deletes, state patches,
            document and block writes, session deletes) in the store's audit trail
            (see `sessionary.stores.audited`); read it with `audit`.
        actor: Who this manager's changes are logged as (see `as_actor` for another).

    Raises:
        InvalidURL: If `store` is neither a URL nor a store.
        InvalidInput: With `audit`, if `actor` is not 1 to 128 printable characters; a
            `ttl` that is not a positive number of seconds; a `clock` given with an
            open store.
        Unsupported: With `audit`, if the store has no documents.
    """

    def __init__(
        self,
        store: AsyncStore | str = DEFAULT_URL,
        *,
        tenant: str = "default",
        user: str = "default",
        config: SessionConfig | None = None,
        compaction: CompactionPolicy | None = None,
        ttl: float | None = None,
        ttl_sliding: bool = True,
        clock: Clock | None = None,
        encryption: Encryption | None = None,
        audit: bool = False,
        actor: str = "unknown",
    ) -> None:
        self.scope = Scope(tenant, user)
        self.config = config if config is not None else SessionConfig()
        self.compaction = compaction
        self.ttl = check_ttl(ttl)
        self.ttl_sliding = _check_sliding(ttl_sliding)
        if not isinstance(store, str) and not hasattr(store, "capabilities"):
            raise InvalidURL(f"expected a store URL or an open store, not {type(store).__name__}")
        if clock is not None and not isinstance(store, str):
            raise InvalidInput("clock applies to a store opened from a URL; give it to the store")
        self._owns_store = isinstance(store, str)
        self.store: AsyncStore = (
            open_async_store(store, clock=clock) if isinstance(store, str) else store
        )
        if encryption is not None:
            self.store = cast(AsyncStore, AsyncEncryptedStore(self.store, encryption))
        if audit:
            self.store = AsyncAuditedStore(self.store, actor).as_store()

    async def close(self) -> None:
        """Close the store if this manager opened it."""
        if self._owns_store:
            await self.store.close()

    async def __aenter__(self) -> AsyncSessionManager:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def for_user(self, user: str, *, tenant: str | None = None) -> AsyncSessionManager:
        """Return a manager for another user (and tenant) sharing this one's store."""
        tenant = self.scope.tenant if tenant is None else tenant
        return AsyncSessionManager(
            self.store,
            tenant=tenant,
            user=user,
            config=self.config,
            compaction=self.compaction,
            ttl=self.ttl,
            ttl_sliding=self.ttl_sliding,
        )

    def as_actor(self, actor: str) -> AsyncSessionManager:
        """Return a manager sharing this one's store whose changes are logged as `actor`.

        Everything else is this manager's, as with `for_user`: scope, config,
        compaction, TTL, and the store's clock and encryption.

        Raises:
            InvalidInput: If `actor` is not 1 to 128 printable characters.
        """
        store = self.store
        if isinstance(store, AsyncAuditedStore):
            store = store.inner
        return AsyncSessionManager(
            AsyncAuditedStore(store, actor).as_store(),
            tenant=self.scope.tenant,
            user=self.scope.user,
            config=self.config,
            compaction=self.compaction,
            ttl=self.ttl,
            ttl_sliding=self.ttl_sliding,
        )

    @property
    def audit_log(self) -> AsyncAuditLog:
        """The store's audit trail, to record a change of your own (`record`) or read it."""
        return AsyncAuditLog(self.store)

    async def audit(
        self,
        *,
        limit: int | None = 100,
        actor: str | None = None,
        action: str | None = None,
        session_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        every_user: bool = False,
    ) -> builtins.list[AuditEntry]:
        """Return entries of the audit trail, newest first.

        The trail is the tenant's; without `every_user` only the changes to this
        manager's user's data are returned.

        Args:
            limit: At most this many (None: all).
            actor: Only changes made by this actor.
            action: Only this kind of change (``message.delete``, ``state.update``, ...).
            session_id: Only changes to this session.
            since: Only changes at or after this time.
            until: Only changes before this time.
            every_user: Changes to every user's data in the tenant.

        Raises:
            Unsupported: If the store has no documents.
        """
        if limit is not None:
            check_limit(limit)
        where = AuditFilter(
            None if every_user else self.scope.user, actor, action, session_id, since, until
        )
        return await self.audit_log.entries(self.scope, where, limit)

    # ------------------------------------------------------------------ registry

    def session(self, session_id: str) -> AsyncSession:
        """Return a handle on a session without reading the store.

        Raises:
            InvalidId: If the id is malformed. (A missing session raises
                `SessionNotFound` from the handle's first read or write.)
        """
        return AsyncSession(
            self.store, self.scope, session_id, self.config, compaction=self.compaction
        )

    async def create(
        self,
        *,
        id: str | None = None,
        name: str | None = None,
        parent_session_id: str | None = None,
        model: str | None = None,
        source: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        ttl: float | None = None,
        ttl_sliding: bool | None = None,
    ) -> AsyncSession:
        """Create a session and return a handle on it.

        Args:
            id: The session's id (default: a new one).
            name: A name to list and find it by.
            parent_session_id: The session it continues, if any.
            model: The model it talks to.
            source: Where it comes from (an app, a channel).
            metadata: Any JSON object.
            ttl: Seconds it lives (default: the manager's `ttl`); see `set_ttl`.
            ttl_sliding: Count the TTL from its last activity (default: the manager's
                choice) or, with False, from its creation.

        Raises:
            AlreadyExists: If `id` is taken in this scope.
            InvalidInput: If a field is malformed.
        """
        info = SessionInfo(
            id=id if id is not None else new_id(),
            name=name,
            parent_session_id=parent_session_id,
            model=model,
            source=source,
            metadata=check_object(metadata or {}, "session metadata"),
            ttl=check_ttl(ttl) if ttl is not None else self.ttl,
            ttl_sliding=self.ttl_sliding if ttl_sliding is None else _check_sliding(ttl_sliding),
        )
        created = await self.store.create_session(self.scope, info)
        return self.session(created.id)

    async def get(self, session_id: str) -> SessionInfo | None:
        """Return a session's registry row, or None."""
        return await self.store.get_session(self.scope, check_id(session_id, "session id"))

    async def get_or_create(self, session_id: str, **fields: Any) -> AsyncSession:
        """Return a handle on a session, creating it (with `fields`) if it does not exist."""
        if await self.get(session_id) is None:
            # Another writer may create it first: that one is ours too.
            with contextlib.suppress(AlreadyExists):
                await self.create(id=session_id, **fields)
        return self.session(session_id)

    async def list(
        self,
        *,
        limit: int = 50,
        cursor: str | None = None,
        name: str | None = None,
        model: str | None = None,
        source: str | None = None,
        parent_session_id: str | None = None,
        ended: bool | None = None,
    ) -> Page[SessionInfo]:
        """Return a page of sessions, most recently active first.

        Args:
            limit: The page size.
            cursor: The `next_cursor` of the previous page.
            name: Only sessions with this name.
            model: Only sessions with this model.
            source: Only sessions with this source.
            parent_session_id: Only sessions forked or split from this one.
            ended: Only ended (True) or open (False) sessions.

        Raises:
            InvalidInput: If `limit` is not from 1 to `MAX_LIMIT`, or a filter has the
                wrong type (name, model, source: a label; ended: True or False).
            InvalidId: If `parent_session_id` is malformed.
        """
        check_limit(limit)
        where = SessionFilter(name, model, source, parent_session_id, ended)
        check_filter(where)
        return await self.store.list_sessions(self.scope, where, limit, cursor)

    async def rename(self, session_id: str, name: str) -> SessionInfo:
        """Rename a session.

        Raises:
            SessionNotFound: If there is no such session.
        """
        if not isinstance(name, str):
            raise InvalidInput("a session name must be a string")
        return await self._update(session_id, SessionUpdate(name=name))

    async def set_metadata(self, session_id: str, metadata: Mapping[str, Any]) -> SessionInfo:
        """Replace a session's metadata."""
        return await self._update(
            session_id, SessionUpdate(metadata=check_object(metadata, "session metadata"))
        )

    async def end(self, session_id: str, reason: str = "completed") -> SessionInfo:
        """Mark a session ended, with a reason (its messages stay readable)."""
        if not isinstance(reason, str) or not reason:
            raise InvalidInput("an end reason must be a non-empty string")
        return await self._update(session_id, SessionUpdate(end_reason=reason))

    async def add_usage(
        self, session_id: str, input_tokens: int = 0, output_tokens: int = 0, cost: float = 0.0
    ) -> SessionInfo:
        """Add to a session's token and cost counters, atomically."""
        check_count(input_tokens, "input_tokens")
        check_count(output_tokens, "output_tokens")
        cost = check_cost(cost)
        update = SessionUpdate(
            add_input_tokens=input_tokens, add_output_tokens=output_tokens, add_cost=float(cost)
        )
        return await self._update(session_id, update)

    async def set_ttl(
        self, session_id: str, ttl: float | None, *, sliding: bool | None = None
    ) -> SessionInfo:
        """Give a session a TTL in seconds (None: it lives forever); see `sessionary.retention`.

        A sliding TTL (the default) counts from the session's last activity, which this
        change is too; with ``sliding=False`` it counts from the session's creation, so
        a session already older than `ttl` expires at once.

        Raises:
            SessionNotFound: If there is no such session (or it has expired).
            InvalidInput: If `ttl` is not a positive number of seconds or None.
        """
        seconds = check_ttl(ttl)
        update = SessionUpdate(
            ttl=0.0 if seconds is None else seconds,
            ttl_sliding=None if sliding is None else _check_sliding(sliding),
        )
        return await self._update(session_id, update)

    async def _update(self, session_id: str, update: SessionUpdate) -> SessionInfo:
        return await self.store.update_session(
            self.scope, check_id(session_id, "session id"), update
        )

    async def delete(self, session_id: str) -> bool:
        """Delete a session with its messages, state and search rows; False if absent."""
        return await self.store.delete_session(self.scope, check_id(session_id, "session id"))

    async def fork(
        self,
        session_id: str,
        at_message_id: str | None = None,
        *,
        name: str | None = None,
        id: str | None = None,
    ) -> AsyncSession:
        """Copy the path up to a message (default: the head) into a new session.

        The fork records `session_id` as its parent, keeps the messages' ids and times,
        and starts with a copy of the session's state and of the compaction overlays
        whose range lies on the copied path. A fork point partway through a
        tool turn (some of an assistant message's calls answered, not all) is refused, so
        a fork never separates a tool call from its result.

        Raises:
            SessionNotFound: If there is no such session.
            MessageNotFound: If `at_message_id` is not in it.
            InvalidInput: If the fork point splits a tool turn.
        """
        source = await self.get(session_id)
        if source is None:
            raise SessionNotFound(f"no session {session_id!r} in this scope")
        if at_message_id is not None:
            check_id(at_message_id, "message id")
        path = await self.store.get_path(self.scope, session_id, at_message_id, None)
        if splits_tool_turn(path):
            raise InvalidInput(
                f"forking at {path[-1].id!r} would separate tool calls from their results; "
                "fork at the assistant message that made the calls, or after its last result"
            )
        state = await self.store.get_state(self.scope, "session", session_id)
        info = SessionInfo(
            id=id if id is not None else new_id(),
            name=name if name is not None else source.name,
            parent_session_id=session_id,
            model=source.model,
            source=source.source,
            metadata=dict(source.metadata),
            head_id=path[-1].id if path else None,
            ttl=source.ttl,
            ttl_sliding=source.ttl_sliding,
        )
        created = await self.store.import_session(self.scope, info, path, state)
        fork = self.session(created.id)
        if DOCUMENTS in self.store.capabilities:
            await self.session(session_id)._compactor.copy_to(fork._compactor, path)
        return fork

    async def compact_and_split(
        self,
        session_id: str,
        summary: str | None = None,
        *,
        name: str | None = None,
        id: str | None = None,
    ) -> AsyncSession:
        """End a session and continue it in a new one that starts from its summary.

        Without `summary`, the head's branch is compacted by the policy's summarizer with
        no protected head, keeping a tail. With `summary` (your own text), it covers the
        whole branch, up to a tool call still waiting for its result, which is kept
        after it. Either way the old session keeps the summary as an overlay; the new
        session (whose parent is `session_id`) holds it as an ordinary first message
        (marked in its metadata under ``sessionary.continued_from``) followed by what was
        kept, and a copy of the state. The old session ends with the reason
        ``compacted``; its messages stay readable and searchable.

        Raises:
            SessionNotFound: If there is no such session.
            Unsupported: If the store has no documents.
            SummarizerError: If the summarizer fails; nothing is changed.
            InvalidInput: If `summary` is blank, or the branch holds nothing it can
                cover (it is empty, or starts with a pending tool call).
        """
        source = await self.get(session_id)
        if source is None:
            raise SessionNotFound(f"no session {session_id!r} in this scope")
        old = self.session(session_id)
        if summary is None:
            await old.compact(protect_head=0)
        else:
            await _cover_branch(old, summary)
        messages = continuation(await old.history(), session_id)
        state = await self.store.get_state(self.scope, "session", session_id)
        info = SessionInfo(
            id=id if id is not None else new_id(),
            name=name if name is not None else source.name,
            parent_session_id=session_id,
            model=source.model,
            source=source.source,
            metadata=dict(source.metadata),
            head_id=messages[-1].id if messages else None,
            ttl=source.ttl,
            ttl_sliding=source.ttl_sliding,
        )
        created = await self.store.import_session(self.scope, info, messages, state)
        await self.end(session_id, "compacted")
        return self.session(created.id)

    # ------------------------------------------------------------------ messages

    async def append(
        self,
        session_id: str,
        message: Message | Mapping[str, Any],
        *,
        parent: Parent = HEAD,
        expected_head: Expected = ANY,
    ) -> Message:
        """Append a message to a session; see `AsyncSession.append`."""
        return await self.session(session_id).append(
            message, parent=parent, expected_head=expected_head
        )

    async def upsert(
        self, session_id: str, message: Message | Mapping[str, Any], *, parent: Parent = HEAD
    ) -> Message:
        """Append a message, or replace the stored one with its id; see `AsyncSession.upsert`."""
        return await self.session(session_id).upsert(message, parent=parent)

    async def append_all(
        self,
        session_id: str,
        messages: Iterable[Message | Mapping[str, Any]],
        *,
        parent: Parent = HEAD,
        expected_head: Expected = ANY,
    ) -> builtins.list[Message]:
        """Append messages as one atomic chain; see `AsyncSession.append_all`."""
        return await self.session(session_id).append_all(
            messages, parent=parent, expected_head=expected_head
        )

    async def history(
        self,
        session_id: str,
        leaf: str | None = None,
        limit: int | None = None,
        *,
        raw: bool = False,
    ) -> builtins.list[Message]:
        """Return a session's path to `leaf` (default: its head); see `AsyncSession.history`."""
        return await self.session(session_id).history(leaf, limit, raw=raw)

    async def message_count(self, session_id: str) -> int:
        """Return how many messages a session holds, on every branch."""
        return await self.session(session_id).message_count()

    async def clear(self, session_id: str) -> int:
        """Delete a session's messages and what hangs on them; see `AsyncSession.clear`."""
        return await self.session(session_id).clear()

    async def delete_messages(
        self, session_id: str, message_ids: Iterable[str]
    ) -> builtins.list[str]:
        """Delete exactly these messages of a session; see `AsyncSession.delete_messages`."""
        return await self.session(session_id).delete_messages(message_ids)

    async def add_compaction(
        self, session_id: str, summary: str, first_id: str, last_id: str
    ) -> Overlay:
        """Store your own summary over a range; see `AsyncSession.add_compaction`."""
        return await self.session(session_id).add_compaction(summary, first_id, last_id)

    async def compactions(self, session_id: str) -> builtins.list[Overlay]:
        """Return a session's compaction overlays, oldest first (`AsyncSession.overlays`)."""
        return await self.session(session_id).overlays()

    # ------------------------------------------------------------------ search and state

    async def search(
        self,
        query: str,
        *,
        limit: int = 20,
        session_id: str | None = None,
        role: str | None = None,
    ) -> builtins.list[SearchHit]:
        """Search the messages of every session in this scope, best match first.

        See `sessionary.query` for the query language.

        Raises:
            InvalidQuery: If the query has nothing to match.
            Unsupported: If the store has no full-text search.
        """
        parsed = parse_query(query)
        check_limit(limit)
        if session_id is not None:
            check_id(session_id, "session id")
        return await self.store.search(self.scope, parsed, limit, session_id, check_role(role))

    async def get_state(self, level: StateLevel = "user") -> State:
        """Return this scope's user state, or with `level="app"` the tenant's."""
        return await self.store.get_state(self.scope, level, None)

    async def update_state(
        self,
        patch: Mapping[str, Any],
        *,
        expected_version: int | None = None,
        level: StateLevel = "user",
    ) -> State:
        """Merge-patch this scope's user state (or with `level="app"` the tenant's).

        Arguments and errors are those of `AsyncSession.update_state`.
        """
        patch = check_patch(patch)
        expected = check_expected_version(expected_version, InvalidInput)
        return await self.store.update_state(self.scope, level, None, patch, expected)

    async def documents(
        self,
        level: StateLevel = "user",
        *,
        session_id: str | None = None,
        namespace: str | None = None,
        versions: bool = False,
    ) -> builtins.list[Document]:
        """Return the documents one owner holds, by namespace and key.

        Documents are the storage under blocks (``block``, ``block.<label>``), compaction
        overlays (``compaction``), the frozen system prompt (``prompt``), loaded skills
        (``loaded``) and agent state (``agent``).

        Args:
            level: Whose: "user" (default), "app", or "session" (with `session_id`).
            session_id: The owning session, for level "session".
            namespace: Only this namespace.
            versions: Every version of each document, oldest first, not just the latest.

        Raises:
            InvalidInput: If level is "session" without a session id.
        """
        if level not in ("session", "user", "app"):
            raise InvalidInput(f"level must be session, user or app, not {level!r}")
        if level == "session":
            if session_id is None:
                raise InvalidInput("session documents need a session id")
            check_id(session_id, "session id")
        owner = session_id if level == "session" else None
        found = owner_documents(self.store, self.scope, level, owner, namespace, versions=versions)
        return [doc async for doc in found]

    # ------------------------------------------------------------------ erasure

    async def erase_user(self) -> int:
        """Delete everything this manager's user owns, in every session, at once.

        Its sessions with their messages, search index rows, state, documents (blocks,
        compaction overlays, agent state), and the user's own state and documents. The
        tenant's app-level data and every other user are left as they are.

        Returns:
            How many sessions were deleted.

        Raises:
            Unsupported: If the store has no `erase` method (a store of your own).
        """
        return await self._erase(whole_tenant=False)

    async def erase_tenant(self) -> int:
        """Delete everything of this manager's tenant: every user's data and the app's.

        Returns:
            How many sessions were deleted.

        Raises:
            Unsupported: If the store has no `erase` method (a store of your own).
        """
        return await self._erase(whole_tenant=True)

    async def sweep(self, *, batch_size: int = 500, limit: int | None = None) -> int:
        """Delete expired sessions of every scope in the store, with all they own.

        A session's messages, search index rows, state and documents (blocks, compaction
        overlays, agent state) go with it. Each batch of at most `batch_size` sessions
        is one transaction, so an interrupted sweep keeps what it did and the next one
        carries on; several processes may sweep the same store at once (each session is
        deleted once). Expired sessions are hidden from every read before they are swept.

        Args:
            batch_size: Sessions deleted per batch.
            limit: Stop after about this many (None: until none is left).

        Returns:
            How many sessions were deleted.

        Raises:
            Unsupported: If the store has no `sweep` method (a store of your own).
        """
        check_limit(batch_size, "batch_size")
        check_limit(limit, "limit")
        sweep = getattr(self.store, "sweep", None)
        if sweep is None:
            raise Unsupported(f"{type(self.store).__name__} has no sweep method; it cannot sweep")
        total = 0
        while limit is None or total < limit:
            size = batch_size if limit is None else min(batch_size, limit - total)
            done = int(await sweep(size))
            total += done
            if done < size:
                break
        return total

    async def _erase(self, whole_tenant: bool) -> int:
        erase = getattr(self.store, "erase", None)
        if erase is None:
            raise Unsupported(f"{type(self.store).__name__} has no erase method; it cannot erase")
        return int(await erase(self.scope, whole_tenant))

    # ------------------------------------------------------------------ export and import

    async def export(self, session_id: str | None = None) -> AsyncIterator[dict[str, Any]]:
        """Yield JSON records for one session, or for the whole scope.

        A whole scope starts with the user's and the app's state and documents (every
        version); each session gives a `session` record (its row and state), one
        `message` record per message, parents before children, then one `document`
        record per version of each of its documents, oldest first. The record shapes
        are described in `sessionary.transfer`.

        Raises:
            SessionNotFound: If `session_id` is not in this scope.
        """
        if session_id is not None:
            ids = [check_id(session_id, "session id")]
        else:
            ids = []
            cursor = None
            while True:
                page = await self.list(limit=200, cursor=cursor)
                ids.extend(info.id for info in page.items)
                cursor = page.next_cursor
                if cursor is None:
                    break
        async for record in export_records(
            self.store, self.scope, ids, whole_scope=session_id is None
        ):
            yield record

    async def import_records(
        self, records: Iterable[Mapping[str, Any]], *, existing: Existing = "fail"
    ) -> builtins.list[SessionInfo]:
        """Import records made by `export`, reading them one at a time.

        Each session is written whole or not at all as soon as its records are read, so
        a failure leaves the sessions before it imported (run again with
        ``existing="skip"`` to go on). User and app state and documents are restored
        exactly and never overwritten.

        Args:
            records: The records, in the order `export` made them.
            existing: For a session id this scope already holds: "fail" (default),
                "skip" it, or "replace" it (deleted, then imported; written back as
                it was if the store refuses the exported one).

        Returns:
            The rows of the sessions imported (skipped ones are left out).

        Raises:
            InvalidInput: If a record is malformed or out of order.
            AlreadyExists: If a session id is already taken and `existing` is "fail".
            VersionConflict: If a user or app state or document differs in this scope
                (unless `existing` is "skip", which keeps the scope's own).
        """
        return await AsyncImporter(self.store, self.scope, existing).run(records)


def _check_sliding(sliding: object) -> bool:
    if not isinstance(sliding, bool):
        raise InvalidInput(f"ttl_sliding must be True or False, got {sliding!r}")
    return sliding


async def _cover_branch(session: AsyncSession, summary: str) -> None:
    """Show `summary` over the head's branch, up to its last safe cut (see `compact_and_split`).

    Raises:
        InvalidInput: If no prefix of the branch can be covered.
    """
    path = await session.history(raw=True)
    cuts = safe_cuts(path)
    end = max((c for c in range(1, len(path) + 1) if cuts[c]), default=0)
    if end == 0:
        raise InvalidInput(f"session {session.id!r} has no messages a summary could replace")
    await session.add_compaction(summary, path[0].id, path[end - 1].id)
