"""The `read_tool_result` tool: how a model reads back an evicted tool result by range.

`READ_TOOL_RESULT` is its JSON schema (name, description, parameters) and
`run_read_tool_result` runs it against a session. It never raises into the agent loop:
a bad call returns an error text the model can act on.

The async function is the source; the sync one is generated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sessionary.errors import SessionaryError
from sessionary.session import AsyncSession

__all__ = ["MAX_READ_CHARS", "READ_TOOL_RESULT", "run_read_tool_result"]

MAX_READ_CHARS = 20_000
"""The most characters one call returns, so a read cannot overflow the context itself."""

READ_TOOL_RESULT: dict[str, Any] = {
    "name": "read_tool_result",
    "description": (
        "Read part of a large tool result that is shown only as a preview. Pass the "
        "message_id and call_id from the preview and a character range; at most "
        f"{MAX_READ_CHARS} characters are returned per call."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "message_id": {"type": "string", "description": "The id named in the preview."},
            "call_id": {"type": "string", "description": "The call id named in the preview."},
            "start": {"type": "integer", "minimum": 0, "description": "First character."},
            "end": {"type": "integer", "minimum": 0, "description": "One past the last."},
        },
        "required": ["message_id", "start", "end"],
    },
}


def _arguments(arguments: Mapping[str, Any]) -> tuple[str, str | None, int, int]:
    message_id = arguments.get("message_id")
    call_id = arguments.get("call_id")
    start, end = arguments.get("start", 0), arguments.get("end")
    if not isinstance(message_id, str) or not message_id:
        raise ValueError("message_id must be a non-empty string")
    if call_id is not None and not isinstance(call_id, str):
        raise ValueError("call_id must be a string")
    if not isinstance(start, int) or not isinstance(end, int) or not 0 <= start <= end:
        raise ValueError("start and end must be integers with 0 <= start <= end")
    return message_id, call_id, start, min(end, start + MAX_READ_CHARS)


async def run_read_tool_result(session: AsyncSession, arguments: Mapping[str, Any]) -> str:
    """Return the requested characters, or an ``Error: ...`` text; never raise."""
    try:
        message_id, call_id, start, end = _arguments(arguments)
        return await session.read_tool_result(message_id, call_id, start, end)
    except (SessionaryError, ValueError) as exc:
        return f"Error: {exc}"
