"""Awkward conversations still become requests the providers accept.

The SDK types check shapes, not the rules the APIs enforce on top: Anthropic and Gemini
refuse empty content and empty text, Anthropic wants a user turn's tool results before
its other blocks, OpenAI refuses an assistant message with neither content nor calls, and
a reasoning signature is only valid for the provider that made it. Whatever a format
cannot send is dropped and reported, never sent.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from _format_strategies import names, texts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionary import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from sessionary.formats import (
    from_openai_chat,
    from_openai_responses,
    to_anthropic,
    to_gemini,
    to_openai_chat,
    to_openai_responses,
)

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

PARTS = {"empty": TextPart(""), "unsigned": ReasoningPart("thinking"), "text": TextPart("words")}


def odd_parts(*kinds: str) -> st.SearchStrategy[list[Any]]:
    """Up to two parts of the given kinds (fresh objects: parts are mutable)."""
    kind = st.sampled_from(kinds).map(lambda k: dataclasses.replace(PARTS[k]))
    return st.lists(kind, max_size=2)


@st.composite
def awkward(draw: st.DrawFn) -> list[Message]:
    """Turns with empty text, no parts, unsigned reasoning, users between call and result."""
    out = [Message.system(draw(texts))]
    counter = 0
    for _ in range(draw(st.integers(1, 4))):
        out.append(Message(role="user", parts=draw(odd_parts("empty", "text"))))
        calls = []
        for _ in range(draw(st.integers(0, 2))):
            counter += 1
            calls.append(ToolCallPart(f"call_{counter}", draw(names), {}))
        assistant = draw(odd_parts("empty", "unsigned", "text"))
        out.append(Message(role="assistant", parts=assistant + calls))
        if calls and draw(st.booleans()):
            out.append(Message(role="user", parts=[TextPart(draw(texts))]))
        if calls and draw(st.booleans()):
            continue  # abandoned: the next turn moves on without results
        for call in calls:
            out.append(Message(role="tool", parts=[ToolResultPart(call.id, draw(texts))]))
    return out


def check_anthropic(turns: list[dict[str, Any]]) -> None:
    assert all(a["role"] != b["role"] for a, b in itertools.pairwise(turns)), "alternate"
    for i, turn in enumerate(turns):
        content = turn["content"]
        assert content, f"turn {i} is empty"
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        assert all(b.get("text") != "" for b in blocks if b["type"] == "text"), "empty text"
        kinds = [b["type"] == "tool_result" for b in blocks]
        assert kinds == sorted(kinds, reverse=True), "tool results come first"
        used = {b["id"] for b in blocks if b["type"] == "tool_use"}
        if used and i + 1 < len(turns):  # the last turn's calls may still be waiting
            after = turns[i + 1]["content"]
            answered = {b["tool_use_id"] for b in after if b["type"] == "tool_result"}
            assert used <= answered, "every tool_use is answered by the next turn"


@SETTINGS
@given(data=awkward())
def test_anthropic_requests_follow_the_api_rules(data: list[Message]) -> None:
    conversion = to_anthropic(data)
    check_anthropic(conversion.value.messages)
    odd = any(
        not m.parts or any(p in (TextPart(""), ReasoningPart("thinking")) for p in m.parts)
        for m in data
    )
    if odd:
        assert not conversion.lossless


@SETTINGS
@given(data=awkward())
def test_gemini_contents_are_never_empty(data: list[Message]) -> None:
    conversion = to_gemini(data)
    for content in conversion.value.contents:
        assert content["parts"], "a content without parts"
        assert {"text": ""} not in content["parts"], "an empty text part"
    if any(not m.parts or TextPart("") in m.parts for m in data[1:]):
        assert not conversion.lossless


@SETTINGS
@given(data=awkward())
def test_openai_chat_assistants_say_something(data: list[Message]) -> None:
    conversion = to_openai_chat(data)
    for wire in conversion.value:
        if wire["role"] == "assistant":
            assert wire.get("content") or wire.get("tool_calls"), wire
    if any(m.role == "assistant" and not m.tool_calls and not m.text for m in data):
        assert not conversion.lossless


def test_an_empty_assistant_turn_is_left_out_and_reported() -> None:
    history = [
        Message.user("hi"),
        Message(role="assistant", parts=[ReasoningPart("unsigned thoughts")]),
        Message.user("again"),
    ]
    conversion = to_anthropic(history)
    blocks = [{"type": "text", "text": "hi"}, {"type": "text", "text": "again"}]
    assert conversion.value.messages == [{"role": "user", "content": blocks}]
    assert [loss.where for loss in conversion.dropped] == ["messages[1].parts[0]"]
    assert to_openai_chat(history).value == [
        {"role": "user", "content": "hi"},
        {"role": "user", "content": "again"},
    ]


def test_openai_chat_empty_text_beside_tool_calls_is_not_sent_to_anthropic_or_gemini() -> None:
    history = from_openai_chat(
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "done"},
        ]
    )  # fmt: skip
    anthropic = to_anthropic(history)
    assert anthropic.value.messages[1]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "f", "input": {}}
    ]
    assert not anthropic.lossless
    gemini = to_gemini(history)
    assert gemini.value.contents[1]["parts"] == [
        {"function_call": {"name": "f", "args": {}, "id": "c1"}}
    ]


def test_a_user_turn_between_a_call_and_its_result_puts_the_result_first() -> None:
    history = [
        Message.user("q"),
        Message(role="assistant", parts=[ToolCallPart("c1", "f", {})]),
        Message.user("hurry up"),
        Message(role="tool", parts=[ToolResultPart("c1", "r")]),
    ]
    conversion = to_anthropic(history)
    assert conversion.value.messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "r"},
        {"type": "text", "text": "hurry up"},
    ]
    assert [loss.where for loss in conversion.dropped] == ["messages[3]"]


def test_openai_encrypted_reasoning_is_not_sent_to_anthropic_or_gemini() -> None:
    # Switching models mid-session: OpenAI's encrypted reasoning became an Anthropic
    # thinking signature (and a Gemini thought signature), which the API refuses.
    history = from_openai_responses(
        [
            {"role": "user", "content": "hi"},
            {"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAAAB",
             "summary": [{"type": "summary_text", "text": "thinking"}]},
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "ok", "annotations": []}]},
        ]
    )  # fmt: skip
    anthropic = to_anthropic(history)
    assert anthropic.value.messages[1]["content"] == "ok"
    assert any("signed by openai_responses" in loss.what for loss in anthropic.dropped)
    gemini = to_gemini(history)
    assert gemini.value.contents[1]["parts"][0] == {"text": "thinking", "thought": True}
    assert any("signed by openai_responses" in loss.what for loss in gemini.dropped)


def test_a_providers_own_signature_is_still_sent() -> None:
    signed = Message(role="assistant", parts=[ReasoningPart("t", signature="sig")])
    anthropic = to_anthropic([Message.user("q"), signed]).value.messages[1]["content"]
    assert anthropic == [{"type": "thinking", "thinking": "t", "signature": "sig"}]
    gemini = to_gemini([Message.user("q"), signed]).value.contents[1]["parts"]
    assert gemini == [{"text": "t", "thought": True, "thought_signature": "sig"}]


def test_a_call_the_conversation_moved_past_is_left_out_and_reported() -> None:
    # The user interrupted a tool call, and the model answered without it: OpenAI,
    # Anthropic and Gemini refuse a call that no result follows before the next reply.
    history = [
        Message.user("q"),
        Message(role="assistant", parts=[TextPart("looking"), ToolCallPart("c1", "f", {})]),
        Message.user("never mind"),
        Message.assistant("ok"),
        Message(role="tool", parts=[ToolResultPart("c1", "late")]),
        Message.user("thanks"),
    ]
    chat = to_openai_chat(history)
    assert [w["role"] for w in chat.value] == ["user", "assistant", "user", "assistant", "user"]
    assert "tool_calls" not in chat.value[1]
    assert {loss.where for loss in chat.dropped} == {"messages[1].parts[1]", "messages[4].parts[0]"}
    check_anthropic(to_anthropic(history).value.messages)
    gemini = to_gemini(history).value.contents
    assert not any(
        "function_call" in p or "function_response" in p for c in gemini for p in c["parts"]
    )
    responses = to_openai_responses(history).value
    assert not any(item.get("type", "").startswith("function_call") for item in responses)


def test_a_call_still_waiting_and_a_result_alone_are_kept() -> None:
    # Converting a few messages at a time: a reply's calls, then their results.
    reply = Message(role="assistant", parts=[ToolCallPart("c1", "f", {})])
    assert to_openai_chat([Message.user("q"), reply]).lossless
    assert to_anthropic([reply, Message.tool("c2", "other")]).lossless
    assert not to_anthropic([reply, Message.user("never mind")]).lossless
    assert to_openai_chat([Message.tool("c1", "done")]).value == [
        {"role": "tool", "tool_call_id": "c1", "content": "done"}
    ]
