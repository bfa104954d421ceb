"""The commands that govern stored data: rekey, audit, erase and sweep.

`rekey` re-seals records under the current key (encryption at rest), `audit` reads the
trail, `erase` deletes a user or a tenant, `sweep` deletes expired sessions.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime

import click

from sessionary._sync.stores.encrypted import EncryptedStore
from sessionary.cli._app import (
    ENV_KEYS,
    CLIError,
    Env,
    db_option,
    env_encryption,
    json_option,
    pass_env,
    root,
    store_options,
)
from sessionary.cli._read import Since
from sessionary.cli._views import plural, printable
from sessionary.errors import SessionNotFound
from sessionary.ids import check_id

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
    if env_encryption() is None:  # before the store is opened: nothing to do without keys
        raise CLIError(f"set {ENV_KEYS} to the keyring (id=base64key,...) to rotate keys")
    store = env.manager("update").store
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
    if session_id is not None:
        session_id = _audited_session(env, session_id)
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

    rows = [
        (
            entry.at.astimezone().strftime("%Y-%m-%d %H:%M:%S"),
            printable(entry.actor),
            entry.user,
            printable(entry.action),
            entry.session_id or "",
            printable(entry.target or ""),
            json.dumps(entry.detail, ensure_ascii=False) if entry.detail else "",
        )
        for entry in entries
    ]
    # Ids are copied from here into other commands: nothing is cut, so on a narrow
    # terminal the lines run long (one entry, one line) rather than lose characters.
    names = ("TIME", "ACTOR", "USER", "ACTION", "SESSION", "TARGET", "DETAIL")
    widths = [max(len(name), *(len(row[n]) for row in rows)) for n, name in enumerate(names)]
    needed = sum(widths) + 2 * (len(widths) - 1)
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.width = needed if needed > env.out.width else None
    for name, width in zip(names, widths, strict=True):
        table.add_column(name, no_wrap=True, min_width=width)
    for row in rows:
        table.add_row(*row)
    with env.paged():
        env.print(table, soft_wrap=True)


def _audited_session(env: Env, text: str) -> str:
    """The session id `text` names: a live session's id or unique prefix, else `text` as is.

    A deleted session's changes stay in the trail, so an id no session has any more is
    looked for as it was typed.
    """
    try:
        return env.session_id(text)
    except SessionNotFound:
        return text


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
    manager = env.manager("update")
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
    count = env.manager("update").sweep(batch_size=batch_size, limit=limit)
    env.echo(f"swept {plural(count, 'expired session')}")
