"""The command line on a real terminal: a pseudo-terminal for colour, the pager and progress."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

import sessionary
from sessionary import Message

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX terminal")


def on_terminal(*args: str, env: dict[str, str], stdin: bytes = b"") -> tuple[int, str]:
    """Run sessionary with its standard streams on a pseudo-terminal; return status, screen."""
    leader, follower = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "sessionary", *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
        close_fds=True,
    )
    os.close(follower)
    if stdin:
        os.write(leader, stdin)
    screen = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 120)
        if not ready:  # a bound on a hang, not a timing
            child.kill()
            raise AssertionError(f"no output for 120 s; so far {screen!r}")
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        screen += chunk
    os.close(leader)
    return child.wait(timeout=120), screen.decode("utf-8", "replace")


@pytest.fixture
def setup(tmp_path: Path) -> dict[str, object]:
    url = f"sqlite:///{tmp_path}/x.db"
    with sessionary.SessionManager(url) as manager:
        chat = manager.create(name="on a terminal")
        for n in range(60):  # more than one screen
            chat.append(Message.user(f"question {n}"))
            chat.append(Message.assistant(f"answer {n}"))
    paged = tmp_path / "paged.txt"
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "LESS")}
    env.update(
        TERM="xterm-256color",
        COLUMNS="100",
        LINES="24",
        PAGER=f"cat > {paged}",
        PYTHONWARNINGS="error",
    )
    env.pop("MANPAGER", None)
    return {"url": url, "id": chat.id, "paged": paged, "env": env, "tmp": tmp_path}


def test_long_output_goes_through_the_pager_in_colour(setup: dict[str, object]) -> None:
    env, paged = setup["env"], setup["paged"]
    assert isinstance(env, dict) and isinstance(paged, Path)
    code, screen = on_terminal("--db", str(setup["url"]), "show", str(setup["id"]), env=env)
    assert code == 0, screen
    text = paged.read_text()
    assert "answer 59" in text and "question 0" in text
    assert "\x1b[" in text  # the pager gets the colours
    assert "answer 59" not in screen  # ... and the terminal only what the pager shows


def test_no_pager_prints_in_colour(setup: dict[str, object]) -> None:
    env, paged = setup["env"], setup["paged"]
    assert isinstance(env, dict) and isinstance(paged, Path)
    code, screen = on_terminal(
        "--db", str(setup["url"]), "--no-pager", "show", str(setup["id"]), env=env
    )
    assert code == 0 and not paged.exists()
    assert "answer 59" in screen and "\x1b[1;32muser" in screen  # roles in their colours


def test_no_color_is_respected(setup: dict[str, object]) -> None:
    env = dict(setup["env"])  # type: ignore[call-overload]
    env["NO_COLOR"] = "1"
    code, screen = on_terminal("--db", str(setup["url"]), "--no-pager", "ls", env=env)
    assert code == 0 and "on a terminal" in screen and str(setup["id"]) in screen  # whole
    code, screen = on_terminal(
        "--db", str(setup["url"]), "--no-pager", "show", str(setup["id"]), env=env
    )
    assert code == 0 and "answer 59" in screen
    assert "\x1b[1;32m" not in screen and "\x1b[32m" not in screen  # bold stays, colour goes


def test_rm_asks_on_a_terminal(setup: dict[str, object]) -> None:
    env = setup["env"]
    assert isinstance(env, dict)
    args = ("--db", str(setup["url"]), "rm", str(setup["id"]))
    code, screen = on_terminal(*args, env=env, stdin=b"n\n")
    assert code == 1 and "Delete 1 session" in screen and "nothing deleted" in screen
    code, screen = on_terminal(*args, env=env, stdin=b"y\n")
    assert code == 0 and "deleted 1 session" in screen


def test_import_draws_a_progress_bar(setup: dict[str, object]) -> None:
    env, tmp = setup["env"], setup["tmp"]
    assert isinstance(env, dict) and isinstance(tmp, Path)
    dump = tmp / "dump.jsonl"
    with sessionary.SessionManager(str(setup["url"])) as manager:
        dump.write_text("".join(json.dumps(r) + "\n" for r in manager.export()))
    code, screen = on_terminal("--db", f"sqlite:///{tmp}/other.db", "import", str(dump), env=env)
    assert code == 0, screen
    assert "imported 1 session (120 messages)" in screen
    assert "import" in screen and "\x1b[" in screen  # the bar, drawn in place
    assert "kB read" not in screen  # not the plain lines meant for a pipe


def test_search_hits_are_styled_on_a_terminal_and_never_marked(setup: dict[str, object]) -> None:
    env = setup["env"]
    assert isinstance(env, dict)
    with sessionary.SessionManager(str(setup["url"])) as manager:
        manager.create().append(Message.user("a **bold** claim about zebras"))
    args = ("--db", str(setup["url"]), "--no-pager", "search", "zebras")
    code, screen = on_terminal(*args, env=env)
    assert code == 0, screen
    assert "\x1b[1;7mzebras\x1b[0m" in screen  # the span, in bold reverse video
    assert "a **bold** claim about" in screen and "****" not in screen


def test_a_missing_pager_loses_no_output(setup: dict[str, object]) -> None:
    env = {**setup["env"], "PAGER": "nonexistent-pager-xyz --flag"}  # type: ignore[dict-item]
    code, screen = on_terminal("--db", str(setup["url"]), "show", str(setup["id"]), env=env)
    assert code == 0, screen
    assert (
        "answer 59" in screen and "'nonexistent-pager-xyz --flag' ($PAGER) was not found" in screen
    )
