"""The system prompt: rendered from blocks, frozen, refreshed, identical after a restart."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from _open_scope import OpenScope

import sessionary
from sessionary import SessionConfig, Unsupported
from sessionary.prompt import RULE

CONFIG = (
    SessionConfig()
    .with_block("soul", "You are a helpful assistant.", description="Identity")
    .with_block("memory", description="Learned facts", limit=100)
    .with_block("docs", kind="skill")
    .with_cached_prompt()
)


def test_the_prompt_renders_every_block_in_order(reopen: OpenScope) -> None:
    chat = reopen(CONFIG).create()
    chat.replace_context_block("memory", "User likes coffee.")
    prompt = chat.system_prompt()
    assert prompt.startswith(f"{RULE}\nSOUL: Identity [readonly]\n{RULE}\nYou are a helpful")
    memory = chat.get_context_block("memory")
    percent = round(memory.tokens * 100 / 100)
    assert f"MEMORY: Learned facts [writable · {percent}% of 100 tokens]" in prompt
    assert prompt.index("SOUL") < prompt.index("MEMORY") < prompt.index("DOCS [loadable]")


def test_a_frozen_prompt_survives_edits_and_restarts_until_a_refresh(reopen: OpenScope) -> None:
    chat = reopen(CONFIG).create()
    chat.replace_context_block("memory", "likes tea")
    frozen = chat.freeze_system_prompt()
    assert "likes tea" in frozen
    chat.replace_context_block("memory", "likes coffee")
    assert chat.freeze_system_prompt() == frozen
    restarted = reopen(CONFIG).session(chat.id)
    assert restarted.freeze_system_prompt() == frozen
    refreshed = restarted.refresh_system_prompt()
    assert "likes coffee" in refreshed and "likes tea" not in refreshed
    assert chat.freeze_system_prompt() == refreshed  # the store's copy wins everywhere
    assert reopen(CONFIG).session(chat.id).freeze_system_prompt() == refreshed


def test_the_frozen_prompt_is_the_document_prompt_system(reopen: OpenScope) -> None:
    manager = reopen(CONFIG)
    chat = manager.create()
    frozen = chat.freeze_system_prompt()
    scope = manager.scope
    doc = manager.store.get_document(scope, "session", chat.id, "prompt", "system", None)
    assert doc is not None and doc.body == {"text": frozen} and doc.author == "system"


def test_an_uncached_prompt_is_frozen_per_handle_only(reopen: OpenScope) -> None:
    config = CONFIG.with_cached_prompt(False)
    chat = reopen(config).create()
    chat.replace_context_block("memory", "one")
    frozen = chat.freeze_system_prompt()
    chat.replace_context_block("memory", "two")
    assert chat.freeze_system_prompt() == frozen
    assert "two" in reopen(config).session(chat.id).freeze_system_prompt()
    manager = reopen(config)
    assert (
        manager.store.get_document(manager.scope, "session", chat.id, "prompt", "system", None)
        is None
    )


def test_an_empty_prompt_is_frozen_too(reopen: OpenScope) -> None:
    chat = reopen(SessionConfig(cached_prompt=True)).create()
    assert chat.freeze_system_prompt() == ""
    chat.add_context("soul", "hello")
    assert chat.freeze_system_prompt() == ""
    assert "hello" in chat.refresh_system_prompt()


def test_a_cached_prompt_needs_documents() -> None:
    class Bare:
        capabilities = frozenset({"search"})

    chat = sessionary.Session(Bare(), sessionary.Scope(), "s1", SessionConfig(cached_prompt=True))  # type: ignore[arg-type]
    with pytest.raises(Unsupported, match="documents"):
        chat.freeze_system_prompt()


def test_another_process_gets_the_identical_prompt(tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/p.db"
    with sessionary.SessionManager(url, config=CONFIG) as manager:
        chat = manager.create(id="chat")
        chat.replace_context_block("memory", "likes tea")
        frozen = chat.freeze_system_prompt()
    script = textwrap.dedent(f"""
        import sessionary, sys
        config = (sessionary.SessionConfig()
            .with_block("soul", "A different soul now.")
            .with_cached_prompt())
        with sessionary.SessionManager({url!r}, config=config) as manager:
            sys.stdout.write(manager.session("chat").freeze_system_prompt())
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout == frozen
