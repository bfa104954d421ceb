"""examples/anthropic_agent.py against a local server speaking Anthropic Messages."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from fake_providers import (
    BUDGET,
    FACT,
    LIST_FILES,
    STORED_MESSAGES,
    Run,
    fake_provider,
    load_example,
    script,
)

from sessionary import HeuristicCounter
from sessionary.formats import from_anthropic

anthropic = pytest.importorskip("anthropic")
agent = load_example("anthropic_agent")
SCRIPT = script(LIST_FILES + "*.txt")
# The scripted run is shared by the tests below, so they run in its event loop.
in_run_loop = pytest.mark.asyncio(loop_scope="module")


def unpaired(turns: list[dict[str, Any]]) -> list[str]:
    """Return the problems with tool pairing in one request's turns.

    Every `tool_use` must be answered by a `tool_result` in the very next (user) turn,
    and every `tool_result` must answer a `tool_use` of the turn before.
    """
    problems: list[str] = []
    asked: set[str] = set()
    for turn in turns:
        blocks = turn["content"] if isinstance(turn["content"], list) else []
        answered = {b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"}
        problems.extend(f"result without call: {i}" for i in sorted(answered - asked))
        problems.extend(f"call without result: {i}" for i in sorted(asked - answered))
        asked = {b["id"] for b in blocks if b.get("type") == "tool_use"}
    problems.extend(f"call without result: {i}" for i in sorted(asked))
    return problems


def test_the_pairing_check_finds_what_is_unpaired() -> None:
    asked = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f"}]}
    answer = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]}
    assert unpaired([{"role": "user", "content": "hi"}, asked, answer]) == []
    assert unpaired([asked, {"role": "user", "content": "hi"}]) == ["call without result: t1"]
    assert unpaired([answer]) == ["result without call: t1"]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def run(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Run]:
    """Run the whole script through the example once for every test of this module."""
    tmp_path = tmp_path_factory.mktemp("anthropic_agent")
    folder = tmp_path / "work"
    folder.mkdir()
    for name in ("notes.txt", "todo.txt", "main.py"):
        (folder / name).write_text(name)
    with fake_provider() as server:
        client = anthropic.AsyncAnthropic(base_url=server.base_url, api_key="dummy", max_retries=0)
        store = f"sqlite:///{tmp_path / 'agent.db'}"
        async with agent.open_manager(store, "alice", BUDGET) as manager:
            session = await manager.create()
            answers = [
                await agent.ask(client, session, "fake-model", text, root=folder) for text in SCRIPT
            ]
            yield Run(manager, session, answers, server.requests)


@in_run_loop
async def test_the_model_saves_a_fact_that_the_next_session_sees(run: Run) -> None:
    assert FACT in (await run.session.get_context_block("memory")).content
    assert run.answers[0].startswith("Done.")
    later = await run.manager.create()
    assert FACT in await later.freeze_system_prompt()
    assert FACT not in await run.session.freeze_system_prompt()


@in_run_loop
async def test_the_own_tool_runs_and_its_result_reaches_the_model(run: Run) -> None:
    assert run.answers[1] == "Done. The tool said: notes.txt\ntodo.txt"
    names = {tool["name"] for tool in run.requests[0]["tools"]}
    assert {"set_context", "list_files"} <= names


@in_run_loop
async def test_every_request_pairs_tool_calls_with_results(run: Run) -> None:
    for number, request in enumerate(run.requests):
        assert unpaired(request["messages"]) == [], f"request {number}"
        roles = [turn["role"] for turn in request["messages"]]
        assert roles[0] == "user"
        assert all(a != b for a, b in itertools.pairwise(roles)), "roles alternate"
    with_results = [r for r in run.requests if "tool_result" in str(r["messages"])]
    assert with_results, "the script makes tool calls, so some requests carry results"


@in_run_loop
async def test_the_system_prompt_is_byte_identical_on_every_call(run: Run) -> None:
    systems = {request["system"] for request in run.requests}
    assert systems == {await run.session.freeze_system_prompt()}
    assert "files in one folder" in systems.pop()


@in_run_loop
async def test_history_is_whole_while_requests_stay_within_the_budget(run: Run) -> None:
    stored = await run.session.history(raw=True)
    assert len(stored) == STORED_MESSAGES
    assert [m.text for m in stored if m.role == "user"] == SCRIPT
    assert run.answers[-1] == f"You said: {SCRIPT[-1]}"
    assert await run.session.overlays(), "the small budget must have made compaction happen"
    counter = HeuristicCounter()
    sizes = [counter.count_messages(from_anthropic(r["messages"])) for r in run.requests]
    assert max(sizes) <= BUDGET
    assert len(run.requests[-1]["messages"]) < len(stored)


async def test_a_provider_failure_halfway_through_a_turn_stores_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "a.txt").write_text("a")
    with fake_provider() as server:
        client = anthropic.AsyncAnthropic(base_url=server.base_url, api_key="dummy", max_retries=0)
        async with agent.open_manager(f"sqlite:///{tmp_path / 'agent.db'}", "bob", BUDGET) as m:
            session = await m.create()
            assert await agent.ask(client, session, "fake-model", "Hello") == "You said: Hello"
            server.fail_at = len(server.requests) + 2  # the call after the tool call fails
            with pytest.raises(anthropic.InternalServerError):
                await agent.ask(client, session, "fake-model", LIST_FILES + "*", root=folder)
            stored = await session.history(raw=True)
            assert [m.text for m in stored] == ["Hello", "You said: Hello"]
            again = await agent.ask(client, session, "fake-model", LIST_FILES + "*", root=folder)
            assert again == "Done. The tool said: a.txt"
            assert await session.message_count() == 6
