"""LangChain: `BaseChatMessageHistory`'s contract on every backend, and lossless conversion.

The history is held to what langchain-core's own chat-history tests ask of one
(tests/unit_tests/chat_history/test_chat_history.py and test_file_chat_message_history.py):
`add_message` and `add_messages` (single and bulk), the `add_user_message` and
`add_ai_message` conveniences with strings or messages, the async interface
(`aadd_messages`, `aget_messages`, `aclear`), `clear`, and a second instance over the same
store seeing the first one's history. Beyond those: every message type LangChain has
(chunks, function and chat messages, tool calls and invalid ones, content blocks with
images and files, ids, names, metadata of every kind) comes back equal from every store,
`RunnableWithMessageHistory` runs over it (sync and async), and closing behaves as the
module docstring says.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    ChatMessageChunk,
    FunctionMessage,
    FunctionMessageChunk,
    HumanMessage,
    HumanMessageChunk,
    RemoveMessage,
    SystemMessage,
    SystemMessageChunk,
    ToolMessage,
    ToolMessageChunk,
)
from langchain_core.runnables.history import RunnableWithMessageHistory

import sessionary
from sessionary import FilePart, Message, TextPart, ToolResultPart
from sessionary.integrations._common import decode_name, encode_name
from sessionary.integrations.langchain import (
    SessionaryChatMessageHistory,
    from_langchain,
    to_langchain,
)

CONVERSATION: list[BaseMessage] = [
    SystemMessage("You answer questions about orders."),
    HumanMessage("Where is order 17?", id="h1"),
    AIMessage(
        "",
        id="lc_run--0b1c-0",
        tool_calls=[{"name": "find_order", "args": {"number": 17}, "id": "call_1"}],
        usage_metadata={"input_tokens": 12, "output_tokens": 5, "total_tokens": 17},
        response_metadata={"model_name": "gpt-test", "finish_reason": "tool_calls"},
    ),
    ToolMessage('{"status": "shipped"}', tool_call_id="call_1", name="find_order"),
    AIMessage("Order 17 has shipped.", additional_kwargs={"refusal": None}),
]

UNUSUAL: list[BaseMessage] = [
    HumanMessage(
        [
            {"type": "text", "text": "What is in this picture?", "id": "blk1"},
            "and this one",
            {"type": "image", "url": "https://example.com/a.png", "mime_type": "image/png"},
            {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"},
            {"type": "image_url", "image_url": {"url": "https://example.com/b.png"}},
        ],
        name="alice",
    ),
    AIMessage(
        [{"type": "reasoning", "reasoning": "It is a cat."}, {"type": "text", "text": "A cat."}],
        tool_calls=[{"name": "lookup", "args": {}, "id": None}],
        invalid_tool_calls=[{"name": "bad", "args": "{", "id": "c9", "error": "bad json"}],
    ),
    ToolMessage(
        [{"type": "text", "text": "failed"}],
        tool_call_id="c2",
        status="error",
        artifact={"trace": [1, 2]},
    ),
    HumanMessage(""),
    HumanMessage("an id that sessionary cannot use", id="urn:message/7"),
    ChatMessage("Looks right to me.", role="critic"),
    ChatMessage("I am the assistant.", role="assistant"),
    AIMessageChunk("partial", id="chunk-1"),
    SystemMessage([{"type": "text", "text": "Be brief."}, {"type": "file", "file_id": "f1"}]),
    FunctionMessage("42", name="calculator", id="f-1"),
    AIMessage("", additional_kwargs={"function_call": {"name": "calculator", "arguments": "{}"}}),
    FunctionMessageChunk("4", name="calculator"),
    HumanMessageChunk("typing", id="hc-1"),
    SystemMessageChunk("system chunk"),
    ToolMessageChunk("partial output", tool_call_id="call_1"),
    ChatMessageChunk("chunk of a critic", role="critic"),
    AIMessageChunk(
        "",
        tool_call_chunks=[{"name": "lookup", "args": '{"q": "ca', "id": "c4", "index": 0}],
        usage_metadata={"input_tokens": 3, "output_tokens": 1, "total_tokens": 4},
    ),
    AIMessage(
        [
            {"type": "text", "text": "See", "annotations": [{"type": "citation", "url": "u"}]},
            {"type": "tool_call", "id": "c5", "name": "lookup", "args": {}},
        ],
        tool_calls=[{"name": "lookup", "args": {"x": None}, "id": "c5"}],
        usage_metadata={
            "input_tokens": 1,
            "output_tokens": 2,
            "total_tokens": 3,
            "input_token_details": {"cache_read": 1},
        },
        response_metadata={"model_provider": "openai", "finish_reason": "stop"},
        name="bot",
    ),
    HumanMessage(
        [
            {"type": "image", "base64": "AAA=", "mime_type": "image/png", "id": "b1"},
            {"type": "file", "url": "https://example.com/a.pdf", "mime_type": "application/pdf"},
            {"type": "audio", "base64": "AA==", "mime_type": "audio/wav"},
            {"type": "text-plain", "text": "notes", "mime_type": "text/plain"},
        ],
        additional_kwargs={"nested": {"n": [1, None]}},
    ),
    ToolMessage([{"type": "image", "url": "https://example.com/y.png"}], tool_call_id="c9"),
]


@pytest.mark.parametrize("message", CONVERSATION + UNUSUAL, ids=lambda m: m.type)
def test_every_message_survives_the_round_trip(message: BaseMessage) -> None:
    assert to_langchain(from_langchain(message)) == [message]


@settings(deadline=None)  # a slow shared machine is not a failure
@given(
    content=st.text(),
    calls=st.lists(
        st.tuples(
            st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True),
            st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5)),
        ),
        max_size=3,
    ),
)
def test_ai_messages_with_any_text_and_tool_calls_round_trip(
    content: str, calls: list[tuple[str, dict[str, object]]]
) -> None:
    message = AIMessage(
        content,
        tool_calls=[
            {"name": name, "args": args, "id": f"call_{i}"} for i, (name, args) in enumerate(calls)
        ],
    )
    assert to_langchain(from_langchain(message)) == [message]


def test_messages_become_sessionary_messages_with_their_tool_pairs() -> None:
    converted = [from_langchain(m) for m in CONVERSATION]
    assert [m.role for m in converted] == ["system", "user", "assistant", "tool", "assistant"]
    assert converted[1].id == "h1"
    assert converted[1].text == "Where is order 17?"
    call = converted[2].tool_calls[0]
    assert (call.id, call.name, call.arguments) == ("call_1", "find_order", {"number": 17})
    result = converted[3].tool_results[0]
    assert (result.call_id, result.output, result.is_error) == (
        "call_1",
        '{"status": "shipped"}',
        False,
    )
    assert converted[2].metadata["langchain"]["usage_metadata"]["total_tokens"] == 17
    assert "langchain" not in converted[1].metadata  # nothing beyond what parts carry
    error = from_langchain(UNUSUAL[2]).tool_results[0]
    assert error.is_error and error.output == [{"type": "text", "text": "failed"}]
    image = from_langchain(UNUSUAL[0]).parts[2]
    assert isinstance(image, FilePart) and image.url == "https://example.com/a.png"


def test_messages_without_a_sessionary_counterpart_are_refused() -> None:
    with pytest.raises(sessionary.InvalidMessage, match="remove"):  # it deletes, says nothing
        from_langchain(RemoveMessage(id="x"))
    with pytest.raises(sessionary.InvalidMessage):
        from_langchain("hello")  # type: ignore[arg-type]


def test_history_stores_and_returns_the_conversation(manager: sessionary.SessionManager) -> None:
    history = SessionaryChatMessageHistory("chat-1", manager)
    assert history.messages == []
    history.add_messages(CONVERSATION[:3])
    history.add_message(CONVERSATION[3])
    history.add_ai_message(CONVERSATION[4])  # type: ignore[arg-type]
    assert history.messages == CONVERSATION
    again = SessionaryChatMessageHistory("chat-1", manager)
    assert again.messages == CONVERSATION
    stored = manager.session("chat-1").history()
    assert [m.role for m in stored] == ["system", "user", "assistant", "tool", "assistant"]
    assert SessionaryChatMessageHistory("chat-2", manager).messages == []


def test_unusual_messages_survive_the_store(manager: sessionary.SessionManager) -> None:
    history = SessionaryChatMessageHistory("odd", manager)
    history.add_messages(UNUSUAL)
    assert history.messages == UNUSUAL


def test_clear_empties_the_session_but_keeps_it(manager: sessionary.SessionManager) -> None:
    history = SessionaryChatMessageHistory("chat", manager)
    history.clear()  # nothing to clear yet: no error
    history.add_messages(CONVERSATION)
    history.clear()
    assert history.messages == []
    assert manager.get("chat") is not None


# Adds as a program makes them, with the ids LangChain's own histories are given: messages
# re-sent whole, a new id, a stored id after a new one in one batch, another message that
# reuses an id, messages without an id, and an id sessionary cannot use.
ADDS: list[list[BaseMessage]] = [
    [HumanMessage("q1", id="h1"), AIMessage("r1", id="a1")],
    [HumanMessage("q2", id="h2"), AIMessage("r2", id="a2")],
    [HumanMessage("q3", id="h3"), AIMessage("r1", id="a1")],  # a1 again, after a new one
    [HumanMessage("q1", id="h1")],  # the same message again
    [AIMessage("not r2 at all", id="a2"), HumanMessage("q4")],  # an id reused, no id
    [HumanMessage("q1", id="h1"), AIMessage("r1", id="a1"), HumanMessage("q5", id="h5")],
    [],
    [ToolMessage("out", tool_call_id="c1", id="urn:x/1"), HumanMessage("q4")],
]


# Deprecated in LangChain 1.x, but still its reference history (and the persistent ones'
# behaviour): the one to be a drop-in for.
in_memory_history = pytest.mark.filterwarnings(
    "ignore:The class `InMemoryChatMessageHistory` was deprecated"
)


@in_memory_history
def test_every_add_appends_all_its_messages_as_langchains_own_history(
    manager: sessionary.SessionManager,
) -> None:
    ours, theirs = SessionaryChatMessageHistory("chat", manager), InMemoryChatMessageHistory()
    for batch in ADDS:
        ours.add_messages(batch)
        theirs.add_messages(batch)
        assert ours.messages == theirs.messages
        assert [m.id for m in ours.messages] == [m.id for m in theirs.messages]
    ours.add_message(ADDS[0][0])
    theirs.add_message(ADDS[0][0])
    ours.add_user_message("hi")
    theirs.add_user_message("hi")
    assert ours.messages == theirs.messages
    assert len(ours.messages) == sum(map(len, ADDS)) + 2
    assert SessionaryChatMessageHistory("chat", manager).messages == theirs.messages


@in_memory_history
async def test_every_async_add_appends_all_its_messages_as_langchains_own_history(
    manager: sessionary.SessionManager, amanager: sessionary.AsyncSessionManager
) -> None:
    for ours in (
        SessionaryChatMessageHistory("chat", amanager),
        SessionaryChatMessageHistory("chat-sync", manager),  # async methods, sync manager
    ):
        theirs = InMemoryChatMessageHistory()
        for batch in ADDS:
            await ours.aadd_messages(batch)
            await theirs.aadd_messages(batch)
            got, want = await ours.aget_messages(), await theirs.aget_messages()
            assert got == want
            assert [m.id for m in got] == [m.id for m in want]


def test_history_written_with_langchain_ids_as_message_ids_reads_back(
    manager: sessionary.SessionManager,
) -> None:
    # How histories were stored before: a usable LangChain id was the message's id.
    session = manager.create(id="old")
    session.append_all([from_langchain(m) for m in CONVERSATION])
    assert session.get_message("h1") is not None
    history = SessionaryChatMessageHistory("old", manager)
    assert history.messages == CONVERSATION
    history.add_messages([CONVERSATION[1], HumanMessage("and now?", id="h2")])
    assert history.messages == [*CONVERSATION, CONVERSATION[1], HumanMessage("and now?", id="h2")]


def test_a_bad_message_in_a_batch_stores_nothing(manager: sessionary.SessionManager) -> None:
    history = SessionaryChatMessageHistory("chat", manager)
    history.add_messages(CONVERSATION[:2])
    with pytest.raises(sessionary.InvalidMessage):
        history.add_messages([HumanMessage("fine"), RemoveMessage(id="gone")])
    with pytest.raises(sessionary.InvalidMessage):
        history.add_messages([HumanMessage("fine"), AIMessage("x", additional_kwargs={"s": {1}})])
    assert history.messages == CONVERSATION[:2]


def test_checkout_changes_what_langchain_sees(manager: sessionary.SessionManager) -> None:
    history = SessionaryChatMessageHistory("chat", manager)
    history.add_messages([HumanMessage("first", id="q1"), AIMessage("one", id="a1")])
    session = manager.session("chat")
    first, one = session.history()
    assert first.metadata["langchain"]["id"] == "q1"  # LangChain's id, kept beside ours
    session.checkout(first.id)
    history.add_message(AIMessage("another answer", id="a2"))
    assert history.messages == [
        HumanMessage("first", id="q1"),
        AIMessage("another answer", id="a2"),
    ]
    branches = session.branches(first.id)
    assert branches[0] == one
    assert to_langchain(branches[1]) == [AIMessage("another answer", id="a2")]


def test_messages_written_without_langchain_read_sensibly(
    manager: sessionary.SessionManager,
) -> None:
    session = manager.create(id="plain")
    session.append(Message(role="user", parts=[TextPart("look"), TextPart("here")], id="u1"))
    session.append(
        Message(
            role="user",
            parts=[FilePart(mime_type="image/png", url="https://example.com/c.png")],
            id="u2",
        )
    )
    session.append(Message.assistant(tool_calls=[], id="a1"))
    session.append(
        Message(
            role="tool",
            parts=[ToolResultPart("c1", "one"), ToolResultPart("c2", "two", is_error=True)],
            id="t1",
        )
    )
    got = SessionaryChatMessageHistory("plain", manager).messages
    assert got[0] == HumanMessage("look\nhere", id="u1")
    assert got[1] == HumanMessage(
        [{"type": "image", "url": "https://example.com/c.png", "mime_type": "image/png"}],
        id="u2",
    )
    assert got[2] == AIMessage("", id="a1")
    assert got[3:] == [
        ToolMessage("one", tool_call_id="c1", id="t1"),
        ToolMessage("two", tool_call_id="c2", status="error", id="t1.1"),
    ]


def test_history_messages_are_searchable(manager: sessionary.SessionManager) -> None:
    history = SessionaryChatMessageHistory("chat", manager)
    history.add_messages(CONVERSATION)
    try:
        hits = manager.search("shipped")
    except sessionary.Unsupported:
        pytest.skip("this backend has no full-text search")
    assert {hit.session_id for hit in hits} == {"chat"}
    assert len(hits) == 2


def test_history_scopes_by_tenant_and_user(manager: sessionary.SessionManager) -> None:
    alice = SessionaryChatMessageHistory("chat", manager, user="alice")
    bob = SessionaryChatMessageHistory("chat", manager, user="bob")
    alice.add_message(HumanMessage("alice's secret", id="s1"))
    assert bob.messages == []
    assert manager.for_user("alice").session("chat").history()[0].text == "alice's secret"


def test_a_second_history_over_the_same_store_sees_the_first(shared_store_url: str) -> None:
    first = SessionaryChatMessageHistory("chat", shared_store_url)
    first.add_messages(CONVERSATION)
    first.close()
    second = SessionaryChatMessageHistory("chat", shared_store_url)
    try:
        assert second.messages == CONVERSATION
    finally:
        second.close()


def test_the_convenience_methods_take_strings_and_messages(
    manager: sessionary.SessionManager,
) -> None:
    history = SessionaryChatMessageHistory("chat", manager)
    history.add_user_message("Hello!")
    history.add_ai_message("Hi there!")
    history.add_user_message(HumanMessage("Tell me a joke.", id="u2"))
    history.add_ai_message(AIMessage("Why did the chicken cross the road?", id="a2"))
    history.add_message(HumanMessage("Ha.", id="u3"))
    got = history.messages
    assert [type(m) for m in got] == [
        HumanMessage,
        AIMessage,
        HumanMessage,
        AIMessage,
        HumanMessage,
    ]
    assert [m.content for m in got] == [
        "Hello!",
        "Hi there!",
        "Tell me a joke.",
        "Why did the chicken cross the road?",
        "Ha.",
    ]
    assert str(history) == str(SessionaryChatMessageHistory("chat", manager))


async def test_async_methods_on_a_sync_manager(manager: sessionary.SessionManager) -> None:
    history = SessionaryChatMessageHistory("chat", manager)
    await history.aadd_messages(CONVERSATION[:2])
    await history.aadd_messages(CONVERSATION[2:])
    assert await history.aget_messages() == CONVERSATION
    await history.aclear()
    assert history.messages == []
    assert await history.aget_messages() == []


async def test_async_methods_on_an_async_manager(
    amanager: sessionary.AsyncSessionManager,
) -> None:
    history = SessionaryChatMessageHistory("chat", amanager)
    assert await history.aget_messages() == []
    await history.aclear()
    await history.aadd_messages(CONVERSATION)
    assert await history.aget_messages() == CONVERSATION
    stored = await amanager.session("chat").history()
    assert len(stored) == len(CONVERSATION)
    with pytest.raises(TypeError, match="aget_messages"):
        _ = history.messages
    await history.aclear()
    assert await history.aget_messages() == []
    await history.aclose()  # the manager is the caller's: still open
    assert await amanager.get("chat") is not None


def test_an_async_manager_serves_loop_after_loop(store_url: str) -> None:
    # A sync program calling asyncio.run for each request: every call has a new loop.
    manager = sessionary.AsyncSessionManager(store_url)
    history = SessionaryChatMessageHistory("chat", manager)
    try:
        asyncio.run(history.aadd_messages(CONVERSATION[:2]))
        asyncio.run(history.aadd_messages(CONVERSATION[2:]))
        assert asyncio.run(history.aget_messages()) == CONVERSATION
    finally:
        asyncio.run(manager.close())


# ---------------------------------------------------------------- closing


def test_a_closed_history_refuses_every_call(store_url: str) -> None:
    history = SessionaryChatMessageHistory("chat", store_url)
    history.add_messages(CONVERSATION[:2])
    history.close()
    history.close()  # again: nothing happens, nothing hangs
    calls: list[Any] = [
        lambda: history.messages,
        lambda: history.add_messages([]),
        lambda: history.add_user_message("hi"),
        history.clear,
        lambda: asyncio.run(history.aget_messages()),
        lambda: asyncio.run(history.aadd_messages([HumanMessage("x")])),
        lambda: asyncio.run(history.aclear()),
    ]
    for call in calls:
        with pytest.raises(RuntimeError, match="SessionaryChatMessageHistory is closed"):
            call()
    asyncio.run(history.aclose())


async def test_closing_over_the_callers_manager_leaves_it_usable(
    manager: sessionary.SessionManager, amanager: sessionary.AsyncSessionManager
) -> None:
    history = SessionaryChatMessageHistory("chat", manager)
    history.add_messages(CONVERSATION[:1])
    history.close()
    history.add_messages(CONVERSATION[1:2])
    assert history.messages == CONVERSATION[:2]
    async_history = SessionaryChatMessageHistory("other", amanager)
    await async_history.aclose()
    await async_history.aadd_messages(CONVERSATION[:1])
    assert await async_history.aget_messages() == CONVERSATION[:1]


# ---------------------------------------------------------------- RunnableWithMessageHistory


def with_history(store: Any) -> RunnableWithMessageHistory:
    model = GenericFakeChatModel(messages=iter([AIMessage("first answer"), AIMessage("second")]))
    return RunnableWithMessageHistory(
        model, lambda session_id: SessionaryChatMessageHistory(session_id, store)
    )


@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
def test_runnable_with_message_history_keeps_the_conversation(
    manager: sessionary.SessionManager,
) -> None:
    chain = with_history(manager)
    config: Any = {"configurable": {"session_id": "chat"}}
    chain.invoke([HumanMessage("hi")], config=config)
    chain.invoke([HumanMessage("and again")], config=config)
    got = SessionaryChatMessageHistory("chat", manager).messages
    assert [(m.type, m.content) for m in got] == [
        ("human", "hi"),
        ("ai", "first answer"),
        ("human", "and again"),
        ("ai", "second"),
    ]


@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
async def test_runnable_with_message_history_async(
    amanager: sessionary.AsyncSessionManager,
) -> None:
    chain = with_history(amanager)
    config: Any = {"configurable": {"session_id": "chat"}}
    await chain.ainvoke([HumanMessage("hi")], config=config)
    await chain.ainvoke([HumanMessage("and again")], config=config)
    got = await SessionaryChatMessageHistory("chat", amanager).aget_messages()
    assert [m.content for m in got] == ["hi", "first answer", "and again", "second"]


def test_a_bad_store_argument_is_refused() -> None:
    with pytest.raises(sessionary.InvalidURL):
        SessionaryChatMessageHistory("chat", 42)  # type: ignore[arg-type]
    with pytest.raises(sessionary.InvalidURL):
        SessionaryChatMessageHistory("chat", "nosuch://x")


@pytest.mark.parametrize("session_id", ["user@example.com", "thread:42/1", "conv 1", "ü", "x.1"])
def test_any_session_id_works(manager: sessionary.SessionManager, session_id: str) -> None:
    history = SessionaryChatMessageHistory(session_id, manager)
    assert history.session_id == session_id
    assert history.messages == []
    history.add_messages(CONVERSATION[:2])
    history.clear()
    history.add_messages(CONVERSATION)
    assert history.messages == CONVERSATION
    assert SessionaryChatMessageHistory(session_id, manager).messages == CONVERSATION
    assert SessionaryChatMessageHistory(session_id + "!", manager).messages == []
    (stored,) = manager.list()
    assert stored.id == encode_name(session_id, "session_id")
    assert decode_name(stored.id) == session_id


def test_a_valid_session_id_names_the_session_unchanged(
    manager: sessionary.SessionManager,
) -> None:
    manager.create(id="chat-7").append_all([from_langchain(m) for m in CONVERSATION])
    assert SessionaryChatMessageHistory("chat-7", manager).messages == CONVERSATION


def test_an_empty_session_id_is_refused(manager: sessionary.SessionManager) -> None:
    with pytest.raises(sessionary.InvalidId):
        SessionaryChatMessageHistory("", manager)
    with pytest.raises(sessionary.InvalidId):
        SessionaryChatMessageHistory("\ud800", manager)  # no UTF-8 form to store


def test_a_missing_langchain_gives_an_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_core.chat_history", None)
    monkeypatch.delitem(sys.modules, "sessionary.integrations.langchain")
    with pytest.raises(ImportError, match=r"sessionary\[langchain\]"):
        importlib.import_module("sessionary.integrations.langchain")
    monkeypatch.undo()
    importlib.import_module("sessionary.integrations.langchain")
