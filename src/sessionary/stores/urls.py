"""Store URLs: which backend a URL names, and with what options (pure, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlsplit

from sessionary.errors import InvalidURL

__all__ = ["StoreURL", "parse_store_url"]

_LATER = ("postgresql", "postgres", "mysql", "mariadb", "redis", "rediss")
_OPTIONS: dict[str, dict[str, type]] = {
    "memory": {"max_message_bytes": int},
    "sqlite": {"durability": str, "busy_timeout": float, "max_message_bytes": int},
}


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
            raise InvalidURL(
                f"store option {key}={value!r} is not a valid {kind.__name__}"
            ) from None
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
    if scheme in _LATER:
        raise InvalidURL(f"{url!r}: the {scheme} backend is not available in this version")
    raise InvalidURL(f"{url!r}: unknown store scheme {scheme!r}; use sqlite:/// or memory://")
