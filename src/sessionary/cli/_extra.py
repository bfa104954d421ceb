"""Commands about the command line itself: `completion` and `examples`."""

from __future__ import annotations

import importlib
import pkgutil

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


def _examples() -> dict[str, str]:
    import sessionary.examples as package

    found = {}
    for module in pkgutil.iter_modules(package.__path__):
        if not module.name.startswith("_"):
            loaded = importlib.import_module(f"sessionary.examples.{module.name}")
            found[module.name] = (loaded.__doc__ or "").strip().splitlines()[0]
    return found


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
        for key, summary in examples.items():
            env.echo(f"{key:<14} {summary}")
            env.echo(f"{'':<14} python -m sessionary.examples.{key}")
        return
    if name not in examples:
        raise click.BadParameter(
            f"no example {name!r}; one of: {', '.join(examples)}", param_hint="NAME"
        )
    import inspect

    env.echo(inspect.getsource(importlib.import_module(f"sessionary.examples.{name}")).rstrip())
