"""The README's Python examples run as written, print what their comments say, and print
it again when run a second time in the same directory; its generated parts are current."""

from __future__ import annotations

import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
EXPECTED = re.compile(r"^\s*print\(.*\)\s*#\s*(.+)$")


def test_readme_has_examples() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example_runs(block: str, tmp_path: Path) -> None:
    expected = [m.group(1).strip() for line in block.splitlines() if (m := EXPECTED.match(line))]
    assert expected, "an example should show its output in comments"
    first = _run(block, tmp_path)
    _check(first, expected)
    again = _run(block, tmp_path)  # the files the first run made are still there
    assert again == first


def _run(block: str, where: Path) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", block], cwd=where, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def _check(printed: list[str], expected: list[str]) -> None:
    """Each commented print is checked in order against the lines printed."""
    position = 0
    for want in expected:
        while position < len(printed) and printed[position].strip() != want:
            position += 1
        assert position < len(printed), f"expected a line {want!r} in {printed}"
        position += 1


def test_readme_generated_parts_are_current() -> None:
    tool = runpy.run_path(str(README.parent / "tools" / "readme.py"))
    text = README.read_text(encoding="utf-8")
    assert tool["render"](text) == text, "README.md drifted: run python tools/readme.py"
    assert "<!-- cli:begin -->\n```text\n$ sessionary --help" in text


@pytest.mark.parametrize("name", ["quickstart", "agent_turn"])
def test_shipped_examples_run_with_python_dash_m(name: str, tmp_path: Path) -> None:
    module = f"sessionary.examples.{name}"
    done = subprocess.run(
        [sys.executable, "-m", module], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    source = (README.parent / "src" / "sessionary" / "examples" / f"{name}.py").read_text()
    expected = [m.group(1).strip() for line in source.splitlines() if (m := EXPECTED.match(line))]
    _check(done.stdout.splitlines(), expected)
