"""The data governance commands: `sessionary erase` and `sessionary sweep`."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

import sessionary
from sessionary.cli import main

Result = tuple[int, str, str]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/x.db"
    with sessionary.SessionManager(url) as manager:
        for tenant, user in [("acme", "erin"), ("acme", "otto"), ("zeta", "erin")]:
            manager.for_user(user, tenant=tenant).create(id="s")
    return url


def _ids(url: str, tenant: str, user: str) -> list[str]:
    with sessionary.SessionManager(url, tenant=tenant, user=user) as manager:
        return [info.id for info in manager.list()]


def test_erase_a_user(capsys: pytest.CaptureFixture[str], url: str) -> None:
    code, out, err = run(capsys, "erase", "--db", url, "--tenant", "acme", "--user", "erin", "-y")
    assert (code, out, err) == (0, "erased user 'erin' of 'acme': 1 session\n", "")
    assert _ids(url, "acme", "erin") == []
    assert _ids(url, "acme", "otto") == _ids(url, "zeta", "erin") == ["s"]


def test_erase_a_tenant(capsys: pytest.CaptureFixture[str], url: str) -> None:
    code, out, _ = run(capsys, "--db", url, "erase", "--tenant", "acme", "--yes")
    assert (code, out) == (0, "erased tenant 'acme': 2 sessions\n")
    assert _ids(url, "acme", "erin") == _ids(url, "acme", "otto") == []
    assert _ids(url, "zeta", "erin") == ["s"]


def test_erase_asks_first(
    capsys: pytest.CaptureFixture[str], url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run(capsys, "erase", "--db", url, "--tenant", "acme")  # no terminal
    assert code == 1 and "pass --yes" in err
    monkeypatch.setattr(sys, "stdin", _Terminal("n\n"))
    code, _, err = run(capsys, "erase", "--db", url, "--tenant", "acme")
    assert code == 1 and "Erase everything of tenant 'acme'?" in err and "nothing erased" in err
    assert _ids(url, "acme", "erin") == ["s"]
    monkeypatch.setattr(sys, "stdin", _Terminal("y\n"))
    assert run(capsys, "erase", "--db", url, "--tenant", "acme")[1].startswith("erased tenant")


def test_erase_needs_a_tenant_and_refuses_a_bad_id(
    capsys: pytest.CaptureFixture[str], url: str
) -> None:
    assert run(capsys, "erase", "--db", url, "--yes")[0] == 2
    code, _, err = run(capsys, "erase", "--db", url, "--tenant", "a:b", "--yes")
    assert code == 1 and "tenant" in err
    assert _ids(url, "acme", "erin") == ["s"]


def test_sweep_deletes_only_expired_sessions(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path}/ttl.db"
    with sessionary.SessionManager(url) as manager:
        manager.create(id="old", ttl=60)
        manager.create(id="kept")
        manager.for_user("other").create(id="old")
    # Time moves forward only in the file: the sessions were created two minutes ago.
    import sqlite3

    with sqlite3.connect(f"{tmp_path}/ttl.db") as db:
        db.execute("UPDATE sessions SET created_us = created_us - 120000000, updated_us = "
                   "updated_us - 120000000 WHERE id = 'old' AND user_id = 'default'")  # fmt: skip
    assert run(capsys, "sweep", "--db", url, "--batch-size", "1") == (
        0,
        "swept 1 expired session\n",
        "",
    )
    assert run(capsys, "sweep", "--db", url)[1] == "swept 0 expired sessions\n"
    assert _ids(url, "default", "default") == ["kept"]
    assert _ids(url, "default", "other") == ["old"]
    assert run(capsys, "sweep", "--db", url, "--batch-size", "0")[0] == 2
