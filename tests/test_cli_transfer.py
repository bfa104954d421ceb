"""`sessionary export` and `import`: whole scopes, streaming, per-session commits, re-runs."""

from __future__ import annotations

import io
import json
import re
import runpy
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import sessionary
from sessionary import CompactionPolicy, Message, SessionConfig
from sessionary._sync.stores.registry import open_store
from sessionary.cli import main
from sessionary.migrate import count_scopes, verify

Result = tuple[int, str, str]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code: int, err: str, *fragments: str) -> None:
    """The error is the last line of stderr; the lines before it are progress."""
    *progress, last = err.splitlines()
    assert code == 1 and last.startswith("sessionary: error: "), err
    assert all(line.startswith("import: ") for line in progress), err
    for fragment in fragments:
        assert fragment in last, err


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/x.db"


def populate(url: str) -> list[str]:
    """A scope holding what export must carry: blocks at every level, overlays, states."""
    config = (
        SessionConfig()
        .with_block("memory", description="About the user", level="user")
        .with_block("house", description="Rules", level="app")
        .with_block("notes")
        .with_cached_prompt()
    )
    policy = CompactionPolicy(trigger_tokens=400, tail_tokens=100, protect_head=1)
    ids = []
    with sessionary.SessionManager(
        url, tenant="acme", user="alice", config=config, compaction=policy
    ) as manager:
        for n in range(3):
            chat = manager.create(name=f"chat {n}", model="m")
            ids.append(chat.id)
            chat.append_context_block("notes", f"note {n}", author="model")
            chat.freeze_system_prompt()
            for turn in range(12):
                chat.append(Message.user(f"turn {turn}: please update lib/unit_{turn}.py"))
                chat.append(Message.assistant(f"Updated lib/unit_{turn}.py and ran the tests."))
            chat.compact(protect_head=1, tail_tokens=100)
            keeper = chat.agent_state()
            state = keeper.load()
            state.plan = {"step": n}
            keeper.save(state)
            chat.update_state({"n": n})
        chat.replace_context_block("memory", "Prefers trains.", author="model")
        chat.append_context_block("memory", "Lives in Oslo.", author="user")
        chat.replace_context_block("house", "Be brief.", author="admin")
        manager.update_state({"lang": "en"})
        manager.update_state({"plan": "pro"}, level="app")
        assert chat.overlays(), "the policy should have compacted"
    return ids


def test_export_import_reproduces_the_scope_exactly(
    capsys: pytest.CaptureFixture[str], url: str, tmp_path: Path
) -> None:
    populate(url)
    dump = tmp_path / "acme.jsonl"
    scope = ["--tenant", "acme", "--user", "alice"]
    code, out, _ = run(capsys, "--db", url, *scope, "export", "-o", str(dump))
    assert code == 0 and out.startswith("exported 3 sessions (72 messages) to ")
    types = [json.loads(line)["type"] for line in dump.read_text().splitlines()]
    assert types[:2] == ["state", "document"]  # the scope's own come first

    other = f"sqlite:///{tmp_path}/other.db"
    code, out, _ = run(capsys, "--db", other, *scope, "import", str(dump))
    assert (code, out) == (0, "imported 3 sessions (72 messages)\n")
    source, target = open_store(url), open_store(other)
    try:
        assert verify(source, target) == []  # migrate's own check, over every scope
        counts = count_scopes(target)
        assert counts == count_scopes(source)
        alice = next(c for s, c in counts.items() if s.user == "alice")
        assert alice.user_state_version == 1 and alice.app_state_version == 1
        assert alice.documents > 3 * 4  # prompts, blocks, agent states, overlays per session
    finally:
        source.close()
        target.close()
    with sessionary.SessionManager(other, tenant="acme", user="alice") as manager:
        memory = manager.documents("user", namespace="block")
        assert [(d.key, d.version) for d in memory] == [("memory", 2)]
        versions = manager.documents("user", namespace="block", versions=True)
        assert [d.author for d in versions] == ["model", "user"]
    again = run(capsys, "--db", other, *scope, "export")[1].splitlines()
    assert again == dump.read_text().splitlines()


def test_import_commits_per_session_and_resumes(
    capsys: pytest.CaptureFixture[str], url: str, tmp_path: Path
) -> None:
    populate(url)
    lines = run(capsys, "--db", url, "--tenant", "acme", "--user", "alice", "export")[1]
    records = [json.loads(line) for line in lines.splitlines()]
    starts = [i for i, r in enumerate(records) if r["type"] == "session"]
    broken = tmp_path / "broken.jsonl"
    cut = starts[2] + 3  # inside the third session
    broken.write_text("".join(json.dumps(r) + "\n" for r in records[:cut]) + '{"type": oops\n')
    other = f"sqlite:///{tmp_path}/other.db"
    scope = ["--db", other, "--tenant", "acme", "--user", "alice"]
    code, _, err = run(capsys, *scope, "import", str(broken))
    one_line_error(code, err, f"line {cut + 1}", "not valid JSON", "the 2 sessions before it stay")
    assert len(json.loads(run(capsys, *scope, "ls", "--json")[1])) == 2  # committed per session

    whole = tmp_path / "whole.jsonl"
    whole.write_text(lines)
    code, _, err = run(capsys, *scope, "import", str(whole))
    one_line_error(code, err, "already in this scope", "--skip-existing or --replace")
    code, out, _ = run(capsys, *scope, "import", str(whole), "--skip-existing")
    assert (code, out) == (
        0,
        "imported 1 session (24 messages), 2 sessions already there left as they were\n",
    )
    source, target = open_store(url), open_store(other)
    try:
        assert verify(source, target) == []
    finally:
        source.close()
        target.close()
    code, out, _ = run(capsys, *scope, "import", str(whole), "--replace")
    assert (code, out) == (0, "imported 3 sessions (72 messages)\n")
    code, _, err = run(capsys, *scope, "import", str(whole), "--replace", "--skip-existing")
    assert code == 2 and "cannot be used together" in err


def test_import_from_stdin_with_plain_progress(
    capsys: pytest.CaptureFixture[str], url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    populate(url)
    dump = run(capsys, "--db", url, "--tenant", "acme", "--user", "alice", "export")[1]

    class Stdin(io.StringIO):
        buffer = io.BytesIO(("\n" + dump + "\n").encode())

    monkeypatch.setattr(sys, "stdin", Stdin())
    code, out, err = run(capsys, "--db", f"sqlite:///{tmp_path}/b.db", "import", "-")
    assert (code, out) == (0, "imported 3 sessions (72 messages)\n")
    assert re.fullmatch(r"import: [\d.]+ kB read, 3 sessions read\n", err)  # no total on a pipe


def test_import_file_progress_is_plain_lines_when_piped(
    capsys: pytest.CaptureFixture[str], url: str, tmp_path: Path
) -> None:
    populate(url)
    dump = tmp_path / "a.jsonl"
    run(capsys, "--db", url, "--tenant", "acme", "--user", "alice", "export", "-o", str(dump))
    code, _, err = run(capsys, "--db", f"sqlite:///{tmp_path}/b.db", "import", str(dump))
    lines = err.splitlines()
    assert code == 0 and 1 <= len(lines) <= 11  # a line per tenth of the file
    assert lines[-1].startswith("import: ") and " of " in lines[-1]


def test_import_bad_record_names_it_and_keeps_earlier_sessions(
    capsys: pytest.CaptureFixture[str], url: str, tmp_path: Path
) -> None:
    populate(url)
    lines = run(capsys, "--db", url, "--tenant", "acme", "--user", "alice", "export")[1]
    records = [json.loads(line) for line in lines.splitlines()]
    last_message = max(i for i, r in enumerate(records) if r["type"] == "message")
    records[last_message]["message"]["role"] = "wizard"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in records))
    other = f"sqlite:///{tmp_path}/other.db"
    code, _, err = run(capsys, "--db", other, "import", str(bad))
    one_line_error(code, err, f"record {last_message + 1}", "wizard", "2 sessions before it")


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("[1, 2]\n", "line 1: expected a JSON object"),
        ('{"type": "nonsense"}\n', "unknown record type 'nonsense'"),
        (b"\xff\xfe\n", "not UTF-8"),
        ("[" * 100_000 + "]" * 100_000 + "\n", "line 1: the JSON is nested too deep"),
        ('{"type": "state", "level": "galaxy", "state": {}}\n', "level (user or app)"),
    ],
)
def test_import_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str | bytes, fragment: str
) -> None:
    source = tmp_path / "in.jsonl"
    if isinstance(content, bytes):
        source.write_bytes(content)
    else:
        source.write_text(content)
    code, _, err = run(capsys, "--db", f"sqlite:///{tmp_path}/x.db", "import", str(source))
    one_line_error(code, err, fragment, "nothing was imported")


def test_import_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    code, _, err = run(capsys, "--db", f"sqlite:///{tmp_path}/x.db", "import", str(missing))
    one_line_error(code, err, "No such file or directory", str(missing))


def test_export_one_session_and_a_missing_one(
    capsys: pytest.CaptureFixture[str], url: str, tmp_path: Path
) -> None:
    ids = populate(url)
    scope = ["--db", url, "--tenant", "acme", "--user", "alice"]
    out = run(capsys, *scope, "export", ids[0][:-2])[1]
    records = [json.loads(line) for line in out.splitlines()]
    assert records[0]["type"] == "session" and records[0]["session"]["id"] == ids[0]
    assert {r.get("session_id") for r in records[1:]} == {ids[0]}  # no scope records
    target = tmp_path / "out.jsonl"
    code, _, err = run(capsys, *scope, "export", "nope", "-o", str(target))
    one_line_error(code, err, "no session 'nope'")
    assert not target.exists()


def test_a_closed_pipe_is_quiet(url: str) -> None:
    populate(url)
    export = [sys.executable, "-m", "sessionary", "--db", url, "--tenant", "acme"]
    command = shlex.join([*export, "--user", "alice", "export"]) + " | head -c 10"
    done = subprocess.run(
        command, shell=True, capture_output=True, text=True, timeout=120, check=False
    )
    assert "Traceback" not in done.stderr and len(done.stdout) == 10


def test_import_memory_bench_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    bench = runpy.run_path(str(Path(__file__).resolve().parent.parent / "bench" / "import_rss.py"))
    assert bench["main"](["--megabytes", "0.4"]) == 0
    table = capsys.readouterr().out
    assert "| export | sessions | messages | import time | peak RSS |" in table
    assert table.count(" MB |") >= 4


def test_round_trip_into_every_shared_backend(
    capsys: pytest.CaptureFixture[str], url: str, tmp_path: Path, shared_store_url: str
) -> None:
    """The export of a SQLite scope, imported by the CLI into each backend, verifies."""
    populate(url)
    dump = tmp_path / "acme.jsonl"
    scope = ["--tenant", "acme", "--user", "alice"]
    assert run(capsys, "--db", url, *scope, "export", "-o", str(dump))[0] == 0
    code, out, err = run(capsys, "--db", shared_store_url, *scope, "import", str(dump))
    assert (code, out) == (0, "imported 3 sessions (72 messages)\n"), err
    source, target = open_store(url), open_store(shared_store_url)
    try:
        assert verify(source, target) == []
    finally:
        source.close()
        target.close()
    again = run(capsys, "--db", shared_store_url, *scope, "export")[1]
    assert sorted(again.splitlines()) == sorted(dump.read_text().splitlines())


def test_an_import_failing_after_the_scopes_records_says_they_stay(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = tmp_path / "in.jsonl"
    state = {"type": "state", "level": "user", "state": {"data": {"u": 1}, "version": 1}}
    source.write_text(json.dumps(state) + "\n[1, 2]\n")
    target = f"sqlite:///{tmp_path}/x.db"
    code, _, err = run(capsys, "--db", target, "import", str(source))
    one_line_error(code, err, "line 2: expected a JSON object", "no session was imported")
    assert "nothing was imported" not in err
    assert sessionary.SessionManager(target).get_state("user").data == {"u": 1}
