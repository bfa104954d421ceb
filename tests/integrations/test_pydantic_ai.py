"""Pydantic AI: every message shape it produces round-trips exactly through every store.

Exact means equal to what Pydantic AI's own `ModelMessagesTypeAdapter` gives back from its
JSON. The histories come from hand-built messages of every part kind and from real agent
runs with `FunctionModel` and `TestModel` (offline): tool calls, tool retries
(`outcome='retried'`), output retries (`RetryFeedbackPart`), deferred calls waiting for
approval or an external result (a call with `args=None` among them) resumed with
`DeferredToolResults`, thinking, files and binary content both ways, native (builtin) tool
parts, usage. Also: closing, and use from several threads and event loops.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import sys
import warnings
from pathlib import Path

import pytest
from _loop_threads import in_threads
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent, CallDeferred, DeferredToolRequests, DeferredToolResults, ModelRetry
from pydantic_ai.messages import (
    AudioUrl,
    BinaryContent,
    CachePoint,
    CompactionPart,
    DocumentUrl,
    ImageUrl,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryFeedbackPart,
    RetryPromptPart,
    SystemPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UploadedFile,
    UserPromptPart,
    VideoUrl,
)
from pydantic_ai.messages import (
    FilePart as PaiFilePart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

import sessionary
from sessionary import FilePart, Message, ReasoningPart, ToolResultPart
from sessionary.integrations._common import decode_name, encode_name
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

# One message of every other shape Pydantic AI writes, for the stores.
EVERY_SHAPE: list[ModelMessage] = [
    ModelRequest(
        parts=[
            SystemPromptPart("dynamic", dynamic_ref="now"),
            UserPromptPart(
                [
                    AudioUrl("https://example.com/a.mp3"),
                    VideoUrl("https://example.com/v.mp4"),
                    BinaryContent(b"%PDF-1.7", media_type="application/pdf"),
                    TextContent("quoted", metadata={"source": "clipboard"}),
                    UploadedFile(file_id="file-1", provider_name="openai"),
                    CachePoint(),
                ]
            ),
        ],
        instructions="Be brief.",
    ),
    ModelResponse(
        parts=[
            ThinkingPart("", signature="encrypted", provider_name="openai", id="rs_1"),
            NativeToolCallPart("web_search", {"query": "x"}, tool_call_id="b1", provider_name="p"),
            NativeToolReturnPart("web_search", {"hits": [1]}, tool_call_id="b1", provider_name="p"),
            ToolCallPart("approve_me", None, tool_call_id="c9"),
            PaiFilePart(BinaryContent(b"\x89PNG", media_type="image/png")),
            CompactionPart("summary so far", provider_name="anthropic"),
        ],
        model_name="m-1",
        provider_name="p",
        provider_details={"k": [1, None]},
        finish_reason="tool_call",
    ),
    ModelRequest(
        parts=[
            ToolReturnPart(
                "approve_me", [ImageUrl("https://example.com/i.png"), "caption"], tool_call_id="c9"
            ),
            ToolReturnPart("approve_me", "no", tool_call_id="c9", outcome="denied"),
        ]
    ),
    ModelRequest(parts=[]),
    ModelResponse(parts=[]),
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


def test_every_shape_survives_the_store(manager: sessionary.SessionManager) -> None:
    history = SessionaryMessageHistory("shapes", manager)
    history.save(EVERY_SHAPE)
    assert history.load() == through_the_adapter(EVERY_SHAPE)
    assert from_messages(to_messages(EVERY_SHAPE)) == through_the_adapter(EVERY_SHAPE)


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


def deferring_agent() -> Agent[None, str | DeferredToolRequests]:
    """An agent whose model thinks, has a tool retried, then calls a tool needing approval
    (with no arguments at all), a tool run elsewhere, and a native tool; then answers with a
    file, after one output retry."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        if turn == 0:
            return ModelResponse(
                parts=[ThinkingPart("plan", signature="sig"), ToolCallPart("flaky", {"x": 1})]
            )
        if turn == 1:
            return ModelResponse(
                parts=[
                    NativeToolCallPart("code_execution", {"code": "1+1"}, provider_name="p"),
                    ToolCallPart("flaky", {"x": 2}, tool_call_id="c2"),
                    ToolCallPart("approve_me", None, tool_call_id="c3"),
                    ToolCallPart("external", {"q": "a"}, tool_call_id="c4"),
                ]
            )
        answer = "not yet" if turn == 2 else "final"
        return ModelResponse(
            parts=[TextPart(answer), PaiFilePart(BinaryContent(b"\x89PNG", media_type="image/png"))]
        )

    agent: Agent[None, str | DeferredToolRequests] = Agent(
        FunctionModel(respond), output_type=[str, DeferredToolRequests]
    )

    @agent.tool_plain
    def flaky(x: int) -> str:
        if x == 1:
            raise ModelRetry("x must be 2")
        return f"ok {x}"

    @agent.tool_plain(requires_approval=True)
    def approve_me() -> str:
        return "approved"

    @agent.tool_plain
    def external(q: str) -> str:
        raise CallDeferred()

    @agent.output_validator
    def not_yet(output: str | DeferredToolRequests) -> str | DeferredToolRequests:
        if output == "not yet":
            raise ModelRetry("answer properly")
        return output

    return agent


@pytest.mark.usefixtures("sync_loop")
def test_a_deferred_run_is_saved_and_resumed_from_the_store(
    manager: sessionary.SessionManager,
) -> None:
    agent = deferring_agent()
    history = SessionaryMessageHistory("deferred", manager)
    first = agent.run_sync(["look", BinaryContent(b"%PDF", media_type="application/pdf")])
    assert isinstance(first.output, DeferredToolRequests)
    assert [c.tool_call_id for c in first.output.approvals] == ["c3"]
    history.save(first.new_messages())
    loaded = SessionaryMessageHistory("deferred", manager).load()  # a fresh reader
    assert loaded == through_the_adapter(first.all_messages())
    assert any(isinstance(p, ToolCallPart) and p.args is None for m in loaded for p in m.parts)

    results = DeferredToolResults(approvals={"c3": True}, calls={"c4": "from elsewhere"})
    second = agent.run_sync(message_history=loaded, deferred_tool_results=results)
    assert second.output == "final"
    history.save(second.new_messages())
    everything = history.load()
    assert everything == through_the_adapter(second.all_messages())
    kinds = {type(p) for m in everything for p in m.parts}
    assert {RetryFeedbackPart, NativeToolCallPart, ThinkingPart, PaiFilePart} <= kinds
    assert everything[-1].usage == second.all_messages()[-1].usage  # type: ignore[union-attr]


# ---------------------------------------------------------------- session ids

# Ids Pydantic AI programs use that are not sessionary ids, and one that looks encoded.
NAMES = ["user@example.com", "thread:42/1", "conv 1", "ü", "x.1"]


@pytest.mark.parametrize("session_id", NAMES)
def test_any_session_id_works(manager: sessionary.SessionManager, session_id: str) -> None:
    history = SessionaryMessageHistory(session_id, manager)
    assert history.session_id == session_id
    assert history.load() == []
    history.save(HISTORY[:2])
    again = SessionaryMessageHistory(session_id, manager)
    assert again.load() == through_the_adapter(HISTORY[:2])
    assert SessionaryMessageHistory(session_id + "!", manager).load() == []
    (stored,) = manager.list()
    assert stored.id == encode_name(session_id, "session_id")
    assert decode_name(stored.id) == session_id


@pytest.mark.parametrize("session_id", NAMES)
async def test_any_session_id_works_async(
    amanager: sessionary.AsyncSessionManager, session_id: str
) -> None:
    history = AsyncSessionaryMessageHistory(session_id, amanager)
    assert history.session_id == session_id
    assert await history.load() == []
    await history.save(HISTORY[:2])
    again = AsyncSessionaryMessageHistory(session_id, amanager)
    assert await again.load() == through_the_adapter(HISTORY[:2])
    assert decode_name((await amanager.list()).items[0].id) == session_id


def test_a_valid_session_id_names_the_session_unchanged(
    manager: sessionary.SessionManager,
) -> None:
    manager.create(id="chat-7").append_all(to_messages(HISTORY[:2]))
    assert SessionaryMessageHistory("chat-7", manager).load() == through_the_adapter(HISTORY[:2])


def test_an_empty_session_id_is_refused(manager: sessionary.SessionManager) -> None:
    for history_class in (SessionaryMessageHistory, AsyncSessionaryMessageHistory):
        with pytest.raises(sessionary.InvalidId):
            history_class("", manager)  # type: ignore[arg-type]


# ---------------------------------------------------------------- closing


def test_a_closed_history_refuses_load_and_save(store_url: str) -> None:
    history = SessionaryMessageHistory("chat", store_url)
    history.save(HISTORY[:2])
    history.close()
    history.close()  # again: nothing happens, nothing hangs
    with pytest.raises(RuntimeError, match="SessionaryMessageHistory is closed"):
        history.load()
    with pytest.raises(sessionary.Closed):
        history.save(HISTORY[2:3])


async def test_a_closed_async_history_refuses_load_and_save(store_url: str) -> None:
    history = AsyncSessionaryMessageHistory("chat", store_url)
    await history.save(HISTORY[:2])
    await asyncio.gather(history.close(), history.close())
    with pytest.raises(RuntimeError, match="AsyncSessionaryMessageHistory is closed"):
        await history.load()
    with pytest.raises(sessionary.Closed):
        await history.save([])


def test_closing_over_the_callers_manager_leaves_it_usable(
    manager: sessionary.SessionManager,
) -> None:
    history = SessionaryMessageHistory("chat", manager)
    history.close()
    history.save(HISTORY[:2])
    assert history.load() == through_the_adapter(HISTORY[:2])


# ---------------------------------------------------------------- threads and loops


def test_an_async_history_serves_loop_after_loop(store_url: str) -> None:
    history = AsyncSessionaryMessageHistory("chat", store_url)
    asyncio.run(history.save(HISTORY[:2]))
    asyncio.run(history.save(HISTORY[2:4]))
    assert asyncio.run(history.load()) == through_the_adapter(HISTORY[:4])
    asyncio.run(history.close())


def test_histories_from_threads_each_with_its_own_loop(store_url: str) -> None:
    manager = sessionary.AsyncSessionManager(store_url)
    agent = Agent(TestModel(custom_output_text="hello"))

    def converse(i: int) -> None:
        history = AsyncSessionaryMessageHistory(f"thread-{i}", manager)

        async def turn(text: str) -> None:
            result = await agent.run(text, message_history=await history.load())
            await history.save(result.new_messages())

        asyncio.run(turn(f"hi from {i}"))
        asyncio.run(turn("again"))

    try:
        assert in_threads(converse) == [None] * 5
        for i in range(5):
            loaded = asyncio.run(AsyncSessionaryMessageHistory(f"thread-{i}", manager).load())
            assert len(loaded) == 4
    finally:
        asyncio.run(manager.close())


def test_scopes_are_walls(manager: sessionary.SessionManager) -> None:
    SessionaryMessageHistory("chat", manager, user="alice").save(HISTORY[:2])
    assert SessionaryMessageHistory("chat", manager, user="bob").load() == []


def test_a_missing_pydantic_ai_gives_an_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pydantic_ai.messages", None)
    monkeypatch.delitem(sys.modules, "sessionary.integrations.pydantic_ai")
    with pytest.raises(ImportError, match=r"sessionary\[pydantic-ai\]"):
        importlib.import_module("sessionary.integrations.pydantic_ai")
