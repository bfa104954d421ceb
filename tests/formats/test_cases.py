"""Hand-written cases: real wire shapes in, the same shapes back, losses and bad input."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from sessionary import InvalidMessage, LossyConversion, Message, ReasoningPart, ToolCallPart
from sessionary.formats import (
    from_ai_sdk,
    from_anthropic,
    from_events,
    from_gemini,
    from_openai_chat,
    from_openai_responses,
    from_workers_ai,
    from_workers_ai_response,
    to_ai_sdk,
    to_anthropic,
    to_events,
    to_gemini,
    to_openai_chat,
    to_openai_responses,
)

CHAT = [
    {"role": "developer", "content": "Be brief.", "name": "ops"},
    {"role": "user", "content": [
        {"type": "text", "text": "Look"},
        {"type": "image_url", "image_url": {"url": "https://x.test/a.jpg", "detail": "low"}}]},
    {"role": "assistant", "content": None, "refusal": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "f", "arguments": "{\"a\":1}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "42"},
]  # fmt: skip


def test_openai_chat_reads_and_writes_back_the_same_messages() -> None:
    ours = from_openai_chat(CHAT)
    assert [m.role for m in ours] == ["system", "user", "assistant", "tool"]
    assert ours[2].tool_calls[0].arguments == {"a": 1}
    assert ours[3].tool_results[0].call_id == "call_1"
    assert to_openai_chat(ours, strict=True).value == CHAT


def test_openai_chat_accepts_sdk_objects() -> None:
    from openai.types.chat import ChatCompletionMessage

    sdk = ChatCompletionMessage.model_validate(
        {"role": "assistant", "content": "hi", "tool_calls": None}
    )
    (message,) = from_openai_chat([sdk])
    assert message.text == "hi"


def test_openai_chat_splits_results_one_tool_message_per_call() -> None:
    calls = [ToolCallPart("a", "f"), ToolCallPart("b", "g")]
    tool = Message.tool("a", "1")
    tool.parts.append(Message.tool("b", "2").parts[0])
    wire = to_openai_chat([Message.assistant(tool_calls=calls), tool]).value
    assert [w["role"] for w in wire] == ["assistant", "tool", "tool"]
    assert [w["tool_call_id"] for w in wire[1:]] == ["a", "b"]


def test_strict_raises_and_lenient_reports() -> None:
    messages = [Message(role="assistant", parts=[ReasoningPart("think")])]
    with pytest.raises(LossyConversion) as caught:
        to_openai_chat(messages, strict=True)
    assert caught.value.dropped
    conversion = to_openai_chat(messages)
    assert [loss.where for loss in conversion.dropped] == ["messages[0].parts[0]"]
    assert not conversion.lossless


def test_bad_wire_input_is_a_typed_error() -> None:
    with pytest.raises(InvalidMessage, match=r"items\[0\]\.role"):
        from_openai_chat([{"role": "robot", "content": "x"}])
    with pytest.raises(InvalidMessage, match="tool_call_id"):
        from_openai_chat([{"role": "tool", "content": "x"}])
    with pytest.raises(InvalidMessage):
        from_anthropic([{"role": "system", "content": "x"}])


RESPONSES = [
    {"role": "user", "content": "Weather in Paris?"},
    {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc"},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather",
     "arguments": "{\"city\": \"Paris\"}", "status": "completed"},
    {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
    {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "Sunny.", "annotations": []}]},
]  # fmt: skip


def test_openai_responses_keeps_ids_statuses_and_encrypted_reasoning() -> None:
    ours = from_openai_responses(RESPONSES)
    assert [m.role for m in ours] == ["user", "assistant", "tool", "assistant"]
    reasoning = ours[1].parts[0]
    assert isinstance(reasoning, ReasoningPart) and reasoning.signature == "enc"
    assert to_openai_responses(ours, strict=True).value == RESPONSES


ANTHROPIC_SYSTEM = "You are terse."
ANTHROPIC = [
    {"role": "user", "content": "Add 2 and 3."},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Use the tool.", "signature": "sig"},
        {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 3},
         "cache_control": {"type": "ephemeral"}}]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "5"},
        {"type": "text", "text": "And now?"}]},
]  # fmt: skip


def test_anthropic_splits_user_turns_and_merges_them_back() -> None:
    ours = from_anthropic(ANTHROPIC, ANTHROPIC_SYSTEM)
    assert [m.role for m in ours] == ["system", "user", "assistant", "tool", "user"]
    prompt = to_anthropic(ours, strict=True).value
    assert prompt.system == ANTHROPIC_SYSTEM
    assert prompt.messages == ANTHROPIC


def test_anthropic_reports_reasoning_without_signature() -> None:
    messages = [Message.user("hi"), Message(role="assistant", parts=[ReasoningPart("x")])]
    assert to_anthropic(messages).dropped[0].where == "messages[1].parts[0]"


GEMINI = [
    {"role": "user", "parts": [{"text": "Weather?"}]},
    {"role": "model", "parts": [
        {"function_call": {"name": "weather", "args": {"city": "Paris"}},
         "thought_signature": "c2ln"},
        {"function_call": {"name": "time", "args": {}}}]},
    {"role": "user", "parts": [
        {"function_response": {"name": "time", "response": {"output": "noon"}}},
        {"function_response": {"name": "weather", "response": {"output": "sunny"}}}]},
]  # fmt: skip


def test_gemini_matches_responses_by_name_when_ids_are_missing() -> None:
    ours = from_gemini(GEMINI)
    calls = {c.name: c.id for c in ours[1].tool_calls}
    results = ours[2].tool_results
    assert [r.call_id for r in results] == [calls["time"], calls["weather"]]
    assert to_gemini(ours, strict=True).value.contents == GEMINI


def test_gemini_reads_sdk_objects_and_camel_case() -> None:
    from google.genai import types

    sdk = types.Content(role="model", parts=[types.Part(text="hi")])
    camel = {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "f", "args": {}}}]}
    ours = from_gemini([sdk, camel])
    assert ours[0].text == "hi" and ours[1].tool_calls[0].id == "c1"


AI_SDK = [
    {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather?"}]},
    {"id": "a1", "role": "assistant", "metadata": {"model": "m"}, "parts": [
        {"type": "step-start"},
        {"type": "tool-weather", "toolCallId": "c1", "state": "output-available",
         "input": {"city": "Paris"}, "output": {"sky": "clear"}},
        {"type": "step-start"},
        {"type": "text", "text": "Clear skies.", "state": "done"}]},
]  # fmt: skip


def test_ai_sdk_splits_steps_into_call_result_and_answer() -> None:
    ours = from_ai_sdk(AI_SDK)
    assert [m.role for m in ours] == ["user", "assistant", "tool", "assistant"]
    assert ours[1].id == "a1" and ours[1].metadata == {"model": "m"}
    assert ours[2].tool_results[0].output == {"sky": "clear"}
    assert to_ai_sdk(ours, strict=True).value == AI_SDK


EVENTS = [
    {"id": "e1", "sessionId": "s", "seq": 0, "timestamp": 1700000000000,
     "action": "system_instruction", "content": "Be kind."},
    {"id": "e2", "sessionId": "s", "seq": 1, "timestamp": 1700000000001,
     "action": "tool_call_request", "content": "",
     "toolCalls": [{"id": "c1", "name": "f", "arguments": {"x": 1}}]},
    {"id": "e3", "sessionId": "s", "seq": 2, "timestamp": 1700000000002,
     "action": "tool_result", "content": "ok", "toolCallId": "c1", "toolName": "f",
     "isSuccess": False},
    {"id": "e4", "sessionId": "s", "seq": 3, "timestamp": 1700000000003,
     "action": "compaction", "content": "Summary.", "compactedEventCount": 7},
]  # fmt: skip


def test_events_round_trip_with_ids_and_times() -> None:
    ours = from_events(EVENTS)
    assert [m.id for m in ours] == ["e1", "e2", "e3", "e4"]
    assert ours[2].tool_results[0].is_error
    assert to_events(ours, strict=True).value == EVENTS


def test_events_read_stored_rows() -> None:
    row = {"id": "e9", "session_id": "s", "seq": 5, "action": "agent_message", "content": "hi",
           "metadata": "{\"model\": \"m\"}", "created_at": 1700000000000}  # fmt: skip
    (message,) = from_events([row])
    assert message.role == "assistant" and message.metadata == {"model": "m"}


# ---------------------------------------------------------------- nesting

_TOO_DEEP_TEXT = "[" * 5000 + "]" * 5000
"""JSON text nested deeper than Python's decoder goes (it raised a RecursionError)."""


def _nested(depth: int) -> dict[str, object]:
    value: dict[str, object] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def test_arguments_too_deep_to_decode_are_kept_as_their_text() -> None:
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": _TOO_DEEP_TEXT}}
    (message,) = from_openai_chat([{"role": "assistant", "content": None, "tool_calls": [call]}])
    assert message.tool_calls[0].arguments == _TOO_DEEP_TEXT
    assert to_openai_chat([message]).value[0]["tool_calls"][0] == call
    (item,) = from_openai_responses(
        [{"type": "function_call", "call_id": "c", "name": "f", "arguments": _TOO_DEEP_TEXT}]
    )
    assert item.tool_calls[0].arguments == _TOO_DEEP_TEXT


@pytest.mark.parametrize(
    "read",
    [
        lambda: from_gemini([{"role": "user", "parts": [{"text": "x", "meta": _nested(5000)}]}]),
        lambda: from_events([{"session_id": "s", "action": "message", "metadata": _TOO_DEEP_TEXT}]),
        lambda: from_anthropic(
            [{"role": "user", "content": [{"type": "text", "text": "x", "x": _nested(5000)}]}]
        ),
        lambda: to_openai_chat([Message.user("x", metadata=_nested(5000))]),
    ],
    ids=["gemini", "events", "anthropic", "to_openai_chat"],
)
def test_values_nested_too_deep_are_invalid_messages(read: Callable[[], object]) -> None:
    with pytest.raises(InvalidMessage, match=r"deep|JSON"):
        read()


NOT_LISTS = [None, 5, "text", {"role": "user"}]


@pytest.mark.parametrize("value", NOT_LISTS, ids=repr)
@pytest.mark.parametrize(
    "convert",
    [
        from_openai_chat,
        from_openai_responses,
        from_anthropic,
        from_gemini,
        from_ai_sdk,
        from_events,
        from_workers_ai,
        to_openai_chat,
        to_anthropic,
        to_gemini,
    ],
)
def test_a_list_that_is_not_a_list_is_an_invalid_message(
    convert: Callable[[object], object], value: object
) -> None:
    # None and other non-iterables raised TypeError; text was read character by character.
    with pytest.raises(InvalidMessage):
        convert(value)


@pytest.mark.parametrize("value", NOT_LISTS[1:], ids=repr)
@pytest.mark.parametrize(
    "convert",
    [
        lambda v: from_anthropic([], system=b"text" if isinstance(v, str) else v),
        lambda v: from_openai_chat([{"role": "assistant", "tool_calls": v}]),
        lambda v: from_workers_ai([{"role": "assistant", "content": "", "tool_calls": v}]),
        lambda v: from_workers_ai_response({"response": "", "tool_calls": v}),
    ],
    ids=["anthropic_system", "chat_tool_calls", "workers_tool_calls", "workers_response"],
)
def test_a_nested_list_that_is_not_a_list_is_an_invalid_message(
    convert: Callable[[object], object], value: object
) -> None:
    with pytest.raises(InvalidMessage):
        convert(value)


def test_a_text_document_with_a_lone_surrogate_is_kept_as_its_block() -> None:
    block = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": "a\ud800b"},
    }
    turn = {"role": "user", "content": [block]}
    (message,) = from_anthropic([turn])  # raised UnicodeEncodeError
    assert to_anthropic([message]).value.messages == [turn]
