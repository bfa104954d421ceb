"""The Workers AI adapter: the chat input a Workers AI model takes, and its response."""

from __future__ import annotations

import pytest

from sessionary import (
    FilePart,
    InvalidInput,
    InvalidMessage,
    LossyConversion,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from sessionary.formats import from_workers_ai, from_workers_ai_response, to_workers_ai

LOOP = [
    Message.user("What is the weather in London?"),
    Message.assistant(
        "Checking.",
        tool_calls=[ToolCallPart("call_1", "get_weather", {"lat": 51.5, "lon": -0.1})],
    ),
    Message.tool("call_1", {"temp_c": 14, "sky": "cloudy"}),
    Message.assistant("14 °C and cloudy."),
]

WIRE = {
    "messages": [
        {"role": "system", "content": "You are terse.\n\nAnswer in metric units."},
        {"role": "user", "content": "What is the weather in London?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"lat": 51.5, "lon": -0.1}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "name": "get_weather",
            "content": '{"temp_c": 14, "sky": "cloudy"}',
        },
        {"role": "assistant", "content": "14 °C and cloudy."},
    ]
}


def test_an_agent_loop_in_workers_ai_shape() -> None:
    system = ["You are terse.", "", "Answer in metric units."]
    conversion = to_workers_ai(LOOP, system=system, strict=True)
    assert conversion.value == WIRE
    assert conversion.lossless
    back = from_workers_ai(conversion.value)
    assert [m.role for m in back] == ["system", "user", "assistant", "tool", "assistant"]
    assert back[2].tool_calls[0].arguments == {"lat": 51.5, "lon": -0.1}
    assert back[3].tool_results[0].call_id == "call_1"
    assert to_workers_ai(back).value == WIRE


def test_content_is_always_text() -> None:
    calls_only = Message.assistant(tool_calls=[ToolCallPart("c1", "f", {})])
    (wire,) = to_workers_ai([calls_only]).value["messages"]
    assert wire["content"] == ""
    assert wire["tool_calls"][0]["function"]["arguments"] == "{}"
    two = Message(role="user", parts=[TextPart("one"), TextPart("two")])
    conversion = to_workers_ai([two])
    assert conversion.value["messages"][0]["content"] == "one\ntwo"
    assert [loss.where for loss in conversion.dropped] == ["messages[0].parts"]


def test_what_workers_ai_cannot_carry_is_reported() -> None:
    messages = [
        Message(role="user", parts=[TextPart("look"), FilePart("image/png", data="AAAA")]),
        Message(
            role="assistant",
            parts=[ReasoningPart("hmm"), TextPart("ok")],
            metadata={"model": "llama"},
        ),
        Message(role="tool", parts=[ToolResultPart("c9", "boom", is_error=True)]),
    ]
    conversion = to_workers_ai(messages)
    assert sorted(loss.where for loss in conversion.dropped) == [
        "messages[0].parts[1]",
        "messages[1].metadata",
        "messages[1].parts[0]",
        "messages[2].parts[0].is_error",
    ]
    with pytest.raises(LossyConversion):
        to_workers_ai(messages, strict=True)


def test_a_result_without_an_id_answers_the_open_call_of_its_name() -> None:
    wire = [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "x", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "y", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "name": "y", "content": "Y"},
        {"role": "tool", "name": "x", "content": "X"},
    ]
    back = from_workers_ai(wire)
    assert [m.tool_results[0].call_id for m in back[2:]] == ["b", "a"]
    assert all(m.tool_results[0].name is None for m in back[2:])
    with pytest.raises(InvalidMessage):
        from_workers_ai([{"role": "tool", "name": "z", "content": "?"}])


def test_a_models_response_becomes_an_assistant_message() -> None:
    reply = from_workers_ai_response(
        {
            "response": "",
            "tool_calls": [{"name": "get_weather", "arguments": {"lat": 1, "lon": 2}}],
        }
    )
    assert reply.role == "assistant"
    (call,) = reply.tool_calls
    assert (call.name, call.arguments) == ("get_weather", {"lat": 1, "lon": 2})
    assert call.id  # Workers AI gives none: a new one, for the result to answer
    (wire,) = to_workers_ai([reply]).value["messages"]
    assert wire["tool_calls"] == [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"lat": 1, "lon": 2}'},
        }
    ]
    assert from_workers_ai_response({"response": "Hello."}).text == "Hello."
    with pytest.raises(InvalidMessage):
        from_workers_ai_response({"response": ""})


def test_bad_input_is_a_typed_error() -> None:
    with pytest.raises(InvalidMessage):
        from_workers_ai({"messages": [{"role": "robot", "content": "x"}]})
    with pytest.raises(InvalidMessage):
        from_workers_ai([{"role": "user", "content": ["not", "text"]}])
    with pytest.raises(InvalidMessage):
        from_workers_ai({"no": "messages"})
    with pytest.raises(InvalidInput):
        to_workers_ai(LOOP, system=[1])  # type: ignore[list-item]


def test_workers_ai_tools_are_name_description_parameters() -> None:
    spec = ToolSpec("get_weather", "The weather at a place.", {"type": "object"})
    assert spec.export("workers-ai") == {
        "name": "get_weather",
        "description": "The weather at a place.",
        "parameters": {"type": "object"},
    }
