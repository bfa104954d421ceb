"""Reading a Redis store's own keys in tests (the raw client is the `redis_client` fixture)."""

from __future__ import annotations

from typing import Any


def namespace(url: str) -> str:
    """The key prefix a test's redis:// URL sets (its `namespace=` option)."""
    return url.rsplit("namespace=", 1)[1].split("&")[0]


def session_keys(client: Any, url: str, session_id: str) -> dict[str, str]:
    """A session's keys by their last segment (meta, loose, snap, ...)."""
    pattern = f"{namespace(url)}:*:s:{len(session_id)}:{session_id}:*"
    return {key.rsplit(":", 1)[1]: key for key in client.scan_iter(match=pattern)}
