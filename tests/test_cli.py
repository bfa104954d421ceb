"""The `sessionary` command line, run in-process through `main` and once as real programs."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import sessionary
from sessionary import Message, ReasoningPart, TextPart, ToolCallPart, _demo, _render, cli
from sessionary._render import Style, render_message, render_tree
from sessionary.cli import build_parser, main

Result = tuple[int, str, str]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code: int, err: str, *fragments: str) -> None:
    assert code == 1
    assert "Traceback" not in err
    assert err.startswith("sessionary: error: ")
    assert err.count("\n") == 1, err
    for fragment in fragments:
        assert fragment in err


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/x.db"


@pytest.fixture
def demo(capsys: pytest.CaptureFixture[str], url: str) -> dict[str, str]:
    """A store holding one demo run: the main session and its fork."""
    code, out, _ = run(capsys, "--db", url, "demo")
    assert code == 0
    rows = json.loads(run(capsys, "--db", url, "ls", "--json")[1])
    by_name = {row["name"]: row["id"] for row in rows}
    return {
        "main": by_name["demo: why do the tests fail?"],
        "fork": by_name["demo: regression test first"],
        "output": out,
    }


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(actions) == 1
    return dict(actions[0].choices)


def command_help() -> dict[str, str | None]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {choice.dest: choice.help for choice in action._choices_actions}


# ------------------------------------------------------------------------- help


def test_public_names() -> None:
    assert sorted(cli.__all__) == sorted(
        ["DEFAULT_DB", "ENV_URL", "CLIError", "Context", "build_parser", "main", "show_lines"]
    )
    assert sorted(_demo.__all__) == ["Demo", "build_demo"]
    renderers = ["render_hit", "render_message", "render_session", "render_session_table"]
    assert sorted(_render.__all__) == sorted(
        ["Style", "plural", "short_id", "summarize", *renderers, "render_tree"]
    )


def test_the_commands() -> None:
    assert sorted(subcommands()) == [
        "demo", "export", "import", "ls", "migrate", "rm", "search", "show"
    ]  # fmt: skip


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_command_has_help(capsys: pytest.CaptureFixture[str], name: str) -> None:
    assert command_help()[name], f"command {name!r} has no help text"
    code, out, err = run(capsys, name, "--help")
    assert code == 0
    assert out.startswith(f"usage: sessionary {name}")
    assert "--db URL" in out  # the store options work after the command too
    assert err == ""


def test_top_level_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for name, text in command_help().items():
        assert name in out
        assert text is not None and text in out
    assert "SESSIONARY_URL" in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert (code, out.strip()) == (0, f"sessionary {sessionary.__version__}")


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], url: str) -> None:
    for args in ([], ["frobnicate"], ["--db", url, "ls", "--limit", "0"], ["show"]):
        code, _, err = run(capsys, *args)
        assert code == 2, args
        assert "usage: sessionary" in err
        assert "Traceback" not in err


# ------------------------------------------------------------------------- demo


def test_demo_shows_tree_history_search_and_hints(demo: dict[str, str], url: str) -> None:
    out = demo["output"]
    assert demo["main"] in out and demo["fork"] in out
    assert "├─ user" in out and "└─ user" in out and "◀ head" in out  # the branch, drawn
    assert '→ run_tests(path="tests/", args=["-x", "-q"])' in out
    assert "← src/shop/discount.py:3:from decimal import Decimal" in out
    assert "TypeError: unsupported operand type(s)" in out
    assert "✻ Tests broke after a merge" in out  # reasoning, abbreviated
    assert "**Decimal**" in out  # search hits, marks kept as-is off a terminal
    assert f"sessionary --db {url} show {demo['main']} --tree" in out
    assert "\x1b[" not in out  # no colors off a terminal


def test_demo_is_safe_to_run_again(capsys: pytest.CaptureFixture[str], url: str) -> None:
    for _ in range(2):
        assert run(capsys, "--db", url, "demo")[0] == 0
    rows = json.loads(run(capsys, "--db", url, "ls", "--json")[1])
    assert len(rows) == 4
    assert len({row["id"] for row in rows}) == 4


def test_demo_builds_what_it_promises(demo: dict[str, str], url: str) -> None:
    with sessionary.SessionManager(url) as manager:
        chat = manager.session(demo["main"])
        info = chat.info()
        assert info.message_count == 16 and info.input_tokens > 0 and info.cost > 0
        assert "files_touched" in chat.get_state().data
        history = chat.history()
        assert history[0].role == "system"
        assert history[-1].id == info.head_id
        branching = [m for m in history if len(chat.branches(m.id)) == 2]
        assert len(branching) == 1  # the edited question hangs off the diagnosis
        fork = manager.get(demo["fork"])
        assert fork is not None
        assert fork.parent_session_id == demo["main"] and fork.end_reason == "completed"
        names = {call.name for m in history for call in m.tool_calls}
        assert names == {"run_tests", "grep", "read_file"}


# ------------------------------------------------------------------------- ls


def test_ls_table_and_json(
    capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str
) -> None:
    code, out, _ = run(capsys, "--db", url, "ls")
    lines = out.splitlines()
    assert code == 0
    assert lines[0].split() == ["ID", "NAME", "MSGS", "UPDATED", "MODEL", "ENDED"]
    assert lines[1].startswith(demo["fork"]) and lines[1].endswith("completed")  # newest first
    assert lines[2].startswith(demo["main"]) and " 16 " in lines[2]
    rows = json.loads(run(capsys, "--db", url, "ls", "--json")[1])
    assert [row["id"] for row in rows] == [demo["fork"], demo["main"]]
    assert rows[0]["end_reason"] == "completed"


def test_ls_limit_and_all(
    capsys: pytest.CaptureFixture[str], url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with sessionary.SessionManager(url) as manager:
        ids = [manager.create(name=f"s{i}").id for i in range(5)]
    code, out, err = run(capsys, "--db", url, "ls", "--limit", "2")
    assert code == 0
    assert len(out.splitlines()) == 3
    assert "--all" in err
    monkeypatch.setattr(cli, "_LIST_PAGE", 2)  # so --all has to follow the cursor
    rows = json.loads(run(capsys, "--db", url, "ls", "--all", "--json")[1])
    assert sorted(row["id"] for row in rows) == sorted(ids)
    code, out, err = run(capsys, "--db", url, "ls", "--all")
    assert len(out.splitlines()) == 6 and err == ""


def test_ls_empty_store(capsys: pytest.CaptureFixture[str], url: str) -> None:
    sessionary.SessionManager(url).close()
    assert run(capsys, "--db", url, "ls") == (0, "", "no sessions\n")
    assert run(capsys, "--db", url, "ls", "--json") == (0, "[]\n", "")


# ------------------------------------------------------------------------- show


def test_show_history(capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str) -> None:
    code, out, _ = run(capsys, "--db", url, "show", demo["main"])
    assert code == 0
    assert out.startswith(f"session {demo['main']}\n")
    assert "  name      demo: why do the tests fail?" in out
    assert "  state     v3 " in out
    assert "Fix it, but keep money in Decimal" in out  # the head's branch ...
    assert "convert the rate to float" not in out  # ... and not the other one
    assert "… 7 more lines …" in out  # long tool output keeps its start and its end
    assert "1 failed, 5 passed in 0.42s" in out
    full = run(capsys, "--db", url, "show", demo["main"], "--full")[1]
    assert "more lines" not in full and "cart.apply(Discount.percent" in full


def test_show_limit(capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str) -> None:
    out = run(capsys, "--db", url, "show", demo["main"], "--limit", "2")[1]
    # the last two are a tool result and the answer; the result keeps its call with it
    assert "… 10 earlier messages not shown" in out
    assert out.count("\nassistant  ") + out.count("\ntool  ") == 3
    assert '→ run_tests(path="tests/", args=["-q"])' in out


def test_show_tree(capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str) -> None:
    code, out, _ = run(capsys, "--db", url, "show", demo["main"], "--tree")
    assert code == 0
    tree = out.split("\n\n", 1)[1].splitlines()
    assert len(tree) == 16
    assert tree[0].startswith("system ")
    assert tree[9].startswith("├─ user ") and "convert the rate to float" in tree[9]
    assert tree[10].startswith("│  assistant ")
    assert tree[12].startswith("└─ user ") and "keep money in Decimal" in tree[12]
    assert tree[15].startswith("   assistant ") and tree[15].endswith("◀ head")
    assert sum("◀ head" in line for line in tree) == 1


def test_show_json(capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str) -> None:
    data = json.loads(run(capsys, "--db", url, "show", demo["main"], "--json")[1])
    assert data["session"]["id"] == demo["main"]
    assert data["state"]["version"] == 3
    history = data["history"]
    assert len(history) == 13 and history[-1]["id"] == data["session"]["head_id"]
    tree = json.loads(run(capsys, "--db", url, "show", demo["main"], "--json", "--tree")[1])
    assert len(tree["messages"]) == 16
    limited = json.loads(
        run(capsys, "--db", url, "show", demo["main"], "--json", "--limit", "4")[1]
    )
    assert [m["id"] for m in limited["history"]] == [m["id"] for m in history[-4:]]


# ------------------------------------------------------------------------- search


def test_search(capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str) -> None:
    code, out, _ = run(capsys, "--db", url, "search", "TypeError", "--limit", "3")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 6
    assert "session " in lines[0] and "message " in lines[0] and "rank " in lines[0]
    assert "**TypeError**" in out


def test_search_filters_and_json(
    capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str
) -> None:
    args = ["--db", url, "search", "Decimal", "--json"]
    hits = json.loads(run(capsys, *args, "--role", "tool")[1])
    assert hits and {hit["role"] for hit in hits} == {"tool"}
    hits = json.loads(run(capsys, *args, "--session", demo["fork"])[1])
    assert hits and {hit["session_id"] for hit in hits} == {demo["fork"]}
    assert set(hits[0]) == {"session_id", "message_id", "role", "rank", "snippet", "created_at"}


def test_search_no_match(
    capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str
) -> None:
    assert run(capsys, "--db", url, "search", "zyzzyva") == (0, "", "no matches\n")


@pytest.mark.parametrize(
    "query", ['"unbalanced', "*", "NEAR(", "a OR", "-", "''", "col:x", "\x00", "(", '^*"-']
)
def test_hostile_search_queries(
    capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str, query: str
) -> None:
    code, _, err = run(capsys, "--db", url, "search", "--", query)
    assert code in (0, 1)
    if code == 1:
        assert_one_line_error(code, err)


# ------------------------------------------------------------------------- export and import


def test_export_import_round_trip(
    capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str, tmp_path: Path
) -> None:
    dump = tmp_path / "all.jsonl"
    code, out, _ = run(capsys, "--db", url, "export", "-o", str(dump))
    assert (code, out) == (0, f"exported 2 sessions (29 messages) to {dump}\n")
    lines = dump.read_text(encoding="utf-8").splitlines()
    assert run(capsys, "--db", url, "export")[1].splitlines() == lines
    records = [json.loads(line) for line in lines]
    assert [r["type"] for r in records].count("session") == 2

    other = f"sqlite:///{tmp_path}/other.db"
    code, out, _ = run(capsys, "--db", other, "import", str(dump))
    assert (code, out) == (0, "imported 2 sessions (29 messages)\n")
    assert run(capsys, "--db", other, "export")[1].splitlines() == lines


def test_export_one_session(
    capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str
) -> None:
    code, out, _ = run(capsys, "--db", url, "export", demo["fork"])
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert records[0]["type"] == "session" and records[0]["session"]["id"] == demo["fork"]
    assert len(records) == 1 + 13
    assert {r["session_id"] for r in records[1:]} == {demo["fork"]}


def test_export_missing_session_makes_no_file(
    capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str, tmp_path: Path
) -> None:
    target = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "--db", url, "export", "nope", "-o", str(target))
    assert_one_line_error(code, err, "no session 'nope'")
    assert not target.exists()


def test_import_from_stdin(
    capsys: pytest.CaptureFixture[str],
    demo: dict[str, str],
    url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dump = run(capsys, "--db", url, "export", demo["main"])[1]
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n" + dump + "\n"))
    code, out, _ = run(capsys, "--db", f"sqlite:///{tmp_path}/b.db", "import", "-")
    assert (code, out) == (0, "imported 1 session (16 messages)\n")


def _lines_of(capsys: pytest.CaptureFixture[str], url: str) -> list[str]:
    return run(capsys, "--db", url, "export")[1].splitlines()


def test_import_malformed_line_imports_nothing(
    capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str, tmp_path: Path
) -> None:
    lines = _lines_of(capsys, url)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:20], '{"type": "message", oops', *lines[20:]]) + "\n")
    other = f"sqlite:///{tmp_path}/other.db"
    code, _, err = run(capsys, "--db", other, "import", str(bad))
    assert_one_line_error(code, err, "line 21", "not valid JSON", "nothing imported")
    assert run(capsys, "--db", other, "ls", "--json")[1] == "[]\n"


def test_import_bad_record_in_a_later_session_imports_nothing(
    capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str, tmp_path: Path
) -> None:
    records = [json.loads(line) for line in _lines_of(capsys, url)]
    records[-1]["message"]["role"] = "wizard"  # the last message of the second session
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in records))
    other = f"sqlite:///{tmp_path}/other.db"
    code, _, err = run(capsys, "--db", other, "import", str(bad))
    assert_one_line_error(code, err, f"record {len(records)}", "wizard")
    assert run(capsys, "--db", other, "ls", "--json")[1] == "[]\n"


def test_import_twice_is_refused(
    capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str, tmp_path: Path
) -> None:
    dump = tmp_path / "all.jsonl"
    run(capsys, "--db", url, "export", "-o", str(dump))
    code, _, err = run(capsys, "--db", url, "import", str(dump))
    assert_one_line_error(code, err, "2 sessions already in this scope", "nothing imported")


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("[1, 2]\n", "line 1: expected a JSON object"),
        ('{"type": "nonsense"}\n', "unknown record type 'nonsense'"),
        (b"\xff\xfe\n", "not UTF-8"),
        ("[" * 100_000 + "]" * 100_000 + "\n", "line 1: the JSON is nested too deep"),
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
    assert_one_line_error(code, err, fragment)


def test_import_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    code, _, err = run(capsys, "--db", f"sqlite:///{tmp_path}/x.db", "import", str(missing))
    assert_one_line_error(code, err, "No such file or directory", str(missing))


# ------------------------------------------------------------------------- rm


def test_rm(capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str) -> None:
    code, _, err = run(capsys, "--db", url, "rm", demo["main"], "nope")
    assert_one_line_error(code, err, "no session 'nope'", "nothing deleted")
    assert len(json.loads(run(capsys, "--db", url, "ls", "--json")[1])) == 2
    assert run(capsys, "--db", url, "rm", demo["main"], demo["main"]) == (
        0,
        "deleted 1 session\n",
        "",
    )
    rows = json.loads(run(capsys, "--db", url, "ls", "--json")[1])
    assert [row["id"] for row in rows] == [demo["fork"]]
    code, _, err = run(capsys, "--db", url, "show", demo["main"])
    assert_one_line_error(code, err, "no session")


# ------------------------------------------------------------------------- errors and options


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["show", "nope"], "no session 'nope' in this scope"),
        (["show", "a/b"], "session id 'a/b'"),
        (["show", "nope", "--tree"], "no session 'nope'"),
        (["export", "nope"], "no session 'nope'"),
        (["search", "*"], "at least one word"),
        (["--tenant", "bad tenant", "ls"], "tenant"),
    ],
)
def test_errors_are_one_line(
    capsys: pytest.CaptureFixture[str],
    demo: dict[str, str],
    url: str,
    args: list[str],
    fragment: str,
) -> None:
    code, out, err = run(capsys, "--db", url, *args)
    assert_one_line_error(code, err, fragment)
    assert out == ""


@pytest.mark.parametrize(
    ("bad_url", "fragment"),
    [
        ("postgresql://x", "postgresql://x"),
        ("nope://x", "nope://x"),
        ("sqlite://host/x.db", "sqlite://host/x.db"),
        ("sqlite:///", "no database path"),
        ("x.db?bogus=1", "unknown store option 'bogus'"),
    ],
)
@pytest.mark.parametrize("command", ["ls", "demo"])
def test_bad_store_url(
    capsys: pytest.CaptureFixture[str], bad_url: str, fragment: str, command: str
) -> None:
    code, out, err = run(capsys, "--db", bad_url, command)
    assert_one_line_error(code, err, fragment)
    assert out == ""


def test_missing_database_is_not_created(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "missing.db"
    for db in (str(path), f"sqlite:///{path}"):
        code, _, err = run(capsys, "--db", db, "ls")
        assert_one_line_error(code, err, "no database at")
    assert not path.exists()


def test_not_a_database(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello, not a database\n" * 100)
    code, _, err = run(capsys, "--db", str(path), "ls")
    assert_one_line_error(code, err)


def test_plain_path_and_env_var(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "env.db"
    monkeypatch.setenv("SESSIONARY_URL", str(path))
    code, out, _ = run(capsys, "demo")
    assert code == 0 and path.exists()
    assert "  sessionary ls\n" in out  # no --db in the hints: the environment names the store
    assert len(json.loads(run(capsys, "ls", "--json")[1])) == 2
    assert len(json.loads(run(capsys, "--db", f"sqlite:///{path}", "ls", "--json")[1])) == 2


def test_default_database_is_in_the_working_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SESSIONARY_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "demo")[0] == 0
    assert (tmp_path / "sessionary.db").exists()


def test_options_after_the_command(
    capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str, tmp_path: Path
) -> None:
    assert len(json.loads(run(capsys, "ls", "--db", url, "--json")[1])) == 2
    # the same store seen by another user holds nothing: scope is a wall
    assert run(capsys, "--db", url, "ls", "--user", "bob", "--json")[1] == "[]\n"
    assert run(capsys, "--db", url, "--tenant", "t2", "ls", "--json")[1] == "[]\n"
    code, _, err = run(capsys, "--db", url, "--user", "bob", "show", demo["main"])
    assert_one_line_error(code, err, "no session")


def test_scoped_demo_hints(capsys: pytest.CaptureFixture[str], url: str) -> None:
    out = run(capsys, "--db", url, "--user", "alice", "demo")[1]
    assert f"sessionary --db {url} --user alice ls" in out


def test_keyboard_interrupt_exits_130_quietly(
    capsys: pytest.CaptureFixture[str],
    demo: dict[str, str],
    url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "render_session_table", interrupted)
    assert run(capsys, "--db", url, "ls") == (130, "", "")


# ------------------------------------------------------------------------- renderers


def _chain(n: int) -> list[Message]:
    messages: list[Message] = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        message = Message(role=role, parts=[TextPart(f"message {i}")], id=f"m{i}")
        message.parent_id = messages[-1].id if messages else None
        messages.append(message)
    return messages


def test_tree_of_a_long_chain_does_not_recurse() -> None:
    messages = _chain(5000)
    lines = render_tree(messages, "m4999", Style())
    assert len(lines) == 5000
    assert lines[0].startswith("user      m0  message 0")
    assert lines[-1].endswith("◀ head") and not lines[-1].startswith(("│", "├", "└"))


def test_tree_with_several_roots_and_nested_branches() -> None:
    def msg(key: str, parent: str | None) -> Message:
        message = Message.user(f"text {key}", id=key)
        message.parent_id = parent
        return message

    messages = [
        msg("a", None),
        msg("b", "a"),
        msg("c", "a"),
        msg("d", "c"),
        msg("e", "c"),
        msg("z", None),
    ]
    lines = render_tree(messages, "d", Style())
    assert [line.split("user")[0] for line in lines] == [
        "├─ ",
        "│  ├─ ",
        "│  └─ ",
        "│     ├─ ",
        "│     └─ ",
        "└─ ",
    ]
    assert lines[3].endswith("◀ head")


def test_colors_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Style(color=True).highlight("a **b** c") == "a \x1b[1mb\x1b[0m c"
    assert Style().highlight("a **b** c") == "a **b** c"

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert Style.for_stream(Terminal()).color
    monkeypatch.setenv("NO_COLOR", "1")
    assert not Style.for_stream(Terminal()).color
    assert not Style.for_stream(io.StringIO()).color


def test_render_message_parts() -> None:
    message = Message(
        role="assistant",
        parts=[
            ReasoningPart("think " * 100),
            TextPart("line one\nline two"),
            ToolCallPart(id="c1", name="grep", arguments={"pattern": "x", "n": 3}),
        ],
        id="msg-1",
    )
    lines = render_message(message, Style())
    assert lines[0].startswith("assistant  msg-1  ")
    assert lines[1].startswith("  ✻ think think") and lines[1].endswith("…")
    assert lines[2:] == ["  line one", "  line two", '  → grep(pattern="x", n=3)']
    result = Message.tool("c1", "\n".join(f"row {i}" for i in range(50)), is_error=True)
    lines = render_message(result, Style())
    assert lines[1] == "  ← error: row 0"
    assert lines[5:] == [
        "    row 4",
        "    … 40 more lines …",
        *(f"    row {i}" for i in range(45, 50)),
    ]


# ------------------------------------------------------------------------- real programs


def _program(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SESSIONARY_URL", "NO_COLOR")}
    env["PYTHONWARNINGS"] = "error"
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=120, check=False)


def test_python_dash_m_demo(tmp_path: Path) -> None:
    done = _program(sys.executable, "-m", "sessionary", "--db", f"{tmp_path}/sub.db", "demo")
    assert done.returncode == 0, done.stderr
    assert "◀ head" in done.stdout and done.stderr == ""


def test_console_script(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "sessionary"
    if not script.exists():
        pytest.skip(f"no console script next to {sys.executable}")
    url = f"sqlite:///{tmp_path}/sub.db"
    demo = _program(str(script), "--db", url, "demo")
    assert demo.returncode == 0, demo.stderr
    listed = _program(str(script), "--db", url, "ls")
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == 3
    missing = _program(str(script), "--db", url, "show", "nope")
    assert missing.returncode == 1
    assert missing.stderr == "sessionary: error: no session 'nope' in this scope\n"
