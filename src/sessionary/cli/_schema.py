"""The `schema` command: the SQL of a store's schema, for applying it by hand."""

from __future__ import annotations

import click

from sessionary.cli._app import Env, db_option, pass_env, root
from sessionary.stores.schema import schema_script

__all__: list[str] = []


@root.command("schema")
@click.option(
    "--print",
    "print_sql",
    is_flag=True,
    help="Print the SQL that creates the schema (nothing is opened or changed).",
)
@db_option
@pass_env
def schema_command(env: Env, print_sql: bool) -> None:
    """Print the SQL that creates the schema of the --db store's backend.

    For a database role that may not create tables: apply the SQL once with a role that
    may (psql, mysql or sqlite3; the first lines say how), then open the store with
    `?migrate=false` in its URL, which only checks the schema's version. For PostgreSQL
    the URL's `schema=NAME` option is honoured. Memory and Redis stores have no SQL
    schema.
    """
    if not print_sql:
        raise click.UsageError("say what to do: --print writes the schema's SQL")
    env.echo(schema_script(env.url).rstrip("\n"))
