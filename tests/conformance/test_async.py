"""The async API: every method of AsyncSessionManager and AsyncSession, awaited."""

from __future__ import annotations

import asyncio
import inspect

import pytest

import sessionary
from sessionary import (
    AlreadyExists,
    AsyncSession,
    AsyncSessionManager,
    HeadConflict,
    InvalidMessage,
    Message,
    MessageNotFound,
    SessionNotFound,
    State,
    ToolCallPart,
    Unsupported,
    VersionConflict,
)
from sessionary.stores.base import SEARCH


def test_every_public_async_method_is_a_coroutine_and_has_a_sync_twin() -> None:
    for async_cls, sync_cls in (
        (AsyncSessionManager, sessionary.SessionManager),
        (AsyncSession, sessionary.Session),
    ):
        public = {n for n in dir(async_cls) if not n.startswith("_")}
        assert public == {n for n in dir(sync_cls) if not n.startswith("_")}
        for name in public:
            member = getattr(async_cls, name)
            if inspect.isfunction(member) and name not in (
                "session",
                "for_user",
                "as_actor",
                "export",
                "agent_state",
                "turn",
            ):
                assert inspect.iscoroutinefunction(member), name
    assert inspect.isasyncgenfunction(AsyncSessionManager.export)


async def test_session_methods(amanager: AsyncSessionManager) -> None:
    chat = await amanager.create(id="s1", name="async", model="m", source="test")
    assert isinstance(chat, AsyncSession)
    assert chat.id == "s1"
    info = await chat.info()
    assert (info.id, info.name, info.model, info.source) == ("s1", "async", "m", "test")

    a = await chat.append(Message.user("hello wapiti"), expected_head=None)
    assert a.parent_id is None
    with pytest.raises(HeadConflict):
        await chat.append(Message.user("stale"), expected_head=None)
    batch = await chat.append_all(
        [
            Message.assistant(
                tool_calls=[ToolCallPart(id="c1", name="f", arguments={"x": 1})], id="ask"
            ),
            Message.tool("c1", "tool says kudu", id="ans"),
            Message.assistant("final", id="fin"),
        ]
    )
    assert [m.parent_id for m in batch] == [a.id, "ask", "ans"]
    assert await chat.append_all([]) == []
    with pytest.raises(InvalidMessage):
        await chat.append({"role": "robot", "content": "x"})

    assert [m.id for m in await chat.history()] == [a.id, "ask", "ans", "fin"]
    assert [m.id for m in await chat.history(limit=2)] == ["ask", "ans", "fin"]
    assert [m.id for m in await chat.history(leaf="ask")] == [a.id, "ask"]
    assert (await chat.head()) == batch[-1]
    assert await chat.path_length() == 4
    assert await chat.path_length("ask") == 2
    assert await chat.message_count() == 4
    assert await chat.get_message("ans") == batch[1]
    assert await chat.get_message("no-such-message") is None

    alt = await chat.append(Message.assistant("other answer"), parent=a.id)
    assert [m.id for m in await chat.branches(a.id)] == ["ask", alt.id]
    await chat.checkout("fin")
    assert (await chat.head()) == batch[-1]
    with pytest.raises(MessageNotFound):
        await chat.checkout("no-such-message")

    updated = await chat.update(Message.assistant("final, revised: eland", id="fin"))
    assert updated.text == "final, revised: eland"
    if SEARCH in amanager.store.capabilities:
        assert [h.message_id for h in await chat.search("eland")] == ["fin"]
        assert [h.message_id for h in await chat.search("kudu", role="tool")] == ["ans"]
        assert [h.message_id for h in await chat.search("wapiti", limit=1)] == [a.id]
    else:
        with pytest.raises(Unsupported):
            await chat.search("eland")

    assert await chat.get_state() == State({}, 0)
    assert await chat.update_state({"a": {"b": 1}}) == State({"a": {"b": 1}}, 1)
    assert await chat.update_state({"a": {"b": None}}, expected_version=1) == State({"a": {}}, 2)
    with pytest.raises(VersionConflict):
        await chat.update_state({"x": 1}, expected_version=1)
    assert (await chat.update_state({"u": 1}, level="user")).version == 1
    assert await chat.get_state("user") == State({"u": 1}, 1)

    assert sorted(await chat.delete(alt.id)) == [alt.id]
    assert await chat.message_count() == 4
    assert await chat.clear() == 4
    assert await chat.history() == []


async def test_manager_methods(amanager: AsyncSessionManager) -> None:
    one = await amanager.create(id="one", name="first", metadata={"k": 1})
    await one.append(Message.user("the gnu grazes"))
    with pytest.raises(AlreadyExists):
        await amanager.create(id="one")
    assert (await amanager.get("one")).name == "first"  # type: ignore[union-attr]
    assert await amanager.get("no-such-session") is None
    same = await amanager.get_or_create("one", name="ignored")
    assert (await same.info()).name == "first"
    await amanager.get_or_create("two", name="second")
    assert amanager.session("two").id == "two"

    page = await amanager.list(limit=1)
    assert len(page.items) == 1 and page.next_cursor is not None
    rest = await amanager.list(limit=1, cursor=page.next_cursor)
    assert {page.items[0].id, rest.items[0].id} == {"one", "two"}
    assert [i.id for i in await amanager.list(name="second")] == ["two"]

    assert (await amanager.rename("two", "renamed")).name == "renamed"
    assert (await amanager.set_metadata("two", {"m": True})).metadata == {"m": True}
    assert (await amanager.end("two", "done")).end_reason == "done"
    usage = await amanager.add_usage("two", 3, 4, 0.5)
    assert (usage.input_tokens, usage.output_tokens, usage.cost) == (3, 4, 0.5)

    fork = await amanager.fork("one", name="forked")
    assert (await fork.info()).parent_session_id == "one"
    assert [m.text for m in await fork.history()] == ["the gnu grazes"]
    with pytest.raises(SessionNotFound):
        await amanager.fork("no-such-session")

    if SEARCH in amanager.store.capabilities:
        hits = await amanager.search("gnu")
        assert {h.session_id for h in hits} == {"one", fork.id}
        assert [h.session_id for h in await amanager.search("gnu", session_id="one")] == ["one"]
        assert await amanager.search("gnu", role="assistant") == []
    else:
        with pytest.raises(Unsupported):
            await amanager.search("gnu")

    assert (await amanager.update_state({"theme": "dark"})).version == 1
    assert await amanager.get_state() == State({"theme": "dark"}, 1)
    await amanager.update_state({"motd": "hi"}, level="app")
    assert await amanager.get_state("app") == State({"motd": "hi"}, 1)

    records = [record async for record in amanager.export("one")]
    assert [r["type"] for r in records] == ["session", "message"]
    everything = []
    async for record in amanager.export():
        everything.append(record)
    assert sum(r["type"] == "session" for r in everything) == 3

    other = amanager.for_user("other")
    assert isinstance(other, AsyncSessionManager)
    assert await other.get("one") is None
    imported = await other.import_records(records)
    assert [i.id for i in imported] == ["one"]
    assert [r async for r in other.export("one")] == records

    assert await amanager.delete("one") is True
    assert await amanager.delete("one") is False
    assert await amanager.get("one") is None


async def test_a_second_manager_on_the_same_store(
    amanager: AsyncSessionManager, store_url: str
) -> None:
    chat = await amanager.create(id="s1")
    await chat.append(Message.user("persisted"))
    if store_url == "memory://":  # a private memory store is shared only by its object
        second = AsyncSessionManager(amanager.store)
    else:
        second = AsyncSessionManager(store_url)
    async with second:
        assert [m.text for m in await second.session("s1").history()] == ["persisted"]
    # closing a manager that was handed the store leaves the store open for its owner
    assert await amanager.get("s1") is not None


async def test_concurrent_appends_form_one_chain(amanager: AsyncSessionManager) -> None:
    chat = await amanager.create()
    stored = await asyncio.gather(*(chat.append(Message.user(f"n{i}")) for i in range(25)))
    assert len({m.id for m in stored}) == 25
    assert await chat.message_count() == 25
    assert await chat.path_length() == 25
    history = await chat.history()
    assert {m.id for m in history} == {m.id for m in stored}
    parents = [m.parent_id for m in history]
    assert parents == [None] + [m.id for m in history[:-1]]


async def test_close(amanager: AsyncSessionManager, store_url: str) -> None:
    borrowed = AsyncSessionManager(amanager.store, user="borrower")
    await borrowed.create(id="b")
    await borrowed.close()  # a manager handed a store leaves it open for its owner
    assert await amanager.for_user("borrower").get("b") is not None
    await amanager.create(id="after")
    if store_url != "memory://":  # a private memory store dies with its object
        own = AsyncSessionManager(store_url)
        await own.create(id="own")
        await own.close()
        assert await amanager.get("own") is not None
