"""Store-backed blocks of every kind, on every backend that keeps documents."""

from __future__ import annotations

import pytest
from _open_scope import OpenScope
from custom_providers import Withheld

import sessionary
from sessionary import (
    BlockLimitExceeded,
    BlockNotFound,
    InvalidInput,
    ReadOnlyBlock,
    SessionConfig,
    Unsupported,
)
from sessionary.stores.base import DOCUMENT_SEARCH, SEARCH

MEMORY = SessionConfig().with_block("memory", description="Facts", limit=30)


def test_a_writable_block_keeps_every_version_with_its_author(
    docs_manager: sessionary.SessionManager,
) -> None:
    chat = docs_manager.create()
    chat = docs_manager.session(chat.id)
    chat.add_context("memory", description="Facts", limit=30)
    assert chat.get_context_block("memory").content == ""
    chat.replace_context_block("memory", "likes tea")
    block = chat.append_context_block("memory", "lives in Oslo", author="model")
    assert block.content == "likes tea\nlives in Oslo" and block.kind == "writable"
    assert block.tokens > 0 and block.limit == 30
    versions = chat.context_block_versions("memory")
    assert [(v.version, v.author, v.content) for v in versions] == [
        (1, "user", "likes tea"),
        (2, "model", "likes tea\nlives in Oslo"),
    ]
    assert chat.get_context_block("memory", version=1).content == "likes tea"
    with pytest.raises(BlockNotFound, match="no version 7"):
        chat.get_context_block("memory", version=7)


def test_a_write_over_the_limit_changes_nothing(reopen: OpenScope) -> None:
    manager = reopen(MEMORY)
    chat = manager.create()
    chat.replace_context_block("memory", "short")
    with pytest.raises(BlockLimitExceeded, match="over its limit of 30"):
        chat.append_context_block("memory", "word " * 40)
    with pytest.raises(BlockLimitExceeded):
        chat.replace_context_block("memory", "word " * 40)
    assert chat.get_context_block("memory").content == "short"
    assert len(chat.context_block_versions("memory")) == 1
    with pytest.raises(InvalidInput, match="must be a string"):
        chat.replace_context_block("memory", 42)  # type: ignore[arg-type]


def test_session_blocks_are_per_session_and_user_blocks_are_shared(reopen: OpenScope) -> None:
    config = MEMORY.with_block("profile", level="user").with_block("policy", level="app")
    manager = reopen(config)
    first, second = manager.create(), manager.create()
    first.replace_context_block("memory", "first only")
    first.replace_context_block("profile", "Ada, prefers short answers")
    first.replace_context_block("policy", "Be polite", author="system")
    assert second.get_context_block("memory").content == ""
    assert second.get_context_block("profile").content == "Ada, prefers short answers"
    other_user = reopen(config, user="bob").create()
    assert other_user.get_context_block("profile").content == ""
    assert other_user.get_context_block("policy").content == "Be polite"
    other_tenant = reopen(config, tenant="acme").create()
    assert other_tenant.get_context_block("policy").content == ""
    assert other_tenant.get_context_block("profile").content == ""


def test_a_stored_skill_block_lists_loads_and_remembers_what_is_loaded(
    reopen: OpenScope,
) -> None:
    config = SessionConfig().with_block("docs", kind="skill", description="How-tos")
    chat = reopen(config).create()
    key = chat.put_context_entry(
        "docs", "Run make release.", title="Releasing", description="How to ship"
    )
    assert key == "releasing"
    chat.put_context_entry("docs", "Ask Bo.", title="Access")
    block = chat.get_context_block("docs")
    assert block.kind == "skill" and block.keys == ("access", "releasing")
    assert block.content == "- access: Access\n- releasing: How to ship"
    assert chat.load_context_entry("docs", "releasing") == "Run make release."
    assert chat.load_context_entry("docs", "missing") is None
    restarted = reopen(config).session(chat.id)
    assert restarted.loaded_context() == {"docs": ["releasing"]}
    assert restarted.unload_context_entry("docs", "releasing") is True
    assert restarted.unload_context_entry("docs", "releasing") is False
    assert chat.loaded_context() == {}
    assert chat.load_context_entry("docs", "releasing") == "Run make release."  # record kept


@pytest.mark.requires(SEARCH, DOCUMENT_SEARCH)
def test_a_stored_searchable_block_finds_its_entries(reopen: OpenScope) -> None:
    config = SessionConfig().with_block("kb", kind="searchable", level="user")
    manager = reopen(config)
    chat = manager.create()
    chat.put_context_entry("kb", "The deploy runs every Friday at noon.", title="Deploys")
    chat.put_context_entry("kb", "Lunch is at noon.", title="Lunch")
    assert chat.get_context_block("kb").content.startswith("2 entries")
    hits = manager.create().search_context("kb", "friday deploy")
    assert [hit.key for hit in hits] == ["deploys"]
    assert {hit.key for hit in chat.search_context("kb", "noon")} == {"deploys", "lunch"}
    assert reopen(config, user="eve").create().search_context("kb", "noon") == []


def test_a_searchable_block_needs_document_search(
    docs_manager: sessionary.SessionManager,
) -> None:
    store = Withheld(docs_manager.store, DOCUMENT_SEARCH)
    manager = sessionary.SessionManager(store, config=SessionConfig())  # type: ignore[arg-type]
    chat = manager.create()
    with pytest.raises(Unsupported, match="document_search"):
        chat.add_context("kb", kind="searchable")


def test_readonly_and_keyed_blocks_refuse_whole_writes(
    docs_manager: sessionary.SessionManager,
) -> None:
    chat = docs_manager.create()
    chat.add_context("soul", "You are kind.")
    chat.add_context("docs", kind="skill")
    with pytest.raises(ReadOnlyBlock, match="readonly"):
        chat.replace_context_block("soul", "evil")
    with pytest.raises(ReadOnlyBlock, match="keyed entries"):
        chat.append_context_block("docs", "text")
    with pytest.raises(ReadOnlyBlock, match="no keyed entries"):
        chat.put_context_entry("soul", "text", title="t")
    with pytest.raises(BlockNotFound, match="no block 'nope'"):
        chat.replace_context_block("nope", "x")
    with pytest.raises(InvalidInput, match="already exists"):
        chat.add_context("soul", "again")
    assert chat.get_context_block("soul").content == "You are kind."


def test_add_and_remove_context_at_run_time(docs_manager: sessionary.SessionManager) -> None:
    chat = docs_manager.create()
    block = chat.add_context("memory", limit=50)
    assert block.label == "memory" and [b.label for b in chat.get_context_blocks()] == ["memory"]
    chat.replace_context_block("memory", "kept")
    assert chat.remove_context("memory") is True
    assert chat.remove_context("memory") is False
    assert chat.get_context_blocks() == []
    chat.add_context("memory")
    assert chat.get_context_block("memory").content == "kept"  # the stored content stays


def test_a_session_block_needs_its_session(docs_manager: sessionary.SessionManager) -> None:
    ghost = sessionary.SessionManager(docs_manager.store, config=MEMORY).session("ghost")
    with pytest.raises(sessionary.SessionNotFound):
        ghost.replace_context_block("memory", "x")
