"""The data governance commands: `erase` (everything of a user or a tenant)."""

from __future__ import annotations

import sys

import click

from sessionary.cli._app import CLIError, Env, db_option, pass_env, root
from sessionary.cli._views import plural
from sessionary.ids import check_id

__all__: list[str] = []


@root.command("erase")
@click.option("--tenant", "tenant", required=True, help="The tenant to erase, or the user's.")
@click.option("--user", "user", help="Erase only this user of the tenant.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@db_option
@pass_env
def erase_command(env: Env, tenant: str, user: str | None, yes: bool) -> None:
    """Delete everything of one user, or of a whole tenant, for good.

    With --user: the user's sessions (messages, search index rows, state, documents,
    compaction overlays, agent state) and the user's own state and documents; the
    tenant's app-level data and its other users stay. Without it: every user of the
    tenant and its app-level data. You are asked to confirm, unless --yes; without a
    terminal to ask on, --yes is required.
    """
    check_id(tenant, "tenant")
    what = (
        f"tenant {tenant!r}" if user is None else f"user {check_id(user, 'user')!r} of {tenant!r}"
    )
    if not yes:
        if not sys.stdin.isatty():
            raise CLIError(f"would erase everything of {what}: pass --yes to confirm")
        if not click.confirm(f"Erase everything of {what}? This cannot be undone.", err=True):
            raise CLIError("nothing erased")
    env.tenant, env.user = tenant, user or "default"
    manager = env.manager("write")
    count = manager.erase_tenant() if user is None else manager.erase_user()
    env.echo(f"erased {what}: {plural(count, 'session')}")
