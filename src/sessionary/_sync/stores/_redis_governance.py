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
from typing import cast

from sessionary.records import Scope
from sessionary.stores._redis_conn import RedisConnection, mapped_errors
from sessionary.stores._redis_layout import ScopeKeys

__all__ = ["RedisGovernance", "glob_escape"]

_BATCH = 500
"""Keys asked for per SCAN step, and unlinked per UNLINK."""

_SESSION_META = re.compile(r"(?:u:\d+:[^:]+:)?s:\d+:[^:]+:meta")
"""A session's meta key, after its tenant's or its user's prefix."""


def glob_escape(text: str) -> str:
    """`text` as a SCAN pattern that matches it literally."""
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


class RedisGovernance:
    """The erasure and retention methods of `RedisStore`."""

    namespace: str
    _conn: RedisConnection

    def _keys(self, scope: Scope) -> ScopeKeys:
        raise NotImplementedError

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
