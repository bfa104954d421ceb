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


# ---------------------------------------------------------------------------- escapes

ESCAPES = "\x1b]52;c;cm0gLXJmIH4=\x07 \x1b[2J\x1b[H \x9b31m \x90q\x9c \u202egnp.exe \x7f\x08\r"
STEERING = set("\x1b\x07\x9b\x90\x9c\u202e\x7f\x08\r")


@pytest.fixture
def evil(tmp_path: Path) -> tuple[str, str]:
    """A store whose every stored string a view shows carries terminal escapes."""
    import asyncio
    import sqlite3

    from sessionary import ReasoningPart, TextPart, ToolCallPart, ToolResultPart
    from sessionary.server.keys import Keyring
    from sessionary.stores.registry import open_async_store

    url = f"sqlite:///{tmp_path}/evil.db"
    config = sessionary.SessionConfig().with_block("notes")
    with sessionary.SessionManager(url, config=config, audit=True, actor="bot") as manager:
        chat = manager.create(name="evil", model="m", metadata={"k": ESCAPES})
        chat.append(Message.user(f"deploy {ESCAPES}\nsecond line {ESCAPES}"))
        chat.append(
            Message(
                role="assistant",
                parts=[
                    ReasoningPart(f"thinking {ESCAPES}"),
                    TextPart(f"deploy ok {ESCAPES}"),
                    ToolCallPart(id="c1", name="run", arguments={"cmd": ESCAPES}),
                ],
            )
        )
        chat.append(Message(role="tool", parts=[ToolResultPart("c1", f"out {ESCAPES}")]))
        chat.replace_context_block("notes", f"note {ESCAPES}", author="model")
        chat.update_state({"s": ESCAPES})
        manager.update_state({"u": ESCAPES})
        manager.audit_log.record(
            manager.scope, "bot", "custom", target=ESCAPES, detail={"d": ESCAPES}
        )
        session_id = chat.id
    with sqlite3.connect(f"{tmp_path}/evil.db") as raw:
        raw.execute("UPDATE sessions SET name = ?, model = ?, end_reason = ?", (ESCAPES,) * 3)

    async def key() -> None:
        store = open_async_store(url)
        try:
            await Keyring(store).create("default", None, f"key {ESCAPES}")
        finally:
            await store.close()

    asyncio.run(key())
    return url, session_id


VIEWS = [
    ["ls"],
    ["show", "{id}"],
    ["show", "{id}", "--full"],
    ["show", "{id}", "--tree"],
    ["search", "deploy"],
    ["context", "{id}"],
    ["context", "{id}", "--full"],
    ["inspect", "{id}", "--full", "--versions"],
    ["inspect"],
    ["audit", "--every-user"],
    ["keys", "list"],
    ["scopes"],
]


@pytest.mark.parametrize("view", VIEWS, ids=lambda view: " ".join(view))
def test_stored_escapes_never_reach_the_terminal(
    capsys: pytest.CaptureFixture[str], evil: tuple[str, str], view: list[str]
) -> None:
    url, session_id = evil
    code, out, err = run(capsys, "--db", url, *(word.format(id=session_id) for word in view))
    assert code == 0, err
    assert not STEERING & set(out + err), repr(out + err)
    if view[0] not in ("scopes", "inspect") or len(view) > 1:
        assert "␛" in out  # shown, not dropped: the reader sees something was there


@pytest.mark.parametrize("command", [["show", "{id}", "--json"], ["export", "{id}"]])
def test_json_output_keeps_the_stored_text_escaped(
    capsys: pytest.CaptureFixture[str], evil: tuple[str, str], command: list[str]
) -> None:
    # JSON escapes only C0 controls: C1 controls (0x9b is a CSI of its own), DEL and
    # the bidi overrides would reach a terminal raw. They are written as \u escapes,
    # which parse back to the same text.
    url, session_id = evil
    code, out, _ = run(capsys, "--db", url, *(word.format(id=session_id) for word in command))
    assert code == 0
    assert not STEERING & set(out), repr(out)
    if command[0] == "show":
        assert json.loads(out)["session"]["name"] == ESCAPES
    else:
        records = [json.loads(line) for line in out.splitlines()]
        assert records[0]["session"]["name"] == ESCAPES


def test_an_error_quoting_a_stored_name_shows_its_escapes(
    capsys: pytest.CaptureFixture[str], evil: tuple[str, str]
) -> None:
    url, session_id = evil
    with sessionary.SessionManager(url) as manager:
        manager.create(id=session_id[:-1] + "x", name="twin")
    code, _, err = run(capsys, "--db", url, "show", session_id[:-2])
    one_line_error(code, err, "ambiguous")
    assert not STEERING & set(err)


def test_names_with_control_characters_are_refused(tmp_path: Path) -> None:
    from sessionary.errors import InvalidInput
    from sessionary.server.commands import create_key

    with sessionary.SessionManager(str(tmp_path / "n.db")) as manager:
        for bad in ("a\x1bb", "a\x9bb", "a\x85b"):
            with pytest.raises(InvalidInput):
                manager.create(name=bad)
            with pytest.raises(InvalidInput):
                manager.create(model=bad)
    for bad in ("a\x1b]52;c;x\x07", "a\x9b2J", "a\u202eb"):
        with pytest.raises(InvalidInput):
            create_key(str(tmp_path / "n.db"), "acme", None, bad)


# ---------------------------------------------------------------------------- mistyped paths

CHANGERS = [
    ["keys", "list"],
    ["keys", "revoke", "k1"],
    ["rekey"],
    ["sweep"],
    ["erase", "--tenant", "acme", "--yes"],
    ["rm", "--all", "--yes"],
    ["search", "x"],
]


@pytest.mark.parametrize("args", CHANGERS, ids=lambda args: " ".join(args))
def test_commands_that_change_a_store_never_make_one(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
) -> None:
    monkeypatch.setenv("SESSIONARY_KEYS", "k1=" + "A" * 43 + "=")
    missing = tmp_path / "typo.db"
    code, _, err = run(capsys, *args, "--db", str(missing))
    one_line_error(code, err, "no database at")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", CHANGERS, ids=lambda args: " ".join(args))
def test_commands_that_change_a_store_leave_a_foreign_file_alone(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
) -> None:
    import sqlite3

    monkeypatch.setenv("SESSIONARY_KEYS", "k1=" + "A" * 43 + "=")
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as foreign:
        foreign.execute("CREATE TABLE notes (text TEXT)")
    foreign.close()
    before = path.read_bytes()
    code, _, err = run(capsys, *args, "--db", str(path))
    one_line_error(code, err, "not a sessionary database")
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["app.db"]


def test_rekey_without_keys_opens_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SESSIONARY_KEYS", raising=False)
    code, _, err = run(capsys, "--db", str(tmp_path / "new.db"), "rekey")
    one_line_error(code, err, "SESSIONARY_KEYS")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------- absurd options


@pytest.mark.parametrize("when", ["99999999999d", "999999999d", "99999999999999w", "0001-01-01"])
@pytest.mark.parametrize(
    "option", [["ls", "--since"], ["audit", "--before"], ["rm", "--yes", "--before"]]
)
def test_moments_beyond_the_calendar_are_usage_errors(
    capsys: pytest.CaptureFixture[str], db: Path, option: list[str], when: str
) -> None:
    code, _, err = run(capsys, "--db", str(db), *option, when)
    assert code == 2, err
    assert "Traceback" not in err and "further back than the calendar goes" in err
    assert len(json.loads(run(capsys, "--db", str(db), "ls", "--json")[1])) == 2


@pytest.mark.parametrize(
    ("option", "reference", "fragment"),
    [
        ("--compaction", "json:dumps", "calling 'json:dumps' raised TypeError"),
        ("--config", "sys:exit", "calling 'sys:exit' exited"),
        ("--config", "sessionary:__version__", "is a str, not a SessionConfig"),
    ],
)
def test_context_reports_a_failing_reference_on_one_line(
    capsys: pytest.CaptureFixture[str], db: Path, option: str, reference: str, fragment: str
) -> None:
    session_id = json.loads(run(capsys, "--db", str(db), "ls", "--json")[1])[0]["id"]
    code, _, err = run(capsys, "--db", str(db), "context", session_id, option, reference)
    one_line_error(code, err, fragment)


def test_context_takes_a_config_class_as_a_factory(
    capsys: pytest.CaptureFixture[str], db: Path
) -> None:
    session_id = json.loads(run(capsys, "--db", str(db), "ls", "--json")[1])[0]["id"]
    args = ["context", session_id, "--config", "sessionary.blocks:SessionConfig", "--json"]
    code, out, err = run(capsys, "--db", str(db), *args)
    assert code == 0, err
    assert json.loads(out)["notes"] == []  # the given config, not the stored blocks


# ---------------------------------------------------------------------------- ids


@pytest.fixture
def audited(tmp_path: Path) -> tuple[str, str]:
    """A store whose audit trail holds changes to one session."""
    url = str(tmp_path / "a.db")
    with sessionary.SessionManager(url, audit=True, actor="alice") as manager:
        chat = manager.create(name="audited")
        chat.append(Message.user("hello"))
        chat.update_state({"step": 1})
        manager.create(name="other").update_state({"step": 2})
    return url, chat.id


def test_audit_takes_a_session_prefix_and_shows_whole_ids(
    capsys: pytest.CaptureFixture[str], audited: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, session_id = audited
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = run(capsys, "--db", url, "audit", "--session", session_id[:-4])
    assert code == 0, err
    rows = out.splitlines()[1:]
    assert rows and all(session_id in row for row in rows)
    assert "…" not in out
    whole = json.loads(run(capsys, "--db", url, "audit", "--json")[1])
    assert len(rows) == sum(entry["session_id"] == session_id for entry in whole)


def test_audit_of_a_deleted_session_takes_its_id(
    capsys: pytest.CaptureFixture[str], audited: tuple[str, str]
) -> None:
    url, session_id = audited
    with sessionary.SessionManager(url, audit=True, actor="alice") as manager:
        manager.delete(session_id)
    code, out, err = run(capsys, "--db", url, "audit", "--session", session_id, "--json")
    assert code == 0, err
    assert "session.delete" in {entry["action"] for entry in json.loads(out)}


def test_mcp_refuses_an_unknown_session(
    capsys: pytest.CaptureFixture[str], audited: tuple[str, str]
) -> None:
    pytest.importorskip("mcp")
    url, _ = audited
    code, out, err = run(capsys, "--db", url, "mcp", "--session", "no-such-session")
    one_line_error(code, err, "no session 'no-such-session'")
    assert out == ""


# ---------------------------------------------------------------------------- migrate


def test_migrate_refuses_a_target_holding_other_sessions_before_copying(
    capsys: pytest.CaptureFixture[str], db: Path, tmp_path: Path
) -> None:
    target = tmp_path / "t.db"
    with sessionary.SessionManager(str(target)) as manager:
        manager.create(name="already here")
    code, _, err = run(capsys, "migrate", "--from", str(db), "--to", str(target))
    one_line_error(code, err, "already holds data", "not in the --from store")
    assert len(json.loads(run(capsys, "--db", str(target), "ls", "--json")[1])) == 1

    resumed = tmp_path / "r.db"  # a target holding only the source's sessions: resumed
    assert run(capsys, "migrate", "--from", str(db), "--to", str(resumed))[0] == 0
    code, out, err = run(capsys, "migrate", "--from", str(db), "--to", str(resumed))
    assert code == 0, err
    assert "2 already there" in out and "verified" in out


@pytest.mark.parametrize(
    "spelling", ["sqlite:///{path}", "{folder}/./s.db", "{folder}/../{name}/s.db"]
)
def test_migrate_sees_the_same_file_under_another_name(
    capsys: pytest.CaptureFixture[str], db: Path, spelling: str
) -> None:
    other = spelling.format(path=db, folder=db.parent, name=db.parent.name)
    before = digest(db)
    code, _, err = run(capsys, "migrate", "--from", str(db), "--to", other)
    one_line_error(code, err, "the same store")
    assert digest(db) == before


def test_migrate_leaves_a_foreign_source_alone(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import sqlite3

    path = tmp_path / "app.db"
    with sqlite3.connect(path) as foreign:
        foreign.execute("CREATE TABLE notes (text TEXT)")
    foreign.close()
    before = digest(path)
    code, _, err = run(capsys, "migrate", "--from", str(path), "--to", str(tmp_path / "t.db"))
    one_line_error(code, err, "not a sessionary database")
    assert digest(path) == before


# ---------------------------------------------------------------------------- search


@pytest.mark.parametrize(
    "args",
    [
        ["-question OR answer"],
        ["--limit", "5", "-question OR answer", "--json"],
        ["-question OR answer", "--limit", "5", "--json"],
        ["--", "-question OR answer"],
    ],
)
def test_a_query_may_start_with_a_dash(
    capsys: pytest.CaptureFixture[str], db: Path, args: list[str]
) -> None:
    code, out, err = run(capsys, "--db", str(db), "search", *args)
    assert code == 0, err
    assert "answer" in out and "question" not in out.replace("session", "")


def test_a_one_word_dash_query_says_to_use_double_dash(
    capsys: pytest.CaptureFixture[str], db: Path
) -> None:
    code, _, err = run(capsys, "--db", str(db), "search", "-question")
    assert code == 2 and "goes after '--'" in err
    code, out, err = run(capsys, "--db", str(db), "search", "--help")
    assert "goes after --: sessionary search -- -draft" in " ".join(out.split())


# ---------------------------------------------------------------------------- exit statuses


def test_a_reader_gone_early_is_status_1(tmp_path: Path) -> None:
    """`| head -1`: under PYTHONUNBUFFERED the rest of a short write was dropped, status 0."""
    import os
    import subprocess
    import sys

    url = str(tmp_path / "big.db")
    with sessionary.SessionManager(url) as manager:
        chat = manager.create(name="big")
        chat.append(Message.user("word " * 60_000))
    source = str(Path(sessionary.__file__).parents[1])
    for args in (["show", chat.id, "--json"], ["show", chat.id, "--full"], ["export"]):
        with subprocess.Popen(
            [sys.executable, "-m", "sessionary", "--db", url, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": source, "PYTHONUNBUFFERED": "1"},
        ) as child:
            assert child.stdout is not None and child.stderr is not None
            child.stdout.read(10)  # the reader takes a little, then goes
            child.stdout.close()
            err = child.stderr.read()
            assert (child.wait(timeout=120), err) == (1, b""), args


@pytest.fixture
def busy_port() -> object:
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


@pytest.mark.parametrize("command", [["serve"], ["mcp", "--transport", "http"]])
def test_a_server_that_cannot_listen_is_one_line(
    capsys: pytest.CaptureFixture[str], db: Path, busy_port: int, command: list[str]
) -> None:
    pytest.importorskip("uvicorn")
    for where in (["--port", str(busy_port)], ["--host", "256.1.1.1"]):
        code, _, err = run(capsys, "--db", str(db), *command, *where)
        one_line_error(code, err, "cannot listen on")
