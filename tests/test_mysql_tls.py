"""MySQL URLs: TLS (`ssl_mode`, `ssl_ca`, `ssl_cert`, `ssl_key`) and a socket file.

The test server speaks no TLS, so these tests start a MariaDB of their own that does
(Debian's `mariadbd`, in a scratch data directory, on a free port, with a certificate
made for 127.0.0.1), and check each mode against it: that the connection is encrypted,
that a certificate from another root is refused, that `verify_identity` checks the host
name where `verify_ca` does not; that with `preferred`, or no mode, both stores encrypt
where the server offers TLS; and, against the test server, that asking for TLS from a
server without it fails instead of going on in the clear.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest
from _servers import certificate, free_port, unavailable

import sessionary
from sessionary import InvalidURL, Message, StoreUnavailable

pytestmark = pytest.mark.mysql

_SERVER = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
_INSTALL = shutil.which("mariadb-install-db") or "/usr/bin/mariadb-install-db"


@pytest.fixture(scope="module")
def tls_server() -> Iterator[tuple[int, Path]]:
    """A MariaDB that offers TLS: its port, and the directory holding its `cert.pem`."""
    if not (os.access(_SERVER, os.X_OK) and os.access(_INSTALL, os.X_OK)):
        unavailable("mariadbd is not installed here (the mariadb-server package)")
    home = Path(tempfile.mkdtemp(prefix="sessionary-mariadb-"))
    as_root = os.geteuid() == 0
    user = ["--user=mysql"] if as_root else []
    process: subprocess.Popen[bytes] | None = None
    try:
        certificate(home / "cert.pem", home / "key.pem")
        if as_root:
            shutil.chown(home, "mysql")
            for path in home.iterdir():
                shutil.chown(path, "mysql")
        subprocess.run(
            [
                *(_INSTALL, "--no-defaults", f"--datadir={home / 'data'}", *user),
                *("--auth-root-authentication-method=normal", "--skip-test-db"),
            ],
            check=True,
            capture_output=True,
        )
        port = free_port()
        process = subprocess.Popen(
            [
                *(_SERVER, "--no-defaults", f"--datadir={home / 'data'}", *user),
                *(f"--port={port}", "--bind-address=127.0.0.1", f"--socket={home / 'sock'}"),
                *(f"--pid-file={home / 'pid'}", f"--log-error={home / 'error.log'}"),
                *(f"--ssl-cert={home / 'cert.pem'}", f"--ssl-key={home / 'key.pem'}"),
                *("--innodb-buffer-pool-size=16M", "--skip-name-resolve"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        admin = _wait_for(port, process, home)
        with admin.cursor() as cursor:
            cursor.execute("CREATE DATABASE test CHARACTER SET utf8mb4")
        admin.close()
        yield port, home
    finally:
        if process is not None:
            process.terminate()
            process.wait(30)
        shutil.rmtree(home, ignore_errors=True)


def _wait_for(port: int, process: subprocess.Popen[bytes], home: Path) -> Any:
    deadline = time.monotonic() + 30
    while True:
        with contextlib.suppress(pymysql.err.OperationalError):
            return pymysql.connect(host="127.0.0.1", port=port, user="root", ssl_disabled=True)
        if process.poll() is not None or time.monotonic() > deadline:
            log = home / "error.log"
            raise RuntimeError(f"mariadbd did not start: {log.read_text() if log.exists() else ''}")
        time.sleep(0.1)


def _cipher(manager: Any) -> str:
    """The TLS cipher of the sync store's pooled connection ('' in the clear)."""
    rows, _ = manager.store._driver.run_alone("SHOW SESSION STATUS LIKE 'Ssl_cipher'", ())
    return str(rows[0][1])


async def _async_cipher(manager: Any) -> str:
    """The TLS cipher of the async store's pooled connection ('' in the clear)."""
    home = manager.store._home  # the store's connections live on its own loop
    asked = home.resident._driver.run_alone("SHOW SESSION STATUS LIKE 'Ssl_cipher'", ())
    rows, _ = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(asked, home._loop))
    return str(rows[0][1])


def _both(url: str) -> str:
    """Open a store at `url`, sync and async, and append; return the cipher both use."""
    with sessionary.SessionManager(url) as manager:
        manager.create().append(Message.user("over the wire"))
        cipher = _cipher(manager)

    async def run() -> str:
        async with sessionary.AsyncSessionManager(url) as manager:
            await (await manager.create()).append(Message.user("over the wire"))
            return await _async_cipher(manager)

    assert asyncio.run(run()) == cipher
    return cipher


def _refused(url: str, sync: str, async_: str) -> None:
    """A store at `url` cannot connect, sync (its error says `sync`) nor async (`async_`)."""
    with pytest.raises(StoreUnavailable, match=sync), sessionary.SessionManager(url) as manager:
        manager.create()

    async def run() -> None:
        async with sessionary.AsyncSessionManager(url) as manager:
            await manager.create()

    with pytest.raises(StoreUnavailable, match=async_):
        asyncio.run(run())


def test_verified_tls(tls_server: tuple[int, Path]) -> None:
    port, home = tls_server
    base = f"mysql://root@127.0.0.1:{port}/test"
    for mode in ("verify_identity", "verify_ca", "required"):
        query = f"ssl_mode={mode}&ssl_ca={home / 'cert.pem'}"
        assert _both(f"{base}?{query}")  # a cipher: encrypted
    assert _both(f"{base}?ssl_mode=required")  # encrypted, no certificate checked
    assert _both(f"{base}?ssl_ca={home / 'cert.pem'}")  # a root alone: verify_ca
    assert _both(f"{base}?ssl_mode=disabled") == ""  # in the clear, as asked


def test_tls_where_the_server_offers_it(tls_server: tuple[int, Path], mysql_url: str) -> None:
    # `preferred`, and no mode at all (MySQL's client's default): encrypted where the
    # server offers TLS, sync and async alike; in the clear where it does not.
    port, home = tls_server
    base = f"mysql://root@127.0.0.1:{port}/test"
    assert _both(base)
    assert _both(f"{base}?ssl_mode=preferred")
    assert _both(f"{base}?pool_size=1&ssl_mode=preferred")
    assert _both(f"mysql://root@localhost/test?unix_socket={home / 'sock'}")  # as PyMySQL does
    assert _both(mysql_url) == ""
    assert _both(f"{mysql_url}?ssl_mode=preferred") == ""


def test_a_certificate_from_another_root_is_refused(
    tls_server: tuple[int, Path], tmp_path: Path
) -> None:
    port, _ = tls_server
    certificate(tmp_path / "other.pem", tmp_path / "other.key")
    url = f"mysql://root@127.0.0.1:{port}/test?ssl_ca={tmp_path / 'other.pem'}&connect_timeout=5"
    _refused(url, "cannot connect", "cannot connect")


def test_verify_identity_checks_the_host_name(tls_server: tuple[int, Path]) -> None:
    port, home = tls_server
    ca = home / "cert.pem"  # made for 127.0.0.1, not for localhost
    by_name = f"mysql://root@localhost:{port}/test?ssl_ca={ca}&connect_timeout=5"
    assert _both(f"{by_name}&ssl_mode=verify_ca")
    with (
        pytest.raises(StoreUnavailable, match="cannot connect"),
        sessionary.SessionManager(f"{by_name}&ssl_mode=verify_identity") as manager,
    ):
        manager.create()


def test_tls_asked_of_a_server_without_it_is_refused(mysql_url: str) -> None:
    # Never a quiet fall back to the clear: aiomysql would go on without asking.
    _refused(f"{mysql_url}?ssl_mode=required&connect_timeout=5", "SSL", "does not offer TLS")


def test_a_socket_file(mysql_url: str) -> None:
    sock = "/run/mysqld/mysqld.sock"
    if not Path(sock).exists():
        pytest.skip(f"no MariaDB socket at {sock} on this machine")
    with sessionary.SessionManager(f"{mysql_url}?unix_socket={sock}") as manager:
        manager.create().append(Message.user("through the socket"))


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ("ssl_mode=maybe", "ssl_mode must be one of"),
        ("ssl_mode=disabled&ssl_ca=/x", "ssl_ca needs ssl_mode=required"),
        ("ssl_mode=preferred&ssl_cert=/x", "ssl_cert needs ssl_mode=required"),
        ("unix_socket=", "must be a file path"),
    ],
)
def test_bad_tls_options_are_refused(query: str, problem: str) -> None:
    with pytest.raises(InvalidURL, match=problem):
        sessionary.SessionManager(f"mysql://h/db?{query}")


def test_unreadable_tls_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidURL, match="TLS files cannot be used"):
        sessionary.SessionManager(f"mysql://h/db?ssl_ca={tmp_path / 'missing.pem'}")
