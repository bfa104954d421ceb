"""Which `Host` and `Origin` a server on loopback answers: the guard against DNS rebinding.

A web page the user opens can make a name of its own (``attacker.example``) resolve to
127.0.0.1 and then call a server on the user's machine as if it were its own origin: the
browser sends ``Host: attacker.example`` and lets the page read the answers. A server
that needs no API key (``serve --no-auth``) would hand that page every session, and take
its writes and deletes. `HostCheck` answers such a request 421 (a `Host` that is not one
of the server's names) or 403 (an `Origin` that is neither one of them nor an allowed CORS
origin) before the app sees it. The MCP server's HTTP transport takes the same names
(`mcp_security`), through its SDK's own check.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from sessionary.server._errors import error_body

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings

__all__ = [
    "LOOPBACK_NAMES",
    "HostCheck",
    "host_name",
    "is_loopback",
    "mcp_security",
    "served_names",
]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
"""The names a client on the machine itself reaches a loopback server by."""

_log = logging.getLogger("sessionary.server")


def is_loopback(host: str) -> bool:
    """Whether a bind address (or a name) is the loopback interface only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def served_names(host: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The host names a server bound to `host` answers: loopback's own names, and `extra`."""
    names = {host_name(name) for name in (*LOOPBACK_NAMES, host, *extra)}
    return frozenset(name for name in names if name)


def host_name(host: str) -> str:
    """The name of a `Host` value without its port, lower case: ``[::1]:80`` → ``::1``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    if host.count(":") == 1:
        host = host.partition(":")[0]
    return host.rstrip(".")


class HostCheck:
    """ASGI middleware: answer only requests naming one of `names` (and from allowed origins).

    Args:
        app: The app behind the check.
        names: The host names taken in `Host`, without ports (see `served_names`).
        origins: Browser origins taken besides those of `names` (the CORS origins).
    """

    def __init__(self, app: ASGIApp, names: Iterable[str], origins: Iterable[str] = ()) -> None:
        self.app, self.names = app, frozenset(host_name(name) for name in names)
        self.origins = frozenset(origin.rstrip("/") for origin in origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve a request whose `Host` and `Origin` are the server's; refuse any other."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host, origin = headers.get("host", ""), headers.get("origin")
        if host_name(host) not in self.names:
            _log.warning("refused a request for host %r", host)
            answer = error_body(421, "MisdirectedRequest", f"this server does not serve {host!r}")
            await JSONResponse(answer, 421)(scope, receive, send)
        elif origin is not None and not self._origin_allowed(origin):
            _log.warning("refused a request from origin %r", origin)
            text = f"requests from the web origin {origin!r} are not allowed"
            await JSONResponse(error_body(403, "Forbidden", text), 403)(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    def _origin_allowed(self, origin: str) -> bool:
        if origin.rstrip("/") in self.origins:
            return True
        try:
            parts = urlsplit(origin)
        except ValueError:
            return False
        return parts.scheme in ("http", "https") and host_name(parts.netloc) in self.names


def mcp_security(names: Iterable[str]) -> TransportSecuritySettings:
    """The MCP SDK's rebinding check, taking the same names (on any port) as `HostCheck`."""
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = [f"[{n}]" if ":" in n else n for n in sorted(names)]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*hosts, *(f"{h}:*" for h in hosts)],
        allowed_origins=[
            f"{s}://{h}{p}" for s in ("http", "https") for h in hosts for p in ("", ":*")
        ],
    )
