"""The `sessionary` command line, run in-process through `main` and once as real programs."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import sessionary
from sessionary import Message, ReasoningPart, TextPart, ToolCallPart, _demo, cli
from sessionary.cli import _app, main, root
from sessionary.cli._views import TreeMarks, message_view, style_spans, tree_lines, unique_prefixes

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


COMMANDS = sorted(root.commands)


def command_help() -> dict[str, str]:
    return {name: command.get_short_help_str(200) for name, command in root.commands.items()}


# ------------------------------------------------------------------------- help


def test_public_names() -> None:
    assert sorted(cli.__all__) == sorted(["DEFAULT_DB", "ENV_URL", "CLIError", "main", "root"])
    assert sorted(_demo.__all__) == ["Demo", "build_demo"]


def test_the_commands() -> None:
    assert (
        sorted(
            [
                "audit",
                "completion",
                "context",
                "demo",
                "erase",
                "examples",
                "export",
                "import",
                "inspect",
                "keys",
                "ls",
                "mcp",
                "migrate",
                "rekey",
                "rm",
                "schema",
                "scopes",
                "search",
                "serve",
                "show",
                "sweep",
            ]
        )
        == COMMANDS
    )


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_help(capsys: pytest.CaptureFixture[str], name: str) -> None:
    assert command_help()[name], f"command {name!r} has no help text"
    code, out, err = run(capsys, name, "--help")
    assert code == 0
    assert out.startswith(f"Usage: sessionary {name}")
    if name not in ("migrate", "completion", "examples"):
        assert "--db URL" in out  # the store options work after the command too
    assert err == ""


def test_top_level_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for name in COMMANDS:
        assert f"  {name} " in out
    assert "SESSIONARY_URL" in out and "--no-pager" in out


def test_help_tells_no_stale_story(capsys: pytest.CaptureFixture[str]) -> None:
    texts = [run(capsys, name, "--help")[1] for name in COMMANDS]
    joined = " ".join(" ".join(text.split()) for text in texts)
    assert "do not exist yet" not in joined
    assert "all or nothing" not in joined  # import commits per session, and says so
    assert "committed whole, or not at all, as soon as its records are read" in joined


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert (code, out.strip()) == (0, f"sessionary {sessionary.__version__}")


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], url: str) -> None:
    for args in (["frobnicate"], ["--db", url, "ls", "--limit", "0"], ["show"]):
        code, _, err = run(capsys, *args)
        assert code == 2, args
        assert "Usage: sessionary" in err
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
    assert "**Decimal**" not in out and "****" not in out  # hits are styled, not marked
    assert f"sessionary --db {url} context {demo['main']}" in out
    assert "\x1b[" not in out  # no colours off a terminal


def test_demo_hint_prefix_works(
    capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str
) -> None:
    hint = next(line for line in demo["output"].splitlines() if line.endswith(" --tree"))
    prefix = hint.split(" show ")[1].split()[0]
    assert demo["main"].startswith(prefix) and len(prefix) < len(demo["main"])
    code, out, _ = run(capsys, "--db", url, "show", prefix, "--tree")
    assert code == 0 and f"session {demo['main']}" in out


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


def test_ls_table_preview_and_json(
    capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str
) -> None:
    code, out, _ = run(capsys, "--db", url, "ls")
    lines = out.splitlines()
    assert code == 0
    assert lines[0].split() == [
        "ID",
        "NAME",
        "MSGS",
        "TOKENS",
        "UPDATED",
        "MODEL",
        "ENDED",
        "LAST",
        "MESSAGE",
    ]
    assert lines[1].startswith(demo["fork"]) and " completed " in lines[1]  # newest first
    assert lines[2].startswith(demo["main"]) and " 16 " in lines[2] and " 20,462 " in lines[2]
    assert "assistant: All 6 tests pa" in lines[2]  # the preview is the head message
    rows = json.loads(run(capsys, "--db", url, "ls", "--json")[1])
    assert [row["id"] for row in rows] == [demo["fork"], demo["main"]]
    assert rows[0]["end_reason"] == "completed"


def test_ls_filters(capsys: pytest.CaptureFixture[str], url: str) -> None:
    with sessionary.SessionManager(url) as manager:
        a = manager.create(name="alpha", model="m1").id
        b = manager.create(name="beta", model="m2").id

    def ids(*args: str) -> list[str]:
        return [row["id"] for row in json.loads(run(capsys, "--db", url, "ls", "--json", *args)[1])]

    assert ids("--name", "alpha") == [a]
    assert ids("--model", "m2") == [b]
    assert sorted(ids("--since", "1h")) == sorted([a, b])
    assert ids("--since", "2999-01-01") == []
    code, _, err = run(capsys, "--db", url, "ls", "--since", "yesterday-ish")
    assert code == 2 and "neither a date" in err


def test_ls_limit_and_all(
    capsys: pytest.CaptureFixture[str], url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with sessionary.SessionManager(url) as manager:
        ids = [manager.create(name=f"s{i}").id for i in range(5)]
    code, out, err = run(capsys, "--db", url, "ls", "--limit", "2")
    assert code == 0
    assert len(out.splitlines()) == 3
    assert "--all" in err
    monkeypatch.setattr(_app, "LIST_PAGE", 2)  # so --all has to follow the cursor
    import sessionary.cli._read as read

    monkeypatch.setattr(read, "LIST_PAGE", 2)
    rows = json.loads(run(capsys, "--db", url, "ls", "--all", "--json")[1])
    assert sorted(row["id"] for row in rows) == sorted(ids)
    code, out, err = run(capsys, "--db", url, "ls", "--all")
    assert len(out.splitlines()) == 6 and err == ""


def test_ls_empty_scope_names_the_scope_and_the_others(
    capsys: pytest.CaptureFixture[str], url: str
) -> None:
    sessionary.SessionManager(url).close()
    assert run(capsys, "--db", url, "ls") == (
        0,
        "",
        "no sessions in tenant 'default', user 'default'\n",
    )
    assert run(capsys, "--db", url, "ls", "--json") == (0, "[]\n", "")
    with sessionary.SessionManager(url, tenant="acme", user="alice") as manager:
        manager.create()
    code, out, err = run(capsys, "--db", url, "ls")
    assert (code, out) == (0, "")
    assert "other scopes hold data: acme/alice" in err and "sessionary scopes" in err


def test_scopes(capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str) -> None:
    with sessionary.SessionManager(url, tenant="acme", user="alice") as manager:
        manager.create().append(Message.user("hi"))
        manager.update_state({"lang": "en"})
    rows = json.loads(run(capsys, "--db", url, "scopes", "--json")[1])
    by_scope = {(r["tenant"], r["user"]): r for r in rows}
    assert by_scope["default", "default"]["sessions"] == 2
    assert by_scope["default", "default"]["messages"] == 29
    assert by_scope["acme", "alice"]["user_state_version"] == 1
    out = run(capsys, "--db", url, "scopes")[1]
    assert out.splitlines()[0].split()[:4] == ["TENANT", "USER", "SESSIONS", "MESSAGES"]
    assert any(line.split()[:3] == ["acme", "alice", "1"] for line in out.splitlines())


# ------------------------------------------------------------------------- show


def test_show_history(capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str) -> None:
    code, out, _ = run(capsys, "--db", url, "show", demo["main"])
    assert code == 0
    assert out.startswith(f"session {demo['main']}\n")
    assert " name      demo: why do the tests fail?" in out
    assert " messages  16 stored, on every branch" in out  # the counter says what it counts
    assert " state     v3 " in out
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


def test_show_tree_and_history_agree(
    capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str
) -> None:
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
    # plain show walks the same messages as the tree's marked path, root to head
    roles = ("system", "user", "assistant", "tool")
    history = run(capsys, "--db", url, "show", demo["main"])[1].splitlines()
    shown = [line.split()[:2] for line in history if line.split()[:1] and line.split()[0] in roles]
    drawn = [line.lstrip("├└│─ ").split()[:2] for line in tree]
    path = [drawn[i] for i in (*range(9), 12, 13, 14, 15)]
    assert len(shown) == 13
    for (role, short), (tree_role, tree_short) in zip(shown, path, strict=True):
        assert role == tree_role
        assert short.startswith(tree_short) or tree_short.startswith(short)


def test_show_leaf_takes_a_message_prefix(
    capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str
) -> None:
    with sessionary.SessionManager(url) as manager:
        chat = manager.session(demo["main"])
        question = next(m for m in chat.history(raw=True) if m.text.startswith("Fix it"))
        other = next(m for m in chat.branches(question.parent_id or "") if m.id != question.id)
    leaf = chat_leaf = other.id
    code, out, _ = run(capsys, "--db", url, "show", demo["main"][:20], "--leaf", leaf[:-4])
    assert code == 0, out
    assert "convert the rate to float" in out and "keep money in Decimal" not in out
    code, _, err = run(capsys, "--db", url, "show", demo["main"], "--leaf", chat_leaf[:2])
    assert_one_line_error(code, err, "ambiguous")


def test_show_json(capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str) -> None:
    data = json.loads(run(capsys, "--db", url, "show", demo["main"], "--json")[1])
    assert data["session"]["id"] == demo["main"]
    assert data["state"]["version"] == 3 and data["overlays"] == []
    history = data["history"]
    assert len(history) == 13 and history[-1]["id"] == data["session"]["head_id"]
    tree = json.loads(run(capsys, "--db", url, "show", demo["main"], "--json", "--tree")[1])
    assert len(tree["messages"]) == 16
    limited = json.loads(
        run(capsys, "--db", url, "show", demo["main"], "--json", "--limit", "4")[1]
    )
    assert [m["id"] for m in limited["history"]] == [m["id"] for m in history[-4:]]


# ------------------------------------------------------------------------- short ids


def test_session_prefixes(capsys: pytest.CaptureFixture[str], url: str) -> None:
    with sessionary.SessionManager(url) as manager:
        for sid in ("alpha-1", "alpha-2", "beta"):
            manager.create(id=sid, name=sid)
    assert run(capsys, "--db", url, "show", "be")[0] == 0
    assert (
        json.loads(run(capsys, "--db", url, "show", "alpha-2", "--json")[1])["session"]["id"]
        == "alpha-2"
    )
    code, _, err = run(capsys, "--db", url, "show", "alp")
    assert_one_line_error(code, err, "ambiguous", "alpha-1 (alpha-1)", "alpha-2 (alpha-2)")
    code, _, err = run(capsys, "--db", url, "export", "gamma")
    assert_one_line_error(code, err, "no session 'gamma' in tenant 'default', user 'default'")


def test_unique_prefixes() -> None:
    ids = ["01a2-aaaa-1", "01a2-aaab-2", "99"]
    prefixes = unique_prefixes(ids, minimum=2)
    assert prefixes == {"01a2-aaaa-1": "01a2-aaaa", "01a2-aaab-2": "01a2-aaab", "99": "99"}
    assert unique_prefixes(["a", "ab"], minimum=1) == {"a": "a", "ab": "ab"}


# ------------------------------------------------------------------------- search


def test_search(capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str) -> None:
    code, out, _ = run(capsys, "--db", url, "search", "TypeError", "--limit", "3")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 6
    assert "session " in lines[0] and "message " in lines[0] and "rank " in lines[0]
    assert "**TypeError**" not in out  # hits are styled by span, never marked in-band


def test_search_filters_and_json(
    capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str
) -> None:
    args = ["--db", url, "search", "Decimal", "--json"]
    hits = json.loads(run(capsys, *args, "--role", "tool")[1])
    assert hits and {hit["role"] for hit in hits} == {"tool"}
    hits = json.loads(run(capsys, *args, "--session", demo["fork"][:-3])[1])
    assert hits and {hit["session_id"] for hit in hits} == {demo["fork"]}
    assert set(hits[0]) == {
        "session_id",
        "message_id",
        "role",
        "rank",
        "snippet",
        "spans",
        "created_at",
    }
    for hit in hits:
        assert {hit["snippet"][a:b].lower() for a, b in hit["spans"]} == {"decimal"}
        assert hit["spans"] and 0 < hit["rank"] <= 1


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


def test_style_spans_never_changes_the_text() -> None:
    text = "a **b** c"
    styled = style_spans(text, [(4, 5), (-3, 1), (8, 99), (5, 2)])
    assert styled.plain == text
    assert [(s.start, s.end) for s in styled.spans] == [(4, 5), (0, 1), (8, 9)]
    assert style_spans(text, []).spans == []


# ------------------------------------------------------------------------- rm


def test_rm_by_id(capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str) -> None:
    code, _, err = run(capsys, "--db", url, "rm", demo["main"], "nope", "--yes")
    assert_one_line_error(code, err, "no session 'nope'", "nothing deleted")
    assert len(json.loads(run(capsys, "--db", url, "ls", "--json")[1])) == 2
    assert run(capsys, "--db", url, "rm", demo["main"], demo["main"][:20], "-y") == (
        0,
        "deleted 1 session\n",
        "",
    )
    rows = json.loads(run(capsys, "--db", url, "ls", "--json")[1])
    assert [row["id"] for row in rows] == [demo["fork"]]
    code, _, err = run(capsys, "--db", url, "show", demo["main"])
    assert_one_line_error(code, err, "no session")


def test_rm_asks_first(
    capsys: pytest.CaptureFixture[str],
    demo: dict[str, str],
    url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code, _, err = run(capsys, "--db", url, "rm", demo["main"])  # stdin is not a terminal
    assert_one_line_error(code, err, "would delete 1 session", "--yes")
    monkeypatch.setattr(sys, "stdin", _Terminal("n\n"))
    code, _, err = run(capsys, "--db", url, "rm", demo["main"])
    assert code == 1 and "Delete 1 session in tenant 'default', user 'default'? [y/N]" in err
    assert "nothing deleted" in err
    monkeypatch.setattr(sys, "stdin", _Terminal("y\n"))
    assert run(capsys, "--db", url, "rm", demo["main"])[1] == "deleted 1 session\n"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_rm_by_filter(capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str) -> None:
    code, _, err = run(capsys, "--db", url, "rm", "--yes")
    assert code == 2 and "name sessions to delete" in err
    assert run(capsys, "--db", url, "rm", "--name", "nothing-like-it", "-y")[2].startswith(
        "no sessions match"
    )
    assert run(capsys, "--db", url, "rm", "--ended", "-y")[1] == "deleted 1 session\n"  # the fork
    assert run(capsys, "--db", url, "rm", "--before", "2000-01-01", "-y")[2].startswith(
        "no sessions"
    )
    assert run(capsys, "--db", url, "rm", "--all", "-y")[1] == "deleted 1 session\n"
    assert run(capsys, "--db", url, "ls", "--json")[1] == "[]\n"


# ------------------------------------------------------------------------- errors and options


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["show", "nope"], "no session 'nope' in tenant 'default', user 'default'"),
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
        for command in ("ls", "search", "scopes", "inspect", "export"):
            args = [command, "x"] if command == "search" else [command]
            code, _, err = run(capsys, "--db", db, *args)
            assert_one_line_error(code, err, "no database at")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("content", [b"", b"hello, not a database\n" * 100, "sqlite"])
@pytest.mark.parametrize(
    "args", [["ls"], ["show", "x"], ["search", "x"], ["scopes"], ["inspect"], ["export"]]
)
def test_readers_refuse_other_files_unchanged(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes | str, args: list[str]
) -> None:
    path = tmp_path / "notes.db"
    if content == "sqlite":  # a SQLite database, but not sessionary's
        import sqlite3

        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE notes (text TEXT)")
        db.close()
    else:
        path.write_bytes(content)  # type: ignore[arg-type]
    before = path.read_bytes()
    code, _, err = run(capsys, "--db", str(path), *args)
    assert_one_line_error(code, err)
    assert "not a sessionary database" in err or "not a database" in err
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]


def test_readers_do_not_change_a_sessionary_file(
    capsys: pytest.CaptureFixture[str], demo: dict[str, str], url: str, tmp_path: Path
) -> None:
    path = tmp_path / "x.db"
    before = path.read_bytes()
    for args in (
        ["ls"],
        ["show", demo["main"], "--tree"],
        ["inspect", demo["main"]],
        ["context", demo["main"]],
        ["scopes"],
        ["export"],
    ):
        assert run(capsys, "--db", url, *args)[0] == 0, args
    assert path.read_bytes() == before


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
    assert_one_line_error(code, err, "no session", "user 'bob'")


def test_scoped_demo_hints(capsys: pytest.CaptureFixture[str], url: str) -> None:
    out = run(capsys, "--db", url, "--user", "alice", "demo")[1]
    assert f"sessionary --db {url} --user alice ls" in out


def test_keyboard_interrupt_exits_130_quietly(
    capsys: pytest.CaptureFixture[str],
    demo: dict[str, str],
    url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sessionary.cli._read as read

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(read, "session_table", interrupted)
    code, out, err = run(capsys, "--db", url, "ls")
    assert (code, out, err.strip()) == (130, "", "")


def test_completion_scripts(capsys: pytest.CaptureFixture[str]) -> None:
    for shell, marker in (
        ("bash", "complete -o"),
        ("zsh", "compdef"),
        ("fish", "--command sessionary"),
    ):
        code, out, _ = run(capsys, "completion", shell)
        assert code == 0 and marker in out and "_SESSIONARY_COMPLETE" in out


def test_completion_offers_session_ids(
    demo: dict[str, str],
    url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("_SESSIONARY_COMPLETE", "bash_complete")
    monkeypatch.setenv("COMP_WORDS", f"sessionary --db {url} show {demo['main'][:8]}")
    monkeypatch.setenv("COMP_CWORD", "4")
    code, out, _ = run(capsys)
    assert code == 0
    assert f"plain,{demo['main']}" in out and f"plain,{demo['fork']}" in out


# ------------------------------------------------------------------------- renderers


def _chain(n: int) -> list[Message]:
    messages: list[Message] = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        message = Message(role=role, parts=[TextPart(f"message {i}")], id=f"m{i}")
        message.parent_id = messages[-1].id if messages else None
        messages.append(message)
    return messages


def _marks(messages: list[Message], head: str) -> TreeMarks:
    return TreeMarks(head, {m.id: m.id for m in messages}, {})


def test_tree_of_a_long_chain_does_not_recurse() -> None:
    messages = _chain(5000)
    lines = [line.plain for line in tree_lines(messages, _marks(messages, "m4999"))]
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
    lines = [line.plain for line in tree_lines(messages, _marks(messages, "d"))]
    assert [line.split("user")[0] for line in lines] == [
        "├─ ",
        "│  ├─ ",
        "│  └─ ",
        "│     ├─ ",
        "│     └─ ",
        "└─ ",
    ]
    assert lines[3].endswith("◀ head")


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
    lines = message_view(message, "msg-1").plain.splitlines()
    assert lines[0].startswith("assistant  msg-1  ")
    assert lines[1].startswith("  ✻ think think") and lines[1].endswith("…")
    assert lines[2:] == ["  line one", "  line two", '  → grep(pattern="x", n=3)']
    result = Message.tool("c1", "\n".join(f"row {i}" for i in range(50)), is_error=True)
    lines = message_view(result, "r").plain.splitlines()
    assert lines[1] == "  ← error: row 0"
    assert lines[5:] == [
        "    row 4",
        "    … 40 more lines …",
        *(f"    row {i}" for i in range(45, 50)),
    ]


def test_markup_in_messages_is_printed_as_written(
    capsys: pytest.CaptureFixture[str], url: str
) -> None:
    with sessionary.SessionManager(url) as manager:
        sid = manager.create().id
        manager.session(sid).append(Message.user("[bold]not markup[/bold] :smile: **as is**"))
    out = run(capsys, "--db", url, "show", sid)[1]
    assert "[bold]not markup[/bold] :smile: **as is**" in out


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
    assert missing.stderr == (
        "sessionary: error: no session 'nope' in tenant 'default', user 'default' "
        "(`sessionary scopes` lists the others)\n"
    )


def test_examples_are_listed_and_printed(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "examples")
    assert code == 0
    assert "python -m sessionary.examples.agent_turn" in out
    assert "quickstart   Sessions: append," in out
    code, out, _ = run(capsys, "examples", "quickstart")
    assert code == 0 and out.startswith('"""Sessions:') and "SessionManager(" in out
    code, _, err = run(capsys, "examples", "nope")
    assert code == 2 and "no example 'nope'" in err


def test_search_prints_the_authors_markdown_as_written(tmp_path: Path) -> None:
    """An author's `**bold**` is not a hit, and the CLI adds no `**` of its own."""
    url = f"sqlite:///{tmp_path}/md.db"
    with sessionary.SessionManager(url) as manager:
        chat = manager.create()
        chat.append(Message.assistant("This is **important**: run `make deploy` first"))
        chat.append(Message.user("deploy it"))
    runner = CliRunner()
    result = runner.invoke(root, ["--db", url, "search", "deploy"])
    assert result.exit_code == 0, result.output
    assert "This is **important**: run `make deploy` first" in result.output
    assert "**deploy**" not in result.output and "****" not in result.output
    result = runner.invoke(root, ["--db", url, "search", "deploy", "--json"])
    hits = json.loads(result.output)
    assert {hit["snippet"] for hit in hits} == {
        "This is **important**: run `make deploy` first",
        "deploy it",
    }
    for hit in hits:
        assert [hit["snippet"][a:b] for a, b in hit["spans"]] == ["deploy"]
