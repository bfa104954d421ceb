"""The commands that govern stored data: `rekey` (encryption at rest)."""

from __future__ import annotations

from sessionary._sync.stores.encrypted import EncryptedStore
from sessionary.cli._app import ENV_KEYS, CLIError, Env, db_option, json_option, pass_env, root

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
