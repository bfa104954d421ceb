"""API keys: each bound to a tenant (and optionally a user), stored hashed in the store.

A key is shown once, when it is made: ``sess_<id>.<secret>``. The store keeps only its
id, its binding, a random salt and ``sha256(salt + secret)``: the secret is 256 random
bits, so a fast salted hash is as strong as a slow one and costs microseconds per
request. Keys live as app-level documents of a tenant reserved for the server
(`KEYS_TENANT`, namespace ``apikey``), so every backend with documents (all of them)
can hold them and every process serving the same store sees the same keys. No key can be
made for the reserved tenant, so no API call can reach the key records.

Revoking writes a new version of the key's document marked revoked (the history stays);
a `Keyring` caches what it read for `cache_seconds`, so a key revoked by another process
stops working within that time (at once in the process that revoked it).
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sessionary.errors import InvalidInput, NotFound
from sessionary.ids import check_id
from sessionary.records import Document, Scope
from sessionary.stores.base import AsyncStore

__all__ = ["KEYS_TENANT", "TOKEN_PREFIX", "ApiKey", "Keyring"]

KEYS_TENANT = "sessionary.server"
TOKEN_PREFIX = "sess_"
_NAMESPACE = "apikey"
_SCOPE = Scope(KEYS_TENANT, "default")
_PAGE = 200


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A key's public record: its id, who it acts for, and whether it still works."""

    id: str
    tenant: str
    user: str | None
    name: str
    created_at: datetime
    revoked_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the record as JSON-ready data (never the secret or its hash)."""
        return {
            "id": self.id,
            "tenant": self.tenant,
            "user": self.user,
            "name": self.name,
            "created_at": self.created_at.isoformat(),
            "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None,
        }


def _digest(salt: str, secret: str) -> str:
    return hashlib.sha256(bytes.fromhex(salt) + secret.encode()).hexdigest()


def _key_of(doc: Document) -> ApiKey:
    body = doc.body
    revoked = body.get("revoked_at")
    return ApiKey(
        id=doc.key,
        tenant=str(body["tenant"]),
        user=body.get("user"),
        name=str(body.get("name", "")),
        created_at=datetime.fromisoformat(body["created_at"]),
        revoked_at=datetime.fromisoformat(revoked) if revoked else None,
    )


def split_token(token: str) -> tuple[str, str] | None:
    """Return a token's (key id, secret), or None if it is not shaped like a key."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    key_id, dot, secret = token[len(TOKEN_PREFIX) :].partition(".")
    if not dot or not secret or len(key_id) != 16 or not key_id.isalnum():
        return None
    return key_id, secret


class Keyring:
    """Makes, lists, revokes and checks the API keys kept in one store.

    Args:
        store: An open store (it needs the `documents` capability, as every backend has).
        cache_seconds: How long a key read from the store is trusted before re-reading.
    """

    def __init__(self, store: AsyncStore, *, cache_seconds: float = 5.0) -> None:
        self.store, self.cache_seconds = store, cache_seconds
        self._cache: dict[str, tuple[float, Document | None]] = {}

    async def create(
        self, tenant: str, user: str | None = None, name: str = ""
    ) -> tuple[ApiKey, str]:
        """Make a key and return its record and its token (shown this once only).

        Raises:
            InvalidId: If the tenant or user is malformed.
            InvalidInput: If the tenant is the server's reserved one, or the name is long.
        """
        check_id(tenant, "tenant")
        if user is not None:
            check_id(user, "user")
        if tenant == KEYS_TENANT:
            raise InvalidInput(f"tenant {KEYS_TENANT!r} is reserved for the server's keys")
        if not isinstance(name, str) or len(name) > 200:
            raise InvalidInput("a key's name is a string of at most 200 characters")
        key_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
        salt = secrets.token_hex(16)
        now = datetime.now(UTC)
        body = {
            "tenant": tenant,
            "user": user,
            "name": name,
            "created_at": now.isoformat(),
            "salt": salt,
            "sha256": _digest(salt, secret),
            "revoked_at": None,
        }
        doc = await self._put(key_id, body, 0)
        return _key_of(doc), f"{TOKEN_PREFIX}{key_id}.{secret}"

    async def list(self, tenant: str | None = None) -> builtins.list[ApiKey]:
        """Return every key (of one tenant, if given), revoked ones too, by id."""
        found: builtins.list[ApiKey] = []
        cursor: str | None = None
        while True:
            page = await self.store.list_documents(_SCOPE, "app", None, _NAMESPACE, _PAGE, cursor)
            found.extend(_key_of(doc) for doc in page.items)
            cursor = page.next_cursor
            if cursor is None:
                return [key for key in found if tenant is None or key.tenant == tenant]

    async def revoke(self, key_id: str) -> ApiKey:
        """Mark a key revoked; return its record. Revoking twice changes nothing.

        Raises:
            NotFound: If there is no such key.
        """
        doc = await self._read(key_id, fresh=True)
        if doc is None:
            raise NotFound(f"no API key {key_id!r}")
        if doc.body.get("revoked_at"):
            return _key_of(doc)
        body = {**doc.body, "revoked_at": datetime.now(UTC).isoformat()}
        return _key_of(await self._put(key_id, body, doc.version))

    async def verify(self, token: str) -> ApiKey | None:
        """Return the record of the live key `token` is, or None (unknown, wrong, revoked)."""
        parts = split_token(token)
        if parts is None:
            return None
        key_id, secret = parts
        doc = await self._read(key_id)
        if doc is None or doc.body.get("revoked_at"):
            return None
        expected = str(doc.body.get("sha256", ""))
        if not hmac.compare_digest(_digest(str(doc.body["salt"]), secret), expected):
            return None
        return _key_of(doc)

    async def _read(self, key_id: str, *, fresh: bool = False) -> Document | None:
        now = time.monotonic()
        cached = self._cache.get(key_id)
        if cached is not None and not fresh and now - cached[0] < self.cache_seconds:
            return cached[1]
        doc = await self.store.get_document(_SCOPE, "app", None, _NAMESPACE, key_id, None)
        if len(self._cache) > 10_000:  # bound the memory a flood of made-up ids can take
            self._cache.clear()
        self._cache[key_id] = (now, doc)
        return doc

    async def _put(self, key_id: str, body: dict[str, Any], expected: int) -> Document:
        doc = await self.store.put_document(
            _SCOPE, "app", None, _NAMESPACE, key_id, body, "", "server", expected
        )
        self._cache[key_id] = (time.monotonic(), doc)
        return doc
