"""The command line under misuse: outputs that would destroy data, hostile stored text,
mistyped paths, absurd options. Each case is an error on one line that changes nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import sessionary
from sessionary import Message
from sessionary.cli import _write, main

Result = tuple[int, str, str]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code: int, err: str, *fragments: str) -> None:
    assert code == 1, err
    assert err.startswith("sessionary: error: ") and err.count("\n") == 1, err
    for fragment in fragments:
        assert fragment in err, err


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A SQLite store holding two short sessions."""
    path = tmp_path / "s.db"
    with sessionary.SessionManager(str(path)) as manager:
        for n in range(2):
            chat = manager.create(name=f"chat {n}", model="m")
            chat.append(Message.user(f"question {n}"))
            chat.append(Message.assistant(f"answer {n}"))
    return path


# ---------------------------------------------------------------------------- export


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm"])
def test_export_refuses_the_stores_own_file(
    capsys: pytest.CaptureFixture[str], db: Path, suffix: str
) -> None:
    own = Path(f"{db}{suffix}")
    if not own.exists():
        own.write_bytes(b"")  # as a live writer's journal would be
    before = digest(db)
    code, _, err = run(capsys, "--db", str(db), "export", "-o", str(own))
    one_line_error(code, err, "the store's own file")
    assert digest(db) == before
    assert len(json.loads(run(capsys, "--db", str(db), "ls", "--json")[1])) == 2


def test_export_refuses_the_stores_file_by_another_name(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
) -> None:
    link = tmp_path / "link.db"
    link.symlink_to(db)
    before = digest(db)
    code, _, err = run(capsys, "--db", f"sqlite:///{db}", "export", "-o", str(link))
    one_line_error(code, err, "the store's own file")
    assert digest(db) == before


def test_a_failed_export_leaves_the_old_output_as_it_was(
    capsys: pytest.CaptureFixture[str],
    db: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    output = tmp_path / "out.jsonl"
    output.write_text("the previous export\n")
    output.chmod(0o640)

    def broken(stream: object, records: object) -> tuple[int, int]:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_write, "_write_records", broken)
    code, _, err = run(capsys, "--db", str(db), "export", "-o", str(output))
    one_line_error(code, err, "No space left on device")
    assert output.read_text() == "the previous export\n"
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]

    monkeypatch.undo()
    code, out, _ = run(capsys, "--db", str(db), "export", "-o", str(output))
    assert code == 0 and "exported 2 sessions" in out
    assert output.read_text().count('"type":"session"') == 2
    assert output.stat().st_mode & 0o777 == 0o640  # replaced, with the mode it had
