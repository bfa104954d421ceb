"""The pieces of one model request in each provider's shape (pure: no I/O).

`build_request` turns a system prompt, messages and tool definitions into the keyword
arguments of a provider SDK call, minus the model name:

- ``openai-chat``: ``messages`` (system first) and ``tools``, for
  `client.chat.completions.create`;
- ``openai-responses``: ``instructions``, ``input`` and ``tools``, for
  `client.responses.create`;
- ``anthropic``: ``system``, ``messages`` and ``tools``, for `client.messages.create`;
- ``gemini``: ``contents`` and ``config`` (``system_instruction``, ``tools``), for
  `client.models.generate_content` of google-genai;
- ``ai-sdk``: ``system``, ``messages`` (UIMessages) and ``tools`` (keyed by name), for
  `streamText` after `convertToModelMessages`;
- ``workers-ai``: ``messages`` (system first) and ``tools``, for `env.AI.run(model, ...)`
  of Cloudflare Workers AI, or the body of its REST API's `/ai/run/MODEL`.

Keys with nothing to send are left out. System text the history itself carries (a system
message) follows the session's prompt. Anthropic and Gemini refuse a conversation that
opens with the model's turn (a history cut after a user message, or a compacted context
whose summary is a system message): such a request gets a short user turn first,
`OPENING_TEXT`, and says so among what was dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sessionary.formats import Loss
from sessionary.formats.ai_sdk import to_ai_sdk
from sessionary.formats.anthropic import to_anthropic
from sessionary.formats.gemini import to_gemini
from sessionary.formats.openai_chat import to_openai_chat
from sessionary.formats.openai_responses import to_openai_responses
from sessionary.formats.workers_ai import to_workers_ai
from sessionary.model import Message
from sessionary.toolspec import TOOL_FORMATS, ToolFormat, ToolSpec, check_format, export_tools

__all__ = ["OPENING_TEXT", "REQUEST_FORMATS", "build_request"]

REQUEST_FORMATS: tuple[str, ...] = TOOL_FORMATS

OPENING_TEXT = "(The conversation continues from here.)"
"""The user turn put first where a provider refuses to open with the model's turn."""

Request = tuple[dict[str, Any], Sequence[Loss]]


def _join_system(ours: str, theirs: str | list[dict[str, Any]] | None) -> Any:
    """Our prompt first, then any system text the history itself carried."""
    if not theirs:
        return ours
    if isinstance(theirs, str):
        return "\n\n".join(part for part in (ours, theirs) if part)
    return ([{"type": "text", "text": ours}] if ours else []) + theirs


def _openai_chat(system: str, messages: Sequence[Message]) -> Request:
    chat, dropped = to_openai_chat(messages)
    head = [{"role": "system", "content": system}] if system else []
    return {"messages": head + chat}, dropped


def _openai_responses(system: str, messages: Sequence[Message]) -> Request:
    items, dropped = to_openai_responses(messages)
    out: dict[str, Any] = {"input": items}
    if system:
        out["instructions"] = system
    return out, dropped


def _user_first(
    turns: list[dict[str, Any]], model: str, opening: dict[str, Any], dropped: tuple[Loss, ...]
) -> tuple[Loss, ...]:
    """Put `opening` first if the first turn is the `model` role's; say so if it was."""
    if not turns or turns[0]["role"] != model:
        return dropped
    turns.insert(0, opening)
    added = Loss("messages[0]", f"the request opened with the model's turn: {OPENING_TEXT!r} added")
    return (*dropped, added)


def _anthropic(system: str, messages: Sequence[Message]) -> Request:
    (theirs, wire), dropped = to_anthropic(messages)
    dropped = _user_first(wire, "assistant", {"role": "user", "content": OPENING_TEXT}, dropped)
    out: dict[str, Any] = {"messages": wire}
    joined = _join_system(system, theirs)
    if joined:
        out["system"] = joined
    return out, dropped


def _gemini(system: str, messages: Sequence[Message]) -> Request:
    (theirs, contents), dropped = to_gemini(messages)
    opening = {"role": "user", "parts": [{"text": OPENING_TEXT}]}
    dropped = _user_first(contents, "model", opening, dropped)
    parts = ([{"text": system}] if system else []) + list((theirs or {}).get("parts", []))
    out: dict[str, Any] = {"contents": contents, "config": {}}
    if parts:
        out["config"]["system_instruction"] = {**(theirs or {}), "parts": parts}
    return out, dropped


def _ai_sdk(system: str, messages: Sequence[Message]) -> Request:
    ui, dropped = to_ai_sdk(messages)
    out: dict[str, Any] = {"messages": ui}
    if system:
        out["system"] = system
    return out, dropped


def _workers_ai(system: str, messages: Sequence[Message]) -> Request:
    return to_workers_ai(messages, system=system)


_BUILDERS = {
    "openai-chat": _openai_chat,
    "openai-responses": _openai_responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "ai-sdk": _ai_sdk,
    "workers-ai": _workers_ai,
}


def _add_tools(out: dict[str, Any], format: ToolFormat, tools: Sequence[ToolSpec]) -> None:
    exported = export_tools(tools, format)
    if not exported:
        return
    if format == "gemini":
        out["config"]["tools"] = [{"function_declarations": exported}]
    elif format == "ai-sdk":
        out["tools"] = {t.pop("name"): t for t in exported}
    else:
        out["tools"] = exported


def build_request(
    format: ToolFormat, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()
) -> Request:
    """Return the keyword arguments of a provider request, and what the format dropped.

    Args:
        format: One of `REQUEST_FORMATS` (the same names as the tool formats).
        system: The system prompt ("" for none).
        messages: The conversation, oldest first.
        tools: The tools on offer.

    Raises:
        InvalidInput: If `format` is unknown (whether or not there are tools).
        InvalidMessage: If a message is malformed.
    """
    format = check_format(format)
    out, dropped = _BUILDERS[format](system, messages)
    _add_tools(out, format, tools)
    if format == "gemini" and not out["config"]:
        del out["config"]
    return out, dropped
