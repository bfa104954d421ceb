"""PyMySQL connections of the sync store share one context for opportunistic TLS.

PyMySQL (1.1.2 and later) tries TLS, unverified, wherever the server offers it, and would
build that mode's context (the system's certificates loaded, ~30 ms of CPU) for every
connection: a store's start, and every connection its pool grows by, paid it.
"""

from __future__ import annotations

import time

import pytest

import sessionary
from sessionary import Message
from sessionary.stores.mysql import _connect, connect_options

pytestmark = pytest.mark.mysql


def test_connections_share_one_opportunistic_tls_context(mysql_url: str) -> None:
    options = connect_options(mysql_url, 5, "database")
    first, second = _connect(options, 5, "here"), _connect(options, 5, "here")
    try:
        if not getattr(first, "ssl", False):
            pytest.skip("this PyMySQL tries no TLS unasked")
        assert first.ctx is second.ctx
        asked = first._create_ssl_ctx({"verify_mode": False, "check_hostname": False})
        assert asked is not first.ctx  # options of its own: a context of its own
    finally:
        first.close()
        second.close()


def test_a_store_starts_in_less_cpu_than_a_tls_context_takes(mysql_url: str) -> None:
    # A second store's start: its migration check, its first pooled connection and its
    # first append. Each context PyMySQL built took ~30 ms of CPU; all of it is far less.
    with sessionary.SessionManager(mysql_url) as first:
        first.create(id="s").append(Message.user("warm-up"))
    spent = []
    for _ in range(3):
        with sessionary.SessionManager(mysql_url) as manager:
            session = manager.session("s")
            before = time.process_time()
            session.append(Message.user("first of this store"))
            spent.append(time.process_time() - before)
    assert min(spent) < 0.02, spent
