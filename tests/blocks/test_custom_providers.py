"""Custom providers: sync or async objects and callables, with an optional init hook."""

from __future__ import annotations

from pathlib import Path

import pytest
from custom_providers import AsyncNotes, Index, Library, Notes

import sessionary
from sessionary import FolderSkills, InvalidInput, SessionConfig, Unsupported


async def test_async_sessions_take_sync_and_async_providers(
    amanager: sessionary.AsyncSessionManager,
) -> None:
    async def mood() -> str:
        return "calm"

    notes, async_notes = Notes("n1"), AsyncNotes("a1")
    config = (
        SessionConfig()
        .with_block("soul", "You are kind.")
        .with_block("clock", lambda: "noon")
        .with_block("mood", mood)
        .with_block("notes", notes)
        .with_block("scratch", async_notes, limit=50)
        .with_block("lib", Library(intro="Hello there"))
        .with_block("index", Index(a="alpha beta", b="beta gamma"))
    )
    chat = await amanager.create()
    chat = sessionary.AsyncSession(amanager.store, amanager.scope, chat.id, config)
    blocks = {b.label: b for b in await chat.get_context_blocks()}
    assert {label: b.kind for label, b in blocks.items()} == {
        "soul": "readonly", "clock": "readonly", "mood": "readonly", "notes": "writable",
        "scratch": "writable", "lib": "skill", "index": "searchable",
    }  # fmt: skip
    assert [blocks[k].content for k in ("clock", "mood", "lib", "index")] == [
        "noon",
        "calm",
        "- intro: about intro",
        "2 entries",
    ]
    await chat.append_context_block("scratch", "a2", author="model")
    assert async_notes.content == "a1\na2" and async_notes.authors == ["model"]
    await chat.replace_context_block("notes", "n2")
    assert notes.content == "n2" and notes.authors == ["user"]
    assert [h.key for h in await chat.search_context("index", "beta")] == ["a", "b"]
    assert await chat.load_context_entry("lib", "intro") == "Hello there"
    assert await chat.loaded_context() == {"lib": ["intro"]}
    with pytest.raises(Unsupported, match="keeps no versions"):
        await chat.context_block_versions("notes")


async def test_init_runs_once_before_the_first_read(
    amanager: sessionary.AsyncSessionManager,
) -> None:
    notes = Notes("x")
    chat = await amanager.create()
    await chat.add_context("memory", notes)
    await chat.get_context_block("memory")
    await chat.replace_context_block("memory", "y")
    await chat.system_prompt()
    assert notes.inits == ["memory"]


def test_a_sync_session_refuses_an_async_provider(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    chat.add_context("notes", Notes("fine"))
    with pytest.raises(Unsupported, match="cannot serve synchronous code"):
        chat.add_context("async", AsyncNotes("x"))


@pytest.mark.parametrize("limit", [0, 2**31, 2**63, "3"])
def test_a_search_limit_is_checked_before_a_provider_sees_it(
    manager: sessionary.SessionManager, limit: object
) -> None:
    index = Index(a="alpha beta")
    chat = manager.create()
    chat.add_context("index", index)
    with pytest.raises(InvalidInput, match="limit"):
        chat.search_context("index", "beta", limit=limit)  # type: ignore[arg-type]
    assert [h.key for h in chat.search_context("index", "beta", limit=2**31 - 1)] == ["a"]


def test_a_provider_returning_a_non_string_is_refused(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    with pytest.raises(InvalidInput, match="returned int"):
        chat.add_context("weird", lambda: 42)


def test_folder_skills_read_front_matter_and_stay_inside_the_folder(
    manager: sessionary.SessionManager, tmp_path: Path
) -> None:
    (tmp_path / "guides").mkdir()
    (tmp_path / "guides" / "deploy.md").write_text(
        '---\ntitle: Deploying\ndescription: "How to ship"\n---\n# Deploy\nRun make.\n'
    )
    (tmp_path / "faq.md").write_text("# Questions\nAsk.\n")
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    (tmp_path.parent / "secret.md").write_text("top secret")
    chat = manager.create()
    block = chat.add_context("skills", FolderSkills(tmp_path))
    assert block.content == "- faq: Questions\n- guides/deploy: How to ship"
    assert chat.load_context_entry("skills", "guides/deploy") == "# Deploy\nRun make.\n"
    assert chat.load_context_entry("skills", "../secret") is None
    assert chat.load_context_entry("skills", "image") is None
    only = FolderSkills(tmp_path, keys=["faq"])
    assert [e.key for e in only.entries()] == ["faq"] and only.load("guides/deploy") is None
    with pytest.raises(InvalidInput, match="not a directory"):
        FolderSkills(tmp_path / "nope")
