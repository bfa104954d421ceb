"""Redis URLs: TLS (`rediss://` with redis-py's `ssl_*` parameters) and `client_name`.

The test server speaks no TLS, so these tests start a Redis of their own that does
(Debian's `redis-server`, on a free TLS port, with a certificate made for 127.0.0.1,
nothing saved), and check that a store verifies it, refuses a certificate from another
root, and that the parameters reach redis-py.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _servers import certificate, free_port, unavailable

import sessionary
from sessionary import InvalidURL, Message, StoreUnavailable

pytestmark = pytest.mark.redis

_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


@pytest.fixture(scope="module")
def tls_redis() -> Iterator[tuple[int, Path]]:
    """A Redis that speaks TLS only: its port, and the directory holding its `cert.pem`."""
    if not os.access(_SERVER, os.X_OK):
        unavailable("redis-server is not installed here")
    home = Path(tempfile.mkdtemp(prefix="sessionary-redis-"))
    port = free_port()
    certificate(home / "cert.pem", home / "key.pem")
    process = subprocess.Popen(
        [
            *(_SERVER, "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1"),
            *("--tls-cert-file", str(home / "cert.pem"), "--tls-key-file", str(home / "key.pem")),
            *("--tls-ca-cert-file", str(home / "cert.pem"), "--tls-auth-clients", "no"),
            *("--save", "", "--appendonly", "no", "--dir", str(home)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)
        yield port, home
    finally:
        process.terminate()
        process.wait(10)
        shutil.rmtree(home, ignore_errors=True)


def _use(url: str) -> int:
    """Append to a new session at `url`, sync and async; return the sync one's length."""
    with sessionary.SessionManager(url) as manager:
        chat = manager.create()
        chat.append(Message.user("over TLS"))
        length = len(chat.history())

    async def run() -> None:
        async with sessionary.AsyncSessionManager(url) as manager:
            await (await manager.create()).append(Message.user("over TLS"))

    asyncio.run(run())
    return length


def test_verified_tls(tls_redis: tuple[int, Path]) -> None:
    port, home = tls_redis
    url = f"rediss://127.0.0.1:{port}/0?ssl_cert_reqs=required&ssl_ca_certs={home / 'cert.pem'}"
    assert _use(f"{url}&namespace=tls") == 1
    assert _use(f"{url}&ssl_check_hostname=true&namespace=tls") == 1


def test_a_certificate_from_another_root_is_refused(
    tls_redis: tuple[int, Path], tmp_path: Path
) -> None:
    port, _ = tls_redis
    certificate(tmp_path / "other.pem", tmp_path / "other.key")
    url = (
        f"rediss://127.0.0.1:{port}/0?ssl_cert_reqs=required"
        f"&ssl_ca_certs={tmp_path / 'other.pem'}&connect_timeout=5"
    )
    with pytest.raises(StoreUnavailable), sessionary.SessionManager(url) as manager:
        manager.create()


def test_client_name_reaches_the_server(redis_url: str) -> None:
    import redis

    name = f"sessionary-test-{os.getpid()}"
    with sessionary.SessionManager(f"{redis_url}&client_name={name}") as manager:
        manager.create()
        clients = redis.Redis.from_url(redis_url.partition("?")[0]).client_list()
        assert any(client["name"] == name for client in clients)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("redis://h:6379/0?ssl_ca_certs=/x", "use rediss://"),
        ("rediss://h:6379/0?ssl_cert_reqs=maybe", "ssl_cert_reqs must be"),
        ("rediss://h:6379/0?ssl_check_hostname=perhaps", "not a valid"),
        ("redis://h:6379/0?client_name=two words", "client_name must be"),
        ("rediss://h:6379/0?ssl_ca_certs=/x&ssl_ca_certs=/y", "given twice"),
    ],
)
def test_bad_redis_parameters_are_refused(url: str, problem: str) -> None:
    with pytest.raises(InvalidURL, match=problem):
        sessionary.SessionManager(url)
