"""The README's Python examples run as written, and print what their comments say."""

from __future__ import annotations

import re
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
    result = subprocess.run(
        [sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    printed = result.stdout.splitlines()
    expected = [m.group(1).strip() for line in block.splitlines() if (m := EXPECTED.match(line))]
    assert expected, "an example should show its output in comments"
    # Each commented print is checked in order against the lines printed.
    position = 0
    for want in expected:
        while position < len(printed) and printed[position].strip() != want:
            position += 1
        assert position < len(printed), f"expected a line {want!r} in {printed}"
        position += 1
