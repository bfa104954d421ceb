"""The memory flush: facts from the original messages, deduplicated, through the session's
block and its limit; offline and through the real OpenAI and Anthropic SDK clients.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _llm_server import Behaviour, FakeLLM, serve

import sessionary
from sessionary import CompactionPolicy, Eviction, MemoryFlush, Message, ToolCallPart
from sessionary.compaction import (
    AnthropicExtractor,
    AsyncAnthropicExtractor,
    AsyncOpenAIExtractor,
    FlushRequest,
    OpenAIExtractor,
    add_facts,
    memory_facts,
)
from sessionary.compaction.flush import build_flush_prompt, check_facts, parse_facts
from sessionary.errors import BlockLimitExceeded, InvalidInput, ReadOnlyBlock, SummarizerError
from sessionary.tokens import estimate_text_tokens

BIG = "\n".join(f"row {i:05d} ok" for i in range(3000))


def conversation() -> list[Message]:
    call = ToolCallPart(id="c1", name="shell", arguments={"cmd": "cat data/rows.txt"})
    return [
        Message.user("Hi! My favourite colour is teal. Can you check data/rows.txt?", id="u0"),
        Message.assistant("Reading it.", tool_calls=[call], id="a0"),
        Message.tool("c1", BIG, name="shell", id="t0"),
        Message.user("I prefer short answers. I need you to count the rows.", id="u1"),
        Message.assistant("We decided to count with `wc -l data/rows.txt`: 3000 rows.", id="a1"),
        Message.tool("c2", "Traceback: KeyError 'rows'", is_error=True, name="parse", id="t1"),
        Message.user("Never deploy on Fridays. See https://example.com/runbook.", id="u2"),
    ]


# ------------------------------------------------------------------ pure


def test_the_offline_extractor_keeps_what_the_user_said_and_what_happened() -> None:
    facts = memory_facts(conversation())
    assert facts == [
        "User: My favourite colour is teal.",
        "User: I prefer short answers.",
        "User: Never deploy on Fridays.",
        "Decision: We decided to count with `wc -l data/rows.txt`: 3000 rows.",
        "Error: parse: Traceback: KeyError 'rows'",
        "Files: data/rows.txt",
        "Commands: `wc -l data/rows.txt`",
        "URLs: https://example.com/runbook",
    ]
    text = "\n".join(facts)
    assert "Can you check" not in text and "I need you" not in text  # requests, not facts


def test_facts_are_added_once_and_within_the_limit() -> None:
    facts = memory_facts(conversation())
    existing = "- my FAVOURITE colour   is teal\n- Files: data/rows.txt"
    content, left = add_facts(existing, facts)
    assert left == [] and content.startswith(existing)
    added = content[len(existing) :].splitlines()[1:]
    assert "- User: My favourite colour is teal." not in added  # the block has it already
    assert not any(line.startswith("- Files:") for line in added)  # every file is known
    assert added[0] == "- User: I prefer short answers."
    assert add_facts(content, facts) == (content, [])  # a second flush adds nothing
    partial, _ = add_facts("", ["Files: a.py, b.py"])
    assert add_facts(partial, ["Files: b.py, c.py"])[0].endswith("- Files: c.py")
    small, left = add_facts("", facts, limit=20, count=estimate_text_tokens)
    assert estimate_text_tokens(small) <= 20
    assert small == "- User: My favourite colour is teal.\n- User: I prefer short answers."
    assert left[0] == "User: Never deploy on Fridays." and len(left) == len(facts) - 2


def test_a_model_answer_is_parsed_and_a_bad_extractor_result_refused() -> None:
    assert parse_facts("- User: likes tea\n* Files: a.py\n\nNONE\n  Decision: go  ") == [
        "User: likes tea",
        "Files: a.py",
        "Decision: go",
    ]
    assert parse_facts("NONE.") == []
    system, user = build_flush_prompt(FlushRequest(tuple(conversation()), "- User: likes tea"))
    assert "User:" in system and "NONE" in system
    assert user.startswith("MEMORY:\n- User: likes tea") and "favourite colour" in user
    assert check_facts(["a  b", " ", "c"]) == ["a b", "c"]
    for bad in ("a fact", None, [1]):
        with pytest.raises(SummarizerError):
            check_facts(bad)
    with pytest.raises(InvalidInput):
        MemoryFlush(extractor=object())
    with pytest.raises(InvalidInput):
        MemoryFlush(label="no spaces allowed")


# ------------------------------------------------------------------ against a store


def policy(**changes: Any) -> CompactionPolicy:
    settings: dict[str, Any] = {
        "protect_head": 0,
        "tail_tokens": 0,
        "min_tail": 1,
        "eviction": Eviction(threshold=1000, preview=100),
        "memory_flush": MemoryFlush(label="notes"),
    }
    settings.update(changes)
    return CompactionPolicy(**settings)


def open_session(
    manager: sessionary.SessionManager,
    config: sessionary.SessionConfig | None = None,
    **changes: Any,
) -> sessionary.Session:
    made = manager.create().id
    return sessionary.Session(
        manager.store, manager.scope, made, config, compaction=policy(**changes)
    )


def test_the_flush_reads_the_originals_not_the_evicted_view(
    manager: sessionary.SessionManager,
) -> None:
    chat = open_session(manager)
    chat.append_all([*conversation(), Message.assistant("Noted.", id="a2")])
    assert "read_tool_result" in str(chat.context_history()[2].parts)  # evicted in the view
    assert chat.compact() is not None
    doc = manager.store.get_document(manager.scope, "session", chat.id, "block", "notes", None)
    assert doc is not None and doc.author == "compaction"
    notes = doc.body["content"]
    assert "- User: My favourite colour is teal." in notes
    for noise in ("read_tool_result", "message_id", "call_id", "t0", "Identifiers"):
        assert noise not in notes
    chat.append(Message.user("Again. My favourite  colour is TEAL.", id="u3"))
    chat.append(Message.assistant("Sure.", id="a3"))
    assert chat.compact() is not None
    again = manager.store.get_document(manager.scope, "session", chat.id, "block", "notes", None)
    assert again is not None and again.body["content"].count("favourite colour is teal") == 1


def test_the_flush_writes_through_the_sessions_block_and_its_limit(
    manager: sessionary.SessionManager,
) -> None:
    errors: list[BaseException] = []
    config = sessionary.SessionConfig().with_block("notes", level="user", limit=40)
    chat = open_session(manager, config, on_error=errors.append)
    chat.append_all([*conversation(), Message.assistant("Noted.", id="a2")])
    overlay = chat.compact()
    assert overlay is not None  # a flush that did not all fit never stops the compaction
    block = chat.get_context_block("notes")
    assert block.tokens <= 40 and "favourite colour is teal" in block.content
    assert chat.context_block_versions("notes")[-1].author == "compaction"
    other = sessionary.Session(manager.store, manager.scope, manager.create().id, config)
    assert other.get_context_block("notes").content == block.content  # a user-level block
    assert len(errors) == 1 and isinstance(errors[0], BlockLimitExceeded)


def test_a_failing_flush_is_reported_and_the_compaction_goes_on(
    manager: sessionary.SessionManager,
) -> None:
    class Broken:
        def extract(self, request: FlushRequest) -> list[str]:
            raise RuntimeError("no model")

    errors: list[BaseException] = []
    readonly = sessionary.SessionConfig().with_block("notes", "fixed text")
    chat = open_session(manager, readonly, on_error=errors.append)
    chat.append_all(conversation())
    assert chat.compact() is not None
    assert isinstance(errors[-1], ReadOnlyBlock)
    broken = open_session(
        manager, on_error=errors.append, memory_flush=MemoryFlush("notes", extractor=Broken())
    )
    broken.append_all(conversation())
    assert broken.compact() is not None
    assert isinstance(errors[-1], SummarizerError) and "memory extractor" in str(errors[-1])


# ------------------------------------------------------------------ asking a model


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    pytest.importorskip("openai")
    pytest.importorskip("anthropic")
    with serve() as fake:
        yield fake


ANSWER = "- User: My favourite colour is teal.\n- Files: data/rows.txt\n"


async def test_openai_extractor_through_the_sdk(llm: FakeLLM) -> None:
    llm.reply(Behaviour(text=ANSWER))
    extractor = AsyncOpenAIExtractor("m", base_url=f"{llm.base_url}/v1", api_key="k")
    facts = await extractor.extract(FlushRequest(tuple(conversation()), "- old fact"))
    assert facts == ["User: My favourite colour is teal.", "Files: data/rows.txt"]
    sent = llm.requests[-1]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["messages"][1]["content"].startswith("MEMORY:\n- old fact")
    llm.reply(Behaviour(status=500, body={"error": {"message": "boom"}}))
    failing = AsyncOpenAIExtractor("m", base_url=f"{llm.base_url}/v1", api_key="k", max_retries=0)
    with pytest.raises(SummarizerError, match="OpenAI memory extractor"):
        await failing.extract(FlushRequest(tuple(conversation())))


async def test_anthropic_extractor_through_the_sdk(llm: FakeLLM) -> None:
    llm.reply(Behaviour(text="NONE"))
    extractor = AsyncAnthropicExtractor("m", base_url=llm.base_url, api_key="k")
    assert await extractor.extract(FlushRequest(tuple(conversation()))) == []
    assert llm.requests[-1]["path"] == "/v1/messages"
    sync = AnthropicExtractor("m", base_url=llm.base_url, api_key="k")
    llm.reply(Behaviour(text=ANSWER))
    assert sync.extract(FlushRequest(tuple(conversation())))[0].startswith("User:")


def test_a_session_flushes_with_a_model_extractor(
    llm: FakeLLM, manager: sessionary.SessionManager
) -> None:
    extractor = OpenAIExtractor("m", base_url=f"{llm.base_url}/v1", api_key="k")
    chat = open_session(manager, memory_flush=MemoryFlush("notes", extractor=extractor))
    chat.append_all(conversation())
    llm.reply(Behaviour(text=ANSWER))  # the extractor asks first, then the summarizer runs
    assert chat.compact() is not None
    doc = manager.store.get_document(manager.scope, "session", chat.id, "block", "notes", None)
    assert doc is not None
    assert doc.body["content"] == "- User: My favourite colour is teal.\n- Files: data/rows.txt"
    transcript = llm.requests[-1]["messages"][1]["content"]
    # The original result (clipped for the prompt), not the evicted preview with its note.
    assert "row 00150 ok" in transcript and "read_tool_result" not in transcript


async def test_an_async_session_flushes_with_an_async_extractor(
    llm: FakeLLM, amanager: sessionary.AsyncSessionManager
) -> None:
    extractor = AsyncOpenAIExtractor("m", base_url=f"{llm.base_url}/v1", api_key="k")
    config = sessionary.SessionConfig().with_block("notes", limit=200)
    made = (await amanager.create()).id
    chat = sessionary.AsyncSession(
        amanager.store,
        amanager.scope,
        made,
        config,
        compaction=policy(memory_flush=MemoryFlush("notes", extractor=extractor)),
    )
    await chat.append_all(conversation())
    llm.reply(Behaviour(text=ANSWER))
    assert await chat.compact() is not None
    block = await chat.get_context_block("notes")
    assert block.content == "- User: My favourite colour is teal.\n- Files: data/rows.txt"
