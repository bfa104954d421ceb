"""Round-trip properties of every format, over generated conversations."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from _format_strategies import conversations
from hypothesis import HealthCheck, given, settings

from sessionary import Message, ToolCallPart, ToolResultPart
from sessionary.formats import (
    from_ai_sdk,
    from_anthropic,
    from_events,
    from_gemini,
    from_openai_chat,
    from_openai_responses,
    from_workers_ai,
    to_ai_sdk,
    to_anthropic,
    to_events,
    to_gemini,
    to_openai_chat,
    to_openai_responses,
    to_workers_ai,
)
from sessionary.formats._shared import output_text
from sessionary.model import part_to_dict


@dataclass(frozen=True)
class Format:
    name: str
    to: Callable[..., Any]
    back: Callable[[Any], list[Message]]
    exact: dict[str, bool]  # which conversations the format carries without loss
    text_outputs: bool = False  # tool outputs come back as JSON text
    merges_results: bool = False  # consecutive tool messages come back as one


FORMATS = [
    Format("openai_chat", to_openai_chat, from_openai_chat,
           {"signed": False, "errors": False}, text_outputs=True),
    Format("openai_responses", to_openai_responses, from_openai_responses,
           {"signed": False, "errors": False}, text_outputs=True),
    Format("anthropic", to_anthropic, lambda v: from_anthropic(v.messages, v.system),
           {}, text_outputs=True, merges_results=True),
    Format("gemini", to_gemini, lambda v: from_gemini(v.contents, v.system_instruction),
           {}, merges_results=True),
    Format("ai_sdk", to_ai_sdk, from_ai_sdk, {}, merges_results=True),
    Format("events", to_events, from_events,
           {"signed": False, "images": False}, text_outputs=True),
    Format("workers_ai", to_workers_ai, from_workers_ai,
           {"signed": False, "images": False, "errors": False}, text_outputs=True),
]  # fmt: skip
BY_NAME = pytest.mark.parametrize("fmt", FORMATS, ids=[f.name for f in FORMATS])
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def content(messages: list[Message], fmt: Format) -> list[tuple[str, list[dict[str, Any]]]]:
    """What a conversation says, without identity or the formats' own bookkeeping."""
    calls = {p.id: p.name for m in messages for p in m.parts if isinstance(p, ToolCallPart)}
    out: list[tuple[str, list[dict[str, Any]]]] = []
    for message in messages:
        parts = []
        for part in message.parts:
            data = part_to_dict(part)
            data.pop(fmt.name, None)
            if isinstance(part, ToolResultPart):
                if fmt.text_outputs:
                    data["output"] = output_text(part.output)
                if data.get("name") == calls.get(part.call_id):
                    data.pop("name", None)
            parts.append(data)
        if fmt.merges_results and out and message.role == "tool" and out[-1][0] == "tool":
            out[-1][1].extend(parts)
        else:
            out.append((message.role, parts))
    return out


@BY_NAME
@SETTINGS
@given(data=conversations())
def test_wire_to_ours_to_wire_is_lossless(fmt: Format, data: list[Message]) -> None:
    wire = fmt.to(data).value
    assert fmt.to(fmt.back(wire)).value == wire


@BY_NAME
@SETTINGS
@given(data=conversations(signed=False, errors=False, images=False))
def test_ours_to_wire_to_ours_keeps_what_every_format_carries(
    fmt: Format, data: list[Message]
) -> None:
    conversion = fmt.to(data, strict=True)
    assert conversion.lossless
    assert content(fmt.back(conversion.value), fmt) == content(data, fmt)


@pytest.mark.parametrize("fmt", [f for f in FORMATS if not f.exact], ids=lambda f: f.name)
@SETTINGS
@given(data=conversations())
def test_formats_with_every_slot_round_trip_everything(fmt: Format, data: list[Message]) -> None:
    conversion = fmt.to(data, strict=True)
    assert content(fmt.back(conversion.value), fmt) == content(data, fmt)


@BY_NAME
@SETTINGS
@given(data=conversations())
def test_loss_is_reported_exactly_when_content_changes(fmt: Format, data: list[Message]) -> None:
    conversion = fmt.to(data)
    same = content(fmt.back(conversion.value), fmt) == content(data, fmt)
    assert same == conversion.lossless, conversion.dropped


@BY_NAME
@SETTINGS
@given(data=conversations())
def test_every_result_follows_its_call(fmt: Format, data: list[Message]) -> None:
    back = fmt.back(fmt.to(data).value)
    open_calls: set[str] = set()
    for message in back:
        if message.role == "user":
            assert not open_calls, "a user turn came between a call and its result"
        open_calls |= {c.id for c in message.tool_calls}
        for result in message.tool_results:
            assert result.call_id in open_calls
            open_calls.discard(result.call_id)
    assert not open_calls
