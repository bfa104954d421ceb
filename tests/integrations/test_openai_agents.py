"""OpenAI Agents SDK: `SessionarySession` against the SDK's own session test cases.

The cases are rewritten from the openai-agents-python repository's session tests, with
`SessionarySession` in place of the SDK's sessions (same scenarios and assertions):

- tests/memory/test_session.py (SQLiteSession): runner memory, explicit instances,
  separate sessions, direct add/get/clear, pop_item, get_items with a limit, list input,
  unicode, special characters and SQL injection, concurrent access, session settings.
- tests/extensions/memory/test_sqlalchemy_session.py (SQLAlchemySession): direct ops,
  non-ASCII storage, runner integration, isolation, limits, empty pops, concurrent pops,
  empty adds, ordering of items added together, settings.

Cases about one backend's internals (its connections, locks, corrupt rows, SQL it
emits) have no counterpart here; the conformance suite covers those guarantees for
every sessionary store. The model is a `Model` subclass returning canned responses.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest
from agents import Agent, RunConfig, Runner, SessionSettings, TResponseInputItem, function_tool
from agents.items import ModelResponse
from agents.memory.session import Session as AgentsSession
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

import sessionary
from sessionary.integrations.openai_agents import SessionarySession

# ---------------------------------------------------------------- a model with canned replies


def text_reply(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg_1",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


def call_reply(name: str, arguments: str, call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        type="function_call", id=f"fc_{call_id}", call_id=call_id, name=name, arguments=arguments
    )


class CannedModel(Model):
    """Returns the queued outputs in order and records the input of every call."""

    def __init__(self) -> None:
        self.queue: list[list[Any]] = []
        self.inputs: list[list[TResponseInputItem]] = []

    def enqueue(self, *outputs: Any) -> None:
        self.queue.append(list(outputs))

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any):  # type: ignore[no-untyped-def,override]
        self.inputs.append([input] if isinstance(input, str) else list(input))
        return ModelResponse(output=self.queue.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:  # type: ignore[override]
        raise NotImplementedError("the tests run the agent without streaming")


async def run_agent(runner_method: str, agent: Agent[Any], text: Any, **kwargs: Any) -> Any:
    assert runner_method == "run"  # run_sync: see test_run_sync_persists_between_runs
    return await Runner.run(agent, text, **kwargs)


# The SDK's tests also run `run_sync` from inside the async test, in a thread; it leaves that
# thread's event loop open, which this suite's warnings-as-errors refuses. `run_sync` gets a
# test of its own below, in plain synchronous code, as a sync program would call it.
RUNNER_METHODS = ["run"]


@pytest.fixture
def model() -> CannedModel:
    return CannedModel()


@pytest.fixture
def agent(model: CannedModel) -> Agent[Any]:
    return Agent(name="test", model=model)


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'agents.db'}"


@pytest.fixture
async def session(amanager: sessionary.AsyncSessionManager) -> SessionarySession:
    return SessionarySession("test_session", amanager)


def message_item(item_id: str, text: str) -> TResponseInputItem:
    return cast(
        TResponseInputItem,
        {
            "id": item_id,
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
        },
    )


def reasoning_item(item_id: str, text: str) -> TResponseInputItem:
    return cast(
        TResponseInputItem,
        {"id": item_id, "type": "reasoning", "summary": [{"type": "summary_text", "text": text}]},
    )


def ids(items: list[TResponseInputItem]) -> list[str]:
    return [cast(dict[str, Any], item)["id"] for item in items]


# ---------------------------------------------------------------- the protocol


def test_it_implements_the_sdk_session_protocol(db_url: str) -> None:
    assert isinstance(SessionarySession("s", db_url), AgentsSession)


# ---------------------------------------------------------------- from test_session.py


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
async def test_session_memory_basic_functionality(
    runner_method: str, db_url: str, agent: Agent[Any], model: CannedModel
) -> None:
    session = SessionarySession("test_session_123", db_url)
    model.enqueue(text_reply("San Francisco"))
    result1 = await run_agent(
        runner_method, agent, "What city is the Golden Gate Bridge in?", session=session
    )
    assert result1.final_output == "San Francisco"
    model.enqueue(text_reply("California"))
    result2 = await run_agent(runner_method, agent, "What state is it in?", session=session)
    assert result2.final_output == "California"
    assert len(model.inputs[-1]) > 1
    await session.close()


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
async def test_session_memory_with_explicit_instance(
    runner_method: str, session: SessionarySession, agent: Agent[Any], model: CannedModel
) -> None:
    model.enqueue(text_reply("Hello"))
    result1 = await run_agent(runner_method, agent, "Hi there", session=session)
    assert result1.final_output == "Hello"
    model.enqueue(text_reply("I remember you said hi"))
    result2 = await run_agent(runner_method, agent, "Do you remember what I said?", session=session)
    assert result2.final_output == "I remember you said hi"


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
async def test_session_memory_different_sessions(
    runner_method: str,
    amanager: sessionary.AsyncSessionManager,
    agent: Agent[Any],
    model: CannedModel,
) -> None:
    session_1 = SessionarySession("session_1", amanager)
    session_2 = SessionarySession("session_2", amanager)
    model.enqueue(text_reply("I like cats"))
    result1 = await run_agent(runner_method, agent, "I like cats", session=session_1)
    assert result1.final_output == "I like cats"
    model.enqueue(text_reply("I like dogs"))
    result2 = await run_agent(runner_method, agent, "I like dogs", session=session_2)
    assert result2.final_output == "I like dogs"
    model.enqueue(text_reply("Yes, you mentioned cats"))
    result3 = await run_agent(runner_method, agent, "What did I say I like?", session=session_1)
    assert result3.final_output == "Yes, you mentioned cats"
    seen = str(model.inputs[-1])
    assert "cats" in seen and "dogs" not in seen


async def test_session_memory_direct(session: SessionarySession) -> None:
    items: list[TResponseInputItem] = [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there!"},
    ]
    await session.add_items(items)
    retrieved = await session.get_items()
    assert len(retrieved) == 2
    assert retrieved[0].get("role") == "user"
    assert retrieved[0].get("content") == "Hello"
    assert retrieved[1].get("role") == "assistant"
    assert retrieved[1].get("content") == "Hi there!"
    await session.clear_session()
    assert len(await session.get_items()) == 0


async def test_session_memory_pop_item(session: SessionarySession) -> None:
    assert await session.pop_item() is None
    items: list[TResponseInputItem] = [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there!"},
        {"role": "user", "content": "How are you?"},
    ]
    await session.add_items(items)
    assert len(await session.get_items()) == 3
    popped = await session.pop_item()
    assert popped is not None
    assert popped.get("role") == "user"
    assert popped.get("content") == "How are you?"
    remaining = await session.get_items()
    assert len(remaining) == 2
    assert remaining[0].get("content") == "Hello"
    assert remaining[1].get("content") == "Hi there!"
    popped2 = await session.pop_item()
    assert popped2 is not None and popped2.get("content") == "Hi there!"
    popped3 = await session.pop_item()
    assert popped3 is not None and popped3.get("content") == "Hello"
    assert await session.pop_item() is None
    assert len(await session.get_items()) == 0


async def test_session_memory_pop_different_sessions(
    amanager: sessionary.AsyncSessionManager,
) -> None:
    session_1 = SessionarySession("session_1", amanager)
    session_2 = SessionarySession("session_2", amanager)
    await session_1.add_items([{"role": "user", "content": "Session 1 message"}])
    await session_2.add_items(
        [
            {"role": "user", "content": "Session 2 message 1"},
            {"role": "user", "content": "Session 2 message 2"},
        ]
    )
    popped_1 = await session_1.pop_item()
    assert popped_1 is not None and popped_1.get("content") == "Session 1 message"
    assert len(await session_1.get_items()) == 0
    items_2 = await session_2.get_items()
    assert len(items_2) == 2
    assert items_2[0].get("content") == "Session 2 message 1"
    popped_2 = await session_2.pop_item()
    assert popped_2 is not None and popped_2.get("content") == "Session 2 message 2"
    remaining_2 = await session_2.get_items()
    assert len(remaining_2) == 1
    assert remaining_2[0].get("content") == "Session 2 message 1"


async def test_session_get_items_with_limit(session: SessionarySession) -> None:
    items: list[TResponseInputItem] = [
        {"role": "user", "content": "Message 1"},
        {"role": "assistant", "content": "Response 1"},
        {"role": "user", "content": "Message 2"},
        {"role": "assistant", "content": "Response 2"},
        {"role": "user", "content": "Message 3"},
        {"role": "assistant", "content": "Response 3"},
    ]
    await session.add_items(items)
    assert len(await session.get_items()) == 6
    latest_2 = await session.get_items(limit=2)
    assert [i.get("content") for i in latest_2] == ["Message 3", "Response 3"]
    latest_4 = await session.get_items(limit=4)
    assert [i.get("content") for i in latest_4] == [
        "Message 2",
        "Response 2",
        "Message 3",
        "Response 3",
    ]
    assert len(await session.get_items(limit=10)) == 6
    assert len(await session.get_items(limit=0)) == 0


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
async def test_session_memory_appends_list_input_by_default(
    runner_method: str, session: SessionarySession, agent: Agent[Any], model: CannedModel
) -> None:
    await session.add_items([{"role": "user", "content": "Initial history"}])
    model.enqueue(text_reply("This should run"))
    list_input: list[TResponseInputItem] = [{"role": "user", "content": "Test message"}]
    result = await run_agent(runner_method, agent, list_input, session=session)
    assert result.final_output == "This should run"
    contents = [i.get("content") for i in await session.get_items()]
    assert contents[:2] == ["Initial history", "Test message"]


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
async def test_session_callback_prepared_input(
    runner_method: str, session: SessionarySession, agent: Agent[Any], model: CannedModel
) -> None:
    await session.add_items(
        [{"role": "user", "content": "Hello there."}, {"role": "assistant", "content": "Hi!"}]
    )

    def filter_assistant_messages(
        history: list[TResponseInputItem], new_input: list[TResponseInputItem]
    ) -> list[TResponseInputItem]:
        return [item for item in history if item.get("role") != "assistant"] + new_input

    model.enqueue(text_reply("Done"))
    await run_agent(
        runner_method,
        agent,
        "Next message",
        session=session,
        run_config=RunConfig(session_input_callback=filter_assistant_messages),
    )
    sent = model.inputs[-1]
    assert [i.get("content") for i in sent] == ["Hello there.", "Next message"]


async def test_session_unicode_content(session: SessionarySession) -> None:
    await session.add_items(
        [
            {"role": "user", "content": "こんにちは"},
            {"role": "assistant", "content": "😊👍"},
            {"role": "user", "content": "Привет"},
        ]
    )
    items = await session.get_items()
    assert [i.get("content") for i in items] == ["こんにちは", "😊👍", "Привет"]


async def test_session_special_characters_and_sql_injection(
    session: SessionarySession,
) -> None:
    texts = [
        "O'Reilly",
        'He said "hello"',
        "DROP TABLE messages; --",
        '{"role": "user", "content": "Hacked"}',
        "Robert'); DROP TABLE students;--",
        "Normal message",
    ]
    await session.add_items([{"role": "user", "content": t} for t in texts])
    items = await session.get_items()
    assert [i.get("content") for i in items] == texts


async def test_session_concurrent_access(session: SessionarySession) -> None:
    async def add(i: int) -> None:
        await session.add_items([{"role": "user", "content": f"Message {i}"}])

    await asyncio.gather(*(add(i) for i in range(10)))
    contents = {i.get("content") for i in await session.get_items()}
    assert contents == {f"Message {i}" for i in range(10)}


async def test_session_settings_default(db_url: str) -> None:
    session = SessionarySession("default_settings_test", db_url)
    assert isinstance(session.session_settings, SessionSettings)
    assert session.session_settings.limit is None
    await session.close()


async def test_session_settings_constructor(db_url: str) -> None:
    session = SessionarySession(
        "constructor_settings_test", db_url, session_settings=SessionSettings(limit=5)
    )
    assert session.session_settings is not None and session.session_settings.limit == 5
    await session.close()


async def test_get_items_uses_session_settings_limit(
    amanager: sessionary.AsyncSessionManager,
) -> None:
    session = SessionarySession("uses_settings_limit_test", amanager)
    session.session_settings = SessionSettings(limit=3)
    await session.add_items([{"role": "user", "content": f"Message {i}"} for i in range(5)])
    items = await session.get_items()
    assert [i.get("content") for i in items] == ["Message 2", "Message 3", "Message 4"]


async def test_get_items_explicit_limit_overrides_session_settings(
    amanager: sessionary.AsyncSessionManager,
) -> None:
    session = SessionarySession(
        "explicit_override_test", amanager, session_settings=SessionSettings(limit=5)
    )
    await session.add_items([{"role": "user", "content": f"Message {i}"} for i in range(10)])
    items = await session.get_items(limit=2)
    assert [i.get("content") for i in items] == ["Message 8", "Message 9"]


async def test_runner_with_session_settings_override(
    amanager: sessionary.AsyncSessionManager, agent: Agent[Any], model: CannedModel
) -> None:
    session = SessionarySession(
        "runner_override_test", amanager, session_settings=SessionSettings(limit=100)
    )
    await session.add_items(
        [
            {"role": "user", "content": f"Turn {i}"} if i % 2 == 0 else message_item(f"m{i}", "ok")
            for i in range(10)
        ]
    )
    model.enqueue(text_reply("Got it"))
    await Runner.run(
        agent,
        "New question",
        session=session,
        run_config=RunConfig(session_settings=SessionSettings(limit=2)),
    )
    sent = model.inputs[-1]
    history = sent[:-1]
    assert len(history) == 2
    assert history[0].get("content") == "Turn 8"
    assert sent[-1].get("content") == "New question"


@pytest.mark.usefixtures("sync_loop")
def test_run_sync_persists_between_runs(db_url: str, agent: Agent[Any], model: CannedModel) -> None:
    session = SessionarySession("sync_run", db_url)
    model.enqueue(text_reply("Hello"))
    assert Runner.run_sync(agent, "Hi there", session=session).final_output == "Hello"
    model.enqueue(text_reply("I remember"))
    result = Runner.run_sync(agent, "Do you remember?", session=session)
    assert result.final_output == "I remember"
    assert next(i.get("content") for i in model.inputs[-1]) == "Hi there"
    # The session's store closes on the loop run_sync made (the sync_loop fixture closes it).
    asyncio.get_event_loop_policy().get_event_loop().run_until_complete(session.close())


# ---------------------------------------------------------------- from test_sqlalchemy_session.py


async def test_direct_ops(session: SessionarySession) -> None:
    await session.add_items(
        [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there!"}]
    )
    retrieved = await session.get_items()
    assert len(retrieved) == 2
    assert retrieved[0].get("content") == "Hello"
    assert retrieved[1].get("content") == "Hi there!"
    popped = await session.pop_item()
    assert popped is not None and popped.get("content") == "Hi there!"
    after_pop = await session.get_items()
    assert len(after_pop) == 1 and after_pop[0].get("content") == "Hello"
    await session.clear_session()
    assert len(await session.get_items()) == 0


async def test_non_ascii_round_trip(
    session: SessionarySession, amanager: sessionary.AsyncSessionManager
) -> None:
    item: TResponseInputItem = {"role": "user", "content": "café"}
    await session.add_items([item])
    assert await session.get_items() == [item]
    stored = await amanager.session("test_session").history()
    assert stored[0].text == "café"


async def test_runner_integration(
    session: SessionarySession, agent: Agent[Any], model: CannedModel
) -> None:
    model.enqueue(text_reply("San Francisco"))
    result1 = await Runner.run(agent, "What city is the Golden Gate Bridge in?", session=session)
    assert result1.final_output == "San Francisco"
    model.enqueue(text_reply("California"))
    result2 = await Runner.run(agent, "What state is it in?", session=session)
    assert result2.final_output == "California"
    last_input = model.inputs[-1]
    assert len(last_input) > 1
    assert any("Golden Gate Bridge" in str(item.get("content", "")) for item in last_input)


async def test_session_isolation(
    amanager: sessionary.AsyncSessionManager, agent: Agent[Any], model: CannedModel
) -> None:
    session1 = SessionarySession("session_1", amanager)
    session2 = SessionarySession("session_2", amanager)
    model.enqueue(text_reply("I like cats."))
    await Runner.run(agent, "I like cats.", session=session1)
    model.enqueue(text_reply("I like dogs."))
    await Runner.run(agent, "I like dogs.", session=session2)
    model.enqueue(text_reply("You said you like cats."))
    result = await Runner.run(agent, "What animal did I say I like?", session=session1)
    assert "cats" in result.final_output.lower()
    assert "dogs" not in result.final_output.lower()


async def test_get_items_with_limit(session: SessionarySession) -> None:
    await session.add_items(
        [
            {"role": "user", "content": "1"},
            {"role": "assistant", "content": "2"},
            {"role": "user", "content": "3"},
            {"role": "assistant", "content": "4"},
        ]
    )
    latest_2 = await session.get_items(limit=2)
    assert [i.get("content") for i in latest_2] == ["3", "4"]
    assert len(await session.get_items()) == 4
    assert len(await session.get_items(limit=10)) == 4


async def test_pop_from_empty_session(amanager: sessionary.AsyncSessionManager) -> None:
    assert await SessionarySession("empty_session", amanager).pop_item() is None


async def test_concurrent_pop_item_returns_each_row_once(shared_store_url: str) -> None:
    writer = SessionarySession("concurrent_pop", shared_store_url)
    other = SessionarySession("concurrent_pop", shared_store_url)
    try:
        await writer.add_items(
            [{"role": "user", "content": "first"}, {"role": "assistant", "content": "second"}]
        )
        popped = await asyncio.gather(writer.pop_item(), other.pop_item())
    finally:
        await writer.close()
        await other.close()
    contents = {cast(dict[str, Any], item)["content"] for item in popped if item is not None}
    assert contents == {"first", "second"}


async def test_get_items_limit_returns_fewer_when_history_exhausted(
    session: SessionarySession,
) -> None:
    await session.add_items([{"role": "user", "content": "only valid"}])
    retrieved = await session.get_items(limit=5)
    assert [item.get("content") for item in retrieved] == ["only valid"]


async def test_add_empty_items_list(session: SessionarySession) -> None:
    assert len(await session.get_items()) == 0
    await session.add_items([])
    assert len(await session.get_items()) == 0


async def test_items_added_together_keep_their_order(session: SessionarySession) -> None:
    await session.add_items([message_item("older_same_ts", "old")])
    await session.add_items(
        [reasoning_item("rs_same_ts", "..."), message_item("msg_same_ts", "...")]
    )
    assert ids(await session.get_items()) == ["older_same_ts", "rs_same_ts", "msg_same_ts"]
    assert ids(await session.get_items(limit=2)) == ["rs_same_ts", "msg_same_ts"]


async def test_pop_item_returns_the_latest_of_items_added_together(
    session: SessionarySession,
) -> None:
    await session.add_items(
        [reasoning_item("rs_pop_same_ts", "..."), message_item("msg_pop_same_ts", "...")]
    )
    popped = await session.pop_item()
    assert popped is not None and cast(dict[str, Any], popped)["id"] == "msg_pop_same_ts"
    assert ids(await session.get_items()) == ["rs_pop_same_ts"]


# ---------------------------------------------------------------- sessionary's own guarantees

EVERY_KIND: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "developer", "content": [{"type": "input_text", "text": "Use tools."}]},
    {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "What is this?"},
            {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "auto"},
        ],
    },
    reasoning_item("rs_1", "thinking"),
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "lookup",
        "arguments": '{"q": "cat"}',
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "a cat"},
    {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search"}},
    message_item("msg_1", "It is a cat."),
    {"role": "assistant", "content": "plain"},
    {"role": "user", "content": "odd", "unknown_field": [1, {"x": None}]},
]


async def test_every_item_comes_back_exactly(session: SessionarySession) -> None:
    await session.add_items(cast(list[TResponseInputItem], EVERY_KIND))
    assert await session.get_items() == EVERY_KIND
    again = SessionarySession("test_session", session.manager)
    assert await again.get_items() == EVERY_KIND
    popped = [await again.pop_item() for _ in EVERY_KIND]
    assert popped == EVERY_KIND[::-1]


async def test_items_are_stored_as_searchable_messages(
    session: SessionarySession, amanager: sessionary.AsyncSessionManager
) -> None:
    await session.add_items(cast(list[TResponseInputItem], EVERY_KIND))
    stored = await amanager.session("test_session").history()
    assert [m.role for m in stored[:6]] == [
        "system",
        "system",
        "user",
        "assistant",
        "assistant",
        "tool",
    ]
    assert stored[4].tool_calls[0].arguments == {"q": "cat"}
    assert stored[5].tool_results[0].call_id == "call_1"
    try:
        hits = await amanager.search("cat")
    except sessionary.Unsupported:
        return
    assert {hit.message_id for hit in hits} >= {stored[5].id, stored[7].id}


async def test_pop_keeps_other_branches(
    session: SessionarySession, amanager: sessionary.AsyncSessionManager
) -> None:
    await session.add_items(
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a1"}]
    )
    handle = amanager.session("test_session")
    first, _answer = await handle.history()
    await handle.checkout(first.id)
    await session.add_items([{"role": "assistant", "content": "a2"}])
    await handle.checkout(first.id)  # the head now has two children
    popped = await session.pop_item()
    assert popped == {"role": "user", "content": "q"}
    assert await session.get_items() == []
    assert len(await handle.branches(first.id)) == 2  # both answers are still stored


async def test_a_failed_add_stores_nothing(session: SessionarySession) -> None:
    await session.add_items([{"role": "user", "content": "kept"}])
    with pytest.raises(sessionary.InvalidMessage):
        await session.add_items(
            [{"role": "user", "content": "x"}, cast(TResponseInputItem, "not an item")]
        )
    assert await session.get_items() == [{"role": "user", "content": "kept"}]


def test_bad_ids_and_stores_are_refused() -> None:
    with pytest.raises(sessionary.InvalidId):
        SessionarySession("user:42", "memory://")
    with pytest.raises(sessionary.InvalidURL):
        SessionarySession("ok", 42)  # type: ignore[arg-type]


async def test_sessions_are_scoped_by_user(amanager: sessionary.AsyncSessionManager) -> None:
    alice = SessionarySession("chat", amanager, user="alice")
    bob = SessionarySession("chat", amanager, user="bob")
    await alice.add_items([{"role": "user", "content": "secret"}])
    assert await bob.get_items() == []
    assert await bob.pop_item() is None
    assert len(await alice.get_items()) == 1


# ---------------------------------------------------------------- persist and resume


@function_tool
def get_weather(city: str) -> str:
    """Return the weather in a city."""
    return f"It is sunny in {city}."


async def test_a_run_persists_and_resumes_in_a_new_session_instance(
    shared_store_url: str, model: CannedModel
) -> None:
    agent = Agent(name="weather", model=model, tools=[get_weather])
    first = SessionarySession("trip", shared_store_url)
    model.enqueue(call_reply("get_weather", '{"city": "Paris"}', "call_1"))
    model.enqueue(text_reply("Paris is sunny."))
    result = await Runner.run(agent, "Weather in Paris?", session=first)
    assert result.final_output == "Paris is sunny."
    saved = await first.get_items()
    await first.close()

    # A new process's view: a new manager, a new connection, the same session id.
    async with sessionary.AsyncSessionManager(shared_store_url) as manager:
        resumed = SessionarySession("trip", manager)
        assert await resumed.get_items() == saved
        model.enqueue(text_reply("You asked about Paris."))
        result = await Runner.run(agent, "Which city did I ask about?", session=resumed)
        assert result.final_output == "You asked about Paris."
        sent = model.inputs[-1]
        assert sent[: len(saved)] == saved
        kinds = [item.get("type", "message") for item in saved]
        assert kinds == ["message", "function_call", "function_call_output", "message"]
        stored = await manager.session("trip").history()
        assert [m.role for m in stored] == [
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant",
        ]


def test_a_missing_sdk_gives_an_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "agents.memory.session", None)
    monkeypatch.delitem(sys.modules, "sessionary.integrations.openai_agents")
    with pytest.raises(ImportError, match=r"sessionary\[openai-agents\]"):
        importlib.import_module("sessionary.integrations.openai_agents")
