r"""Documents on the Redis store: keyed, versioned JSON at session, user and app level.

Per owner (a session, a user or an app; see `ScopeKeys.owner`) three keys: an index (a
sorted set whose members, `namespace<newline>key`, list in (namespace, key) order), the version
numbers of each document, and every version's JSON. Each write is one Lua script
(`_redis_lua`): a stale `expected_version` is refused inside it, so two writers can never
both make the same version. A session's documents are keys of the session: deleting it,
or its TTL, takes them too. There is no full-text index: `search_documents` raises
`Unsupported`. The sync twin is generated from this module.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sessionary.errors import SessionNotFound, Unsupported, VersionConflict
from sessionary.kv._backoff import AsyncBackoff
from sessionary.model import from_micros, to_micros
from sessionary.query import Query
from sessionary.records import Document, DocumentHit, Page, Scope, StateLevel
from sessionary.stores._common import (
    check_document_ref,
    check_document_version,
    check_expected_version,
    check_limit,
    check_namespace,
    check_restored_versions,
    prepare_document,
    state_owner,
)
from sessionary.stores._documents import document_page, list_after, restore_plan
from sessionary.stores._redis_conn import AsyncRedisConnection
from sessionary.stores._redis_layout import ScopeKeys

__all__ = ["NO_DOCUMENT_SEARCH", "AsyncRedisDocuments", "version_document"]

NO_DOCUMENT_SEARCH = (
    "the redis store has no full-text index; search_documents needs a store with the "
    "'document_search' capability (sqlite, postgresql or mysql)"
)


def _version_json(updated_us: int, author: str, text: str, body_json: str) -> str:
    dump = json.dumps
    return f'{{"u":{updated_us},"a":{dump(author)},"t":{dump(text)},"b":{body_json}}}'


def version_document(member: str, version: str, value: str) -> Document:
    """The document a version's stored JSON holds (`member`: namespace, newline, key)."""
    namespace, key = member.split("\n", 1)
    data = json.loads(value)
    return Document(
        namespace, key, data["b"], int(version), data["a"], from_micros(data["u"]), data["t"]
    )


def _documents(reply: list[str]) -> list[Document]:
    return [version_document(*reply[i : i + 3]) for i in range(1, len(reply), 3)]


def _list_range(namespace: str | None, after: tuple[str, str] | None) -> tuple[str, str]:
    """The ZRANGEBYLEX bounds of a listing: within `namespace`, after the cursor's member."""
    low, high = "-", "+"
    if namespace is not None:
        low, high = f"[{namespace}\n", f"({namespace}\x0b"
    if after is not None:
        member = "\n".join(after)
        if namespace is None or member >= f"{namespace}\n":
            low = "(" + member
    return low, high


class AsyncRedisDocuments:
    """The document methods of `AsyncRedisStore`."""

    max_message_bytes: int
    _conn: AsyncRedisConnection
    _ttl: str

    def _keys(self, scope: Scope) -> ScopeKeys:
        raise NotImplementedError

    def _now_us(self) -> int:
        raise NotImplementedError

    async def _require_session(self, scope: Scope, session_id: str) -> Any:
        raise NotImplementedError

    def _document_keys(
        self, scope: Scope, level: StateLevel, session_id: str | None
    ) -> tuple[list[str], str, str]:
        """The keys the document scripts get, the guard flag, and the scope's member."""
        owner = state_owner(level, session_id)
        keys = self._keys(scope)
        prefix = keys.owner(level, owner)
        own = [prefix + "docs", prefix + "dhead", prefix + "dver"]
        if level == "session":
            session = keys.session(owner)
            return [*own, session.meta, keys.scopes, *session.own], "1", ""
        member = keys.member if level == "user" else f"{scope.tenant} default"
        return [*own, own[0], keys.scopes], "0", member

    async def _read_documents(
        self, scope: Scope, level: StateLevel, session_id: str | None, *args: Any
    ) -> list[Document]:
        keys, guard, _ = self._document_keys(scope, level, session_id)
        if level == "session":  # the script sees the keys, not the session's expiry
            await self._require_session(scope, session_id or "")
        reply = await self._conn.run_lean("read_documents", keys, [guard, *args])
        if reply[0] == "nosession":
            raise SessionNotFound(f"no session {session_id!r} in this scope")
        return _documents(reply)

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
        prepared = prepare_document(namespace, key, body, text, author, self.max_message_bytes)
        expected = check_expected_version(expected_version)
        keys, guard, member = self._document_keys(scope, level, session_id)
        updated = self._now_us()
        value = _version_json(updated, prepared.author, prepared.text, prepared.body_json)
        args = [f"{prepared.namespace}\n{prepared.key}", "" if expected is None else expected]
        done, current = await self._conn.run(
            "put_document", keys, [*args, guard, member, self._ttl, value]
        )
        if done == -1:
            raise SessionNotFound(f"no session {session_id!r} in this scope")
        if done == 0:
            raise VersionConflict(
                f"document {namespace}/{key:.80} is at version {current}, not {expected}"
            )
        return prepared.stored(int(current), updated)

    async def get_document(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str,
        key: str,
        version: int | None,
    ) -> Document | None:
        check_document_ref(namespace, key)
        wanted = check_document_version(version)
        found = await self._read_documents(
            scope, level, session_id, "one", f"{namespace}\n{key}", wanted or ""
        )
        return found[0] if found else None

    async def list_documents(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str | None,
        limit: int,
        cursor: str | None,
    ) -> Page[Document]:
        check_limit(limit)
        low, high = _list_range(namespace, list_after(namespace, cursor))
        found = await self._read_documents(scope, level, session_id, "list", low, high, limit)
        return document_page(found, limit)

    async def document_versions(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str,
        key: str,
    ) -> list[Document]:
        check_document_ref(namespace, key)
        return await self._read_documents(scope, level, session_id, "all", f"{namespace}\n{key}")

    async def delete_document(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str,
        key: str,
    ) -> bool:
        check_document_ref(namespace, key)
        keys, guard, _ = self._document_keys(scope, level, session_id)
        done = await self._conn.run("delete_document", keys, [f"{namespace}\n{key}", guard])
        if done == -1:
            raise SessionNotFound(f"no session {session_id!r} in this scope")
        return bool(done)

    async def search_documents(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        namespace: str | None,
        query: Query,
        limit: int,
    ) -> list[DocumentHit]:
        check_limit(limit)
        if namespace is not None:
            check_namespace(namespace)
        await self._read_documents(scope, level, session_id, "list", "-", "-", 1)
        raise Unsupported(NO_DOCUMENT_SEARCH)

    async def restore_document(
        self,
        scope: Scope,
        level: StateLevel,
        session_id: str | None,
        versions: Sequence[Document],
    ) -> None:
        wanted = check_restored_versions(versions, self.max_message_bytes)
        keys, guard, member = self._document_keys(scope, level, session_id)
        if not wanted:
            await self._read_documents(scope, level, session_id, "list", "-", "-", 1)
            return
        name = f"{wanted[0][1].namespace}\n{wanted[0][1].key}"
        backoff = AsyncBackoff(f"restore document {name!r}")
        while True:
            stored = await self._read_documents(scope, level, session_id, "all", name)
            plan = restore_plan({doc.version: doc for doc in stored}, wanted)
            args: list[Any] = [name, ",".join(str(d.version) for d in stored), guard, member]
            args.append(self._ttl)
            for doc, prepared in plan:
                updated = to_micros(doc.updated_at)
                value = _version_json(updated, prepared.author, prepared.text, prepared.body_json)
                args += [doc.version, value]
            done = await self._conn.run("restore_document", keys, args)
            if done == -1:
                raise SessionNotFound(f"no session {session_id!r} in this scope")
            if done == 1:
                return
            await backoff.wait()
