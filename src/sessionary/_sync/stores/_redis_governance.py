# This file was generated from src/sessionary/stores/_redis_governance.py by tools/async_to_sync.py.
# Do not edit it: edit the source and run `python tools/async_to_sync.py`.
"""Erasure and retention on the Redis store: methods of `RedisStore`.

The sync twin is generated from this module (see `tools/async_to_sync.py`).

Every key of a user starts with the user's prefix and every key of a tenant with the
tenant's (see `_redis_layout`), so erasing one is a `SCAN` of that prefix that unlinks
what it finds, in batches, plus the scope's members of the scopes set. A write racing
the erasure may leave a session behind; run it again once the scope's writers stopped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any, cast

from sessionary.records import Scope, SessionInfo
from sessionary.stores._common import check_limit
from sessionary.stores._redis_conn import RedisConnection, mapped_errors
from sessionary.stores._redis_layout import META_FIELDS, ScopeKeys

__all__ = ["RedisGovernance", "glob_escape", "registry_scope"]

_BATCH = 500
"""Keys asked for per SCAN step, and unlinked per UNLINK."""

_SESSION_META = re.compile(r"(?:u:\d+:[^:]+:)?s:\d+:[^:]+:meta")
"""A session's meta key, after its tenant's or its user's prefix."""


def _batches(items: Iterator[Any]) -> Iterator[list[Any]]:
    """`items` in lists of up to `_BATCH`."""
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) >= _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def glob_escape(text: str) -> str:
    """`text` as a SCAN pattern that matches it literally."""
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


def registry_scope(namespace: str, key: str) -> Scope | None:
    """The scope whose registry (sorted set of session ids) `key` is, or None."""
    rest = key[len(namespace) + 1 :] if key.startswith(namespace + ":") else ""
    parts: list[str] = []
    for kind in ("t", "u"):
        found = re.match(rf"{kind}:(\d+):", rest)
        if found is None:
            return None
        start = found.end()
        size = int(found[1])
        parts.append(rest[start : start + size])
        rest = rest[start + size + 1 :]
    return Scope(*parts) if rest == "sessions" else None


class RedisGovernance:
    """The erasure and retention methods of `RedisStore`."""

    namespace: str
    _conn: RedisConnection

    def _keys(self, scope: Scope) -> ScopeKeys:
        raise NotImplementedError

    def _live(self, session_id: str, fields: Sequence[Any]) -> SessionInfo | None:
        raise NotImplementedError

    def delete_session(self, scope: Scope, session_id: str) -> bool:
        raise NotImplementedError

    def sweep(self, limit: int) -> int:
        """Delete up to `limit` expired sessions of every scope, with all their keys.

        It reads every session's row (scope by scope, in batches); each delete is the
        atomic script `delete_session` runs, so sweepers in several processes never
        count one session twice.

        Returns:
            How many sessions were deleted.
        """
        check_limit(limit)
        deleted = 0
        client = self._conn.client
        pattern = glob_escape(self.namespace) + ":t:*sessions"
        with mapped_errors():
            for key in client.scan_iter(match=pattern, count=_BATCH):
                scope = registry_scope(self.namespace, key)
                if scope is None:
                    continue
                deleted += self._sweep_scope(scope, limit - deleted)
                if deleted >= limit:
                    break
        return deleted

    def _sweep_scope(self, scope: Scope, limit: int) -> int:
        """Delete up to `limit` expired sessions of one scope."""
        keys = self._keys(scope)
        client = self._conn.client
        deleted = 0
        for batch in _batches(client.zscan_iter(keys.registry, count=_BATCH)):
            ids = [session_id for session_id, _ in batch]
            with client.pipeline(transaction=False) as pipe:
                for session_id in ids:
                    pipe.hmget(keys.session(session_id).meta, list(META_FIELDS))
                rows = pipe.execute()
            for session_id, fields in zip(ids, rows, strict=True):
                if fields[0] is not None and self._live(session_id, fields) is None:
                    deleted += self.delete_session(scope, session_id)
                    if deleted >= limit:
                        return deleted
        return deleted

    def erase(self, scope: Scope, whole_tenant: bool) -> int:
        """Delete every key of the scope's user (or with `whole_tenant` its tenant).

        Returns:
            How many sessions were deleted.
        """
        keys = self._keys(scope)
        prefix = keys.tenant if whole_tenant else keys.user
        sessions = 0
        batch: list[str] = []
        with mapped_errors():
            for key in self._conn.client.scan_iter(match=glob_escape(prefix) + "*", count=_BATCH):
                sessions += bool(_SESSION_META.fullmatch(key[len(prefix) :]))
                batch.append(key)
                if len(batch) >= _BATCH:
                    self._conn.client.unlink(*batch)
                    batch.clear()
            if batch:
                self._conn.client.unlink(*batch)
            self._forget_scope(keys, whole_tenant)
        return sessions

    def _forget_scope(self, keys: ScopeKeys, whole_tenant: bool) -> None:
        """Take the erased scope (or every scope of the tenant) out of the scopes set."""
        members = cast(set[str], self._conn.client.smembers(keys.scopes))
        if whole_tenant:
            gone = [m for m in members if m.split(" ", 1)[0] == keys.scope.tenant]
        else:
            gone = [keys.member] if keys.member in members else []
            # The default user's member also stands for the tenant's app-level data.
            app = [keys.tenant + "app:state", keys.tenant + "app:docs"]
            if keys.scope.user == "default" and self._conn.client.exists(*app):
                gone = []
        if gone:
            self._conn.client.srem(keys.scopes, *gone)
