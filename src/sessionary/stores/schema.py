"""A backend's whole schema as one SQL script, to apply by hand (pure: no I/O).

Where the database role an application runs with may not create tables, an
administrator applies the schema once with this script (`sessionary schema --print`),
and the application opens its store with the URL option `migrate=false`, which only
checks the schema's version. The script holds every migration the store would have run
on an empty database, in order, and records them as applied, so the result is the same
as a store's own first open. It is meant for an empty database (or PostgreSQL schema);
to upgrade one, open the store once, with a role that may change the schema, without
`migrate=false`.
"""

from __future__ import annotations

from collections.abc import Callable

from sessionary.errors import Unsupported
from sessionary.stores._mysql_sql import MySQLDialect
from sessionary.stores._postgres_sql import PostgresDialect
from sessionary.stores._sql_common import Dialect
from sessionary.stores._sqlite_schema import MIGRATIONS, statements
from sessionary.stores.urls import parse_store_url

__all__ = ["schema_script"]

_SQLITE_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_migrations "
    "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_us INTEGER NOT NULL);"
)
_SQLITE_NOW = "CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)"


def schema_script(url: str) -> str:
    """Return the SQL that creates the schema of the store `url` names, ending with a newline.

    Args:
        url: A store URL (`sqlite:///...`, `postgresql://...?schema=NAME`, `mysql://...`);
            only its backend and, for PostgreSQL, its `schema` option matter.

    Raises:
        InvalidURL: If the URL is malformed.
        Unsupported: If the backend keeps no SQL schema (memory, Redis).
    """
    parsed = parse_store_url(url)
    if parsed.scheme == "sqlite":
        lines = _sqlite()
    elif parsed.scheme == "postgresql":
        schema = parsed.options.get("schema")
        lines = _postgres(None if schema is None else str(schema))
    elif parsed.scheme == "mysql":
        lines = _mysql()
    else:
        raise Unsupported(f"{parsed.scheme} stores keep no SQL schema: there is nothing to apply")
    return "\n".join(lines) + "\n"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _sqlite() -> list[str]:
    latest = MIGRATIONS[-1][0]
    lines = [
        f"-- sessionary schema, version {latest}, for SQLite. Apply it to a new file:",
        "--   sqlite3 FILE < schema.sql",
        "BEGIN;",
        _SQLITE_TABLE,
    ]
    for version, name, sql in MIGRATIONS:
        lines.append(f"-- migration {version}: {name}")
        lines.extend(statements(sql))
        lines.append(
            "INSERT INTO schema_migrations (version, name, applied_us) "
            f"VALUES ({version}, {_quote(name)}, {_SQLITE_NOW});"
        )
    lines.append("COMMIT;")
    return lines


def _postgres(schema: str | None) -> list[str]:
    dialect = PostgresDialect(schema)
    lines = [
        f"-- sessionary schema, version {dialect.migrations[-1][0]}, for PostgreSQL. Apply it "
        "with a role that may create tables:",
        "--   psql URL -v ON_ERROR_STOP=1 -f schema.sql",
        "BEGIN;",
    ]
    if schema is not None:
        lines += [
            f'CREATE SCHEMA IF NOT EXISTS "{schema}";',
            f'SET LOCAL search_path TO "{schema}";',
        ]
    return lines + _migrations(dialect, _statement) + ["COMMIT;"]


def _mysql() -> list[str]:
    dialect = MySQLDialect()
    return [
        f"-- sessionary schema, version {dialect.migrations[-1][0]}, for MySQL and MariaDB. "
        "Apply it with a user that may create tables and triggers:",
        "--   mysql -h HOST -u USER DATABASE < schema.sql",
        *_migrations(dialect, _mysql_statement),
    ]


def _migrations(dialect: Dialect, render: Callable[[str], str]) -> list[str]:
    lines = [render(dialect.migrations_table)]
    for version, name, sql in dialect.migrations:
        lines.append(f"-- migration {version}: {name}")
        lines.extend(render(statement) for statement in sql)
        lines.append(
            f"INSERT INTO sessionary_migrations (version, name) VALUES ({version}, {_quote(name)});"
        )
    return lines


def _statement(sql: str) -> str:
    return sql.strip() + ";"


def _mysql_statement(sql: str) -> str:
    """One statement for the mysql client; a body holding `;` goes between delimiters."""
    if ";" not in sql:
        return _statement(sql)
    return f"DELIMITER //\n{sql.strip()} //\nDELIMITER ;"
