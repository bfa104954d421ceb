"""How errors reach an HTTP client: one status table and one JSON error body.

Every error answer has the body ``{"error": {"type": ..., "message": ..., "status": ...}}``
where `type` is the name of the `SessionaryError` subclass raised (or of one of the
server's own problems below), so a client can branch on it without parsing prose. The
status of a library error is looked up along its class's MRO in `STATUS`, so a subclass
added to the tree later gets its parent's status until it is given one of its own.

| type | status | raised by |
| --- | --- | --- |
| InvalidInput and its subclasses | 400 | the library: bad ids, messages, queries, patches |
| PayloadTooLarge | 413 | the library (a message over the store's limit), or the body limit |
| NotFound and its subclasses | 404 | the library; also anything outside the caller's scope |
| Conflict, AlreadyExists, HeadConflict | 409 | the library |
| VersionConflict | 412 | a stale `If-Match` (state) or expected version |
| Unsupported | 501 | the store lacks a capability |
| SummarizerError | 502 | a compaction's summarizer failed |
| StoreUnavailable | 503 | the backend cannot be reached |
| StoreError, SessionaryError | 500 | anything else the library raised |
| Unauthorized | 401 | no API key, or one that is unknown or revoked |
| Forbidden | 403 | a user-bound key asked to act as another user |
| MalformedJSON | 400 | a body that is not JSON |
| InvalidRequest | 422 | JSON of the wrong shape (missing or mistyped fields) |
| RouteNotFound, MethodNotAllowed | 404, 405 | no such endpoint |
| RequestTimeout | 408 | a request body slower than the server's bound (`BodyLimit`) |
| MisdirectedRequest | 421 | a `Host` the server does not answer (`_hosts.HostCheck`) |
| InternalError | 500 | anything else (a bug): logged, answered without details |
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sessionary import errors

__all__ = [
    "STATUS",
    "CatchAll",
    "ServerProblem",
    "error_body",
    "install_error_handlers",
    "status_of",
]

_log = logging.getLogger("sessionary.server")

STATUS: dict[type[errors.SessionaryError], int] = {
    errors.SessionaryError: 500,
    errors.InvalidInput: 400,
    errors.PayloadTooLarge: 413,
    errors.NotFound: 404,
    errors.Conflict: 409,
    errors.VersionConflict: 412,
    errors.Unsupported: 501,
    errors.SummarizerError: 502,
    errors.StoreError: 500,
    errors.StoreUnavailable: 503,
}
"""HTTP status by error class; a class not listed takes its nearest listed ancestor's."""

_ROUTE_TYPES = {404: "RouteNotFound", 405: "MethodNotAllowed"}


class ServerProblem(Exception):
    """An error of the server's own (auth, body, routing), with its status and type name."""

    def __init__(self, status: int, type_name: str, message: str) -> None:
        super().__init__(message)
        self.status, self.type_name, self.message = status, type_name, message


def status_of(exc: errors.SessionaryError) -> int:
    """Return the HTTP status for a library error, by its nearest class in `STATUS`."""
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


def error_body(status: int, type_name: str, message: str) -> dict[str, Any]:
    """Return the JSON error body every error answer carries."""
    return {"error": {"type": type_name, "message": message, "status": status}}


def _answer(status: int, type_name: str, message: str, **headers: str) -> JSONResponse:
    return JSONResponse(error_body(status, type_name, message), status, headers=headers or None)


async def _on_sessionary(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, errors.SessionaryError)
    status = status_of(exc)
    if status >= 500:
        _log.error("request failed: %s: %s", type(exc).__name__, exc)
    return _answer(status, type(exc).__name__, str(exc))


async def _on_problem(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ServerProblem)
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else {}
    return _answer(exc.status, exc.type_name, exc.message, **headers)


Authenticate = Callable[[Request], Awaitable[object]]
"""Checks a request's credentials: raises `ServerProblem` (401, 403) for a caller refused."""


async def _malformed(request: Request) -> JSONResponse:
    """The answer to a body that is not JSON: the caller's credentials are checked first.

    FastAPI parses a body before it runs a route's dependencies, so without this a caller
    with no key would learn how the body was refused before being told to authenticate.
    """
    authenticate: Authenticate | None = getattr(request.app.state, "authenticate", None)
    if authenticate is not None:
        try:
            await authenticate(request)
        except ServerProblem as problem:
            return await _on_problem(request, problem)
        except errors.SessionaryError as exc:  # a malformed user header
            return await _on_sessionary(request, exc)
    return _answer(400, "MalformedJSON", "the request body is not valid JSON")


async def _on_validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    problems = list(exc.errors())
    if any(problem.get("type") == "json_invalid" for problem in problems):
        return await _malformed(request)
    text = "; ".join(_describe(problem) for problem in problems[:10])
    return _answer(422, "InvalidRequest", text or "the request does not match the API")


def _describe(problem: Any) -> str:
    where = ".".join(str(part) for part in problem.get("loc", ()))
    return f"{where}: {problem.get('msg', 'invalid')}"


_BODY_UNREADABLE = "There was an error parsing the body"
"""FastAPI's 400 for a body its JSON parser gave up on (bad UTF-8, nesting too deep)."""


async def _on_http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400 and exc.detail == _BODY_UNREADABLE:
        return await _malformed(request)
    type_name = _ROUTE_TYPES.get(exc.status_code, "HTTPError")
    detail = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
    return _answer(exc.status_code, type_name, detail, **(exc.headers or {}))


class CatchAll:
    """ASGI middleware: answer any other exception with a 500 InternalError body, and log it.

    Installed innermost, inside Starlette's `ServerErrorMiddleware`, because a handler
    registered for `Exception` runs in that middleware, which re-raises after answering:
    the ASGI server then drops the connection, so one failed request cost a keep-alive
    client its connection. Here the exception ends with the answer. One raised after the
    answer began cannot be answered any more, and is re-raised.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request; answer 500 for an exception raised before the answer began."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            if started:
                raise
            # A bug or a driver error a backend failed to map: log it, answer without details.
            _log.exception("unexpected error", exc_info=exc)
            await _answer(500, "InternalError", "the server failed; see its log")(
                scope, receive, send
            )


def install_error_handlers(app: FastAPI, authenticate: Authenticate | None = None) -> None:
    """Make every error `app` raises answer with the JSON error body and its status.

    Args:
        app: The app.
        authenticate: Checks a caller's credentials before a malformed body is refused,
            as the routes check them before a well-formed one is read (None: no check).
    """
    app.state.authenticate = authenticate
    app.add_exception_handler(errors.SessionaryError, _on_sessionary)
    app.add_exception_handler(ServerProblem, _on_problem)
    app.add_exception_handler(RequestValidationError, _on_validation)
    app.add_exception_handler(StarletteHTTPException, _on_http)
    app.add_middleware(CatchAll)  # the first added is the innermost
