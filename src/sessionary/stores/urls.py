"""Store URLs: which backend a URL names, and with what options (pure, no I/O).

Server URLs keep everything but their query string as the location (credentials, host,
port, database); the query string holds sessionary's options, and an unknown option is
an error rather than something silently passed on. `migrate=false` (SQLite, PostgreSQL,
MySQL) opens without creating or upgrading the schema, only checking its version, for a
database role without schema rights (`sessionary schema --print` gives the DDL).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

from sessionary.errors import InvalidURL

__all__ = ["StoreURL", "parse_store_url"]

_REDIS = ("redis", "rediss")
_SERVERS = {
    "postgresql": "postgresql",
    "postgres": "postgresql",
    "mysql": "mysql",
    "mariadb": "mysql",
}


def boolean(text: str) -> bool:
    """Read an option's `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`)."""
    value = {"true": True, "1": True, "yes": True, "on": True}.get(text.lower())
    value = {"false": False, "0": False, "no": False, "off": False}.get(text.lower(), value)
    if value is None:
        raise ValueError(text)
    return value


_POOL: dict[str, Callable[[str], object]] = {
    "pool_size": int,
    "connect_timeout": float,
    "max_message_bytes": int,
    "migrate": boolean,
}
_OPTIONS: dict[str, dict[str, Callable[[str], object]]] = {
    "memory": {"max_message_bytes": int},
    "sqlite": {
        "durability": str,
        "busy_timeout": float,
        "max_message_bytes": int,
        "migrate": boolean,
    },
    "postgresql": {**_POOL, "schema": str},
    "mysql": _POOL,
    "redis": {
        "namespace": str,
        "snapshot_frequency": int,
        "max_messages": int,
        "ttl": float,
        "max_message_bytes": int,
        "connect_timeout": float,
    },
}
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}\Z")
_NAMESPACE = re.compile(r"[A-Za-z0-9_.:-]{1,200}\Z")


@dataclass(frozen=True, slots=True)
class StoreURL:
    """A parsed store URL: the backend, where its data lives, and its options."""

    scheme: str
    location: str
    options: dict[str, object] = field(default_factory=dict)

    @property
    def sqlite_file(self) -> str | None:
        """The database file a SQLite URL names; None for another backend or `:memory:`."""
        if self.scheme != "sqlite" or self.location == ":memory:":
            return None
        return self.location


def _options(scheme: str, query: str) -> dict[str, object]:
    allowed = _OPTIONS[scheme]
    options: dict[str, object] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        kind = allowed.get(key)
        if kind is None:
            raise InvalidURL(f"unknown store option {key!r} (known: {', '.join(sorted(allowed))})")
        try:
            options[key] = kind(value)
        except ValueError:
            name = getattr(kind, "__name__", "value")
            raise InvalidURL(f"store option {key}={value!r} is not a valid {name}") from None
    return options


def parse_store_url(url: str) -> StoreURL:
    """Parse a store URL; a string without `://` is a SQLite file path.

    Raises:
        InvalidURL: If the URL is malformed, has unknown options, or names no backend.
    """
    if not isinstance(url, str) or not url:
        raise InvalidURL(f"a store URL must be a non-empty string, got {url!r}")
    scheme, separator, rest = url.partition("://")
    if not separator:
        scheme, rest = "sqlite", "/" + url
    if scheme == "memory":
        name, _, query = rest.partition("?")
        return StoreURL("memory", name, _options("memory", query))
    if scheme == "sqlite":
        parts = urlsplit("sqlite://" + rest)
        if parts.netloc:
            raise InvalidURL(f"{url!r}: a sqlite URL has no host; use sqlite:///path.db")
        path = parts.path[1:] if parts.path.startswith("/") else parts.path
        if not path:
            raise InvalidURL(f"{url!r}: no database path; use sqlite:///path.db")
        return StoreURL("sqlite", path, _options("sqlite", parts.query))
    if scheme in _SERVERS:
        return _server_url(url, _SERVERS[scheme], rest)
    if scheme in _REDIS:
        return _redis_url(url, scheme, rest)
    raise InvalidURL(
        f"{url!r}: unknown store scheme {scheme!r}; "
        "use sqlite:///, memory://, postgresql://, mysql:// or redis://"
    )


def _server_url(url: str, scheme: str, rest: str) -> StoreURL:
    """Parse a PostgreSQL or MySQL URL; its location is the URL without the query string."""
    location, _, query = rest.partition("?")
    try:
        parts = urlsplit(f"{scheme}://{location}")
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        raise InvalidURL(f"{url!r}: {exc}") from None
    if scheme == "mysql" and (not parts.hostname or not parts.path.strip("/")):
        raise InvalidURL(f"{url!r}: use mysql://user:password@host:port/database")
    options = _options(scheme, query)
    for key in ("pool_size", "connect_timeout", "max_message_bytes"):
        if key in options and not options[key] > 0:  # type: ignore[operator]
            raise InvalidURL(f"store option {key} must be positive, not {options[key]!r}")
    schema = options.get("schema")
    if schema is not None and not _IDENTIFIER.match(str(schema)):
        raise InvalidURL(f"store option schema={schema!r} must be a plain SQL identifier")
    return StoreURL(scheme, f"{scheme}://{location}", options)


def _redis_url(url: str, scheme: str, rest: str) -> StoreURL:
    """Parse a Redis URL; its location is the URL without sessionary's query string."""
    location, _, query = rest.partition("?")
    try:
        parts = urlsplit(f"{scheme}://{location}")
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        raise InvalidURL(f"{url!r}: {exc}") from None
    database = parts.path.strip("/")
    if database and not database.isdigit():
        raise InvalidURL(f"{url!r}: a Redis database is a number, use redis://host:port/0")
    options = _options("redis", query)
    for key in ("ttl", "max_message_bytes", "connect_timeout", "max_messages"):
        if key in options and not options[key] > 0:  # type: ignore[operator]
            raise InvalidURL(f"store option {key} must be positive, not {options[key]!r}")
    if options.get("snapshot_frequency", 0) < 0:  # type: ignore[operator]
        raise InvalidURL("store option snapshot_frequency must be 0 (never) or more")
    namespace = options.get("namespace")
    if namespace is not None and not _NAMESPACE.match(str(namespace)):
        raise InvalidURL(f"store option namespace={namespace!r} must be letters, digits, _.:-")
    return StoreURL("redis", f"{scheme}://{location}", options)
