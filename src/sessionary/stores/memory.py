"""The in-memory engine: the reference behaviour every other backend must match.

`memory://` opens a private store; `memory://NAME` opens the store of that name shared
by everything in this process that names it. Messages are kept encoded, exactly as a
database would keep them, so a caller's later edits to a Message never leak in.
Search matches whole words case-insensitively with the same query language as the
other backends, but without stemming.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from sessionary.errors import (
    AlreadyExists,
    InvalidInput,
    MessageNotFound,
    SessionNotFound,
)
from sessionary.model import Message, decode_body, to_micros
from sessionary.query import Query
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
    check_patch,
    decode_cursor,
    encode_cursor,
)
from sessionary.retention import Clock, clock_us, is_expired, stored_ttl, system_clock
from sessionary.stores._common import (
    DEFAULT_MAX_MESSAGE_BYTES,
    Prepared,
    check_delete,
    check_expected_version,
    check_filter,
    check_head,
    check_label,
    check_limit,
    check_restore,
    check_session_fields,
    check_stored_prefix,
    check_totals,
    check_ttl_update,
    empty_state,
    encode_imported_state,
    encode_json,
    gc_paused,
    next_state,
    path_and_document,
    prepare_messages,
    scopes_from_rows,
    state_owner,
    surviving_ancestor,
)
from sessionary.stores._memory_documents import MemoryDocuments
from sessionary.stores._textmatch import message_hits, pool_size
from sessionary.stores.base import DOCUMENT_SEARCH, DOCUMENTS, SEARCH

__all__ = ["MemoryEngine", "open_memory_engine"]

_named: dict[str, MemoryEngine] = {}
_named_lock = threading.Lock()


@dataclass(slots=True)
class _Node:
    seq: int
    id: str
    role: str
    created_us: int
    body: str
    text: str
    parent: str | None
    depth: int
    children: list[str] = field(default_factory=list)

    def message(self) -> Message:
        return decode_body(self.id, self.role, self.created_us, self.body, self.parent)


@dataclass(slots=True)
class _Session:
    info: SessionInfo
    nodes: dict[str, _Node] = field(default_factory=dict)
    head: str | None = None


class MemoryEngine(MemoryDocuments):
    """Keeps everything in process memory, guarded by one lock."""

    blocking = False
    capabilities = frozenset({SEARCH, DOCUMENTS, DOCUMENT_SEARCH})

    def __init__(
        self, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, clock: Clock = system_clock
    ) -> None:
        self.max_message_bytes = max_message_bytes
        self.clock = clock
        self._lock = threading.RLock()
        self._sessions: dict[tuple[str, str, str], _Session] = {}
        self._states: dict[tuple[str, str, str, str], State] = {}
        self._docs = {}
        self._seq = 0

    # ------------------------------------------------------------------ sessions

    def _session(self, scope: Scope, session_id: str) -> _Session:
        found = self._live(self._sessions.get((scope.tenant, scope.user, session_id)))
        if found is None:
            raise SessionNotFound(f"no session {session_id!r} in this scope")
        return found

    def _live(self, sess: _Session | None) -> _Session | None:
        """`sess`, or None if it is None or expired (see `sessionary.retention`)."""
        if sess is None or sess.info.ttl is None:
            return sess
        return None if is_expired(sess.info, clock_us(self.clock)) else sess

    def _info(self, sess: _Session) -> SessionInfo:
        info = copy.deepcopy(sess.info)
        info.head_id = sess.head
        info.message_count = len(sess.nodes)
        return info

    def create_session(self, scope: Scope, info: SessionInfo) -> SessionInfo:
        check_session_fields(info)
        encode_json(info.metadata, "session metadata", self.max_message_bytes)
        with self._lock:
            key = (scope.tenant, scope.user, info.id)
            if key in self._sessions:
                raise AlreadyExists(f"session {info.id!r} already exists")
            self._sessions[key] = _Session(self._new_row(replace(info, version=1)))
            return self._info(self._sessions[key])

    def _new_row(self, info: SessionInfo) -> SessionInfo:
        row = replace(copy.deepcopy(info), head_id=None, message_count=0, ttl=stored_ttl(info.ttl))
        row.created_at = row.created_at or self.clock()
        row.updated_at = row.updated_at or row.created_at
        return row

    def get_session(self, scope: Scope, session_id: str) -> SessionInfo | None:
        with self._lock:
            found = self._live(self._sessions.get((scope.tenant, scope.user, session_id)))
            return None if found is None else self._info(found)

    def list_sessions(
        self, scope: Scope, where: SessionFilter, limit: int, cursor: str | None
    ) -> Page[SessionInfo]:
        check_limit(limit)
        check_filter(where)
        with self._lock:
            rows = [
                self._info(s)
                for (tenant, user, _), s in self._sessions.items()
                if tenant == scope.tenant
                and user == scope.user
                and _matches(s.info, where)
                and self._live(s) is not None
            ]
        rows.sort(key=lambda i: (to_micros(_when(i.updated_at)), i.id), reverse=True)
        if cursor is not None:
            after_us, after_id = decode_cursor(cursor, int, str)
            rows = [
                r for r in rows if (to_micros(_when(r.updated_at)), r.id) < (after_us, after_id)
            ]
        page = rows[:limit]
        more = len(rows) > limit
        last = page[-1] if page else None
        next_cursor = (
            encode_cursor(to_micros(_when(last.updated_at)), last.id) if more and last else None
        )
        return Page(page, next_cursor)

    def update_session(self, scope: Scope, session_id: str, update: SessionUpdate) -> SessionInfo:
        check_label(update.name, "name")
        check_label(update.end_reason, "end_reason")
        check_ttl_update(update)
        if update.metadata is not None:
            encode_json(update.metadata, "session metadata", self.max_message_bytes)
        with self._lock:
            sess = self._session(scope, session_id)
            info = sess.info
            check_totals(info.input_tokens, info.output_tokens, info.cost, update)
            if update.name is not None:
                info.name = update.name
            if update.metadata is not None:
                info.metadata = copy.deepcopy(update.metadata)
            if update.end_reason is not None:
                info.end_reason = update.end_reason
                info.ended_at = update.ended_at or self.clock()
            info.input_tokens += update.add_input_tokens
            info.output_tokens += update.add_output_tokens
            info.cost += update.add_cost
            if update.ttl is not None:
                info.ttl = stored_ttl(update.ttl or None)
            if update.ttl_sliding is not None:
                info.ttl_sliding = update.ttl_sliding
            info.version += 1
            info.updated_at = self.clock()
            return self._info(sess)

    def delete_session(self, scope: Scope, session_id: str) -> bool:
        with self._lock:
            removed = self._sessions.pop((scope.tenant, scope.user, session_id), None)
            self._states.pop(("session", scope.tenant, scope.user, session_id), None)
            self._drop_session_documents(scope, session_id)
            return removed is not None

    def erase(self, scope: Scope, whole_tenant: bool) -> int:
        """Delete everything of the scope's user (or with `whole_tenant` its tenant)."""

        def owned(tenant: str, user: str) -> bool:
            return tenant == scope.tenant and (whole_tenant or user == scope.user)

        with self._lock:
            sessions = [key for key in self._sessions if owned(key[0], key[1])]
            for key in sessions:
                del self._sessions[key]
            for owner in [key for key in self._states if owned(key[1], key[2])]:
                del self._states[owner]
            for owner in [key for key in self._docs if owned(key[1], key[2])]:
                del self._docs[owner]
            return len(sessions)

    def sweep(self, limit: int) -> int:
        """Delete up to `limit` expired sessions of every scope; return how many."""
        check_limit(limit)
        with self._lock:
            now = clock_us(self.clock)
            expired = [
                key
                for key, sess in self._sessions.items()
                if sess.info.ttl is not None and is_expired(sess.info, now)
            ][:limit]
            for tenant, user, session_id in expired:
                self.delete_session(Scope(tenant, user), session_id)
            return len(expired)

    # ------------------------------------------------------------------ messages

    def append(
        self,
        scope: Scope,
        session_id: str,
        messages: Sequence[Message],
        parent: Parent,
        expected_head: Expected,
    ) -> list[Message]:
        prepared = prepare_messages(messages, self.max_message_bytes)
        with self._lock:
            sess = self._session(scope, session_id)
            check_stored_prefix(prepared, sess.nodes)
            retry = all(item.message.id in sess.nodes for item in prepared)
            if not retry:
                check_head(session_id, sess.head, expected_head)
            at = self._resolve_parent(sess, parent)
            nodes = self._insert_chain(sess, prepared, at)
            if any(inserted for _, inserted in nodes):
                sess.head = nodes[-1][0].id
                sess.info.updated_at = self.clock()
            return [node.message() for node, _ in nodes]

    def _resolve_parent(self, sess: _Session, parent: Parent) -> str | None:
        if parent is HEAD:
            return sess.head
        if parent is None:
            return None
        if not isinstance(parent, str) or parent not in sess.nodes:
            raise MessageNotFound(f"parent message {parent!r} is not in this session")
        return parent

    def _insert_chain(
        self, sess: _Session, prepared: list[Prepared], parent: str | None
    ) -> list[tuple[_Node, bool]]:
        out: list[tuple[_Node, bool]] = []
        for item in prepared:
            existing = sess.nodes.get(item.message.id)
            if existing is not None:
                out.append((existing, False))
                parent = existing.id
                continue
            depth = sess.nodes[parent].depth + 1 if parent is not None else 0
            self._seq += 1
            node = _Node(
                self._seq,
                item.message.id,
                item.message.role,
                item.created_us,
                item.body,
                item.text,
                parent,
                depth,
            )
            sess.nodes[node.id] = node
            if parent is not None:
                sess.nodes[parent].children.append(node.id)
            out.append((node, True))
            parent = node.id
        return out

    def update_message(self, scope: Scope, session_id: str, message: Message) -> Message:
        (item,) = prepare_messages([message], self.max_message_bytes)
        with self._lock:
            sess = self._session(scope, session_id)
            node = sess.nodes.get(message.id)
            if node is None:
                raise MessageNotFound(f"no message {message.id!r} in session {session_id!r}")
            if node.role != message.role:
                raise InvalidInput(
                    f"a message's role cannot change ({node.role} -> {message.role})"
                )
            node.body, node.text = item.body, item.text
            sess.info.updated_at = self.clock()
            return node.message()

    def delete_message(self, scope: Scope, session_id: str, message_id: str) -> list[str]:
        with self._lock:
            sess = self._session(scope, session_id)
            node = sess.nodes.get(message_id)
            if node is None:
                raise MessageNotFound(f"no message {message_id!r} in session {session_id!r}")
            doomed = list(self._subtree(sess, message_id))
            if node.parent is not None:
                sess.nodes[node.parent].children.remove(message_id)
            if sess.head in doomed:
                sess.head = node.parent
            for mid in doomed:
                del sess.nodes[mid]
            sess.info.updated_at = self.clock()
            return doomed

    def delete_messages(
        self, scope: Scope, session_id: str, message_ids: Sequence[str]
    ) -> list[str]:
        with self._lock:
            sess = self._session(scope, session_id)
            found = [sess.nodes[m] for m in message_ids if m in sess.nodes]
            parents = {node.id: node.parent for node in found}
            children = [(node.id, child) for node in found for child in node.children]
            check_delete(session_id, message_ids, parents, children)
            if not message_ids:
                return []
            sess.head = surviving_ancestor(sess.head, parents)
            for node in found:
                if node.parent is not None and node.parent not in parents:
                    sess.nodes[node.parent].children.remove(node.id)
            for node in found:
                del sess.nodes[node.id]
            sess.info.updated_at = self.clock()
            return list(message_ids)

    def _subtree(self, sess: _Session, root: str) -> Iterator[str]:
        stack = [root]
        while stack:
            mid = stack.pop()
            yield mid
            stack.extend(sess.nodes[mid].children)

    def clear_messages(self, scope: Scope, session_id: str) -> int:
        with self._lock:
            sess = self._session(scope, session_id)
            count = len(sess.nodes)
            sess.nodes.clear()
            sess.head = None
            sess.info.updated_at = self.clock()
            return count

    def get_message(self, scope: Scope, session_id: str, message_id: str) -> Message | None:
        with self._lock:
            node = self._session(scope, session_id).nodes.get(message_id)
            return None if node is None else node.message()

    def get_path(
        self, scope: Scope, session_id: str, leaf: str | None, limit: int | None
    ) -> list[Message]:
        check_limit(limit)
        with self._lock:
            sess = self._session(scope, session_id)
            current = self._leaf(sess, leaf)
            path: list[_Node] = []
            while current is not None and (limit is None or len(path) < limit):
                node = sess.nodes[current]
                path.append(node)
                current = node.parent
            with gc_paused():
                return [node.message() for node in reversed(path)]

    def get_path_and_document(
        self,
        scope: Scope,
        session_id: str,
        leaf: str | None,
        limit: int | None,
        namespace: str,
        key: str,
    ) -> tuple[list[Message], Document | None]:
        with self._lock:  # one moment for both
            return path_and_document(self, scope, session_id, leaf, limit, namespace, key)

    def _leaf(self, sess: _Session, leaf: str | None) -> str | None:
        if leaf is None:
            return sess.head
        if leaf not in sess.nodes:
            raise MessageNotFound(f"no message {leaf!r} in this session")
        return leaf

    def get_children(self, scope: Scope, session_id: str, message_id: str) -> list[Message]:
        with self._lock:
            sess = self._session(scope, session_id)
            if message_id not in sess.nodes:
                raise MessageNotFound(f"no message {message_id!r} in session {session_id!r}")
            return [sess.nodes[c].message() for c in sess.nodes[message_id].children]

    def get_path_length(self, scope: Scope, session_id: str, leaf: str | None) -> int:
        with self._lock:
            sess = self._session(scope, session_id)
            current = self._leaf(sess, leaf)
            return 0 if current is None else sess.nodes[current].depth + 1

    def set_head(
        self, scope: Scope, session_id: str, message_id: str | None, expected_head: Expected = ANY
    ) -> None:
        with self._lock:
            sess = self._session(scope, session_id)
            check_head(session_id, sess.head, expected_head)
            if message_id is not None and message_id not in sess.nodes:
                raise MessageNotFound(f"no message {message_id!r} in session {session_id!r}")
            sess.head = message_id

    def page_messages(
        self, scope: Scope, session_id: str, cursor: str | None, limit: int
    ) -> tuple[list[Message], str | None]:
        check_limit(limit)
        after = tuple(decode_cursor(cursor, int, int)) if cursor is not None else (-1, 0)
        with self._lock:
            sess = self._session(scope, session_id)
            ordered = sorted((n.depth, n.seq, n) for n in sess.nodes.values())
            page = [item for item in ordered if item[:2] > after][:limit]
            messages = [node.message() for _, _, node in page]
        next_cursor = encode_cursor(*page[-1][:2]) if len(page) == limit else None
        return messages, next_cursor

    # ------------------------------------------------------------------ search

    def search(
        self,
        scope: Scope,
        query: Query,
        limit: int,
        session_id: str | None,
        role: str | None,
    ) -> list[SearchHit]:
        check_limit(limit)
        rows: list[tuple[int, tuple[str, str, str, int, str]]] = []
        with self._lock:
            if session_id is not None:
                self._session(scope, session_id)
            for (tenant, user, sid), sess in self._sessions.items():
                if tenant != scope.tenant or user != scope.user:
                    continue
                if (session_id is not None and sid != session_id) or self._live(sess) is None:
                    continue
                rows.extend(
                    (node.seq, (sid, node.id, node.role, node.created_us, node.text))
                    for node in sess.nodes.values()
                    if node.text and (role is None or node.role == role)
                )
        rows.sort(key=lambda row: -row[0])  # newest first, as the SQL stores hand them over
        # A store's index hands over the newest `pool_size` matches; so does this.
        return message_hits(query, (row for _, row in rows), limit, pool_size(limit))

    # ------------------------------------------------------------------ state

    def _state_key(
        self, scope: Scope, level: StateLevel, session_id: str | None
    ) -> tuple[str, str, str, str]:
        owner = state_owner(level, session_id)
        if level == "session":
            self._session(scope, owner)
        return (level, scope.tenant, scope.user if level != "app" else "", owner)

    def get_state(self, scope: Scope, level: StateLevel, session_id: str | None) -> State:
        with self._lock:
            key = self._state_key(scope, level, session_id)
            found = self._states.get(key)
            return copy.deepcopy(found) if found is not None else empty_state()

    def update_state(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        patch: dict[str, Any],
        expected_version: int | None,
    ) -> State:
        patch = check_patch(patch)
        expected_version = check_expected_version(expected_version, InvalidInput)
        with self._lock:
            key = self._state_key(scope, level, session_id)
            current = self._states.get(key, empty_state())
            state, _ = next_state(
                current, copy.deepcopy(patch), expected_version, f"{level} state",
                self.max_message_bytes,
            )  # fmt: skip
            self._states[key] = state
            return copy.deepcopy(state)

    def restore_state(
        self, scope: Scope, level: StateLevel, session_id: str | None, state: State
    ) -> State:
        with self._lock:
            key = self._state_key(scope, level, session_id)
            current = self._states.get(key, empty_state())
            if check_restore(level, current, state):
                encode_json(state.data, f"{level} state", self.max_message_bytes)
                self._states[key] = copy.deepcopy(state)
            return copy.deepcopy(self._states[key])

    # ------------------------------------------------------------------ whole stores

    def list_scopes(self) -> list[Scope]:
        with self._lock:
            rows = [(tenant, user) for tenant, user, _ in self._sessions]
            rows += [
                (tenant, user)
                for (level, tenant, user, _), state in self._states.items()
                if level != "session" and state.version
            ]
            rows += self._document_scope_rows()
        return scopes_from_rows(rows)

    # ------------------------------------------------------------------ whole sessions

    def import_session(
        self,
        scope: Scope,
        info: SessionInfo,
        messages: Sequence[Message],
        state: State | None,
    ) -> SessionInfo:
        prepared = prepare_messages(messages, self.max_message_bytes)
        check_session_fields(info)
        encode_imported_state(state, self.max_message_bytes)
        with self._lock:
            key = (scope.tenant, scope.user, info.id)
            if key in self._sessions:
                raise AlreadyExists(f"session {info.id!r} already exists")
            sess = _Session(self._new_row(info))
            for item in prepared:
                parent = item.message.parent_id
                if parent is not None and parent not in sess.nodes:
                    raise InvalidInput(
                        f"message {item.message.id!r} names parent {parent!r}, "
                        "which is not earlier in the import"
                    )
                self._insert_chain(sess, [item], parent)
            if info.head_id is not None and info.head_id not in sess.nodes:
                raise InvalidInput(f"head {info.head_id!r} is not among the imported messages")
            sess.head = info.head_id
            self._sessions[key] = sess
            if state is not None and state.version:
                skey = ("session", scope.tenant, scope.user, info.id)
                self._states[skey] = copy.deepcopy(state)
            return self._info(sess)

    def close(self) -> None:
        """Nothing to release: the data lives as long as the engine."""


def _when(moment: datetime | None) -> datetime:
    return moment or datetime(1970, 1, 1, tzinfo=UTC)


def _matches(info: SessionInfo, where: SessionFilter) -> bool:
    checks = (
        (where.name, info.name),
        (where.model, info.model),
        (where.source, info.source),
        (where.parent_session_id, info.parent_session_id),
    )
    if any(want is not None and want != have for want, have in checks):
        return False
    return where.ended is None or where.ended == (info.end_reason is not None)


def open_memory_engine(
    name: str, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, clock: Clock = system_clock
) -> MemoryEngine:
    """Return a fresh engine, or the process-wide one called `name` when a name is given.

    A named engine keeps the clock it was first opened with.
    """
    if not name:
        return MemoryEngine(max_message_bytes, clock)
    with _named_lock:
        if name not in _named:
            _named[name] = MemoryEngine(max_message_bytes, clock)
        return _named[name]
