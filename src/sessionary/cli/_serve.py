"""Commands of the `sessionary[server]` extra: `serve`, `mcp` and `keys create|list|revoke`.

They call the plain functions of `sessionary.server.commands`, imported only when one of
these commands runs, so the rest of the CLI works without the extra installed.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from types import ModuleType

import click

from sessionary._optional import require
from sessionary.cli._app import (
    CLIError,
    Env,
    db_option,
    env_encryption,
    json_option,
    pass_env,
    root,
    store_options,
)
from sessionary.cli._views import printable

__all__: list[str] = []


def _check_address(host: str, port: int) -> None:
    """Refuse, on one line, an address the server could not listen on (before it starts).

    Otherwise uvicorn logs the failure over several lines and exits with its own status.
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
            probe.bind(address)
    except OSError as exc:
        raise CLIError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


@contextlib.contextmanager
def _one_line_exit() -> Iterator[None]:
    """Turn the server's own exit with a failure status into a one-line error (status 1)."""
    try:
        yield
    except SystemExit as exc:
        if exc.code in (0, None):
            raise
        raise CLIError(f"the server stopped (status {exc.code}; its log says why)") from None


def _server() -> ModuleType:
    """The server's command functions; `BackendNotInstalled` names the extra if missing."""
    require("fastapi", "uvicorn", "mcp", extra="server", what="this command")
    from sessionary.server import commands

    return commands


@root.command("serve")
@store_options
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True)
@click.option(
    "--no-auth",
    is_flag=True,
    help="Serve --tenant/--user to anyone without an API key (refused off loopback).",
)
@click.option(
    "--cors", "cors", multiple=True, metavar="ORIGIN", help="Allow this browser origin (repeat)."
)
@click.option(
    "--allow-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="Answer requests naming this host too, e.g. a reverse proxy's (repeat); any other "
    "host than loopback's and --host's then gets 421 (always so with --no-auth).",
)
@pass_env
def serve_command(
    env: Env,
    host: str,
    port: int,
    no_auth: bool,
    cors: tuple[str, ...],
    allowed_hosts: tuple[str, ...],
) -> None:
    """Serve the HTTP API, its OpenAPI docs and the web viewer (at /ui/) until stopped.

    Every request needs an API key (`sessionary keys create TENANT`) and sees only its
    key's tenant (and user, for a key bound to one); another tenant's ids answer 404.
    With $SESSIONARY_KEYS set, what it stores is encrypted at rest, as with every command.
    """
    commands = _server()
    _check_address(host, port)
    with _one_line_exit():
        commands.serve(
            env.url,
            host=host,
            port=port,
            auth=not no_auth,
            tenant=env.tenant,
            user=env.user,
            cors_origins=list(cors),
            encryption=env_encryption(),
            allowed_hosts=allowed_hosts,
        )


@root.command("mcp")
@store_options
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio for a local agent, http for streamable HTTP on --host/--port.",
)
@click.option("--session", "session_id", metavar="ID", help="Bind every tool call to this session.")
@click.option(
    "--block",
    "blocks",
    multiple=True,
    metavar="LABEL[:KIND[:LEVEL]]",
    help="A context block the tools may edit (repeat; default memory:writable:user).",
)
@click.option("--no-history", is_flag=True, help="Leave out the session history tools.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(1, 65535), default=8001, show_default=True)
@click.option(
    "--no-auth",
    is_flag=True,
    help="Over http, serve --tenant/--user without an API key (refused off loopback).",
)
@pass_env
def mcp_command(
    env: Env,
    transport: str,
    session_id: str | None,
    blocks: tuple[str, ...],
    no_history: bool,
    host: str,
    port: int,
    no_auth: bool,
) -> None:
    """Give any MCP client the memory tools, in the scope of --tenant and --user.

    Over http every request needs an API key (`sessionary keys create TENANT`, sent as
    `Authorization: Bearer`) and acts in its key's tenant (and user, if bound to one).
    On stdio (or with --no-auth) --session names a session of the scope (any unique
    prefix); without --session each call names its own, made if new.
    """
    commands = _server()
    if session_id is not None and (transport == "stdio" or no_auth):
        session_id = env.session_id(session_id)  # a typo would bind a new, empty session
        env.close()
    if transport == "http":
        _check_address(host, port)
    with _one_line_exit():
        commands.mcp(
            env.url,
            transport=transport,
            tenant=env.tenant,
            user=env.user,
            session_id=session_id,
            blocks=blocks or commands.DEFAULT_MCP_BLOCKS,
            history=not no_history,
            host=host,
            port=port,
            auth=not no_auth,
            encryption=env_encryption(),
        )


@root.group("keys")
@db_option
def keys_group() -> None:
    """Make, list and revoke the API keys of `sessionary serve` (stored hashed)."""


@keys_group.command("create")
@db_option
@click.argument("tenant")
@click.option("--user", "key_user", help="Bind the key to one user of the tenant.")
@click.option("--name", default="", help="A note saying whose or what the key is.")
@pass_env
def keys_create(env: Env, tenant: str, key_user: str | None, name: str) -> None:
    """Make a key for TENANT and print its token; the token is shown this once only."""
    key, token = _server().create_key(env.url, tenant, key_user, name)
    env.echo_json({**key.to_dict(), "token": token})


@keys_group.command("list")
@db_option
@click.option("--tenant", "key_tenant", help="Only the keys of this tenant.")
@json_option
@pass_env
def keys_list(env: Env, key_tenant: str | None, as_json: bool) -> None:
    """List the keys (never their secrets), revoked ones included."""
    env.require_store()
    found = [key.to_dict() for key in _server().list_keys(env.url, key_tenant)]
    if as_json:
        env.echo_json(found)
        return
    for key in found:
        state = f"revoked {key['revoked_at']}" if key.get("revoked_at") else "active"
        bound = f"{key['tenant']}/{key['user']}" if key.get("user") else key["tenant"]
        env.echo(f"{key['id']}  {bound}  {printable(key.get('name') or '-')}  {state}")


@keys_group.command("revoke")
@db_option
@click.argument("key_id")
@pass_env
def keys_revoke(env: Env, key_id: str) -> None:
    """Revoke a key; servers stop accepting it within their key cache time (5 s)."""
    env.require_store()
    env.echo_json(_server().revoke_key(env.url, key_id).to_dict())
