"""Commands about the command line itself: `completion` and `examples`."""

from __future__ import annotations

import ast
from pathlib import Path

import click
from click.shell_completion import get_completion_class

from sessionary.cli._app import Env, pass_env, root

__all__: list[str] = []

_SHELLS = ("bash", "zsh", "fish")


@root.command("completion")
@click.argument("shell", type=click.Choice(_SHELLS))
def completion_command(shell: str) -> None:
    """Print the shell completion script for bash, zsh or fish.

    Load it in the shell's start-up file, e.g. for bash:
    eval "$(sessionary completion bash)"; for fish:
    sessionary completion fish > ~/.config/fish/completions/sessionary.fish.
    Session ids complete from the store the command line names.
    """
    completion = get_completion_class(shell)
    if completion is None:  # click knows every shell offered above
        raise click.UsageError(f"no completion for {shell}")
    click.echo(completion(root, {}, "sessionary", "_SESSIONARY_COMPLETE").source())


def _examples() -> dict[str, Path]:
    """The example modules shipped in `sessionary.examples`, by name (not imported: they run)."""
    folder = Path(__file__).resolve().parent.parent / "examples"
    return {
        path.stem: path for path in sorted(folder.glob("*.py")) if not path.stem.startswith("_")
    }


def _summary(path: Path) -> str:
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return docstring.strip().splitlines()[0] if docstring.strip() else ""


@root.command("examples")
@click.argument("name", required=False)
@pass_env
def examples_command(env: Env, name: str | None) -> None:
    """List the runnable examples shipped with sessionary, or print one's source.

    Run one with `python -m sessionary.examples.NAME`; each works in the current
    directory and gives the same output however often it runs.
    """
    examples = _examples()
    if name is None:
        for key, path in examples.items():
            env.echo(f"{key:<12} {_summary(path)}")
            env.echo(f"{'':<12} python -m sessionary.examples.{key}")
        return
    if name not in examples:
        known = ", ".join(examples)
        raise click.BadParameter(f"no example {name!r}; one of: {known}", param_hint="NAME")
    env.echo(examples[name].read_text(encoding="utf-8").rstrip())
