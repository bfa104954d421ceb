"""Regenerate the README's generated parts: the CLI reference and the example programs.

    python tools/readme.py          # rewrite README.md in place
    python tools/readme.py --check  # exit 1 if README.md has drifted

The CLI section between `<!-- cli:begin -->` and `<!-- cli:end -->` is the `--help` of
`sessionary` and of each command, at a fixed width of 100 columns. A block between
`<!-- example:NAME:begin -->` and `<!-- example:NAME:end -->` is the source of
`src/sessionary/examples/NAME.py` without its docstring, so the README shows exactly the
program that `python -m sessionary.examples.NAME` runs.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import click
from click.testing import CliRunner

from sessionary.cli import root

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
EXAMPLES = ROOT / "src" / "sessionary" / "examples"
CLI = re.compile(r"(<!-- cli:begin -->\n).*?(<!-- cli:end -->)", re.S)
EXAMPLE = re.compile(r"(<!-- example:(\w+):begin -->\n).*?(<!-- example:\2:end -->)", re.S)


def help_text(*command: str) -> str:
    result = CliRunner().invoke(
        root, [*command, "--help"], prog_name="sessionary", terminal_width=100
    )
    if result.exit_code != 0:
        raise RuntimeError(f"sessionary {' '.join(command)} --help failed: {result.output}")
    return "\n".join(line.rstrip() for line in result.output.rstrip().splitlines())


def commands(group: click.Group, *path: str) -> list[tuple[str, ...]]:
    """Every command below `group`, depth first, as the words that name it."""
    found: list[tuple[str, ...]] = []
    for name in group.list_commands(click.Context(group)):
        command = group.get_command(click.Context(group), name)
        found.append((*path, name))
        if isinstance(command, click.Group):
            found += commands(command, *path, name)
    return found


def cli_section() -> str:
    parts = ["```text", "$ sessionary --help", help_text(), "```"]
    for words in commands(root):
        shown = " ".join(words)
        parts += ["", "```text", f"$ sessionary {shown} --help", help_text(*words), "```"]
    return "\n".join(parts) + "\n"


def example_source(name: str) -> str:
    source = (EXAMPLES / f"{name}.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    first = tree.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        lines = source.splitlines()
        source = "\n".join(lines[first.end_lineno :]).lstrip("\n")  # drop the docstring
    return f"```python\n{source.rstrip()}\n```\n"


def render(text: str) -> str:
    text = CLI.sub(lambda m: m[1] + cli_section() + m[2], text)
    return EXAMPLE.sub(lambda m: m[1] + example_source(m[2]) + m[3], text)


def main(argv: list[str]) -> int:
    current = README.read_text(encoding="utf-8")
    wanted = render(current)
    if "--check" in argv:
        if wanted != current:
            print("README.md is out of date: run python tools/readme.py", file=sys.stderr)
            return 1
        return 0
    README.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
