"""A schema applied by hand, and a runtime role without schema rights (`migrate=false`).

For each SQL backend the script `sessionary schema --print` writes is applied with the
backend's own client (sqlite3, psql, mysql), the result is compared with what a store
creates itself, and a store opened with `migrate=false` then works in full. On
PostgreSQL and MySQL it runs as a role made for the test that may read and write rows
but not create anything (dropped afterwards); that role cannot open the store without
`migrate=false`. A missing or older schema is refused with `SchemaError`, unchanged.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from _old_sqlite import OldFile

import sessionary
from sessionary import InvalidURL, Message, SchemaError, StoreError, StoreUnavailable
from sessionary.cli import main
from sessionary.stores.schema import schema_script
from sessionary.stores.urls import parse_store_url

PASSWORD = "runtime-only"


def printed(url: str, capsys: pytest.CaptureFixture[str]) -> str:
    """The SQL `sessionary schema --print --db URL` writes."""
    assert main(["schema", "--print", "--db", url]) == 0
    out = capsys.readouterr().out
    assert out == schema_script(url)
    return out


def client(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"the {name} client is not installed")
    return found


def run(command: list[str], script: str) -> None:
    done = subprocess.run(command, input=script, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def migrated(url: str) -> None:
    """Let a store create its own schema at `url` (its first use migrates)."""
    store = sessionary.open_store(url)
    try:
        store.get_session(sessionary.Scope("t", "u"), "x")
    finally:
        store.close()


def exercise(url: str) -> None:
    """Everything a runtime does: sessions, messages, search, documents, state, deletes."""
    with sessionary.SessionManager(url) as manager:
        chat = manager.create(name="runtime")
        manager.append_all(
            chat.id,
            [
                Message.user("Where is the zebra?", id="q"),
                Message.assistant("In the enclosure by the lake.", id="a"),
                Message.user("Thanks!", id="t"),
            ],
        )
        assert [hit.message_id for hit in manager.search("zebra")] == ["q"]
        overlay = manager.add_compaction(chat.id, "They found the zebra.", "q", "a")
        assert manager.compactions(chat.id) == [overlay]
        assert manager.history(chat.id)[0].id == f"compaction_{overlay.id}"
        chat.update_state({"animal": "zebra"})
        assert manager.delete_messages(chat.id, ["t"]) == ["t"]
        fork = manager.fork(chat.id, "a")
        assert fork.path_length() == 2
        manager.end(chat.id)


# ---------------------------------------------------------------- SQLite


def sqlite_schema(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name")
        return list(rows)


def test_sqlite_schema_applied_by_hand_is_the_stores_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    by_hand = tmp_path / "by_hand.db"
    script = printed(f"sqlite:///{by_hand}", capsys)
    run([client("sqlite3"), str(by_hand)], script)
    by_store = tmp_path / "by_store.db"
    migrated(f"sqlite:///{by_store}")
    assert sqlite_schema(by_hand) == sqlite_schema(by_store)
    with sqlite3.connect(by_hand) as db:
        versions = [r[0] for r in db.execute("SELECT version FROM schema_migrations")]
    with sqlite3.connect(by_store) as db:
        assert versions == [r[0] for r in db.execute("SELECT version FROM schema_migrations")]
    exercise(f"sqlite:///{by_hand}?migrate=false")


def test_sqlite_without_migrating_refuses_a_missing_or_old_schema(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    with pytest.raises(StoreUnavailable):
        sessionary.open_store(f"sqlite:///{missing}?migrate=false")
    assert not missing.exists()
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    with pytest.raises(SchemaError, match="not a sessionary database"):
        sessionary.open_store(f"sqlite:///{empty}?migrate=false")
    old = tmp_path / "old.db"
    OldFile(old, 3).db.close()
    before = old.read_bytes()
    with pytest.raises(SchemaError, match="schema version 3") as raised:
        sessionary.open_store(f"sqlite:///{old}?migrate=false")
    assert "sessionary schema --print" in str(raised.value)
    assert old.read_bytes() == before
    sessionary.open_store(f"sqlite:///{old}").close()  # a store that may migrate does
    sessionary.open_store(f"sqlite:///{old}?migrate=false").close()


def test_the_option_is_for_sql_stores_only(capsys: pytest.CaptureFixture[str]) -> None:
    for url in ("memory://?migrate=false", "redis://127.0.0.1:6379/0?migrate=false"):
        with pytest.raises(InvalidURL):
            parse_store_url(url)
    with pytest.raises(InvalidURL, match="boolean"):
        parse_store_url("sqlite:///x.db?migrate=sometimes")
    assert parse_store_url("sqlite:///x.db?migrate=0").options == {"migrate": False}
    assert main(["schema", "--print", "--db", "memory://"]) == 1
    assert "no SQL schema" in capsys.readouterr().err
    assert main(["schema", "--db", "sqlite:///x.db"]) == 2


# ---------------------------------------------------------------- PostgreSQL


def postgres_catalog(admin: str, schema: str) -> dict[str, list[tuple[Any, ...]]]:
    """Tables, columns, indexes, search configurations and migrations of one schema."""
    import psycopg

    queries = {
        "columns": "SELECT table_name, column_name, data_type, is_nullable, column_default, "
        "is_generated, generation_expression FROM information_schema.columns "
        "WHERE table_schema = %(s)s ORDER BY table_name, column_name",
        "indexes": "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %(s)s "
        "ORDER BY indexname",
        "configs": "SELECT cfgname FROM pg_ts_config c JOIN pg_namespace n "
        "ON n.oid = c.cfgnamespace WHERE n.nspname = %(s)s ORDER BY cfgname",
        "versions": f'SELECT version, name FROM "{schema}".sessionary_migrations ORDER BY 1',
    }
    with psycopg.connect(admin) as conn:
        found = {name: conn.execute(sql, {"s": schema}).fetchall() for name, sql in queries.items()}
    # The schema's own name shows in qualified names: compare without it.
    return {
        name: [tuple(str(v).replace(schema, "S") for v in row) for row in rows]
        for name, rows in found.items()
    }


@pytest.fixture
def postgres_role(postgres_url: str) -> Iterator[tuple[str, str, str]]:
    """(admin URL, schema, role): a login role made for the test, dropped after it."""
    import psycopg

    admin = postgres_url.split("?")[0]
    schema = str(parse_store_url(postgres_url).options["schema"])
    role = f"sx_runtime_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}'")
    yield admin, schema, role
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP OWNED BY {role}")
        conn.execute(f"DROP ROLE {role}")


def role_url(admin: str, user: str, path: str, options: str) -> str:
    parts = urlsplit(admin)
    return f"{parts.scheme}://{user}:{PASSWORD}@{parts.hostname}:{parts.port}{path}?{options}"


def test_postgres_schema_by_hand_and_a_role_that_cannot_create(
    postgres_role: tuple[str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    admin, schema, role = postgres_role
    with pytest.raises(SchemaError, match="no sessionary tables"):
        exercise(f"{admin}?schema={schema}&migrate=false")
    script = printed(f"{admin}?schema={schema}", capsys)
    run([client("psql"), admin, "-q", "-v", "ON_ERROR_STOP=1", "-f", "-"], script)
    other = f"{schema}_by_store"
    try:
        migrated(f"{admin}?schema={other}")
        assert postgres_catalog(admin, schema) == postgres_catalog(admin, other)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{other}" CASCADE')
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO {role}')
        conn.execute(
            f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "{schema}" TO {role}'
        )
        conn.execute(f'GRANT USAGE ON ALL SEQUENCES IN SCHEMA "{schema}" TO {role}')
        (may_create,) = conn.execute(
            "SELECT has_schema_privilege(%s, %s, 'CREATE') OR "
            "has_database_privilege(%s, current_database(), 'CREATE')",
            (role, schema, role),
        ).fetchone()
    assert not may_create
    path = urlsplit(admin).path
    with pytest.raises(StoreError, match="permission denied"):
        exercise(role_url(admin, role, path, f"schema={schema}"))
    exercise(role_url(admin, role, path, f"schema={schema}&migrate=false"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DELETE FROM "{schema}".sessionary_migrations WHERE version > 1')
    with pytest.raises(SchemaError, match="at version 1"):
        exercise(role_url(admin, role, path, f"schema={schema}&migrate=false"))


# ---------------------------------------------------------------- MySQL


MySQLAdmin = Callable[[str | None], Any]


def mysql_catalog(admin: MySQLAdmin, database: str) -> dict[str, list[tuple[Any, ...]]]:
    conn = admin("information_schema")
    try:
        with conn.cursor() as cursor:
            queries = {
                "columns": "SELECT table_name, column_name, column_type, is_nullable, "
                "column_default FROM columns WHERE table_schema = %s "
                "ORDER BY table_name, column_name",
                "indexes": "SELECT table_name, index_name, seq_in_index, column_name, "
                "index_type FROM statistics WHERE table_schema = %s "
                "ORDER BY table_name, index_name, seq_in_index",
                "triggers": "SELECT trigger_name, event_manipulation, action_statement "
                "FROM triggers WHERE trigger_schema = %s ORDER BY trigger_name",
                "routines": "SELECT routine_name, routine_type, security_type, sql_mode, "
                "routine_definition FROM routines WHERE routine_schema = %s "
                "ORDER BY routine_name",
            }
            found = {}
            for name, sql in queries.items():
                cursor.execute(sql, (database,))
                found[name] = list(cursor.fetchall())
            cursor.execute(f"SELECT version, name FROM `{database}`.sessionary_migrations")
            found["versions"] = sorted(cursor.fetchall())
            return found
    finally:
        conn.close()


@pytest.fixture
def mysql_user(mysql_url: str, mysql_admin: MySQLAdmin) -> Iterator[str]:
    """A user made for the test with rights on the test's database only, dropped after."""
    user = f"sx_{uuid.uuid4().hex[:12]}"
    database = urlsplit(mysql_url).path.lstrip("/")
    conn = mysql_admin(None)
    try:
        with conn.cursor() as cursor:
            cursor.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY '{PASSWORD}'")
            cursor.execute(
                f"GRANT SELECT, INSERT, UPDATE, DELETE ON `{database}`.* TO '{user}'@'%'"
            )
        yield user
    finally:
        with conn.cursor() as cursor:
            cursor.execute(f"DROP USER IF EXISTS '{user}'@'%'")
        conn.close()


def test_mysql_schema_by_hand_and_a_user_that_cannot_create(
    mysql_url: str, mysql_user: str, mysql_admin: MySQLAdmin, capsys: pytest.CaptureFixture[str]
) -> None:
    parts = urlsplit(mysql_url)
    database = parts.path.lstrip("/")
    with pytest.raises(SchemaError, match="no sessionary tables"):
        exercise(f"{mysql_url}?migrate=false")
    script = printed(mysql_url, capsys)
    command = [client("mysql"), "-h", parts.hostname or "localhost", "-P", str(parts.port or 3306)]
    command += ["-u", unquote(parts.username or "root")]
    if parts.password:
        command.append(f"-p{unquote(parts.password)}")
    run([*command, database], script)
    other = f"{database}_by_store"
    conn = mysql_admin(None)
    try:
        with conn.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE `{other}` CHARACTER SET utf8mb4")
        migrated(parts._replace(path=f"/{other}").geturl())
        assert mysql_catalog(mysql_admin, database) == mysql_catalog(mysql_admin, other)
    finally:
        with conn.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS `{other}`")
        conn.close()
    as_user = role_url(mysql_url, mysql_user, parts.path, "")
    with pytest.raises(StoreError, match="denied"):
        exercise(as_user.rstrip("?"))
    exercise(f"{as_user}migrate=false")
    conn = mysql_admin(database)
    try:
        with conn.cursor() as cursor:
            cursor.execute("DELETE FROM sessionary_migrations WHERE version > 2")
    finally:
        conn.close()
    with pytest.raises(SchemaError, match="at version 2"):
        exercise(f"{as_user}migrate=false")
