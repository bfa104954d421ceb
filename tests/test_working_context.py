"""`build_working_context`: a model call's working context from a plain event list."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from sessionary import InvalidInput, InvalidMessage, Message, ToolSpec
from sessionary.formats import event_to_message, from_workers_ai_response, to_events
from sessionary.working import DEFAULT_LIMIT, WorkingContext, build_working_context


def event(seq: int, action: str, content: str = "", **fields: Any) -> dict[str, Any]:
    return {
        "id": f"e{seq}",
        "sessionId": "s1",
        "seq": seq,
        "timestamp": 1_700_000_000_000 + seq,
        "action": action,
        "content": content,
        **fields,
    }


def chat(count: int) -> list[dict[str, Any]]:
    return [
        event(i, "user_message" if i % 2 == 0 else "agent_message", f"turn {i}")
        for i in range(count)
    ]


def test_the_default_limit_is_the_seeds_fifty() -> None:
    assert DEFAULT_LIMIT == 50
    ctx = build_working_context(chat(80))
    assert len(ctx.history) == 50
    assert ctx.history[0].id == "e30" and ctx.history[-1].id == "e79"
    assert len(build_working_context(chat(80), limit=None).history) == 80
    assert [m.id for m in build_working_context(chat(80), limit=2).history] == ["e78", "e79"]
    assert build_working_context(chat(3), limit=0).history == []


def test_the_limit_never_separates_a_call_from_its_results() -> None:
    events = [
        event(0, "user_message", "weather in two cities?"),
        event(
            1,
            "tool_call_request",
            toolCalls=[
                {"id": "c1", "name": "weather", "arguments": {"city": "Oslo"}},
                {"id": "c2", "name": "weather", "arguments": {"city": "Rome"}},
            ],
        ),
        event(2, "tool_result", "3 °C", toolCallId="c1", toolName="weather", isSuccess=True),
        event(3, "tool_result", "21 °C", toolCallId="c2", toolName="weather", isSuccess=True),
    ]
    ctx = build_working_context(events, limit=1)
    assert [m.id for m in ctx.history] == ["e1", "e2", "e3"]
    assert ctx.history[0].tool_calls[1].arguments == {"city": "Rome"}


def test_a_mapper_may_drop_events() -> None:
    events = [
        *chat(4),
        event(4, "compaction", "summary of 0-3", compactedEventCount=4),
        event(5, "heartbeat"),
        event(6, "user_message", "and now?"),
    ]

    def only_conversation(raw: Mapping[str, Any]) -> Message | None:
        if raw["action"] in ("compaction", "heartbeat"):
            return None
        return event_to_message(raw)

    ctx = build_working_context(events, to_message=only_conversation)
    assert [m.id for m in ctx.history] == ["e0", "e1", "e2", "e3", "e6"]
    # the limit counts the messages kept, not the events given
    assert [
        m.id for m in build_working_context(events, limit=2, to_message=only_conversation).history
    ] == ["e3", "e6"]


def test_a_mapper_may_return_the_json_shape_and_bad_output_is_refused() -> None:
    rows = [{"who": "user", "said": "hi"}, {"who": "assistant", "said": "hello"}]
    ctx = build_working_context(
        rows,
        to_message=lambda r: {"role": r["who"], "parts": [{"type": "text", "text": r["said"]}]},
    )
    assert [m.text for m in ctx.history] == ["hi", "hello"]
    with pytest.raises(InvalidMessage):
        build_working_context(rows, to_message=lambda r: {"role": "robot", "parts": []})


def test_new_messages_are_only_those_added_and_persist_as_events() -> None:
    ctx = build_working_context(chat(4), system=["You are terse.", "Use metric units."])
    assert ctx.system == "You are terse.\n\nUse metric units."
    assert ctx.new_messages() == []
    ctx.add(Message.user("weather?"))
    ctx.add(from_workers_ai_response({"response": "Sunny."}))
    assert [m.text for m in ctx.new_messages()] == ["weather?", "Sunny."]
    assert [m.text for m in ctx.messages][-3:] == ["turn 3", "weather?", "Sunny."]
    events = to_events(ctx.new_messages(), session_id="s1").value
    assert [e["action"] for e in events] == ["user_message", "agent_message"]
    again = build_working_context([*chat(4), *events])
    assert [m.text for m in again.history][-2:] == ["weather?", "Sunny."]
    with pytest.raises(InvalidMessage):
        ctx.add(ctx.new_messages()[0])  # the same id twice


def test_the_request_in_workers_ai_shape() -> None:
    tool = ToolSpec("weather", "The weather in a city.", {"type": "object"})
    ctx = build_working_context(chat(2), system="You are terse.", tools=[tool])
    ctx.add(Message.user("and tomorrow?"))
    request = ctx.request("workers-ai")
    assert request["messages"][0] == {"role": "system", "content": "You are terse."}
    assert [m["content"] for m in request["messages"][1:]] == ["turn 0", "turn 1", "and tomorrow?"]
    assert request["tools"] == [tool.to_workers_ai()]
    # only the event log's own bookkeeping (sessionId, seq) stays behind
    assert {loss.where.split(".", 1)[1] for loss in ctx.dropped} == {"extra['events']"}
    assert ctx.request("openai-chat")["messages"][0]["role"] == "system"


def test_bad_arguments_are_typed_errors() -> None:
    with pytest.raises(InvalidInput):
        build_working_context(chat(2), limit=-1)
    with pytest.raises(InvalidInput):
        build_working_context(chat(2), limit=True)
    with pytest.raises(InvalidInput):
        build_working_context(chat(2), system=[None])  # type: ignore[list-item]
    with pytest.raises(InvalidInput):
        WorkingContext(tools=["not a tool"])  # type: ignore[list-item]
    with pytest.raises(InvalidInput):
        build_working_context(chat(2)).request("telepathy")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("build", "error"),
    [
        (lambda: build_working_context(None), InvalidMessage),  # type: ignore[arg-type]
        (lambda: build_working_context(5), InvalidMessage),  # type: ignore[arg-type]
        (lambda: build_working_context("events"), InvalidMessage),  # type: ignore[arg-type]
        (lambda: build_working_context([], system=None), InvalidInput),  # type: ignore[arg-type]
        (lambda: build_working_context([], system=5), InvalidInput),  # type: ignore[arg-type]
        (lambda: build_working_context([], tools=None), InvalidInput),  # type: ignore[arg-type]
        (lambda: WorkingContext(history=None), InvalidMessage),  # type: ignore[arg-type]
        (lambda: WorkingContext(history=[5]), InvalidMessage),  # type: ignore[list-item]
        (lambda: WorkingContext(tools=None), InvalidInput),  # type: ignore[arg-type]
        (lambda: WorkingContext().add_all(None), InvalidMessage),  # type: ignore[arg-type]
    ],
)
def test_what_is_not_a_list_is_a_typed_error(build: Any, error: type[Exception]) -> None:
    # Each raised TypeError ('NoneType' object is not iterable); history=[5] was accepted
    # and failed only when the request was built.
    with pytest.raises(error):
        build()


@pytest.mark.parametrize("format", ["anthropic", "gemini"])
def test_a_request_that_would_open_with_the_models_turn_opens_with_a_user_turn(
    format: str,
) -> None:
    # A compacted context whose summary is a system message, or a history cut after a
    # user message, opens with the model's turn, which Anthropic and Gemini refuse.
    from sessionary.requests import OPENING_TEXT, build_request

    history = [
        Message.system("Summary: the user asked for a plan."),
        Message.assistant("Here is the plan."),
        Message.user("Go on."),
    ]
    out, dropped = build_request(format, "Be brief.", history)  # type: ignore[arg-type]
    turns = out["messages"] if format == "anthropic" else out["contents"]
    assert [turn["role"] for turn in turns][:2] == (
        ["user", "assistant"] if format == "anthropic" else ["user", "model"]
    )
    first = turns[0]["content"] if format == "anthropic" else turns[0]["parts"][0]["text"]
    assert first == OPENING_TEXT
    assert any(OPENING_TEXT in loss.what for loss in dropped)
    opened = build_request(format, "", [Message.user("hi"), Message.assistant("yo")])  # type: ignore[arg-type]
    assert not opened[1]  # a conversation opening with the user's turn is unchanged
