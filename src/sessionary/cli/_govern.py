"""The data governance commands: `erase` (a user or a tenant) and `sweep` (expired sessions)."""

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


@root.command("sweep")
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=500,
    show_default=True,
    help="Sessions deleted per transaction.",
)
@click.option("--limit", type=click.IntRange(min=1), help="Stop after about this many.")
@db_option
@pass_env
def sweep_command(env: Env, batch_size: int, limit: int | None) -> None:
    """Delete the sessions whose TTL has run out, in every scope of the --db store.

    Each goes with its messages, search index rows, state and documents (compaction
    overlays, agent state). Expired sessions are already hidden from every read; this
    frees their space. Batches commit one by one, so an interrupted sweep keeps what it
    did and the next one carries on; several sweepers may run at once.
    """
    count = env.manager("write").sweep(batch_size=batch_size, limit=limit)
    env.echo(f"swept {plural(count, 'expired session')}")
