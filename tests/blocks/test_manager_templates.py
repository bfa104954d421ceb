"""Manager templates: blocks, cached prompt and tools apply to every session it opens."""

from __future__ import annotations

import pytest
from _open_scope import OpenScope
from custom_providers import Withheld

import sessionary
from sessionary import Message, SessionConfig
from sessionary.stores.base import DOCUMENT_SEARCH, DOCUMENTS, SEARCH

TEMPLATE = (
    SessionConfig()
    .with_block("soul", "You are a travel agent.")
    .with_block("memory", description="About the user", level="user", limit=200)
    .with_block("scratch", description="This conversation's notes")
    .with_cached_prompt()
    .with_searchable_history("history")
)


@pytest.mark.requires(SEARCH, DOCUMENT_SEARCH)
def test_every_session_gets_the_template_with_its_own_storage(reopen: OpenScope) -> None:
    manager = reopen(TEMPLATE)
    first, second = manager.create(), manager.create()
    assert [b.label for b in second.get_context_blocks()] == [
        "soul",
        "memory",
        "scratch",
        "history",
    ]
    first.replace_context_block("scratch", "first's notes")
    first.replace_context_block("memory", "vegetarian")
    assert second.get_context_block("scratch").content == ""
    assert second.get_context_block("memory").content == "vegetarian"
    assert first.freeze_system_prompt() != second.freeze_system_prompt()
    forked = manager.fork(first.id)
    assert forked.config == TEMPLATE
    assert manager.for_user("zoe").create().get_context_block("memory").content == ""


@pytest.mark.requires(SEARCH, DOCUMENT_SEARCH)
def test_the_history_block_searches_past_sessions(reopen: OpenScope) -> None:
    manager = reopen(TEMPLATE)
    past = manager.create()
    past.append(Message.user("I want to visit Lisbon in May"))
    reopen(TEMPLATE, tenant="other").create().append(Message.user("Lisbon for other tenant"))
    now = manager.create()
    history = now.get_context_block("history")
    assert history.kind == "searchable" and "search_context" in history.content
    hits = now.search_context("history", "Lisbon")
    assert [hit.key for hit in hits] == [f"{past.id}/{past.head().id}"]
    assert hits[0].snippet.startswith("[user] ")
    result = now.call_tool("search_context", {"label": "history", "query": "lisbon"})
    assert result.text.startswith(f"[{past.id}/") and "other tenant" not in result.text
    assert "HISTORY: Your past conversations" in now.system_prompt()


@pytest.mark.requires(SEARCH, DOCUMENT_SEARCH)
async def test_async_managers_apply_the_template(docs_url: str) -> None:
    async with sessionary.AsyncSessionManager(docs_url, config=TEMPLATE) as manager:
        chat = await manager.create()
        await chat.append_context_block("memory", "likes trains", author="model")
        again = manager.session(chat.id)
        assert (await again.get_context_block("memory")).content == "likes trains"
        frozen = await chat.freeze_system_prompt()
        await chat.append_context_block("memory", "and boats")
        assert await again.freeze_system_prompt() == frozen
        assert "and boats" in await again.refresh_system_prompt()
        result = await again.call_tool("set_context", {"label": "scratch", "content": "hi"})
        assert result.text.startswith("Written to scratch.")
        assert [t.name for t in await manager.tools()] == [
            "session_search",
            "session_list",
            "session_history",
        ]


def test_a_template_block_the_store_cannot_hold_fails_clearly(
    manager: sessionary.SessionManager,
) -> None:
    store = Withheld(manager.store, DOCUMENTS, DOCUMENT_SEARCH)
    chat = sessionary.SessionManager(store, config=TEMPLATE).create()  # type: ignore[arg-type]
    with pytest.raises(sessionary.Unsupported, match="documents"):
        chat.get_context_blocks()
