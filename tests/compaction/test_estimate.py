"""The token estimate sees the whole request: messages, the system prompt, blocks and tools."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

import sessionary
from sessionary import CompactionPolicy, ContextBlock, Message, SessionConfig
from sessionary.context import PROMPT_KEY, PROMPT_NAMESPACE
from sessionary.stores.base import DOCUMENTS
from sessionary.tokens import HeuristicCounter

PERSONA = "You are a careful assistant who answers in plain words. " * 120


class Seeing(HeuristicCounter):
    """Records what each whole-context count was given."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[list[str], str, list[str], list[str]]] = []

    def count_context(
        self,
        messages: Sequence[Message],
        *,
        system: str = "",
        blocks: Sequence[ContextBlock] = (),
        tools: Sequence[Mapping[str, Any]] = (),
    ) -> int:
        names = [t["function"]["name"] for t in tools]
        self.seen.append(([m.text for m in messages], system, [b.label for b in blocks], names))
        return super().count_context(messages, system=system, blocks=blocks, tools=tools)


def test_a_long_system_prompt_is_counted(manager: sessionary.SessionManager) -> None:
    config = SessionConfig().with_block("soul", PERSONA)
    chat = sessionary.Session(manager.store, manager.scope, manager.create().id, config)
    chat.append(Message.user("hi"))
    prompt = chat.system_prompt()
    counter = HeuristicCounter()
    assert counter.count_text(prompt) > 1500
    assert chat.estimate_tokens() == counter.count_prompt(chat.context_history(), prompt)
    assert manager.session(chat.id).estimate_tokens() == counter.count_message(chat.history()[0])


def test_a_custom_counter_gets_messages_prompt_blocks_and_tools(
    manager: sessionary.SessionManager,
) -> None:
    seeing = Seeing()
    config = SessionConfig().with_block("soul", "Be brief.").with_block("facts", lambda: "tea")
    chat = sessionary.Session(
        manager.store,
        manager.scope,
        manager.create().id,
        config.with_history_tools(),
        compaction=CompactionPolicy(counter=seeing, reserve_tokens=7),
    )
    chat.append(Message.user("hello"))
    estimate = chat.estimate_tokens()
    texts, system, labels, tools = seeing.seen[-1]
    assert texts == ["hello"] and labels == ["soul", "facts"]
    assert "Be brief." in system and "tea" in system
    assert "session_search" in tools
    tool_schemas = [t.to_openai_chat() for t in chat.tools()]
    assert estimate == 7 + HeuristicCounter().count_prompt(chat.history(), system, tool_schemas)


def test_the_frozen_prompt_is_counted_and_estimating_stores_nothing(
    manager: sessionary.SessionManager,
) -> None:
    if DOCUMENTS not in manager.store.capabilities:
        pytest.skip("a cached prompt needs documents")
    seeing = Seeing()
    config = SessionConfig().with_block("notes").with_cached_prompt()
    chat = sessionary.Session(
        manager.store,
        manager.scope,
        manager.create().id,
        config,
        compaction=CompactionPolicy(counter=seeing),
    )
    chat.replace_context_block("notes", "first")
    chat.estimate_tokens()
    assert "first" in seeing.seen[-1][1]
    stored = manager.store.get_document(
        manager.scope, "session", chat.id, PROMPT_NAMESPACE, PROMPT_KEY, None
    )
    assert stored is None  # the estimate rendered the prompt but froze nothing
    frozen = chat.freeze_system_prompt()
    chat.replace_context_block("notes", "second, much longer than the first note")
    chat.estimate_tokens()
    assert seeing.seen[-1][1] == frozen  # what a request would carry: the frozen text
    other = sessionary.Session(
        manager.store, manager.scope, chat.id, config, compaction=CompactionPolicy(counter=seeing)
    )
    other.estimate_tokens()
    assert seeing.seen[-1][1] == frozen  # every handle reads the stored prompt


def test_the_prompt_counts_toward_the_trigger(manager: sessionary.SessionManager) -> None:
    if DOCUMENTS not in manager.store.capabilities:
        pytest.skip("compaction overlays need documents")
    config = SessionConfig().with_block("soul", PERSONA)
    policy = CompactionPolicy(trigger_tokens=2500, tail_tokens=200, protect_head=1)
    chat = sessionary.Session(
        manager.store, manager.scope, manager.create().id, config, compaction=policy
    )
    for i in range(60):
        chat.append(Message.user(f"turn {i}: please look at lib/unit_{i}.py again"))
        assert chat.estimate_tokens() <= 2500
    assert chat.overlays()  # the messages alone (about 1,000 tokens) would never trigger
