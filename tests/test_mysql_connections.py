"""The sync store's PyMySQL connections: one TLS context for all, and their pool.

PyMySQL (1.1.2 and later) tries TLS, unverified, wherever the server offers it, and would
build that mode's context (the system's certificates loaded, ~30 ms of CPU) for every
connection: a store's start, and every connection its pool grows by, paid it.
The pool (`stores.mysql._Pool`) lends at most its size of connections at once.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import sessionary
from sessionary import Message
from sessionary.errors import Closed, StoreError, StoreUnavailable
from sessionary.stores import mysql
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


def test_a_full_pool_hands_a_connection_to_one_waiting_thread(
    mysql_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mysql, "POOL_WAIT", 0.5)
    pool = mysql._Pool(mysql.connect_options(mysql_url, 0.5, "database"), 1, 5.0, "mysql")
    try:
        first = pool.take()
        with pytest.raises(StoreError, match="busy"):  # the only one is out: waits, gives up
            pool.take()
        got: list[Any] = []
        waiter = threading.Thread(target=lambda: got.append(pool.take()))
        waiter.start()
        time.sleep(0.1)
        assert got == []  # still waiting for the one connection
        pool.give(first)
        waiter.join(timeout=5)
        assert got == [first]  # the same connection, reused
        first.close()  # a connection closed while out is not kept
        pool.give(first)
        fresh = pool.take()
        assert fresh is not first and fresh.open
        pool.give(fresh)
    finally:
        pool.close()


def test_a_failed_connect_gives_its_slot_back(
    mysql_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = mysql._Pool(
        mysql.connect_options("mysql://root@127.0.0.1:1/none", 0.5, "database"), 1, 5.0, "x"
    )
    monkeypatch.setattr(mysql, "POOL_WAIT", 0.5)
    for _ in range(2):  # a leaked slot would make the second take wait and fail as busy
        with pytest.raises(StoreUnavailable, match="cannot connect"):
            pool.take()
    pool.close()
    with pytest.raises(Closed):
        pool.take()
