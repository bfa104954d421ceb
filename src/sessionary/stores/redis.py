"""The Redis store: sessions, message trees, state and documents on one Redis server.

Sessions use the incremental layout of the key-value stores, extended to trees: per
session a meta hash (head, counters, the registry row), one loose entry per message
appended since the last roll-up (keyed by its zero-padded sequence number), and the
snapshot: append-only chunks of at most `snapshot_frequency` entries each. Every entry
records its parent and depth, so a branch is read from its leaf up, one entry per
message returned; an entry in a chunk costs decoding that chunk once. Every
`snapshot_frequency` appended messages the loose entries become new chunks (no earlier
chunk is rewritten; a large batch is split, so a read near the head never decodes it
whole), and `max_messages`, if set, trims the oldest messages then.

Every write is one Lua script (`_redis_lua`, and `_redis_append` for appends), which
Redis runs atomically: appends from any number of processes and machines queue on the
server and never interleave, a stale expected head or version is refused inside the
script, and re-sent ids are kept once. An append is one `EVALSHA` with the few keys and
arguments it needs.
Reads are scripts too, but `history(limit=N)` (`get_path_and_document` at the head),
the read users wait on, usually skips Lua: the store remembers where the last read of a
session found its path and sends one `MULTI`/`EXEC` of plain commands for what should
hold it now, checks the answer against that atomic snapshot alone, and runs the script
only when the prediction missed (`_redis_recent`).
State and session rows are compare-and-set by script, retried when another writer won.
With `ttl`, every key of a session gets `PEXPIRE` on each write to it.

Redis has no full-text index here: `search` and `search_documents` raise `Unsupported`.
The sync twin, `RedisStore`, is generated from this module.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, cast

from sessionary.errors import (
    AlreadyExists,
    HeadConflict,
    InvalidInput,
    MessageNotFound,
    SessionNotFound,
    Unsupported,
)
from sessionary.kv._backoff import AsyncBackoff
from sessionary.kv.keys import check_key
from sessionary.model import Message, to_micros
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
from sessionary.retention import Clock, clock_us, is_expired, system_clock
from sessionary.stores._common import (
    DEFAULT_MAX_MESSAGE_BYTES,
    check_document_ref,
    check_expected_version,
    check_filter,
    check_head,
    check_label,
    check_limit,
    check_restore,
    check_session_fields,
    check_totals,
    check_ttl_update,
    empty_state,
    encode_imported_state,
    encode_json,
    gc_paused,
    has_children,
    next_state,
    prepare_messages,
    scopes_from_rows,
    state_owner,
    stored_after_new,
)
from sessionary.stores._redis_append import Appends, append_args, expected_arg
from sessionary.stores._redis_conn import AsyncRedisConnection, mapped_errors
from sessionary.stores._redis_documents import AsyncRedisDocuments, version_document
from sessionary.stores._redis_governance import AsyncRedisGovernance
from sessionary.stores._redis_layout import (
    META_FIELDS,
    ScopeKeys,
    SessionKeys,
    entry_message,
    meta_info,
    row_text,
)
from sessionary.stores._redis_recent import Layout, Layouts, answer, learn
from sessionary.stores._redis_rows import (
    import_plan,
    matches,
    settings_problem,
    state_text,
    stored_messages,
)
from sessionary.stores._rows import stored_copy
from sessionary.stores.base import DOCUMENTS
from sessionary.stores.urls import CONNECT_TIMEOUT, REQUEST_TIMEOUT

__all__ = ["AsyncRedisStore"]

NO_SEARCH = (
    "the redis store has no full-text index; search needs a store with the 'search' "
    "capability (sqlite, postgresql or mysql)"
)
_LIST_BATCH = 200


class AsyncRedisStore(AsyncRedisDocuments, AsyncRedisGovernance):
    """A store on a Redis server (`redis://host:port/db`).

    Args:
        url: The server's `redis://` (or `rediss://`) URL, without sessionary's options.
        namespace: The first part of every key the store uses.
        snapshot_frequency: Roll loose entries into a new snapshot chunk every this many
            appended messages; 0 never rolls up.
        max_messages: Keep at most this many messages per session, the oldest dropped at
            each roll-up (never the head or later ones); None keeps all.
        ttl: Seconds every key of a session lives after its last write, enforced by Redis
            itself (the keys vanish); None keeps them. A session's own TTL
            (`sessionary.retention`) is another thing, the same on every store.
        max_message_bytes: The largest encoded message (and state document) accepted.
        connect_timeout: Seconds to wait for a connection.
        timeout: Seconds to wait for each reply of the server.

    Raises:
        InvalidInput: If a setting is out of range.
        BackendNotInstalled: If redis-py is not installed.
    """

    capabilities: frozenset[str] = frozenset({DOCUMENTS})

    def __init__(
        self,
        url: str,
        *,
        namespace: str = "sessionary",
        snapshot_frequency: int = 25,
        max_messages: int | None = None,
        ttl: float | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        connect_timeout: float = CONNECT_TIMEOUT,
        timeout: float = REQUEST_TIMEOUT,
        clock: Clock = system_clock,
    ) -> None:
        problem = settings_problem(snapshot_frequency, max_messages, ttl)
        if problem is not None:
            raise InvalidInput(problem)
        if any(c.isspace() for c in check_key(namespace, "Redis namespace")):
            raise InvalidInput(f"a Redis namespace holds no spaces, got {namespace!r}")
        self.max_message_bytes = max_message_bytes
        self.clock = clock
        self.namespace = namespace
        self.snapshot_frequency = snapshot_frequency
        self.max_messages = max_messages
        self._ttl = "0" if ttl is None else str(max(1, round(ttl * 1000)))
        self._appends = Appends(namespace, snapshot_frequency, max_messages or 0, self._ttl)
        self._conn = AsyncRedisConnection(
            url, connect_timeout, timeout, {"append": self._appends.script}
        )
        self._client = self._conn.client
        self._layouts = Layouts(snapshot_frequency)

    async def __aenter__(self) -> AsyncRedisStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the store's connections."""
        await self._conn.close()

    def _keys(self, scope: Scope) -> ScopeKeys:
        return ScopeKeys(self.namespace, scope)

    def _now_us(self) -> int:
        """The store's clock now, in microseconds (what writes stamp, what expiry checks)."""
        return clock_us(self.clock)

    def _live(self, session_id: str, fields: Sequence[Any]) -> SessionInfo | None:
        """The row in a session's `META_FIELDS`, or None if it is missing or expired."""
        if fields[0] is None:
            return None
        info = meta_info(session_id, fields)
        return None if is_expired(info, self._now_us()) else info

    async def _session_script(
        self, name: str, keys: SessionKeys, *args: Any, with_time: bool = True
    ) -> Any:
        """Run a session script; writes get (now, ttl, session id) before their arguments."""
        head = [str(self._now_us()), self._ttl, keys.session_id] if with_time else []
        return await self._conn.run(name, keys.all, [*head, *args])

    # ------------------------------------------------------------------ sessions

    async def create_session(self, scope: Scope, info: SessionInfo) -> SessionInfo:
        check_session_fields(info)
        encode_json(info.metadata, "session metadata", self.max_message_bytes)
        keys = self._keys(scope)
        row = _new_row(replace(info, version=1), self.clock)
        updated = str(_micros(row.updated_at))
        created = await self._session_script(
            "create", keys.session(info.id), row_text(row), updated, keys.member
        )
        if not created:
            raise AlreadyExists(f"session {info.id!r} already exists")
        return await self._require_session(scope, info.id)

    async def get_session(self, scope: Scope, session_id: str) -> SessionInfo | None:
        meta = self._keys(scope).session(session_id).meta
        with mapped_errors():
            fields = await self._client.hmget(meta, list(META_FIELDS))
        return self._live(session_id, fields)

    async def _require_session(self, scope: Scope, session_id: str) -> SessionInfo:
        found = await self.get_session(scope, session_id)
        if found is None:
            raise SessionNotFound(f"no session {session_id!r} in this scope")
        return found

    async def list_sessions(
        self, scope: Scope, where: SessionFilter, limit: int, cursor: str | None
    ) -> Page[SessionInfo]:
        check_limit(limit)
        check_filter(where)
        after = None if cursor is None else tuple(decode_cursor(cursor, int, str))
        keys = self._keys(scope)
        top = "+inf" if after is None else str(after[0])
        found: list[SessionInfo] = []
        offset = 0
        while len(found) <= limit:
            with mapped_errors():
                batch: list[tuple[str, int]] = await self._client.zrevrangebyscore(  # type: ignore[assignment]
                    keys.registry, top, "-inf", offset, _LIST_BATCH, withscores=True,
                    score_cast_func=int,
                )  # fmt: skip
            offset += len(batch)
            ids = [sid for sid, score in batch if after is None or (score, sid) < after]
            found += [info for info in await self._rows(keys, ids) if matches(info, where)]
            if len(batch) < _LIST_BATCH:
                break
        page = found[:limit]
        more = len(found) > limit
        last = page[-1] if page else None
        next_cursor = encode_cursor(_micros(last.updated_at), last.id) if more and last else None
        return Page(page, next_cursor)

    async def _rows(self, keys: ScopeKeys, ids: list[str]) -> list[SessionInfo]:
        """The registry rows of `ids`; ids whose session expired leave the registry."""
        if not ids:
            return []
        with mapped_errors():
            async with self._client.pipeline(transaction=False) as pipe:
                for session_id in ids:
                    pipe.hmget(keys.session(session_id).meta, list(META_FIELDS))
                rows = await pipe.execute()
        gone = [sid for sid, fields in zip(ids, rows, strict=True) if fields[0] is None]
        if gone:
            with mapped_errors():
                await self._client.zrem(keys.registry, *gone)
        live = [self._live(sid, fields) for sid, fields in zip(ids, rows, strict=True)]
        return [info for info in live if info is not None]

    async def update_session(
        self, scope: Scope, session_id: str, update: SessionUpdate
    ) -> SessionInfo:
        check_label(update.name, "name")
        check_label(update.end_reason, "end_reason")
        if update.metadata is not None:
            encode_json(update.metadata, "session metadata", self.max_message_bytes)
        check_ttl_update(update)
        keys = self._keys(scope).session(session_id)
        backoff = AsyncBackoff(f"update session {session_id!r}")
        while True:
            with mapped_errors():
                fields = await self._client.hmget(keys.meta, list(META_FIELDS))
            if self._live(session_id, fields) is None:
                raise SessionNotFound(f"no session {session_id!r} in this scope")
            old_row = cast(str, fields[0])
            new_row = _updated_row(old_row, update, self.clock)
            done = await self._session_script("update_row", keys, old_row, new_row)
            if done == -1:
                raise SessionNotFound(f"no session {session_id!r} in this scope")
            if done == 1:  # the row as written, even if its new TTL has already run out
                with mapped_errors():
                    fields = await self._client.hmget(keys.meta, list(META_FIELDS))
                if fields[0] is None:
                    raise SessionNotFound(f"no session {session_id!r} in this scope")
                return meta_info(session_id, fields)
            await backoff.wait()

    async def delete_session(self, scope: Scope, session_id: str) -> bool:
        keys = self._keys(scope).session(session_id)
        existed = await self._conn.run("delete_session", keys.all, [session_id])
        return bool(existed)

    # ------------------------------------------------------------------ messages

    async def append(
        self,
        scope: Scope,
        session_id: str,
        messages: Sequence[Message],
        parent: Parent,
        expected_head: Expected,
    ) -> list[Message]:
        prepared = prepare_messages(messages, self.max_message_bytes, indexed=False)
        args = append_args(session_id, self._now_us(), parent, expected_head, prepared)
        route = self._appends.route(scope, session_id)
        keys, packed_keys = route.keys(len(prepared), parent is HEAD)
        if parent is HEAD:  # the next read predicts the messages past the head it saw
            self._layouts.appended(route.full[0], len(prepared))
        result = await self._conn.run_packed("append", keys, packed_keys, args)
        if isinstance(result, str) and result[0] == "?":  # the lean path did not apply
            route.ended = result == "?!"
            result = await self._conn.run_packed("append", route.full, route.packed_full, args)
        if isinstance(result, str):  # the lean path stored the one message
            return [stored_copy(prepared[0].message, route.stored(result))]
        status = result[0]
        if status == "nosession":
            raise SessionNotFound(f"no session {session_id!r} in this scope")
        if status == "noparent":
            raise MessageNotFound(f"parent message {parent!r} is not in this session")
        if status == "head":
            raise HeadConflict(
                f"session {session_id!r} head is {result[1] or None!r}, not {expected_head!r}"
            )
        if status == "stored":
            raise stored_after_new(result[1], result[2])
        route.learn(result[1])
        return stored_messages(prepared, result[2:])

    async def update_message(self, scope: Scope, session_id: str, message: Message) -> Message:
        (item,) = prepare_messages([message], self.max_message_bytes)
        keys = self._keys(scope).session(session_id)
        result = await self._session_script(
            "update_message", keys, message.id, message.role, item.body
        )
        _check_status(result[0], session_id, message.id)
        if result[0] == "role":
            raise InvalidInput(f"a message's role cannot change ({result[1]} -> {message.role})")
        return entry_message(result[2], int(result[1]))

    async def delete_message(self, scope: Scope, session_id: str, message_id: str) -> list[str]:
        keys = self._keys(scope).session(session_id)
        result = await self._session_script("delete_message", keys, message_id)
        _check_status(result[0], session_id, message_id)
        return list(result[1:])

    async def delete_messages(
        self, scope: Scope, session_id: str, message_ids: Sequence[str]
    ) -> list[str]:
        keys = self._keys(scope).session(session_id)
        result = await self._session_script("delete_messages", keys, *message_ids)
        if result[0] == "children":
            raise has_children(result[1], result[2])
        _check_status(result[0], session_id, result[1] if len(result) > 1 else None)
        return list(result[1:])

    async def clear_messages(self, scope: Scope, session_id: str) -> int:
        keys = self._keys(scope).session(session_id)
        count = await self._session_script("clear", keys)
        if count == -1:
            raise SessionNotFound(f"no session {session_id!r} in this scope")
        return int(count)

    async def get_message(self, scope: Scope, session_id: str, message_id: str) -> Message | None:
        keys = self._keys(scope).session(session_id)
        result = await self._read("read", keys, "message", message_id)
        if result[0] == "nomessage":
            return None
        _check_status(result[0], session_id, message_id)
        return entry_message(result[2], int(result[1]))

    async def _read(self, name: str, keys: SessionKeys, *args: Any) -> Any:
        """Run a read script down the lean lane, given the time now.

        The script itself reads a session expired by then as missing (``nosession``).
        """
        return await self._conn.run_lean(name, keys.all, [self._now_us(), *args])

    async def get_path(
        self, scope: Scope, session_id: str, leaf: str | None, limit: int | None
    ) -> list[Message]:
        check_limit(limit)
        keys = self._keys(scope).session(session_id)
        result = await self._read("read_path", keys, leaf or "", limit or 0, "path")
        _check_status(result[0], session_id, leaf)
        return _path_messages(result, 2)

    async def get_path_and_document(
        self,
        scope: Scope,
        session_id: str,
        leaf: str | None,
        limit: int | None,
        namespace: str,
        key: str,
    ) -> tuple[list[Message], Document | None]:
        """`get_path` and a session document in one call (see `_predicted`)."""
        check_limit(limit)
        check_document_ref(namespace, key)
        keys = self._keys(scope).session(session_id)
        member = f"{namespace}\n{key}"
        layout = self._layouts.get(keys.meta) if leaf is None and limit else None
        result = None
        if layout is not None and not layout.missed:
            result = await self._predicted(keys, layout, limit or 0, member)
        if result is None:
            result = await self._read("read_path_document", keys, leaf or "", limit or 0, member)
            if leaf is None and limit and result[0] == "ok":  # it predicts the next read
                seen = learn(result[4], result[5:], result[2])
                seen.missed = layout is not None and not layout.missed
                self._layouts.put(keys.meta, seen)
        _check_status(result[0], session_id, leaf)
        doc = version_document(member, result[2], result[3]) if result[2] else None
        return _path_messages(result, 5), doc

    async def _predicted(
        self, keys: SessionKeys, layout: Layout, limit: int, member: str
    ) -> list[Any] | None:
        """`read_path_document`'s answer for the head by a predicted read (`_redis_recent`).

        None if the prediction missed: the caller runs the script.
        """
        plan = self._layouts.plan(keys, layout, member, limit)
        replies = await self._conn.multi(plan.command, plan.replies)
        found = None if replies is None else answer(plan, replies, limit, self._now_us())
        if found is None:
            return None
        status, first, version, value, entries, seen = found
        if seen != layout:  # the same layout keeps its plan
            self._layouts.put(keys.meta, seen)
        return [status, str(first), version, value, "", *entries]

    async def get_children(self, scope: Scope, session_id: str, message_id: str) -> list[Message]:
        keys = self._keys(scope).session(session_id)
        result = await self._read("read", keys, "children", message_id)
        _check_status(result[0], session_id, message_id)
        first = int(result[1])
        return [entry_message(entry, first) for entry in result[2:]]

    async def get_path_length(self, scope: Scope, session_id: str, leaf: str | None) -> int:
        keys = self._keys(scope).session(session_id)
        result = await self._read("read_path", keys, leaf or "", 0, "length")
        _check_status(result[0], session_id, leaf)
        return int(result[1])

    async def set_head(
        self, scope: Scope, session_id: str, message_id: str | None, expected_head: Expected = ANY
    ) -> None:
        keys = self._keys(scope).session(session_id)
        status = await self._session_script(
            "set_head", keys, message_id or "", expected_arg(expected_head)
        )
        if status.startswith("head "):
            check_head(session_id, status[5:] or None, expected_head)
        _check_status(status, session_id, message_id)

    async def page_messages(
        self, scope: Scope, session_id: str, cursor: str | None, limit: int
    ) -> tuple[list[Message], str | None]:
        check_limit(limit)
        after = "" if cursor is None else "{:08d}:{:012d}".format(*decode_cursor(cursor, int, int))
        keys = self._keys(scope).session(session_id)
        result = await self._read("page", keys, after, limit)
        _check_status(result[0], session_id, None)
        first, pairs = int(result[1]), result[2:]
        with gc_paused():
            messages = [entry_message(pairs[i + 1], first) for i in range(0, len(pairs), 2)]
        if len(messages) < limit:
            return messages, None
        depth, seq = pairs[-2].split(":")
        return messages, encode_cursor(int(depth), int(seq))

    async def roll_up(self, scope: Scope, session_id: str) -> None:
        """Fold a session's loose entries into a new snapshot chunk now (e.g. on shutdown).

        Raises:
            SessionNotFound: If there is no such session.
        """
        keys = self._keys(scope).session(session_id)
        size = self.snapshot_frequency
        if not await self._session_script("roll_up", keys, self.max_messages or 0, size):
            raise SessionNotFound(f"no session {session_id!r} in this scope")

    # ------------------------------------------------------------------ search

    async def search(
        self,
        scope: Scope,
        query: Query,
        limit: int,
        session_id: str | None,
        role: str | None,
    ) -> list[SearchHit]:
        check_limit(limit)
        if session_id is not None:
            await self._require_session(scope, session_id)
        raise Unsupported(NO_SEARCH)

    # ------------------------------------------------------------------ state

    def _state_keys(
        self, scope: Scope, level: StateLevel, session_id: str | None
    ) -> tuple[str, list[str], str]:
        """The state key, the keys its swap script gets, and its scope member."""
        owner = state_owner(level, session_id)
        keys = self._keys(scope)
        if level == "session":
            session = keys.session(owner)
            return session.state, [session.state, session.meta, keys.scopes, *session.own], ""
        key = keys.owner(level, None) + "state"
        member = keys.member if level == "user" else f"{scope.tenant} default"
        return key, [key, key, keys.scopes], member

    async def _read_state(
        self, scope: Scope, level: StateLevel, session_id: str | None
    ) -> tuple[str, State]:
        """The stored text ('' if none) and the state it holds; checks the session exists."""
        key, script_keys, _ = self._state_keys(scope, level, session_id)
        with mapped_errors():
            async with self._client.pipeline(transaction=True) as pipe:
                if level == "session":  # the session's row: it must be there and live
                    pipe.hmget(script_keys[1], list(META_FIELDS))
                else:
                    pipe.exists(script_keys[1])
                pipe.get(key)
                fields, text = await pipe.execute()
        if level == "session" and self._live(cast(str, session_id), fields) is None:
            raise SessionNotFound(f"no session {session_id!r} in this scope")
        if text is None:
            return "", empty_state()
        data = json.loads(text)
        return text, State(data["d"], data["v"])

    async def _swap_state(
        self, scope: Scope, level: StateLevel, session_id: str | None, old: str, new: str
    ) -> bool:
        _, script_keys, member = self._state_keys(scope, level, session_id)
        guard = "1" if level == "session" else "0"
        done = await self._conn.run("swap", script_keys, [old, new, guard, member, self._ttl])
        if done == -1:
            raise SessionNotFound(f"no session {session_id!r} in this scope")
        return bool(done)

    async def get_state(self, scope: Scope, level: StateLevel, session_id: str | None) -> State:
        _, state = await self._read_state(scope, level, session_id)
        return state

    async def update_state(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        patch: dict[str, Any],
        expected_version: int | None,
    ) -> State:
        patch = check_patch(patch)
        expected_version = check_expected_version(expected_version, InvalidInput)
        backoff = AsyncBackoff(f"update {level} state")
        while True:
            old, current = await self._read_state(scope, level, session_id)
            state, encoded = next_state(
                current, patch, expected_version, f"{level} state", self.max_message_bytes
            )
            if await self._swap_state(
                scope, level, session_id, old, state_text(state.version, encoded)
            ):
                return state
            await backoff.wait()

    async def restore_state(
        self, scope: Scope, level: StateLevel, session_id: str | None, state: State
    ) -> State:
        backoff = AsyncBackoff(f"restore {level} state")
        while True:
            old, current = await self._read_state(scope, level, session_id)
            if not check_restore(level, current, state):
                return current
            encoded = encode_json(state.data, f"{level} state", self.max_message_bytes)
            new = state_text(state.version, encoded)
            if await self._swap_state(scope, level, session_id, old, new):
                return State(json.loads(encoded), state.version)
            await backoff.wait()

    # ------------------------------------------------------------------ whole stores

    async def list_scopes(self) -> list[Scope]:
        with mapped_errors():
            members = cast(set[str], await self._client.smembers(f"{self.namespace}:scopes"))
        pairs = [cast(tuple[str, str], tuple(member.split(" ", 1))) for member in sorted(members)]
        if not pairs:
            return []
        with mapped_errors():
            async with self._client.pipeline(transaction=False) as pipe:
                for tenant, user in pairs:
                    keys = self._keys(Scope(tenant, user))
                    pipe.zcard(keys.registry)
                    owned = [keys.user + "state", keys.user + "docs"]
                    if user == "default":  # app-level data lists its tenant's default user
                        owned += [keys.tenant + "app:state", keys.tenant + "app:docs"]
                    pipe.exists(*owned)
                counts = await pipe.execute()
        return scopes_from_rows(
            [pair for i, pair in enumerate(pairs) if counts[2 * i] or counts[2 * i + 1]]
        )

    async def import_session(
        self,
        scope: Scope,
        info: SessionInfo,
        messages: Sequence[Message],
        state: State | None,
    ) -> SessionInfo:
        prepared = prepare_messages(messages, self.max_message_bytes)
        check_session_fields(info)
        encode_json(info.metadata, "session metadata", self.max_message_bytes)
        row = _new_row(info, self.clock)
        plan = import_plan(prepared, info.head_id, self.snapshot_frequency)
        encoded = encode_imported_state(state, self.max_message_bytes)
        state_arg = "" if encoded is None or state is None else state_text(state.version, encoded)
        keys = self._keys(scope)
        args = [row_text(row), str(_micros(row.updated_at)), keys.member, *plan.head_args]
        args += [state_arg, *plan.section_args]
        created = await self._session_script("import", keys.session(info.id), *args)
        if not created:
            raise AlreadyExists(f"session {info.id!r} already exists")
        return await self._require_session(scope, info.id)


def _micros(moment: datetime | None) -> int:
    assert moment is not None
    return to_micros(moment)


def _new_row(info: SessionInfo, clock: Clock) -> SessionInfo:
    row = replace(info, head_id=None, message_count=0)
    row.created_at = row.created_at or clock()
    row.updated_at = row.updated_at or row.created_at
    return row


def _updated_row(old_row: str, update: SessionUpdate, clock: Clock) -> str:
    """The row `update` makes of `old_row` (both JSON), or raise if its totals overflow."""
    info = meta_info("row", (old_row, "0", "", "0"))
    check_totals(info.input_tokens, info.output_tokens, info.cost, update)
    if update.name is not None:
        info.name = update.name
    if update.metadata is not None:
        info.metadata = update.metadata
    if update.end_reason is not None:
        info.end_reason = update.end_reason
        info.ended_at = update.ended_at or clock()
    info.input_tokens += update.add_input_tokens
    info.output_tokens += update.add_output_tokens
    info.cost += update.add_cost
    if update.ttl is not None:
        info.ttl = update.ttl or None
    if update.ttl_sliding is not None:
        info.ttl_sliding = update.ttl_sliding
    info.version += 1
    return row_text(info)


def _path_messages(result: list[Any], start: int) -> list[Message]:
    """The messages of a path script's answer from `start` on (the leaf first), root first."""
    first = int(result[1])
    with gc_paused():
        return [entry_message(entry, first) for entry in reversed(result[start:])]


def _check_status(status: str, session_id: str, message_id: str | None) -> None:
    if status == "nosession":
        raise SessionNotFound(f"no session {session_id!r} in this scope")
    if status == "nomessage":
        raise MessageNotFound(f"no message {message_id!r} in session {session_id!r}")
