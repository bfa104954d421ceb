"""How `serve` and `mcp` run uvicorn: with a deadline on a request's headers.

uvicorn bounds how long a connection may sit idle after an answer (``timeout_keep_alive``,
5 s), but not how long a request's headers may take: a client that connects and sends
nothing, or half a request line, holds its connection (a file descriptor) for ever, and
20,000 of them exhaust the server's. Any byte received even cancels the keep-alive timer.
`uvicorn_config` gives uvicorn a protocol that closes a connection whose next request's
headers are not whole `HEADER_SECONDS` after it opened or after its last answer; the body
then has its own deadline (`sessionary.server.app.BodyLimit`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["HEADER_SECONDS", "uvicorn_config"]

HEADER_SECONDS = 10.0
"""How long a request's headers may take to arrive (slower: the connection is closed)."""


def _protocol_class() -> type[Any]:
    try:  # uvicorn's own choice ("auto"): httptools when installed, else h11
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        return HttpToolsProtocol
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol

        return H11Protocol


def header_deadline(seconds: float) -> type[Any]:
    """Return uvicorn's HTTP protocol, closing a connection whose request headers are too slow."""
    base: Any = _protocol_class()

    class Deadlined(base):  # type: ignore[misc]
        _header_timer: Any = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._await_headers()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._await_headers()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
            super().connection_lost(exc)

        def _await_headers(self) -> None:
            """Close the connection unless a new request has begun within `seconds`."""
            if self._header_timer is not None:
                self._header_timer.cancel()
            answered = self.cycle  # replaced when the next request's headers are whole

            def expire() -> None:
                if self.cycle is answered and not self.transport.is_closing():
                    self.transport.close()

            self._header_timer = self.loop.call_later(seconds, expire)

    return Deadlined


def uvicorn_config(
    app: Any, host: str, port: int, log_level: str = "info", header_seconds: float = HEADER_SECONDS
) -> Any:
    """Return the `uvicorn.Config` the server commands run `app` with."""
    import uvicorn

    protocol = header_deadline(header_seconds)
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, http=protocol)
