"""examples/openai_agent.py against a local server speaking OpenAI Chat Completions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_providers import (
    BUDGET,
    CALCULATE,
    FACT,
    STORED_MESSAGES,
    Run,
    fake_provider,
    load_example,
    script,
)

from sessionary import HeuristicCounter
from sessionary.formats import from_openai_chat

openai = pytest.importorskip("openai")
agent = load_example("openai_agent")
SCRIPT = script(CALCULATE + "17 * 23")


def unpaired(messages: list[dict[str, Any]]) -> list[str]:
    """Return the ids of calls without a result, or results without a call, in a request."""
    problems: list[str] = []
    open_calls: list[str] = []
    for message in messages:
        if message["role"] == "tool":
            call_id = message["tool_call_id"]
            if call_id not in open_calls:
                problems.append(f"result without call: {call_id}")
            else:
                open_calls.remove(call_id)
            continue
        problems.extend(f"call without result: {c}" for c in open_calls)
        open_calls = [call["id"] for call in message.get("tool_calls") or []]
    problems.extend(f"call without result: {c}" for c in open_calls)
    return problems


def test_the_pairing_check_finds_what_is_unpaired() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    asked = {"role": "assistant", "content": None, "tool_calls": [call]}
    answer = {"role": "tool", "tool_call_id": "c1", "content": "ok"}
    assert unpaired([asked, answer, {"role": "user", "content": "hi"}]) == []
    assert unpaired([asked, {"role": "user", "content": "hi"}]) == ["call without result: c1"]
    assert unpaired([answer]) == ["result without call: c1"]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """Run the whole script through the example once for every test of this module."""
    tmp_path = tmp_path_factory.mktemp("openai_agent")
    with fake_provider() as server:
        client = openai.OpenAI(base_url=f"{server.base_url}/v1", api_key="dummy", max_retries=0)
        store = f"sqlite:///{tmp_path / 'agent.db'}"
        with agent.open_manager(store, "alice", BUDGET) as manager:
            session = manager.create()
            answers = [agent.ask(client, session, "fake-model", text) for text in SCRIPT]
            yield Run(manager, session, answers, server.requests)


def test_the_model_saves_a_fact_that_the_next_session_sees(run: Run) -> None:
    assert FACT in run.session.get_context_block("memory").content
    assert run.answers[0].startswith("Done.")
    later = run.manager.create()
    assert FACT in later.freeze_system_prompt()
    # The first session's prompt stays frozen: written before the fact was saved.
    assert FACT not in run.session.freeze_system_prompt()


def test_the_own_tool_runs_and_its_result_reaches_the_model(run: Run) -> None:
    assert run.answers[1] == "Done. The tool said: 391"
    names = {tool["function"]["name"] for tool in run.requests[0]["tools"]}
    assert {"set_context", "calculate"} <= names


def test_every_request_pairs_tool_calls_with_results(run: Run) -> None:
    for number, request in enumerate(run.requests):
        assert unpaired(request["messages"]) == [], f"request {number}"
    with_results = [r for r in run.requests if any(m["role"] == "tool" for m in r["messages"])]
    assert with_results, "the script makes tool calls, so some requests carry results"


def test_the_system_prompt_is_byte_identical_on_every_call(run: Run) -> None:
    systems = {request["messages"][0]["content"] for request in run.requests}
    assert systems == {run.session.freeze_system_prompt()}
    assert "concise assistant" in systems.pop()


def test_history_is_whole_while_requests_stay_within_the_budget(run: Run) -> None:
    stored = run.session.history(raw=True)
    assert len(stored) == STORED_MESSAGES
    assert [m.text for m in stored if m.role == "user"] == SCRIPT
    assert run.answers[-1] == f"You said: {SCRIPT[-1]}"
    assert run.session.overlays(), "the small budget must have made compaction happen"
    counter = HeuristicCounter()
    sizes = [counter.count_messages(from_openai_chat(r["messages"][1:])) for r in run.requests]
    assert max(sizes) <= BUDGET
    assert len(run.requests[-1]["messages"]) < len(stored)


def test_a_provider_failure_halfway_through_a_turn_stores_nothing(tmp_path: Path) -> None:
    with fake_provider() as server:
        client = openai.OpenAI(base_url=f"{server.base_url}/v1", api_key="dummy", max_retries=0)
        with agent.open_manager(f"sqlite:///{tmp_path / 'agent.db'}", "bob", BUDGET) as manager:
            session = manager.create()
            assert agent.ask(client, session, "fake-model", "Hello") == "You said: Hello"
            server.fail_at = len(server.requests) + 2  # the call after the tool call fails
            with pytest.raises(openai.InternalServerError):
                agent.ask(client, session, "fake-model", CALCULATE + "6 * 7")
            assert [m.text for m in session.history(raw=True)] == ["Hello", "You said: Hello"]
            assert agent.ask(client, session, "fake-model", CALCULATE + "6 * 7").endswith("42")
            assert session.message_count() == 6
