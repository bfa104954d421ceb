"""Recognising a model's "context too long" error, whichever SDK raised it (pure).

OpenAI-compatible servers answer 400 with the code ``context_length_exceeded`` (the SDK
raises `openai.BadRequestError`); Anthropic answers 400 ``invalid_request_error`` with
"prompt is too long" (`anthropic.BadRequestError`), or 413 for a request over its size
limit. Other servers and wrappers only say it in words, so common message texts count too.
The exception's cause chain is searched, so a wrapped SDK error is recognised.
"""

from __future__ import annotations

import re

__all__ = ["is_context_overflow"]

_TEXTS = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|context window|"
    r"prompt is too long|too many tokens|input is too long|exceeds? the (?:model'?s? )?"
    r"(?:context|maximum)|reduce the length of the messages|request_too_large|"
    r"string too long|token limit",
    re.IGNORECASE,
)
_CODES = {"context_length_exceeded", "string_above_max_length", "request_too_large"}


def _code(error: BaseException) -> str | None:
    code = getattr(error, "code", None)
    if isinstance(code, str):
        return code
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            for key in ("code", "type"):
                if isinstance(inner.get(key), str) and inner[key] in _CODES:
                    return str(inner[key])
    return None


def _one(error: BaseException) -> bool:
    if _code(error) in _CODES:
        return True
    if getattr(error, "status_code", None) == 413:
        return True
    return bool(_TEXTS.search(str(error)))


def is_context_overflow(error: BaseException) -> bool:
    """Whether `error` (or an error it was raised from) says the prompt is too long."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if _one(current):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
