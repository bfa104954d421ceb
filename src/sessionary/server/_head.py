"""HEAD on every GET route: GET's status and headers, without the body.

HTTP requires a general-purpose server to answer HEAD wherever it answers GET (RFC 9110,
9.3.2); FastAPI's routes take only the methods they name, so a monitor or a cache asking
`HEAD /healthz` got 405. `HeadAsGet` runs the request as a GET and sends its answer's
start (status, headers, `Content-Length` included) with an empty body. A streamed answer
(the event streams) is stopped once its headers are sent, rather than left to run for a
client that will never read it.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["HeadAsGet"]


class _Answered(Exception):
    """Raised into the app at a streamed answer's first chunk: HEAD has all it needs."""


class HeadAsGet:
    """ASGI middleware: answer HEAD as GET would, with no body."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request; a HEAD one runs as GET with its body dropped."""
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        ended = False

        async def headers_only(message: Message) -> None:
            nonlocal ended
            if message["type"] != "http.response.body":
                await send(message)
                return
            if ended:
                raise _Answered
            ended = True
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            if message.get("more_body", False):
                raise _Answered

        try:
            await self.app({**scope, "method": "GET"}, receive, headers_only)
        except* _Answered:
            pass
