"""Helpers for tests that start a server of their own (PgBouncer, a TLS MariaDB or Redis)."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest


def unavailable(reason: str) -> None:
    """Skip for a missing program locally; fail in CI, where every backend must run."""
    if os.environ.get("SESSIONARY_REQUIRE_BACKENDS", "") not in ("", "0"):
        pytest.fail(f"required but unavailable: {reason}")
    pytest.skip(reason)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (yet)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def certificate(cert: Path, key: Path) -> None:
    """A self-signed certificate for 127.0.0.1 (and its key), by Debian's openssl."""
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
