"""The commands that govern stored data: `rekey` (encryption at rest), `audit` (the trail)."""

from __future__ import annotations

import json
from datetime import datetime

import click

from sessionary._sync.stores.encrypted import EncryptedStore
from sessionary.cli._app import (
    ENV_KEYS,
    CLIError,
    Env,
    db_option,
    json_option,
    pass_env,
    root,
    store_options,
)
from sessionary.cli._read import Since

__all__: list[str] = []


@root.command("rekey")
@json_option
@db_option
@pass_env
def rekey_command(env: Env, as_json: bool) -> None:
    """Re-encrypt every record sealed with an old key under the current one.

    The keyring comes from $SESSIONARY_KEYS (id=base64key,..., the current key first;
    keep the old keys after it until this has run). Every scope of the store is rotated.
    Messages and states are rewritten in place; a document gets a new latest version. Safe
    to run again, or beside writers.
    """
    store = env.manager("write").store
    if not isinstance(store, EncryptedStore):
        raise CLIError(f"set {ENV_KEYS} to the keyring (id=base64key,...) to rotate keys")
    done = store.rotate()
    counts = {"messages": done.messages, "states": done.states, "documents": done.documents}
    if as_json:
        env.echo_json(counts)
        return
    env.echo(", ".join(f"{n} {what} re-encrypted" for what, n in counts.items()))


@root.command("audit")
@click.option("--actor", help="Only changes made by this actor.")
@click.option("--action", help="Only this kind of change (message.delete, state.update, ...).")
@click.option("--session", "session_id", metavar="ID", help="Only changes to this session.")
@click.option("--since", type=Since(), help="Only changes since WHEN (a date, or an age: 2h).")
@click.option("--before", type=Since(), help="Only changes before WHEN.")
@click.option("-n", "--limit", type=click.IntRange(min=1), default=50, show_default=True)
@click.option("--every-user", is_flag=True, help="Changes to every user of the tenant.")
@json_option
@store_options
@pass_env
def audit_command(
    env: Env,
    actor: str | None,
    action: str | None,
    session_id: str | None,
    since: datetime | None,
    before: datetime | None,
    limit: int,
    every_user: bool,
    as_json: bool,
) -> None:
    """Show the audit trail: who changed what, newest first.

    Changes are logged by a manager made with audit=True (and an actor): message
    updates and deletes, state patches, block and document writes, session deletes, and
    what other code records (an erasure). The trail is the tenant's; without
    --every-user only the changes to --user's data are shown.
    """
    entries = env.manager().audit(
        limit=limit,
        actor=actor,
        action=action,
        session_id=session_id,
        since=since,
        until=before,
        every_user=every_user,
    )
    if as_json:
        env.echo_json([entry.to_dict() for entry in entries])
        return
    if not entries:
        env.note(f"no audit entries in {env.where()}")
        return
    from rich.table import Table

    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in ("TIME", "ACTOR", "USER", "ACTION", "SESSION", "TARGET", "DETAIL"):
        table.add_column(column)
    for entry in entries:
        table.add_row(
            entry.at.astimezone().strftime("%Y-%m-%d %H:%M:%S"),
            entry.actor,
            entry.user,
            entry.action,
            entry.session_id or "",
            entry.target or "",
            json.dumps(entry.detail, ensure_ascii=False) if entry.detail else "",
        )
    env.print(table)
