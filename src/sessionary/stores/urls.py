"""Store URLs: which backend a URL names, and with what options (pure, no I/O).

Server URLs keep everything but their query string as the location (credentials, host,
port, database); the query string holds sessionary's options, and an unknown option is
an error rather than something silently passed on. `migrate=false` (SQLite, PostgreSQL,
MySQL) opens without creating or upgrading the schema, only checking its version, for a
database role without schema rights (`sessionary schema --print` gives the DDL).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from sessionary.errors import InvalidURL

__all__ = [
    "CONNECT_TIMEOUT",
    "MAX_SECONDS",
    "REQUEST_TIMEOUT",
    "TLS_MODES",
    "StoreURL",
    "parse_store_url",
    "seconds_problem",
]

CONNECT_TIMEOUT = 10.0
"""Seconds a server store waits, by default, to connect: TCP, the server's greeting, login."""

REQUEST_TIMEOUT = 60.0
"""Seconds a server store waits, by default, for the answer to one request (a statement,
script or command, lock waits included)."""

MAX_SECONDS = 86400.0
"""The longest timeout an option may set: a day."""

_CENTURY = 100 * 365.25 * MAX_SECONDS
"""The longest lifetime (`ttl`) an option may set."""

_REDIS = ("redis", "rediss")
_SERVERS = {
    "postgresql": "postgresql",
    "postgres": "postgresql",
    "mysql": "mysql",
    "mariadb": "mysql",
}

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}\Z")
_NAMESPACE = re.compile(r"[A-Za-z0-9_.:-]{1,200}\Z")


def seconds_problem(value: object) -> str | None:
    """Why `value` is not a usable timeout (a finite number of seconds, 0 < s <= a day)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"must be a number of seconds, not {value!r}"
    if not math.isfinite(value) or not 0 < value <= MAX_SECONDS:
        return f"must be more than 0 and at most {MAX_SECONDS:g} seconds, not {value!r}"
    return None


def _lifetime(value: float) -> str | None:
    if math.isfinite(value) and 0 < value <= _CENTURY:
        return None
    return f"must be more than 0 and at most {_CENTURY:g} seconds, not {value!r}"


def _positive(value: int) -> str | None:
    return None if value > 0 else f"must be 1 or more, not {value!r}"


def _not_negative(value: int) -> str | None:
    return None if value >= 0 else f"must be 0 (never) or more, not {value!r}"


def _durability(value: str) -> str | None:
    return None if value in ("full", "normal") else f"must be full or normal, not {value!r}"


def _identifier(value: str) -> str | None:
    return None if _IDENTIFIER.match(value) else f"must be a plain SQL identifier, not {value!r}"


def _path(value: str) -> str | None:
    return None if value and "\0" not in value else f"must be a file path, not {value!r}"


TLS_MODES = ("disabled", "preferred", "required", "verify_ca", "verify_identity")
"""The values of a MySQL URL's `ssl_mode`, as MySQL's own client names them (see
`stores.mysql.tls_context`)."""


def _tls_mode(value: str) -> str | None:
    return None if value in TLS_MODES else f"must be one of {', '.join(TLS_MODES)}, not {value!r}"


def _namespace(value: str) -> str | None:
    if _NAMESPACE.match(value):
        return None
    return f"must be 1-200 letters, digits or _.:-, not {value!r}"


@dataclass(frozen=True, slots=True)
class _Option:
    """One option: how its text becomes a value, and why a value is refused (or None)."""

    kind: Callable[[str], Any]
    problem: Callable[[Any], str | None]


def boolean(text: str) -> bool:
    """Read an option's `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`)."""
    value = {"true": True, "1": True, "yes": True, "on": True}.get(text.lower())
    value = {"false": False, "0": False, "no": False, "off": False}.get(text.lower(), value)
    if value is None:
        raise ValueError(text)
    return value


def _any(value: object) -> str | None:
    del value
    return None


_FLAG = _Option(boolean, _any)
_SECONDS = _Option(float, seconds_problem)
_COUNT = _Option(int, _positive)
_TIMEOUTS = {"connect_timeout": _SECONDS, "timeout": _SECONDS}
_SERVER = {"pool_size": _COUNT, "max_message_bytes": _COUNT, "migrate": _FLAG, **_TIMEOUTS}
_OPTIONS: dict[str, dict[str, _Option]] = {
    "memory": {"max_message_bytes": _COUNT},
    "sqlite": {
        "durability": _Option(str, _durability),
        "busy_timeout": _SECONDS,
        "max_message_bytes": _COUNT,
        "migrate": _FLAG,
    },
    "postgresql": {**_SERVER, "schema": _Option(str, _identifier), "pgbouncer": _FLAG},
    "mysql": {
        **_SERVER,
        "unix_socket": _Option(str, _path),
        "ssl_mode": _Option(str, _tls_mode),
        "ssl_ca": _Option(str, _path),
        "ssl_cert": _Option(str, _path),
        "ssl_key": _Option(str, _path),
    },
    "redis": {
        "namespace": _Option(str, _namespace),
        "snapshot_frequency": _Option(int, _not_negative),
        "max_messages": _COUNT,
        "ttl": _Option(float, _lifetime),
        "max_message_bytes": _COUNT,
        **_TIMEOUTS,
    },
}
"""Every option of every backend; `tests/test_store_urls.py` walks this table."""


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


_LIBPQ_REFUSED = {"replication": "a replication connection cannot run the store's statements"}
"""libpq parameters a store URL may not pass on, and why."""


@functools.cache
def _libpq_keywords() -> frozenset[str] | None:
    """The connection parameters the installed libpq knows; None without psycopg."""
    try:
        import psycopg
    except ImportError:  # opening the store says what to install
        return None
    return frozenset(d.keyword.decode() for d in psycopg.pq.Conninfo.get_defaults())


def _cert_reqs(value: str) -> str | None:
    if value in ("none", "optional", "required"):
        return None
    return f"must be none, optional or required, not {value!r}"


def _client_name(value: str) -> str | None:
    if re.fullmatch(r"[!-~]{1,128}", value):
        return None
    return f"must be 1-128 printable characters without spaces, not {value!r}"


_REDIS_TLS = {
    "ssl_cert_reqs": _Option(str, _cert_reqs),
    "ssl_ca_certs": _Option(str, _path),
    "ssl_certfile": _Option(str, _path),
    "ssl_keyfile": _Option(str, _path),
    "ssl_check_hostname": _Option(boolean, _any),
}
_REDIS_PASSED = {**_REDIS_TLS, "client_name": _Option(str, _client_name)}
"""redis-py's own connection parameters a Redis URL may carry (redis-py reads them)."""


def _driver_parameter(scheme: str, key: str, text: str, passed: dict[str, str]) -> bool:
    """Whether `key` is one of the driver's own connection parameters, to pass on.

    PostgreSQL's URL may carry any libpq parameter (`sslmode`, `sslrootcert`,
    `application_name`, `target_session_attrs`, a socket directory as `host`...), a
    Redis URL redis-py's TLS parameters (`ssl_ca_certs`, `ssl_cert_reqs`...) and
    `client_name`: they stay in the URL the driver connects with.
    """
    if scheme == "postgresql":
        known = _libpq_keywords()
        if known is not None and key not in known:
            return False
        if key in _LIBPQ_REFUSED:
            raise InvalidURL(f"connection parameter {key} is refused: {_LIBPQ_REFUSED[key]}")
    elif scheme == "redis" and key in _REDIS_PASSED:
        _checked(key, text, _REDIS_PASSED[key])
    else:
        return False
    if key in passed:
        raise InvalidURL(f"connection parameter {key} is given twice")
    return True


def _checked(key: str, text: str, option: _Option) -> object:
    """An option's value from its text; InvalidURL if it is not of its kind, or out of range."""
    try:
        value = option.kind(text)
    except ValueError:
        kind = getattr(option.kind, "__name__", "value")
        raise InvalidURL(f"store option {key}={text!r} is not a valid {kind}") from None
    problem = option.problem(value)
    if problem is not None:
        raise InvalidURL(f"store option {key} {problem}")
    return value


def _options(scheme: str, query: str, passed: dict[str, str] | None = None) -> dict[str, object]:
    """Parse and check a URL's options: each known, given once, of its type, in range.

    The driver's own connection parameters (see `_driver_parameter`) go to `passed`.
    """
    allowed = _OPTIONS[scheme]
    options: dict[str, object] = {}
    for key, text in parse_qsl(query, keep_blank_values=True):
        option = allowed.get(key)
        if option is None and passed is not None and _driver_parameter(scheme, key, text, passed):
            passed[key] = text
            continue
        if option is None:
            extra = " or a libpq connection parameter" if scheme == "postgresql" else ""
            raise InvalidURL(
                f"unknown store option {key!r} (known: {', '.join(sorted(allowed))}{extra})"
            )
        if key in options:
            raise InvalidURL(f"store option {key} is given twice")
        options[key] = _checked(key, text, option)
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
        # PostgreSQL's may name several hosts (`h1:5432,h2:5432`), which libpq tries in
        # turn (with `target_session_attrs`, until one takes writes): each is checked.
        hosts = parts.netloc.rpartition("@")[2].split(",") if scheme == "postgresql" else [""]
        for host in hosts:
            urlsplit(f"{scheme}://{host}").port  # noqa: B018 - raises for a bad port
        if len(hosts) == 1:
            parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        raise InvalidURL(f"{url!r}: {exc}") from None
    if scheme == "mysql" and (not parts.hostname or not parts.path.strip("/")):
        raise InvalidURL(f"{url!r}: use mysql://user:password@host:port/database")
    passed: dict[str, str] = {}
    options = _options(scheme, query, passed)
    if passed:
        location = f"{location}?{urlencode(passed)}"
    files = [key for key in ("ssl_ca", "ssl_cert", "ssl_key") if key in options]
    if files and options.get("ssl_mode") in ("disabled", "preferred"):
        raise InvalidURL(
            f"store option {files[0]} needs ssl_mode=required, verify_ca or verify_identity"
            f", not {options['ssl_mode']}"
        )
    if options.get("pgbouncer") and "schema" in options:
        raise InvalidURL(
            "store options schema and pgbouncer=true do not go together: a pooler in "
            "transaction mode runs each transaction on any server connection, whose "
            "search path the store cannot set (give the role one instead: "
            "ALTER ROLE ... SET search_path)"
        )
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
    passed: dict[str, str] = {}
    options = _options("redis", query, passed)
    tls = [key for key in passed if key in _REDIS_TLS]
    if tls and scheme != "rediss":
        raise InvalidURL(f"{url!r}: {tls[0]} is a TLS parameter: use rediss:// for TLS")
    if passed:
        location = f"{location}?{urlencode(passed)}"
    return StoreURL("redis", f"{scheme}://{location}", options)
