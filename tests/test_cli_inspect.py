"""`inspect`, `context` and compaction in `show`: what is stored, and what the model sees."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import sessionary
from sessionary import Message, SessionConfig
from sessionary.cli import main

Result = tuple[int, str, str]
APP = """
from sessionary import SessionConfig

config = (
    SessionConfig()
    .with_block("soul", "You are terse.")
    .with_block("memory", description="About the user", level="user", limit=500)
    .with_block("notes")
    .with_cached_prompt()
)
name = "not a config"
"""


def run(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SessionConfig:
    """An app module on sys.path whose config `--config cliapp:config` names."""
    (tmp_path / "cliapp.py").write_text(APP)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("cliapp", None)
    import cliapp  # type: ignore[import-not-found]

    config: SessionConfig = cliapp.config
    return config


@pytest.fixture
def store(tmp_path: Path, app: SessionConfig) -> dict[str, Any]:
    url = f"sqlite:///{tmp_path}/x.db"
    with sessionary.SessionManager(url, config=app) as manager:
        chat = manager.create(name="long one")
        chat.replace_context_block("memory", "Prefers trains.", author="model")
        chat.append_context_block("memory", "Lives in Oslo.", author="user")
        chat.append_context_block("notes", "ticket CI-42", author="model")
        chat.freeze_system_prompt()
        for turn in range(12):
            chat.append(Message.user(f"turn {turn}: please update lib/unit_{turn}.py"))
            chat.append(Message.assistant(f"Updated lib/unit_{turn}.py and ran the tests."))
        overlay = chat.compact(protect_head=1, tail_tokens=60)
        assert overlay is not None
        keeper = chat.agent_state("planner")
        state = keeper.load()
        state.plan = {"goal": "ship it"}
        keeper.save(state)
        manager.update_state({"lang": "en"})
        fresh = manager.create(name="fresh")  # its prompt is not frozen yet
    return {"url": url, "id": chat.id, "fresh": fresh.id, "overlay": overlay}


def test_inspect_a_session(capsys: pytest.CaptureFixture[str], store: dict[str, Any]) -> None:
    code, out, _ = run(capsys, "--db", store["url"], "inspect", store["id"])
    assert code == 0
    overlay = store["overlay"]
    assert "blocks ─" in out and "notes  v1 by model" in out and "ticket CI-42" in out
    assert "agent states ─" in out and "planner  v1 by" in out and '"goal": "ship it"' in out
    assert "compaction overlays ─" in out
    assert f"covers {overlay.covered} messages" in out
    assert f"history {overlay.tokens_before:,} → {overlay.tokens_after:,} tokens" in out
    assert "│ " in out  # the summary, quoted
    assert "compaction.index" not in out


def test_inspect_the_scope_with_versions(
    capsys: pytest.CaptureFixture[str], store: dict[str, Any]
) -> None:
    code, out, _ = run(capsys, "--db", store["url"], "inspect", "--versions")
    assert code == 0
    assert 'user state    v1 {"lang": "en"}' in out and "app state     (none)" in out
    assert "memory  v1 by model" in out and "memory  v2 by user" in out
    assert "Lives in Oslo." in out
    data = json.loads(run(capsys, "--db", store["url"], "inspect", "--json")[1])
    assert data["user"]["state"] == {"data": {"lang": "en"}, "version": 1}
    assert [d["key"] for d in data["user"]["documents"]] == ["memory"]


def test_inspect_json_of_a_session(
    capsys: pytest.CaptureFixture[str], store: dict[str, Any]
) -> None:
    data = json.loads(run(capsys, "--db", store["url"], "inspect", store["id"], "--json")[1])
    namespaces = {d["namespace"] for d in data["documents"]}
    assert {"block", "prompt", "agent"} <= namespaces
    assert [o["covered"] for o in data["overlays"]] == [store["overlay"].covered]


def test_context_is_what_the_turn_builder_sends(
    capsys: pytest.CaptureFixture[str], store: dict[str, Any], app: SessionConfig
) -> None:
    args = ["--db", store["url"], "context", store["id"], "--config", "cliapp:config"]
    data = json.loads(run(capsys, *args, "--json", "--format", "anthropic")[1])
    with (
        sessionary.SessionManager(store["url"], config=app) as manager,
        manager.session(store["id"]).turn() as turn,
    ):
        expected = turn.request("anthropic")
    assert data["request"] == expected
    kinds = [part["kind"] for part in data["tokens"]]
    assert kinds[0] == "system" and "tool" in kinds and "block" in kinds
    summary = f"summary of {store['overlay'].covered} messages"
    assert any(p["label"].endswith(summary) for p in data["tokens"])

    code, out, _ = run(capsys, *args)
    assert code == 0
    assert out.splitlines()[0].split() == ["PART", "TOKENS", "SHARE"]
    assert "  block memory " in out and "tool set_context" in out and "total" in out
    assert "━" in out  # the bars
    assert "system prompt ─" in out and "Prefers trains." in out
    assert f"⋯ {store['overlay'].covered} messages summarised into this by compaction" in out


def test_context_without_config_uses_the_stored_prompt(
    capsys: pytest.CaptureFixture[str], store: dict[str, Any], app: SessionConfig
) -> None:
    with sessionary.SessionManager(store["url"], config=app) as manager:
        frozen = manager.session(store["id"]).freeze_system_prompt()
    data = json.loads(run(capsys, "--db", store["url"], "context", store["id"], "--json")[1])
    assert data["request"]["messages"][0] == {"role": "system", "content": frozen}
    assert "pass --config" in data["notes"][0]


def test_context_stores_nothing(
    capsys: pytest.CaptureFixture[str], store: dict[str, Any], tmp_path: Path
) -> None:
    before = (tmp_path / "x.db").read_bytes()
    args = ["--db", store["url"], "context", store["fresh"], "--config", "cliapp:config"]
    code, out, _ = run(capsys, *args)
    assert code == 0 and "You are terse." in out
    assert (tmp_path / "x.db").read_bytes() == before
    with sessionary.SessionManager(store["url"]) as manager:
        assert manager.documents("session", session_id=store["fresh"], namespace="prompt") == []


def test_context_bad_config(capsys: pytest.CaptureFixture[str], store: dict[str, Any]) -> None:
    for reference, fragment in (
        ("nomodule_xyz:config", "cannot load"),
        ("cliapp", "module:attribute"),
        ("cliapp:name", "not a SessionConfig"),
    ):
        args = ["--db", store["url"], "context", store["id"], "--config", reference]
        code, _, err = run(capsys, *args)
        assert code == 1 and fragment in err, err


def test_show_marks_compacted_ranges(
    capsys: pytest.CaptureFixture[str], store: dict[str, Any]
) -> None:
    covered = store["overlay"].covered
    out = run(capsys, "--db", store["url"], "show", store["id"])[1]
    assert f"⋯ {covered} messages summarised into this by compaction" in out
    assert "turn 0: please update" not in out.split("⋯")[1].split("\n\n")[0]
    raw = run(capsys, "--db", store["url"], "show", store["id"], "--raw")[1]
    assert f"┄┄ from here {covered} messages reach the model as one summary" in raw
    assert raw.count("┄┄ end of the compacted range ┄┄") == 1
    assert "turn 0: please update lib/unit_0.py" in raw
    tree = run(capsys, "--db", store["url"], "show", store["id"], "--tree")[1]
    assert f"┆ {covered} compacted " in tree
    assert sum("┆" in line for line in tree.splitlines()) == covered
    data = json.loads(run(capsys, "--db", store["url"], "show", store["id"], "--json")[1])
    assert data["overlays"][0]["covered"] == covered
    assert data["history"][1]["id"].startswith("compaction_")
