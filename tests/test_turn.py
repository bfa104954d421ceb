"""The working context: one model call's view, persisted atomically when the turn ends."""

from __future__ import annotations

import pytest

import sessionary
from sessionary import (
    AgentState,
    HeadConflict,
    InvalidInput,
    InvalidMessage,
    Message,
    SessionConfig,
    ToolCallPart,
    ToolSpec,
    VersionConflict,
)
from sessionary.compaction import COMPACTION_PREFIX

CONFIG = SessionConfig().with_block("persona", "You are terse.").with_cached_prompt()
WEATHER = ToolSpec(
    "weather",
    "Today's weather in a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def _chat(manager: sessionary.SessionManager) -> sessionary.Session:
    chat = manager.create(id="c")
    chat.append(Message.user("hi", id="u1"))
    chat.append(Message.assistant("hello", id="a1"))
    return chat


def _tool_round(ctx: sessionary.Turn, n: int) -> None:
    call = ToolCallPart(id=f"call{n}", name="weather", arguments={"city": "Oslo"})
    ctx.add(Message.assistant(tool_calls=[call], id=f"tc{n}"))
    ctx.add(Message.tool(f"call{n}", "sunny", name="weather", id=f"tr{n}"))


def test_a_turn_sees_the_context_and_persists_only_what_it_added(
    manager: sessionary.SessionManager,
) -> None:
    chat = _chat(manager)
    configured = sessionary.Session(manager.store, manager.scope, "c", CONFIG)
    with configured.turn(tools=[WEATHER]) as ctx:
        assert [m.id for m in ctx.history] == ["u1", "a1"]
        assert ctx.base == "a1"
        assert "You are terse." in ctx.system
        assert [t.name for t in ctx.tools][-1] == "weather"
        ctx.add(Message.user("weather?", id="u2"))
        _tool_round(ctx, 1)
        ctx.add({"role": "assistant", "content": "Sunny in Oslo.", "id": "a2"})
        assert chat.message_count() == 2  # nothing written before the turn ends
        assert [m.id for m in ctx.messages][-1] == "a2"
    assert [m.id for m in ctx.stored] == ["u2", "tc1", "tr1", "a2"]
    assert [m.id for m in chat.history()] == ["u1", "a1", "u2", "tc1", "tr1", "a2"]
    assert chat.head() is not None and chat.head().id == "a2"  # type: ignore[union-attr]


def test_an_empty_session_starts_a_root_and_an_empty_turn_writes_nothing(
    manager: sessionary.SessionManager,
) -> None:
    chat = manager.create(id="c")
    with chat.turn() as ctx:
        assert (ctx.base, ctx.history, ctx.system) == (None, [], "")
    assert chat.message_count() == 0
    with chat.turn() as ctx:
        ctx.add(Message.user("first", id="u1"))
    assert [m.parent_id for m in chat.history()] == [None]


def test_an_exception_persists_nothing_unless_asked(manager: sessionary.SessionManager) -> None:
    chat = _chat(manager)
    with pytest.raises(RuntimeError), chat.turn() as ctx:
        ctx.add(Message.user("lost", id="u2"))
        raise RuntimeError("model call failed")
    assert chat.message_count() == 2
    with pytest.raises(RuntimeError), chat.turn(persist_on_error=True) as ctx:
        ctx.add(Message.user("kept", id="u3"))
        raise RuntimeError("model call failed")
    assert chat.head().id == "u3"  # type: ignore[union-attr]


def _move_head_meanwhile(manager: sessionary.SessionManager) -> None:
    manager.session("c").append(Message.user("from elsewhere", id="x1"))


def test_a_moved_head_fails_the_turn_by_default(manager: sessionary.SessionManager) -> None:
    chat = _chat(manager)
    with pytest.raises(HeadConflict), chat.turn() as ctx:
        ctx.add(Message.user("mine", id="u2"))
        _move_head_meanwhile(manager)
    assert chat.get_message("u2") is None
    assert chat.head().id == "x1"  # type: ignore[union-attr]


def test_a_moved_head_can_make_the_turn_a_branch(manager: sessionary.SessionManager) -> None:
    chat = _chat(manager)
    with chat.turn(policy="branch") as ctx:
        ctx.add(Message.user("mine", id="u2"))
        _move_head_meanwhile(manager)
    assert [m.id for m in chat.branches("a1")] == ["x1", "u2"]
    assert [m.id for m in chat.history()] == ["u1", "a1", "u2"]


def test_a_moved_head_can_be_rebased_onto(manager: sessionary.SessionManager) -> None:
    chat = _chat(manager)
    with chat.turn(policy="rebase") as ctx:
        ctx.add(Message.user("mine", id="u2"))
        _move_head_meanwhile(manager)
    assert [m.id for m in chat.history()] == ["u1", "a1", "x1", "u2"]


def test_bad_additions_are_refused_and_change_nothing(manager: sessionary.SessionManager) -> None:
    chat = _chat(manager)
    with chat.turn() as ctx:
        ctx.add(Message.user("ok", id="u2"))
        with pytest.raises(InvalidMessage):
            ctx.add({"role": "robot", "content": "?"})
        with pytest.raises(InvalidMessage):
            ctx.add(Message.user("again", id="u2"))
        with pytest.raises(InvalidMessage):
            ctx.add(Message.assistant("summary", id=f"{COMPACTION_PREFIX}x"))
        with pytest.raises(InvalidMessage):
            ctx.add_all([Message.user("a", id="u3"), "not a message"])  # type: ignore[list-item]
        with pytest.raises(InvalidMessage):
            ctx.add_all(Message.user("one"))  # type: ignore[arg-type]
        assert [m.id for m in ctx.added] == ["u2"]
    assert chat.head().id == "u2"  # type: ignore[union-attr]
    with pytest.raises(InvalidInput):
        chat.turn(policy="merge")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        chat.turn(tools=[{"name": "x"}])  # type: ignore[list-item]


def test_own_tools_may_not_shadow_the_sessions(manager: sessionary.SessionManager) -> None:
    config = SessionConfig().with_block("memory", level="user")
    chat = sessionary.Session(manager.store, manager.scope, manager.create(id="c").id, config)
    clash = ToolSpec("set_context", "mine", {"type": "object", "properties": {}})
    with pytest.raises(InvalidInput), chat.turn(tools=[clash]):
        pass


def test_limit_keeps_tool_pairs_together(manager: sessionary.SessionManager) -> None:
    chat = _chat(manager)
    with chat.turn() as ctx:
        _tool_round(ctx, 1)
    with chat.turn(limit=1) as ctx:
        assert [m.id for m in ctx.history] == ["tc1", "tr1"]


def test_agent_state_is_loaded_and_saved_with_the_turn(
    manager: sessionary.SessionManager,
) -> None:
    chat = _chat(manager)
    with chat.turn(agent="planner") as ctx:
        assert ctx.state == AgentState()
        ctx.state.plan = {"step": 1}  # type: ignore[union-attr]
        ctx.add(Message.user("go", id="u2"))
    saved = chat.agent_state("planner").load()
    assert (saved.plan, saved.history_leaf, saved.version) == ({"step": 1}, "u2", 1)
    with pytest.raises(VersionConflict), chat.turn(agent="planner") as ctx:
        chat.agent_state("planner").save(saved)  # a replica saves first...
        saved.summary = "replica"
        chat.agent_state("planner").save(saved)
        ctx.add(Message.user("late", id="u3"))
    assert chat.agent_state("planner").load().summary == "replica"


def test_request_speaks_each_provider_format(manager: sessionary.SessionManager) -> None:
    chat = sessionary.Session(manager.store, manager.scope, _chat(manager).id, CONFIG)
    with chat.turn(tools=[WEATHER]) as ctx:
        _tool_round(ctx, 1)
        chat_request = ctx.request("openai-chat")
        assert chat_request["messages"][0] == {"role": "system", "content": ctx.system}
        assert [m["role"] for m in chat_request["messages"]][-2:] == ["assistant", "tool"]
        assert chat_request["tools"][-1]["function"]["name"] == "weather"
        anthropic = ctx.request("anthropic")
        assert anthropic["system"] == ctx.system
        assert anthropic["messages"][-1]["content"][0]["type"] == "tool_result"
        assert anthropic["tools"][-1]["name"] == "weather"
        responses = ctx.request("openai-responses")
        assert responses["instructions"] == ctx.system
        assert responses["input"][-1]["type"] == "function_call_output"
        assert ctx.dropped == []
        gemini = ctx.request("gemini")
        assert gemini["config"]["system_instruction"] == {"parts": [{"text": ctx.system}]}
        assert [c["role"] for c in gemini["contents"]][-2:] == ["model", "user"]
        assert "function_response" in gemini["contents"][-1]["parts"][0]
        declarations = gemini["config"]["tools"][0]["function_declarations"]
        assert declarations[-1]["name"] == "weather"
        ai_sdk = ctx.request("ai-sdk")
        assert ai_sdk["system"] == ctx.system
        assert ai_sdk["messages"][-1]["parts"][-1]["state"] == "output-available"
        assert ai_sdk["tools"]["weather"]["inputSchema"] == WEATHER.parameters


def test_request_refuses_an_unknown_format_with_or_without_tools(
    manager: sessionary.SessionManager,
) -> None:
    with manager.create().turn() as ctx:
        assert ctx.tools == []
        for bad in ("gemeni", "responses", "", None):
            with pytest.raises(InvalidInput, match="format"):
                ctx.request(bad)  # type: ignore[arg-type]
        plain = ctx.request("gemini")
        assert plain == {"contents": []}  # nothing to send but the (empty) contents
        ctx.add(Message.system("Answer in French."))
        ctx.add(Message.user("hi"))
        assert ctx.request("gemini")["config"] == {
            "system_instruction": {"parts": [{"text": "Answer in French."}]}
        }
        assert ctx.request("anthropic")["system"] == "Answer in French."


def test_request_validates_against_the_official_sdk_types(
    manager: sessionary.SessionManager,
) -> None:
    from anthropic.types import MessageParam, ToolParam
    from google.genai.types import Content, GenerateContentConfig
    from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam
    from pydantic import TypeAdapter

    chat = sessionary.Session(manager.store, manager.scope, _chat(manager).id, CONFIG)
    with chat.turn(tools=[WEATHER]) as ctx:
        _tool_round(ctx, 1)
        request = ctx.request("openai-chat")
        TypeAdapter(list[ChatCompletionMessageParam]).validate_python(request["messages"])
        TypeAdapter(list[ChatCompletionToolParam]).validate_python(request["tools"])
        request = ctx.request("anthropic")
        TypeAdapter(list[MessageParam]).validate_python(request["messages"])
        TypeAdapter(list[ToolParam]).validate_python(request["tools"])
        request = ctx.request("gemini")
        TypeAdapter(list[Content]).validate_python(request["contents"])
        config = GenerateContentConfig.model_validate(request["config"])
        assert config.tools and config.tools[0].function_declarations
        assert config.tools[0].function_declarations[-1].parameters_json_schema == (
            WEATHER.parameters
        )


async def test_the_async_turn(amanager: sessionary.AsyncSessionManager) -> None:
    chat = await amanager.create(id="c")
    async with chat.turn() as ctx:
        ctx.add(Message.user("hi", id="u1"))
        ctx.add(Message.assistant("hello", id="a1"))
    assert [m.id for m in await chat.history()] == ["u1", "a1"]
    with pytest.raises(HeadConflict):
        async with chat.turn() as ctx:
            ctx.add(Message.user("mine", id="u2"))
            await amanager.session("c").append(Message.user("elsewhere", id="x1"))
    assert await chat.get_message("u2") is None


@pytest.mark.parametrize("tools", [None, 5, "tools"])
def test_tools_that_are_not_a_list_are_refused(
    manager: sessionary.SessionManager, tools: object
) -> None:
    # None and 5 raised TypeError ('NoneType' object is not iterable).
    with pytest.raises(InvalidInput, match="tools"):
        manager.create().turn(tools=tools)  # type: ignore[arg-type]
