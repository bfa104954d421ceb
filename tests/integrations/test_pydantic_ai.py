"""Pydantic AI: message history conversion (exact round trips) and load/save around runs."""

from __future__ import annotations

import contextlib
import importlib
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai.messages import (
    BinaryContent,
    DocumentUrl,
    ImageUrl,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

import sessionary
from sessionary import FilePart, Message, ReasoningPart, ToolResultPart
from sessionary.integrations.pydantic_ai import (
    AsyncSessionaryMessageHistory,
    SessionaryMessageHistory,
    from_messages,
    to_messages,
)

Adapter = ModelMessagesTypeAdapter


def legacy_retries() -> ModelRequest:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # RetryPromptPart is deprecated, still accepted
        return ModelRequest(
            parts=[
                RetryPromptPart("try again", tool_name="lookup", tool_call_id="c3"),
                RetryPromptPart("the output was not valid"),
            ]
        )


HISTORY: list[ModelMessage] = [
    ModelRequest(
        parts=[SystemPromptPart("Be terse."), UserPromptPart("Weather in Paris and Rome?")],
        instructions="Answer in English.",
        run_id="run-1",
    ),
    ModelResponse(
        parts=[
            ThinkingPart("Two cities: two calls.", signature="sig-1"),
            TextPart("Checking."),
            ToolCallPart("weather", {"city": "Paris"}, tool_call_id="c1"),
            ToolCallPart("weather", '{"city": "Rome"}', tool_call_id="c2"),
        ],
        model_name="test-model",
        provider_response_id="resp-9",
    ),
    ModelRequest(
        parts=[
            ToolReturnPart("weather", {"sky": "sunny", "temp": [20, 21]}, tool_call_id="c1"),
            ToolReturnPart("weather", "service down", tool_call_id="c2", outcome="failed"),
            UserPromptPart(
                [
                    "Also, what is this?",
                    ImageUrl("https://example.com/a.png"),
                    BinaryContent(b"\x89PNG\r\n", media_type="image/png"),
                    DocumentUrl("https://example.com/d.pdf"),
                ]
            ),
        ]
    ),
    ModelResponse(parts=[TextPart("Paris is sunny; Rome is unknown. It is a cat.")]),
    legacy_retries(),
    ModelRequest(parts=[UserPromptPart([])]),
]


def through_the_adapter(history: list[ModelMessage]) -> list[ModelMessage]:
    """What Pydantic AI itself gives back from its own JSON: the bar for exactness."""
    return Adapter.validate_json(Adapter.dump_json(history))


def test_history_round_trips_exactly() -> None:
    back = from_messages(to_messages(HISTORY))
    assert back == through_the_adapter(HISTORY)
    assert Adapter.dump_json(back) == Adapter.dump_json(through_the_adapter(HISTORY))


def test_history_becomes_a_conversation_by_role() -> None:
    converted = to_messages(HISTORY)
    roles = [m.role for m in converted]
    assert roles == [
        *("system", "user", "assistant", "tool", "user", "assistant", "tool", "user", "user")
    ]
    assert converted[0].text == "Be terse."
    assistant = converted[2]
    assert isinstance(assistant.parts[0], ReasoningPart)
    assert assistant.parts[0].signature == "sig-1"
    assert [(c.id, c.name, c.arguments) for c in assistant.tool_calls] == [
        ("c1", "weather", {"city": "Paris"}),
        ("c2", "weather", '{"city": "Rome"}'),
    ]
    results = converted[3].tool_results
    assert [(r.call_id, r.is_error) for r in results] == [("c1", False), ("c2", True)]
    files = [p for p in converted[4].parts if isinstance(p, FilePart)]
    assert [f.mime_type for f in files] == ["image/png", "image/png", "application/pdf"]
    assert converted[6].tool_results[0].is_error  # a retry answers its call with an error
    assert converted[7].text == "the output was not valid"


@settings(deadline=None)  # a slow shared machine is not a failure
@given(
    texts=st.lists(st.text(), min_size=1, max_size=3),
    args=st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=8) | st.none()),
    output=st.text() | st.integers() | st.lists(st.integers(), max_size=3),
)
def test_any_text_arguments_and_outputs_round_trip(
    texts: list[str], args: dict[str, object], output: object
) -> None:
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart(t) for t in texts]),
        ModelResponse(parts=[TextPart(texts[0]), ToolCallPart("tool", args, tool_call_id="c1")]),
        ModelRequest(parts=[ToolReturnPart("tool", output, tool_call_id="c1")]),
    ]
    assert from_messages(to_messages(history)) == through_the_adapter(history)


def test_messages_written_by_other_clients_read_by_role() -> None:
    plain = [
        Message.system("Be kind."),
        Message.user("hi"),
        Message.assistant("calling", tool_calls=[sessionary.ToolCallPart("c1", "f", {"x": 1})]),
        Message(role="tool", parts=[ToolResultPart("c1", "done", name="f")]),
        Message.assistant("ok"),
    ]
    history = from_messages(plain)
    assert [m.kind for m in history] == ["request", "request", "response", "request", "response"]
    assert isinstance(history[0].parts[0], SystemPromptPart)
    assert isinstance(history[1].parts[0], UserPromptPart)
    call = history[2].parts[1]
    assert isinstance(call, ToolCallPart) and call.args == {"x": 1}
    result = history[3].parts[0]
    assert isinstance(result, ToolReturnPart) and result.content == "done"


def test_bad_input_is_refused() -> None:
    with pytest.raises(sessionary.InvalidMessage):
        to_messages(["not a message"])  # type: ignore[list-item]


# ---------------------------------------------------------------- stored, and around runs


def test_history_survives_the_store(manager: sessionary.SessionManager) -> None:
    history = SessionaryMessageHistory("chat", manager)
    assert history.load() == []
    stored = history.save(HISTORY)
    assert len(stored) == 9
    assert history.load() == through_the_adapter(HISTORY)
    assert SessionaryMessageHistory("chat", manager).load() == through_the_adapter(HISTORY)


def test_a_window_keeps_tool_calls_with_their_returns(manager: sessionary.SessionManager) -> None:
    history = SessionaryMessageHistory("chat", manager)
    history.save(HISTORY[:3])
    window = history.load(limit=2)  # the tool returns and a prompt: widened to the calls
    assert len(window) == 2  # the response with the calls, then the request with the returns
    assert isinstance(window[0], ModelResponse)
    assert any(isinstance(p, ToolCallPart) for p in window[0].parts)


def weather_model() -> FunctionModel:
    """Calls the weather tool once, then answers with what the tool said."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart):
            return ModelResponse(parts=[TextPart(f"The weather: {last.content}")])
        seen = sum(isinstance(m, ModelRequest) for m in messages)
        if seen > 1 and isinstance(last, UserPromptPart):
            return ModelResponse(parts=[TextPart(f"I have seen {len(messages)} messages.")])
        return ModelResponse(
            parts=[ToolCallPart("weather", {"city": "Paris"}, tool_call_id="call-1")]
        )

    return FunctionModel(respond)


def weather_agent() -> Agent[None, str]:
    agent = Agent(weather_model(), system_prompt="You report the weather.")

    @agent.tool_plain
    def weather(city: str) -> str:
        return f"sunny in {city}"

    return agent


@pytest.mark.usefixtures("sync_loop")
def test_a_run_persists_and_resumes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'pai.db'}"
    agent = weather_agent()
    first = SessionaryMessageHistory("trip", url)
    result = agent.run_sync("Weather in Paris?", message_history=first.load())
    assert result.output == "The weather: sunny in Paris"
    first.save(result.new_messages())
    first.close()

    resumed = SessionaryMessageHistory("trip", url)  # a new process's view of the store
    try:
        loaded = resumed.load()
        assert loaded == through_the_adapter(result.all_messages())
        again = agent.run_sync("And now?", message_history=loaded)
        assert again.output == f"I have seen {len(loaded) + 1} messages."
        resumed.save(again.new_messages())
        assert len(resumed.load()) == len(loaded) + 2
        stored = resumed.manager.session("trip").history()
        assert [m.role for m in stored][:5] == ["system", "user", "assistant", "tool", "assistant"]
    finally:
        resumed.close()


async def test_async_history_with_the_test_model(
    amanager: sessionary.AsyncSessionManager,
) -> None:
    agent = Agent(TestModel(custom_output_text="hello"))
    history = AsyncSessionaryMessageHistory("chat", amanager)
    result = await agent.run("Hi", message_history=await history.load())
    await history.save(result.new_messages())
    loaded = await history.load()
    assert loaded == through_the_adapter(result.all_messages())
    second = await agent.run("Again", message_history=loaded)
    await history.save(second.new_messages())
    assert len(await history.load()) == 4
    hits = None
    with contextlib.suppress(sessionary.Unsupported):
        hits = await amanager.search("hello")
    assert hits is None or {h.session_id for h in hits} == {"chat"}


def test_scopes_are_walls(manager: sessionary.SessionManager) -> None:
    SessionaryMessageHistory("chat", manager, user="alice").save(HISTORY[:2])
    assert SessionaryMessageHistory("chat", manager, user="bob").load() == []


def test_a_missing_pydantic_ai_gives_an_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pydantic_ai.messages", None)
    monkeypatch.delitem(sys.modules, "sessionary.integrations.pydantic_ai")
    with pytest.raises(ImportError, match=r"sessionary\[pydantic-ai\]"):
        importlib.import_module("sessionary.integrations.pydantic_ai")
