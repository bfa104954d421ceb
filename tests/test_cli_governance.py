"""The command line over governed data: encryption keys from $SESSIONARY_KEYS and `rekey`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessionary import Encryption, Keyring, Message, SessionManager
from sessionary.cli import main
from sessionary.crypto import generate_key


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_commands_read_through_the_keys_in_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path}/x.db"
    old, new = generate_key(), generate_key()
    with SessionManager(url, encryption=Encryption(Keyring.from_text(f"k1={old}"))) as manager:
        chat = manager.create(name="secret")
        chat.append(Message.user("the vault code is 0451"))

    monkeypatch.delenv("SESSIONARY_KEYS", raising=False)
    code, out, _ = run(capsys, "--db", url, "show", chat.id)  # without keys: the sealed form
    assert code == 0 and "0451" not in out
    monkeypatch.setenv("SESSIONARY_KEYS", f"k1={new}")  # the wrong key
    code, _, err = run(capsys, "--db", url, "show", chat.id)
    assert code == 1 and "does not open" in err and new not in err

    monkeypatch.setenv("SESSIONARY_KEYS", f"k2={new},k1={old}")
    code, out, _ = run(capsys, "--db", url, "show", chat.id)
    assert code == 0 and "the vault code is 0451" in out
    code, out, err = run(capsys, "--db", url, "rekey", "--json")
    assert code == 0, err
    assert json.loads(out) == {"messages": 1, "states": 0, "documents": 0}
    assert new not in out + err and old not in out + err

    monkeypatch.setenv("SESSIONARY_KEYS", f"k2={new}")
    code, out, _ = run(capsys, "--db", url, "show", chat.id)
    assert code == 0 and "the vault code is 0451" in out


def test_rekey_without_keys_says_what_to_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SESSIONARY_KEYS", raising=False)
    code, _, err = run(capsys, "--db", f"sqlite:///{tmp_path}/x.db", "rekey")
    assert code == 1 and "SESSIONARY_KEYS" in err


def test_a_malformed_keyring_is_one_line_that_shows_no_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SESSIONARY_KEYS", "k1=c2hvcnQ=")  # base64, but 5 bytes
    code, _, err = run(capsys, "--db", f"sqlite:///{tmp_path}/x.db", "ls")
    assert code == 1 and err.startswith("sessionary: error: ") and "c2hvcnQ" not in err
