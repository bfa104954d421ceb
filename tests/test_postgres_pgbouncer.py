"""PostgreSQL through PgBouncer, in session and in transaction pooling mode.

A pooler refuses a connection whose startup packet carries `options`, which is where the
store used to put its search path and request bounds; they are a statement on each new
connection now (`stores.postgres.session_settings`). In transaction mode the pooler runs
each transaction on any server connection: with `pgbouncer=true` the store keeps nothing
on a connection (no prepared statement, no setting) and uses the role's search path.

Each test starts its own PgBouncer (Debian's `pgbouncer`, which `scripts/test` installs
where it can) on a free port, in front of the test server, with a schema of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from _servers import certificate, free_port, unavailable

import sessionary
from sessionary import InvalidURL, Message, SessionManager, StoreUnavailable
from sessionary.stores.urls import parse_store_url

pytestmark = pytest.mark.postgres

_BINARY = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"


@contextlib.contextmanager
def _pgbouncer(server: str, mode: str, schema: str, tls: Path | None = None) -> Iterator[str]:
    """Run a PgBouncer in `mode` before `server`; yield its URL for database `test`.

    Its server connections start in `schema` (its `connect_query`): the search path a
    role would have, for transaction mode, where the store sets none. It will not run as
    root: then it runs as `postgres`, in a directory of its own. With `tls`, it requires
    TLS of its clients, with a certificate for 127.0.0.1 that it writes to
    `tls / "server.pem"` (its own root).
    """
    if not os.access(_BINARY, os.X_OK):
        unavailable("pgbouncer is not installed (apt-get install pgbouncer)")
    tmp = Path(tempfile.mkdtemp(prefix="sessionary-pgbouncer-"))
    try:
        with _running(server, mode, schema, tmp, tls) as url:
            yield url
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def _running(server: str, mode: str, schema: str, tmp: Path, tls: Path | None) -> Iterator[str]:
    parts = urlsplit(server)
    port = free_port()
    user = parts.username or "postgres"
    (tmp / "users.txt").write_text(f'"{user}" ""\n')
    secure = ""
    if tls is not None:
        certificate(tmp / "server.pem", tmp / "server.key")
        shutil.copy(tmp / "server.pem", tls / "server.pem")
        secure = (
            f"client_tls_sslmode = require\nclient_tls_cert_file = {tmp / 'server.pem'}\n"
            f"client_tls_key_file = {tmp / 'server.key'}\n"
        )
    (tmp / "pgbouncer.ini").write_text(
        "[databases]\n"
        f"test = host={parts.hostname} port={parts.port or 5432} dbname={parts.path.strip('/')}"
        f" connect_query='SET search_path TO \"{schema}\"'\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        f"auth_type = trust\nauth_file = {tmp / 'users.txt'}\npool_mode = {mode}\n"
        "default_pool_size = 4\nmax_client_conn = 200\n"
        f"logfile = {tmp / 'pgbouncer.log'}\n{secure}"
    )
    command = [_BINARY, str(tmp / "pgbouncer.ini")]
    if os.geteuid() == 0:
        for path in (tmp, *tmp.iterdir()):
            shutil.chown(path, "postgres")
        command[1:1] = ["-u", "postgres"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                log = tmp / "pgbouncer.log"
                said = log.read_text() if log.exists() else "no log"
                raise RuntimeError(f"pgbouncer did not start: {said}")
            time.sleep(0.05)
        yield f"postgresql://{user}@127.0.0.1:{port}/test"
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture
def server(postgres_url: str) -> tuple[str, str]:
    """The test server's URL and a schema of this test's own (dropped after), created."""
    location, _, schema = postgres_url.partition("?schema=")
    with psycopg.connect(location, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    return location, schema


@pytest.fixture(params=["session", "transaction"])
def pooled_url(request: pytest.FixtureRequest, server: tuple[str, str]) -> Iterator[str]:
    """A store URL through PgBouncer in each pooling mode."""
    location, schema = server
    with _pgbouncer(location, request.param, schema) as url:
        # Session mode: the store sets the search path itself; transaction mode: the role's.
        yield f"{url}?schema={schema}" if request.param == "session" else f"{url}?pgbouncer=true"


def _work(manager: SessionManager) -> None:
    """A bit of everything a store does, more times than psycopg prepares after."""
    chat = manager.create(id="chat")
    for n in range(8):
        chat.append(Message.user(f"question {n} about pooling"))
    chat.append_all([Message.assistant("an answer"), Message.user("a follow-up")])
    chat.update_state({"turns": 10})
    fork = manager.fork("chat", id="fork")
    fork.append(Message.user("on the fork"))
    threads = [
        threading.Thread(
            target=lambda k: [chat.append(Message.user(f"w{k}-{i}")) for i in range(10)],
            args=(k,),
        )
        for k in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    history = chat.history()
    assert len(history) == 10 + 40
    assert [m.parent_id for m in history[1:]] == [m.id for m in history[:-1]]  # one chain
    assert len(chat.search("pooling")) == 8
    assert chat.get_state().data == {"turns": 10}
    assert len(fork.history()) == 11


def test_a_store_works_through_pgbouncer(pooled_url: str) -> None:
    with SessionManager(pooled_url) as manager:
        _work(manager)
    with SessionManager(pooled_url) as again:  # a second store finds the schema migrated
        assert again.session("chat").message_count() == 50


async def test_an_async_store_works_through_pgbouncer(pooled_url: str) -> None:
    async with sessionary.AsyncSessionManager(pooled_url) as manager:
        chat = await manager.create()
        await asyncio.gather(*(chat.append(Message.user(f"m{n}")) for n in range(30)))
        history = await chat.history()
        assert len(history) == 30
        assert [m.parent_id for m in history[1:]] == [m.id for m in history[:-1]]


async def test_cancelled_appends_through_pgbouncer_leave_one_chain(pooled_url: str) -> None:
    # Callers that give up mid-append (cancelled at random loop turns): every append is
    # whole or absent, the session stays one chain, and the store goes on working.
    async with sessionary.AsyncSessionManager(pooled_url) as manager:
        chat = await manager.create()
        for n in range(20):
            task = asyncio.ensure_future(chat.append(Message.user(f"maybe {n}")))
            for _ in range(n % 5):
                await asyncio.sleep(0)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await chat.append(Message.user("after"))
        history = await chat.history()
        assert history[-1].text == "after"
        assert [m.parent_id for m in history[1:]] == [m.id for m in history[:-1]]
        assert len({m.id for m in history}) == len(history)


def test_transaction_mode_leaves_no_setting_on_the_servers_connections(
    server: tuple[str, str],
) -> None:
    location, schema = server
    with _pgbouncer(location, "transaction", schema) as url:
        with SessionManager(f"{url}?pgbouncer=true") as manager:
            manager.create().append(Message.user("hello"))
        # Other clients of the pooler get the same server connections: none of them
        # carries a request bound (or anything else) the store set.
        with psycopg.connect(url, autocommit=True, prepare_threshold=None) as other:
            for _ in range(8):
                setting = other.execute("SHOW statement_timeout").fetchone()
                assert setting == ("0",)


def test_session_mode_sets_the_request_bounds(server: tuple[str, str]) -> None:
    location, schema = server
    with (
        _pgbouncer(location, "session", schema) as url,
        SessionManager(f"{url}?schema={schema}&timeout=7") as manager,
    ):
        manager.create()
        driver = manager.store._driver  # type: ignore[attr-defined]
        rows, _ = driver.run_alone("SHOW statement_timeout", ())
        assert rows == [("7s",)]


def test_schema_and_pgbouncer_do_not_go_together() -> None:
    with pytest.raises(InvalidURL, match="do not go together"):
        parse_store_url("postgresql://h/db?schema=s&pgbouncer=true")
    assert parse_store_url("postgresql://h/db?schema=s&pgbouncer=false").options == {
        "schema": "s",
        "pgbouncer": False,
    }


def test_a_schema_named_in_capitals_is_that_schema(postgres_url: str) -> None:
    # The search path names it quoted, as CREATE SCHEMA made it (unquoted, it was folded
    # to lower case, and the store could not create its tables).
    name = f"test_Caps_{uuid.uuid4().hex[:8]}"
    location = postgres_url.partition("?")[0]
    try:
        with SessionManager(f"{location}?schema={name}") as manager:
            manager.create().append(Message.user("in capitals"))
        with psycopg.connect(location, autocommit=True) as admin:
            found = admin.execute(
                "SELECT count(*) FROM pg_tables WHERE schemaname = %s AND tablename = 'messages'",
                (name,),
            ).fetchone()
            assert found == (1,)
    finally:
        with psycopg.connect(location, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


# ---------------------------------------------------------------- libpq's parameters
# Any libpq connection parameter may ride in the URL (sslmode, sslrootcert,
# application_name, target_session_attrs, a socket directory as host): it reaches libpq.


def test_tls_is_verified_end_to_end(server: tuple[str, str], tmp_path: Path) -> None:
    location, schema = server
    with _pgbouncer(location, "session", schema, tls=tmp_path) as url:
        verified = f"{url}?sslmode=verify-full&sslrootcert={tmp_path / 'server.pem'}"
        with SessionManager(f"{verified}&schema={schema}") as manager:
            manager.create().append(Message.user("over TLS"))
        certificate(tmp_path / "other.pem", tmp_path / "other.key")  # another root
        wrong = f"{url}?sslmode=verify-full&sslrootcert={tmp_path / 'other.pem'}"
        with (
            pytest.raises(StoreUnavailable, match="certificate verify failed"),
            SessionManager(f"{wrong}&schema={schema}&connect_timeout=5") as manager,
        ):
            manager.create()
        with (
            pytest.raises(StoreUnavailable),  # the pooler requires TLS
            SessionManager(f"{url}?sslmode=disable&schema={schema}") as manager,
        ):
            manager.create()


def test_libpq_parameters_reach_the_server(postgres_url: str) -> None:
    name = f"app-{uuid.uuid4().hex[:8]}"
    url = f"{postgres_url}&application_name={name}&sslmode=disable&keepalives_idle=7"
    with SessionManager(url) as manager:
        manager.create()
        driver = manager.store._driver  # type: ignore[attr-defined]
        rows, _ = driver.run_alone("SELECT current_setting('application_name')", ())
        assert rows == [(name,)]
        assert driver._pool.kwargs.get("keepalives_idle") is None  # the URL's, not the store's


def test_a_socket_directory_as_host(postgres_url: str) -> None:
    sockets = "/var/run/postgresql"
    if not Path(sockets, ".s.PGSQL.5432").exists():
        pytest.skip(f"no PostgreSQL socket in {sockets} on this machine")
    location, _, schema = postgres_url.partition("?schema=")
    database = urlsplit(location).path.strip("/")
    url = f"postgresql:///{database}?host={sockets}&user=postgres&schema={schema}"
    with SessionManager(url) as manager:
        manager.create().append(Message.user("through the socket"))


def test_several_hosts_are_tried_in_turn(postgres_url: str) -> None:
    # libpq's failover: a host that refuses (port 1) is passed over for the next one;
    # with target_session_attrs=read-write, only a primary is taken.
    parts = urlsplit(postgres_url)
    hosts = f"127.0.0.1:1,{parts.hostname}:{parts.port or 5432}"
    url = (
        f"postgresql://{parts.username or 'postgres'}@{hosts}{parts.path}?{parts.query}"
        "&target_session_attrs=read-write&connect_timeout=3"
    )
    with SessionManager(url) as manager:
        manager.create().append(Message.user("on the second host"))


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ("sslmod=require", "unknown store option 'sslmod'"),
        ("replication=database", "replication is refused"),
        ("sslmode=require&sslmode=disable", "sslmode is given twice"),
    ],
)
def test_bad_connection_parameters_are_refused(query: str, problem: str) -> None:
    with pytest.raises(InvalidURL, match=problem):
        parse_store_url(f"postgresql://h/db?{query}")


def test_a_bad_port_in_a_list_of_hosts_is_refused() -> None:
    with pytest.raises(InvalidURL, match="Port"):
        parse_store_url("postgresql://u@h1:5432,h2:x/db")


def test_passwords_in_parameters_are_masked_in_errors() -> None:
    url = "postgresql://u:pw@127.0.0.1:1/db?sslpassword=hunter2&connect_timeout=1"
    with pytest.raises(StoreUnavailable) as caught, SessionManager(url) as manager:
        manager.create()
    assert "hunter2" not in str(caught.value) and "pw@" not in str(caught.value)
    assert "sslpassword=***" in str(caught.value)
