"""OpenAI Agents SDK: `SessionarySession` held to the SDK's `Session` contract, on every store.

The cases restate, for `SessionarySession` over every sessionary backend, the behaviours
the SDK's own session tests hold its sessions to (same scenarios and assertions):

- tests/memory/test_session.py: runner memory through `Runner.run`, `run_sync` (in a
  thread with its own loop) and `run_streamed`; explicit instances; separate sessions;
  direct add/get/clear; pop_item; get_items with a limit; list input appended;
  `session_input_callback` preparing and repeating history; unicode, special characters
  and SQL injection; concurrent access; closed sessions refusing even `add_items([])`;
  settings: default, constructor, dicts normalised, unknown keys a TypeError, `resolve`,
  the session's limit, an explicit limit overriding it, `RunConfig` overriding both.
- tests/memory/test_session_limit.py: a run's history limit, a limit that would pass on a
  function output without its call, limit 0, no limit, a limit over the history's length.
- tests/extensions/memory/test_redis_session.py, test_async_sqlite_session.py: closed
  sessions raise RuntimeError for every call; close is idempotent and safe concurrently;
  close before use is terminal; close is a no-op over an injected client (here: the
  caller's manager); a failed first close is retried by the next.
- tests/extensions/memory/test_sqlalchemy_session.py: direct ops, non-ASCII storage,
  runner integration, isolation, limits, empty pops, concurrent pops, empty adds, order of
  items added together, settings, and one session instance used from two event loops in
  two threads at once.

Cases about one backend's internals (its connections, locks, corrupt rows, the SQL it
emits) have no counterpart; the store conformance suite covers those guarantees. Beyond
the SDK's files: `run_sync` 20 times in a row, five threads each with its own loop (one
shared session, and one manager shared by five sessions), and `asyncio.run` twice.
The model is the SDK's own `agents.testing.ScriptedModel`.
"""

from __future__ import annotations

import asyncio
import collections
import importlib
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from _loop_threads import THREADS, in_threads
from agents import (
    Agent,
    RunConfig,
    Runner,
    SessionSettings,
    TResponseInputItem,
    function_tool,
    set_tracing_disabled,
)
from agents.memory.session import Session as AgentsSession
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

import sessionary
from sessionary import Message
from sessionary.integrations._common import decode_name, encode_name
from sessionary.integrations.openai_agents import SessionarySession

# ---------------------------------------------------------------- running an agent


def _run_sync_in_own_loop(agent: Agent[Any], text: Any, **kwargs: Any) -> Any:
    """`Runner.run_sync` as a thread of a sync program calls it: on that thread's own loop."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        return Runner.run_sync(agent, text, **kwargs)
    finally:
        loop.close()
        asyncio.set_event_loop(None)


async def run_agent(runner_method: str, agent: Agent[Any], text: Any, **kwargs: Any) -> Any:
    """Run `agent` with one of the SDK's three entry points, as the SDK's tests do."""
    if runner_method == "run":
        return await Runner.run(agent, text, **kwargs)
    if runner_method == "run_sync":
        return await asyncio.to_thread(_run_sync_in_own_loop, agent, text, **kwargs)
    result = Runner.run_streamed(agent, text, **kwargs)
    async for _event in result.stream_events():
        pass
    return result


RUNNER_METHODS = ["run", "run_sync", "run_streamed"]


def reply(text: str) -> list[Any]:
    """One model step answering `text`."""
    return [assistant_message(text)]


def echo(call: ModelCall) -> list[Any]:
    """A model step answering with the last input item's text, whichever thread asks."""
    last = call.input if isinstance(call.input, str) else call.input[-1].get("content")
    return [assistant_message(f"echo: {last}")]


def last_input(model: ScriptedModel) -> list[TResponseInputItem]:
    call = model.last_call
    assert call is not None
    return list(call.input)


@pytest.fixture(autouse=True)
def _no_tracing() -> Iterator[None]:
    """No traces: they would be exported (and fail to be) when the test run ends."""
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def agent(model: ScriptedModel) -> Agent[Any]:
    return Agent(name="test", model=model)


@pytest.fixture
async def session(amanager: sessionary.AsyncSessionManager) -> SessionarySession:
    return SessionarySession("test_session", amanager)


@pytest.fixture
def memory_url(tmp_path: Path) -> str:
    """A store URL for tests about one object's behaviour, not about a backend's."""
    return f"sqlite:///{tmp_path / 'agents.db'}"


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


def contents(items: list[TResponseInputItem]) -> list[Any]:
    return [item.get("content") for item in items]


# ---------------------------------------------------------------- the protocol


def test_it_implements_the_sdk_session_protocol(memory_url: str) -> None:
    assert isinstance(SessionarySession("s", memory_url), AgentsSession)


# ---------------------------------------------------------------- from test_session.py


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
async def test_session_memory_basic_functionality(
    runner_method: str, store_url: str, agent: Agent[Any], model: ScriptedModel
) -> None:
    session = SessionarySession("test_session_123", store_url)
    try:
        model.enqueue(reply("San Francisco"))
        result1 = await run_agent(
            runner_method, agent, "What city is the Golden Gate Bridge in?", session=session
        )
        assert result1.final_output == "San Francisco"
        model.enqueue(reply("California"))
        result2 = await run_agent(runner_method, agent, "What state is it in?", session=session)
        assert result2.final_output == "California"
        assert len(last_input(model)) > 1
    finally:
        await session.close()


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
async def test_session_memory_with_explicit_instance(
    runner_method: str, session: SessionarySession, agent: Agent[Any], model: ScriptedModel
) -> None:
    model.enqueue(reply("Hello"))
    result1 = await run_agent(runner_method, agent, "Hi there", session=session)
    assert result1.final_output == "Hello"
    model.enqueue(reply("I remember you said hi"))
    result2 = await run_agent(runner_method, agent, "Do you remember what I said?", session=session)
    assert result2.final_output == "I remember you said hi"
    assert contents(last_input(model))[0] == "Hi there"


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
async def test_session_memory_different_sessions(
    runner_method: str,
    amanager: sessionary.AsyncSessionManager,
    agent: Agent[Any],
    model: ScriptedModel,
) -> None:
    session_1 = SessionarySession("session_1", amanager)
    session_2 = SessionarySession("session_2", amanager)
    model.enqueue(reply("I like cats"))
    result1 = await run_agent(runner_method, agent, "I like cats", session=session_1)
    assert result1.final_output == "I like cats"
    model.enqueue(reply("I like dogs"))
    result2 = await run_agent(runner_method, agent, "I like dogs", session=session_2)
    assert result2.final_output == "I like dogs"
    model.enqueue(reply("Yes, you mentioned cats"))
    result3 = await run_agent(runner_method, agent, "What did I say I like?", session=session_1)
    assert result3.final_output == "Yes, you mentioned cats"
    seen = str(last_input(model))
    assert "cats" in seen and "dogs" not in seen


async def test_session_memory_direct(session: SessionarySession) -> None:
    items: list[TResponseInputItem] = [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there!"},
    ]
    await session.add_items(items)
    retrieved = await session.get_items()
    assert retrieved == items
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
    assert popped == {"role": "user", "content": "How are you?"}
    assert contents(await session.get_items()) == ["Hello", "Hi there!"]
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
    assert contents(await session_2.get_items()) == ["Session 2 message 1", "Session 2 message 2"]
    popped_2 = await session_2.pop_item()
    assert popped_2 is not None and popped_2.get("content") == "Session 2 message 2"
    assert contents(await session_2.get_items()) == ["Session 2 message 1"]


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
    assert contents(await session.get_items(limit=2)) == ["Message 3", "Response 3"]
    assert contents(await session.get_items(limit=4)) == [
        "Message 2",
        "Response 2",
        "Message 3",
        "Response 3",
    ]
    assert len(await session.get_items(limit=10)) == 6
    assert len(await session.get_items(limit=0)) == 0
    assert len(await session.get_items(limit=-1)) == 6  # as `SQLiteSession`: every item


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
async def test_session_memory_appends_list_input_by_default(
    runner_method: str, session: SessionarySession, agent: Agent[Any], model: ScriptedModel
) -> None:
    await session.add_items([{"role": "user", "content": "Initial history"}])
    model.enqueue(reply("This should run"))
    list_input: list[TResponseInputItem] = [{"role": "user", "content": "Test message"}]
    result = await run_agent(runner_method, agent, list_input, session=session)
    assert result.final_output == "This should run"
    assert contents(await session.get_items())[:2] == ["Initial history", "Test message"]


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
async def test_session_callback_prepared_input(
    runner_method: str, session: SessionarySession, agent: Agent[Any], model: ScriptedModel
) -> None:
    await session.add_items(
        [{"role": "user", "content": "Hello there."}, {"role": "assistant", "content": "Hi!"}]
    )

    def filter_assistant_messages(
        history: list[TResponseInputItem], new_input: list[TResponseInputItem]
    ) -> list[TResponseInputItem]:
        return [item for item in history if item.get("role") != "assistant"] + new_input

    model.enqueue(reply("Done"))
    await run_agent(
        runner_method,
        agent,
        "Next message",
        session=session,
        run_config=RunConfig(session_input_callback=filter_assistant_messages),
    )
    assert contents(last_input(model)) == ["Hello there.", "Next message"]


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
async def test_session_callback_repeating_history_does_not_grow_session(
    runner_method: str, session: SessionarySession, agent: Agent[Any], model: ScriptedModel
) -> None:
    def repeat_first(
        history: list[TResponseInputItem], new_input: list[TResponseInputItem]
    ) -> list[TResponseInputItem]:
        return [*history, history[0], *new_input] if history else new_input

    for turn in range(3):
        model.enqueue(reply(f"assistant {turn}"))
        await run_agent(
            runner_method,
            agent,
            f"user {turn}",
            session=session,
            run_config=RunConfig(session_input_callback=repeat_first),
        )
    stored = await session.get_items()
    users = [item.get("content") for item in stored if item.get("role") == "user"]
    assert users == ["user 0", "user 1", "user 2"]
    assert len(stored) == 6


async def test_session_unicode_content(session: SessionarySession) -> None:
    await session.add_items(
        [
            {"role": "user", "content": "こんにちは"},
            {"role": "assistant", "content": "😊👍"},
            {"role": "user", "content": "Привет"},
        ]
    )
    assert contents(await session.get_items()) == ["こんにちは", "😊👍", "Привет"]


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
    assert contents(await session.get_items()) == texts


async def test_session_concurrent_access(session: SessionarySession) -> None:
    async def add(i: int) -> None:
        await session.add_items([{"role": "user", "content": f"Message {i}"}])

    await asyncio.gather(*(add(i) for i in range(10)))
    assert set(contents(await session.get_items())) == {f"Message {i}" for i in range(10)}


async def test_pops_racing_adds_lose_nothing_and_return_nothing_twice(
    amanager: sessionary.AsyncSessionManager,
) -> None:
    # Two adders and two poppers on one session, through instances of their own; the
    # session starts with a branch below its second item, so that pops dig into it and
    # step the head back (a hidden branch stays) as well as delete leaves.
    first = SessionarySession("raced", amanager)
    await first.add_items([{"role": "user", "content": "p0"}, {"role": "user", "content": "p1"}])
    hidden = await first.session.append(Message.user("hidden"))
    await first.session.checkout(hidden.parent_id)
    await first.add_items([{"role": "user", "content": "p2"}])
    added = {"p0", "p1", "p2"}

    async def adder(name: str) -> None:
        session = SessionarySession("raced", amanager)
        for i in range(15):
            added.add(f"{name}{i}")
            await session.add_items([{"role": "user", "content": f"{name}{i}"}])
            await asyncio.sleep(0)

    async def popper() -> list[Any]:
        session = SessionarySession("raced", amanager)
        popped = []
        for _ in range(18):
            item = await session.pop_item()
            if item is not None:
                popped.append(item["content"])
            await asyncio.sleep(0)
        return popped

    *_, one, two = await asyncio.gather(adder("a"), adder("b"), popper(), popper())
    left = contents(await first.get_items())
    seen = collections.Counter([*one, *two, *left])
    assert set(seen) == added
    assert max(seen.values()) == 1
    assert await first.session.get_message(hidden.id) is not None  # no branch lost


# ---------------------------------------------------------------- settings


async def test_session_settings_default(memory_url: str) -> None:
    session = SessionarySession("default_settings_test", memory_url)
    assert isinstance(session.session_settings, SessionSettings)
    assert session.session_settings.limit is None


async def test_session_settings_constructor(memory_url: str) -> None:
    session = SessionarySession(
        "constructor_settings_test", memory_url, session_settings=SessionSettings(limit=5)
    )
    assert session.session_settings is not None and session.session_settings.limit == 5


def test_session_settings_constructor_normalizes_dictionary(memory_url: str) -> None:
    session = SessionarySession("dictionary_settings", memory_url, session_settings={"limit": 0})
    assert isinstance(session.session_settings, SessionSettings)
    assert session.session_settings.limit == 0
    assert session.session_settings.resolve({"limit": 4}).limit == 4


def test_session_settings_rejects_unknown_dictionary_fields(memory_url: str) -> None:
    with pytest.raises(TypeError, match="Unknown session settings: limitt"):
        SessionarySession("invalid_settings", memory_url, session_settings={"limitt": 1})


async def test_get_items_uses_session_settings_limit(
    amanager: sessionary.AsyncSessionManager,
) -> None:
    session = SessionarySession(
        "uses_settings_limit_test", amanager, session_settings=SessionSettings(limit=3)
    )
    await session.add_items([{"role": "user", "content": f"Message {i}"} for i in range(5)])
    assert contents(await session.get_items()) == ["Message 2", "Message 3", "Message 4"]


async def test_get_items_explicit_limit_overrides_session_settings(
    amanager: sessionary.AsyncSessionManager,
) -> None:
    session = SessionarySession(
        "explicit_override_test", amanager, session_settings=SessionSettings(limit=5)
    )
    await session.add_items([{"role": "user", "content": f"Message {i}"} for i in range(10)])
    assert contents(await session.get_items(limit=2)) == ["Message 8", "Message 9"]


async def test_runner_with_session_settings_override(
    amanager: sessionary.AsyncSessionManager, agent: Agent[Any], model: ScriptedModel
) -> None:
    session = SessionarySession("runner_override_test", amanager, session_settings={"limit": 100})
    await session.add_items([{"role": "user", "content": f"Turn {i}"} for i in range(10)])
    model.enqueue(reply("Got it"))
    await Runner.run(
        agent,
        "New question",
        session=session,
        run_config=RunConfig(session_settings=SessionSettings(limit=2)),
    )
    assert contents(last_input(model)) == ["Turn 8", "Turn 9", "New question"]


# ---------------------------------------------------------------- from test_session_limit.py


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
@pytest.mark.parametrize(("limit", "kept"), [(2, 2), (0, 0), (None, 4), (100, 4)])
async def test_session_limit_of_a_run(
    runner_method: str,
    limit: int | None,
    kept: int,
    session: SessionarySession,
    agent: Agent[Any],
    model: ScriptedModel,
) -> None:
    history: list[TResponseInputItem] = [
        {"role": "user", "content": "Message 1"},
        message_item("m1", "Reply 1"),
        {"role": "user", "content": "Message 2"},
        message_item("m2", "Reply 2"),
    ]
    await session.add_items(history)
    model.enqueue(reply("Done"))
    settings = SessionSettings(limit=limit)
    await run_agent(
        runner_method,
        agent,
        "New",
        session=session,
        run_config=RunConfig(session_settings=settings),
    )
    sent = last_input(model)
    assert sent[:-1] == history[len(history) - kept :]
    assert sent[-1] == {"role": "user", "content": "New"}


@pytest.mark.parametrize("runner_method", RUNNER_METHODS)
async def test_session_limit_drops_unmatched_history_function_call_output(
    runner_method: str, session: SessionarySession, agent: Agent[Any], model: ScriptedModel
) -> None:
    history = cast(
        list[TResponseInputItem],
        [
            {"role": "user", "content": "What is the weather?"},
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": "{}",
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "It is sunny.", "annotations": []}],
            },
        ],
    )
    await session.add_items(history)
    assert await session.get_items(limit=2) == history[-2:]
    model.enqueue(reply("Tomorrow is sunny too."))
    await run_agent(
        runner_method,
        agent,
        "What about tomorrow?",
        session=session,
        run_config=RunConfig(session_settings=SessionSettings(limit=2)),
    )
    assert last_input(model) == [history[-1], {"role": "user", "content": "What about tomorrow?"}]


# ---------------------------------------------------------------- closing (Redis, AsyncSQLite)


async def test_closed_operations_raise_runtime_error(store_url: str) -> None:
    session = SessionarySession("closed_state_test", store_url)
    await session.add_items([{"role": "user", "content": "before close"}])
    await session.close()
    for operation in (
        session.get_items(),
        session.add_items([{"role": "user", "content": "after close"}]),
        session.add_items([]),
        session.pop_item(),
        session.clear_session(),
    ):
        with pytest.raises(RuntimeError, match="SessionarySession is closed"):
            await operation


async def test_close_is_idempotent_and_safe_concurrently(store_url: str) -> None:
    session = SessionarySession("close_idempotent_test", store_url)
    await session.add_items([{"role": "user", "content": "x"}])
    await asyncio.wait_for(asyncio.gather(session.close(), session.close()), 60)
    await asyncio.wait_for(session.close(), 60)  # a bound on a hang, not a timing
    with pytest.raises(sessionary.Closed):
        await session.get_items()


async def test_close_before_use_is_terminal(memory_url: str) -> None:
    session = SessionarySession("close_before_use", memory_url)
    await session.close()
    with pytest.raises(RuntimeError, match="SessionarySession is closed"):
        await session.add_items([{"role": "user", "content": "x"}])


async def test_close_is_a_no_op_over_the_callers_manager(
    amanager: sessionary.AsyncSessionManager,
) -> None:
    session = SessionarySession("injected", amanager)
    await session.add_items([{"role": "user", "content": "before close"}])
    await session.close()
    await session.add_items([{"role": "user", "content": "after close"}])
    assert contents(await session.get_items()) == ["before close", "after close"]
    assert len(await SessionarySession("injected", amanager).get_items()) == 2


async def test_a_failed_close_is_retried_by_the_next(
    memory_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = SessionarySession("failed_close", memory_url)
    real_close = session.manager.close
    attempts = 0

    async def failing_once() -> None:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise OSError("disconnect failed")
        await real_close()

    monkeypatch.setattr(session.manager, "close", failing_once)
    with pytest.raises(OSError, match="disconnect failed"):
        await session.close()
    with pytest.raises(RuntimeError, match="is closed"):
        await session.get_items()  # terminal from the first attempt
    await session.close()
    await session.close()
    assert attempts == 2


# ---------------------------------------------------------------- serialising items


async def test_an_item_the_sdk_cannot_serialise_is_a_type_error(
    session: SessionarySession,
) -> None:
    await session.add_items([{"role": "user", "content": "kept"}])
    for bad in ({"role": "user", "content": {1, 2}}, {"role": "user", "content": b"x"}):
        with pytest.raises(TypeError, match="JSON"):
            await session.add_items([{"role": "user", "content": "x"}, cast(Any, bad)])
    with pytest.raises(sessionary.NotSerializable):
        await session.add_items([cast(Any, {"type": "function_call", "x": object()})])
    assert await session.get_items() == [{"role": "user", "content": "kept"}]


async def test_any_json_the_sdk_would_store_comes_back(session: SessionarySession) -> None:
    odd = cast(
        list[TResponseInputItem],
        ["a bare string", 7, {"role": "user", "content": 5}, {"no": "type"}, [1, {"x": None}]],
    )
    await session.add_items(odd)
    assert await session.get_items() == odd
    assert await session.pop_item() == [1, {"x": None}]
    # As the SDK's JSON text reads back: a number key as a string, a tuple as a list.
    await session.add_items([cast(Any, {"role": "user", "content": {1: "a", "t": (1, 2)}})])
    assert (await session.get_items(limit=1))[0]["content"] == {"1": "a", "t": [1, 2]}


@pytest.mark.parametrize("value", [math.nan, math.inf, "\ud800"])
async def test_a_value_no_store_keeps_is_a_type_error(
    session: SessionarySession, value: Any
) -> None:
    with pytest.raises(sessionary.NotSerializable):
        await session.add_items([cast(Any, {"role": "user", "content": [value]})])
    assert await session.get_items() == []


# ---------------------------------------------------------------- any loop, any thread


@pytest.mark.usefixtures("sync_loop")
def test_run_sync_twenty_times_in_a_row(store_url: str) -> None:
    model = ScriptedModel([ModelStep.respond(echo) for _ in range(20)])
    agent = Agent(name="test", model=model)
    session = SessionarySession("sync_run", store_url)
    for turn in range(20):
        result = Runner.run_sync(agent, f"turn {turn}", session=session)
        assert result.final_output == f"echo: turn {turn}"
    assert len(last_input(model)) == 39  # 19 turns of history and the new input
    # Closed from yet another loop, in a thread: `asyncio.run` here would unset the loop
    # run_sync keeps on this thread, which the sync_loop fixture closes.
    assert in_threads(lambda i: asyncio.run(session.close())) == [None] * THREADS
    with pytest.raises(sessionary.Closed):
        Runner.run_sync(agent, "after close", session=session)


def test_asyncio_run_twice_then_close(store_url: str) -> None:
    session = SessionarySession("two_loops", store_url)
    asyncio.run(session.add_items([{"role": "user", "content": "first loop"}]))
    asyncio.run(session.add_items([{"role": "user", "content": "second loop"}]))
    assert contents(asyncio.run(session.get_items())) == ["first loop", "second loop"]
    asyncio.run(session.close())


def test_one_session_from_threads_each_with_its_own_loop(store_url: str) -> None:
    session = SessionarySession("shared_across_loops", store_url)

    def add(i: int) -> None:
        asyncio.run(session.add_items([{"role": "user", "content": f"thread {i}"}]))

    try:
        assert in_threads(add) == [None] * THREADS
        stored = asyncio.run(session.get_items())
        assert sorted(contents(stored)) == [f"thread {i}" for i in range(THREADS)]
    finally:
        asyncio.run(session.close())


def test_run_sync_in_threads_over_one_manager(store_url: str) -> None:
    model = ScriptedModel([ModelStep.respond(echo) for _ in range(2 * THREADS)])
    agent = Agent(name="test", model=model)
    manager = sessionary.AsyncSessionManager(store_url)

    def converse(i: int) -> list[Any]:
        session = SessionarySession(f"thread_{i}", manager)
        first = _run_sync_in_own_loop(agent, f"hello from {i}", session=session)
        second = _run_sync_in_own_loop(agent, f"again from {i}", session=session)
        return [first.final_output, second.final_output]

    try:
        answers = in_threads(converse)
        assert answers == [
            [f"echo: hello from {i}", f"echo: again from {i}"] for i in range(THREADS)
        ]
        for i in range(THREADS):
            stored = asyncio.run(SessionarySession(f"thread_{i}", manager).get_items())
            assert len(stored) == 4 and stored[0] == {"role": "user", "content": f"hello from {i}"}
    finally:
        asyncio.run(manager.close())


# ---------------------------------------------------------------- from test_sqlalchemy_session.py
# (cases that repeat test_session.py above are left out)


async def test_non_ascii_round_trip(
    session: SessionarySession, amanager: sessionary.AsyncSessionManager
) -> None:
    item: TResponseInputItem = {"role": "user", "content": "café"}
    await session.add_items([item])
    assert await session.get_items() == [item]
    stored = await amanager.session("test_session").history()
    assert stored[0].text == "café"


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


def test_bad_ids_and_stores_are_refused() -> None:
    for bad in ("", "\ud800", "ü" * 40):  # empty, no UTF-8 form, too long even encoded
        with pytest.raises(sessionary.InvalidId):
            SessionarySession(bad, "memory://")
    with pytest.raises(sessionary.InvalidURL):
        SessionarySession("ok", 42)  # type: ignore[arg-type]


@pytest.mark.parametrize("session_id", ["user@example.com", "thread:42/1", "conv 1", "ü", "x.1"])
async def test_any_session_id_works(
    amanager: sessionary.AsyncSessionManager, session_id: str
) -> None:
    # The SDK takes any string (SQLiteSession stores it as text).
    session = SessionarySession(session_id, amanager)
    assert session.session_id == session_id
    assert await session.get_items() == []
    items: list[TResponseInputItem] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
    await session.add_items(items)
    again = SessionarySession(session_id, amanager)
    assert await again.get_items() == items
    assert await SessionarySession(session_id + "!", amanager).get_items() == []
    assert await again.pop_item() == items[1]
    assert await session.get_items() == items[:1]
    (stored,) = (await amanager.list()).items
    assert stored.id == encode_name(session_id, "session_id")
    assert decode_name(stored.id) == session_id
    await session.clear_session()
    assert await again.get_items() == []


async def test_a_valid_session_id_names_the_session_unchanged(
    amanager: sessionary.AsyncSessionManager,
) -> None:
    stored = await amanager.create(id="chat-7")
    await stored.append(Message.user("written before"))
    session = SessionarySession("chat-7", amanager)
    assert session.session.id == "chat-7"
    assert await session.get_items() == [{"role": "user", "content": "written before"}]


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
    shared_store_url: str, model: ScriptedModel
) -> None:
    agent = Agent(name="weather", model=model, tools=[get_weather])
    first = SessionarySession("trip", shared_store_url)
    model.enqueue([function_call("get_weather", {"city": "Paris"}, call_id="call_1")])
    model.enqueue(reply("Paris is sunny."))
    result = await Runner.run(agent, "Weather in Paris?", session=first)
    assert result.final_output == "Paris is sunny."
    saved = await first.get_items()
    await first.close()

    # A new process's view: a new manager, a new connection, the same session id.
    async with sessionary.AsyncSessionManager(shared_store_url) as manager:
        resumed = SessionarySession("trip", manager)
        assert await resumed.get_items() == saved
        model.enqueue(reply("You asked about Paris."))
        result = await Runner.run(agent, "Which city did I ask about?", session=resumed)
        assert result.final_output == "You asked about Paris."
        sent = last_input(model)
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
