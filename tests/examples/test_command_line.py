"""Both examples run as scripts, as the README shows, against the local fake servers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fake_providers import CALCULATE, FACT, LIST_FILES, REMEMBER, fake_provider, load_example

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def chat(script: str, base_url: str, tmp_path: Path, lines: list[str], *extra: str) -> str:
    command = [
        sys.executable,
        str(EXAMPLES / script),
        "--base-url",
        base_url,
        "--api-key",
        "dummy",
        "--model",
        "fake-model",
        "--store",
        f"sqlite:///{tmp_path / 'agent.db'}",
        *extra,
    ]
    done = subprocess.run(
        command, input="\n".join(lines) + "\n", capture_output=True, text=True, check=True
    )
    return done.stdout


@pytest.mark.parametrize(
    ("script", "path", "own_tool_line", "own_tool_answer", "extra"),
    [
        ("openai_agent.py", "/v1", CALCULATE + "2 ** 10", "1024", ()),
        ("anthropic_agent.py", "", LIST_FILES + "*.md", "README.md", ("--root", "{tmp}")),
    ],
)
def test_a_chat_on_stdin_saves_memory_and_uses_the_own_tool(
    tmp_path: Path,
    script: str,
    path: str,
    own_tool_line: str,
    own_tool_answer: str,
    extra: tuple[str, ...],
) -> None:
    (tmp_path / "README.md").write_text("hello")
    with fake_provider() as server:
        out = chat(
            script,
            server.base_url + path,
            tmp_path,
            [REMEMBER + FACT, own_tool_line, "Thanks!"],
            *(arg.format(tmp=tmp_path) for arg in extra),
        )
    assert "session " in out
    assert f"Done. The tool said: {own_tool_answer}" in out
    assert "You said: Thanks!" in out
    assert len(server.requests) == 5  # tool call + answer, twice, then one answer


def test_the_calculator_refuses_what_is_not_arithmetic() -> None:
    agent = load_example("openai_agent")
    assert agent.calculate("(2 + 3) * 4 - 1 / 2") == "19.5"
    with pytest.raises(ValueError):
        agent.calculate("__import__('os').getcwd()")
    with pytest.raises(ValueError):
        agent.calculate("9 ** 9 ** 9")


def test_list_files_stays_inside_its_folder(tmp_path: Path) -> None:
    agent = load_example("anthropic_agent")
    (tmp_path / "a.txt").write_text("a")
    assert agent.list_files(tmp_path, "*") == "a.txt"
    with pytest.raises(ValueError):
        agent.list_files(tmp_path, "../*")


def test_a_second_process_resumes_the_session_by_id(tmp_path: Path) -> None:
    with fake_provider() as server:
        base = server.base_url + "/v1"
        first = chat("openai_agent.py", base, tmp_path, ["Hello"], "--session", "trip")
        second = chat("openai_agent.py", base, tmp_path, ["Again"], "--session", "trip")
    assert "session trip" in first and "session trip" in second
    resumed = [m["content"] for m in server.requests[-1]["messages"][1:]]
    assert resumed == ["Hello", "You said: Hello", "Again"]
