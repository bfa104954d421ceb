"""The server's command functions, and the `sessionary serve|mcp|keys` commands over them."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from sessionary import SessionManager
from sessionary.cli import main
from sessionary.crypto import Encryption
from sessionary.errors import InvalidInput, NotFound
from sessionary.server import commands


def test_keys_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "keys.db")
    key, token = commands.create_key(db, "acme", "ada", "laptop")
    assert token.startswith("sess_" + key.id + ".") and (key.tenant, key.user) == ("acme", "ada")
    assert [k.id for k in commands.list_keys(db)] == [key.id]
    assert commands.revoke_key(db, key.id).revoked_at is not None
    assert commands.list_keys(db, "acme")[0].revoked_at is not None
    with pytest.raises(NotFound):
        commands.revoke_key(db, "0123456789abcdef")
    assert main(["--db", db, "keys", "create", "acme", "--user", "bo"]) == 0
    assert '"token": "sess_' in capsys.readouterr().out
    assert main(["--db", db, "keys", "list", "--tenant", "acme", "--json"]) == 0
    listed = capsys.readouterr().out
    assert '"user": "bo"' in listed and "secret" not in listed and "sess_" not in listed
    assert main(["--db", db, "keys", "revoke", "nope"]) == 1
    assert "no API key" in capsys.readouterr().err


def test_block_specs_and_refusals() -> None:
    spec = commands.parse_block("notes:skill:app")
    assert (spec.label, spec.kind, spec.level) == ("notes", "skill", "app")
    assert commands.parse_block("memory").kind == "writable"
    with pytest.raises(InvalidInput):
        commands.parse_block("bad label")
    with pytest.raises(InvalidInput, match="loopback"):
        commands.serve("memory://", host="0.0.0.0", auth=False)


def test_every_command_has_help() -> None:
    for argv in (["serve", "--help"], ["mcp", "--help"], ["keys", "create", "--help"]):
        run = subprocess.run(
            [sys.executable, "-m", "sessionary", *argv], capture_output=True, text=True
        )
        assert run.returncode == 0 and "Usage: sessionary" in run.stdout, run.stderr


def test_no_auth_is_refused_off_loopback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", "memory://", "serve", "--host", "0.0.0.0", "--no-auth"]) == 1
    assert "loopback" in capsys.readouterr().err
    argv = ["--db", "memory://", "mcp", "--transport", "http", "--host", "0.0.0.0", "--no-auth"]
    assert main(argv) == 1
    assert "loopback" in capsys.readouterr().err


async def test_mcp_over_stdio(tmp_path: Path) -> None:
    db = str(tmp_path / "mcp.db")
    with SessionManager(db, tenant="acme", user="ada") as mgr:
        mgr.create(id="chat").append({"role": "user", "content": "the staging password rotates"})
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "sessionary", "--db", db, "--tenant", "acme", "--user", "ada", "mcp"],
    )
    async with Client(params) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert names == ["set_context", "session_search", "session_list", "session_history"]
        found = await client.call_tool("session_search", {"query": "staging"})
        assert "the «staging» password rotates" in found.content[0].text
        args = {"session_id": "chat", "label": "memory", "content": "rotate monthly"}
        assert not (await client.call_tool("set_context", args)).is_error


def test_serve_and_mcp_take_the_keys_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, object] = {}
    monkeypatch.setattr(commands, "serve", lambda db, **kw: seen.update(serve=kw["encryption"]))
    monkeypatch.setattr(commands, "mcp", lambda db, **kw: seen.update(mcp=kw["encryption"]))
    assert main(["--db", "memory://", "serve"]) == 0
    assert main(["--db", "memory://", "mcp"]) == 0
    assert seen == {"serve": None, "mcp": None}
    key = base64.b64encode(bytes(range(32))).decode()
    monkeypatch.setenv("SESSIONARY_KEYS", f"k1={key}")
    assert main(["--db", "memory://", "serve"]) == 0
    assert main(["--db", "memory://", "mcp"]) == 0
    for encryption in seen.values():
        assert isinstance(encryption, Encryption) and encryption.keyring.current == "k1"


def test_serve_takes_extra_host_names(monkeypatch: pytest.MonkeyPatch) -> None:
    # A reverse proxy's name: without it a --no-auth server answers the proxy 421.
    seen: list[object] = []
    monkeypatch.setattr(commands, "serve", lambda db, **kw: seen.append(kw["allowed_hosts"]))
    assert main(["--db", "memory://", "serve", "--no-auth"]) == 0
    args = ["--db", "memory://", "serve", "--allow-host", "a.example", "--allow-host", "b"]
    assert main(args) == 0
    assert seen == [(), ("a.example", "b")]
