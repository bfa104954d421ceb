"""A store that cannot be reached fails fast with a typed error (issue 13, defect 2).

Every way an endpoint can be wrong: a closed port; a listener that accepts and never
says a word; one that answers garbage; a real server of another protocol; a database
or user that does not exist; a SQLite path that is garbage, a directory, or unreadable.
Each must end in `StoreUnavailable`, sync and async, for every backend and the key-value
drivers, within the timeouts the URL sets (1 second here, so the suite stays quick).
A server that stops answering in the middle of its work is covered too: a proxy that
freezes after the first requests; and the watch that bounds psycopg's answers fires only
on an answer that is overdue, never on a long run of quick ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sessionary import AsyncSessionManager, Message, SessionManager, StoreUnavailable
from sessionary.kv import AsyncRedisDriver, AsyncSQLiteDriver, RedisDriver, SQLiteDriver
from sessionary.stores._waits import AsyncWatch, Watch

FAST = "connect_timeout=1&timeout=1"
"""The URL options of an attempt on a server that goes silent: a second to connect, a
second per answer."""
CONNECTING = "connect_timeout=1&timeout=60"
"""The URL options of an attempt to connect: only `connect_timeout` may bound it (an
attempt that waited `timeout` instead would take a minute)."""

WITHIN = 9.0
"""Seconds an attempt may take: under the 10 s default `connect_timeout`, so an attempt
that took the default instead of the URL's second fails; loose enough for a loaded box
(PostgreSQL rounds connect timeouts up to 2 s)."""


# ---------------------------------------------------------------- endpoints


class Listener:
    """A TCP endpoint on 127.0.0.1 that accepts connections and then says `reply`.

    `reply=None`: it never says anything (nor closes), like a server that hangs.
    """

    def __init__(self, reply: bytes | None) -> None:
        self._reply = reply
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.1)
        self.port = self._server.getsockname()[1]
        self._accepted: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except OSError:  # the accept timed out: look at the stop flag again
                continue
            self._accepted.append(conn)
            if self._reply is not None:
                with contextlib.suppress(OSError):
                    conn.sendall(self._reply)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._server.close()
        for conn in self._accepted:
            conn.close()


class Proxy:
    """Relays TCP to a server until `freeze()`, then keeps every connection open, silent."""

    def __init__(self, host: str, port: int) -> None:
        self._upstream = (host, port)
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.1)
        self.port = self._server.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._frozen = threading.Event()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._serve, daemon=True)]
        self._threads[0].start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                continue
            server = socket.create_connection(self._upstream)
            self._sockets += [client, server]
            for source, sink in ((client, server), (server, client)):
                pump = threading.Thread(target=self._pump, args=(source, sink), daemon=True)
                self._threads.append(pump)
                pump.start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while (data := source.recv(65536)) and not self._frozen.is_set():
                sink.sendall(data)
        self._stop.wait()  # frozen, or one side hung up: hold the other open until closed

    def freeze(self) -> None:
        self._frozen.set()

    def close(self) -> None:
        self._stop.set()
        self._server.close()
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        for thread in self._threads:
            thread.join()


@pytest.fixture
def listener() -> Iterator[Callable[[bytes | None], int]]:
    """Start listeners that say what they are told; return their ports."""
    started: list[Listener] = []

    def start(reply: bytes | None) -> int:
        started.append(Listener(reply))
        return started[-1].port

    yield start
    for one in started:
        one.close()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


GARBAGE = b"\xff\x00 not a database \x00\xfe\r\n" * 20
SCHEMES = {
    "postgres": "postgresql://postgres@127.0.0.1:{port}/test",
    "mysql": "mysql://root@127.0.0.1:{port}/test",
    "redis": "redis://127.0.0.1:{port}/0",
}
"""Each server backend's URL, for any port."""


def _port_of(url: str) -> int:
    return int(url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])


# ---------------------------------------------------------------- attempts


def _fails_fast(attempt: Callable[[], Any]) -> StoreUnavailable:
    started = time.monotonic()
    with pytest.raises(StoreUnavailable) as caught:
        attempt()
    assert time.monotonic() - started < WITHIN
    return caught.value


def _with_options(url: str, options: str = FAST) -> str:
    options = "busy_timeout=1" if url.startswith("sqlite:") else options
    return f"{url}{'&' if '?' in url else '?'}{options}"


def _sync_store(url: str) -> None:
    with SessionManager(_with_options(url, CONNECTING)) as manager:
        manager.create()


async def _async_store(url: str) -> None:
    async with AsyncSessionManager(_with_options(url, CONNECTING)) as manager:
        await manager.create()


def _sync_kv(url: str) -> None:
    driver = RedisDriver(url, connect_timeout=1, timeout=60)
    try:
        driver.put("k", "v")
    finally:
        driver.close()


async def _async_kv(url: str) -> None:
    driver = AsyncRedisDriver(url, connect_timeout=1, timeout=60)
    try:
        await driver.put("k", "v")
    finally:
        await driver.close()


def _every_way(url: str, scheme: str) -> None:
    """The store, sync and async; and for Redis the key-value drivers too."""
    _fails_fast(lambda: _sync_store(url))
    _fails_fast(lambda: asyncio.run(_async_store(url)))
    if scheme == "redis":
        _fails_fast(lambda: _sync_kv(url))
        _fails_fast(lambda: asyncio.run(_async_kv(url)))


ENDPOINTS: dict[str, Callable[[Callable[[bytes | None], int]], int]] = {
    "closed port": lambda listen: _closed_port(),
    "never speaks": lambda listen: listen(None),
    "speaks garbage": lambda listen: listen(GARBAGE),
}


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("endpoint", ENDPOINTS.values(), ids=ENDPOINTS.keys())
def test_a_wrong_endpoint_is_unavailable(
    scheme: str, endpoint: Callable[..., int], listener: Callable[[bytes | None], int]
) -> None:
    _every_way(SCHEMES[scheme].format(port=endpoint(listener)), scheme)


@pytest.mark.parametrize(
    ("scheme", "other"),
    [("mysql", "redis"), ("postgres", "redis"), ("redis", "mysql"), ("redis", "postgres")],
)
def test_a_server_of_another_protocol_is_unavailable(
    request: pytest.FixtureRequest, scheme: str, other: str
) -> None:
    real = request.getfixturevalue(f"{other}_url")  # fails (or skips) if it is not up
    _every_way(SCHEMES[scheme].format(port=_port_of(real)), scheme)


MISSING = {
    "postgres database": ("postgres", "postgresql://postgres@127.0.0.1:{port}/no_such_db"),
    "postgres user": ("postgres", "postgresql://no_such_user@127.0.0.1:{port}/test"),
    "mysql database": ("mysql", "mysql://root@127.0.0.1:{port}/no_such_db"),
    "mysql user": ("mysql", "mysql://no_such_user@127.0.0.1:{port}/test"),
    "redis user": ("redis", "redis://no_such_user:secret@127.0.0.1:{port}/0"),
    "redis database": ("redis", "redis://127.0.0.1:{port}/9999"),
}


@pytest.mark.parametrize(("scheme", "pattern"), MISSING.values(), ids=MISSING.keys())
def test_a_missing_database_or_user_is_unavailable(
    request: pytest.FixtureRequest, scheme: str, pattern: str
) -> None:
    real = request.getfixturevalue(f"{scheme}_url")
    _every_way(pattern.format(port=_port_of(real)), scheme)


# ---------------------------------------------------------------- SQLite files


def _garbage_file(tmp: Path) -> Path:
    path = tmp / "garbage.db"
    path.write_bytes(os.urandom(8192))
    return path


def _garbage_after_header(tmp: Path) -> Path:
    path = tmp / "header.db"
    path.write_bytes(b"SQLite format 3\x00" + os.urandom(8192))
    return path


def _unreadable(tmp: Path) -> Path:
    if os.geteuid() == 0:
        pytest.skip("root reads any file")
    path = tmp / "unreadable.db"
    path.write_bytes(b"")
    path.chmod(0)
    return path


BAD_FILES: dict[str, Callable[[Path], Path]] = {
    "garbage": _garbage_file,
    "garbage after a valid header": _garbage_after_header,
    "a directory": lambda tmp: tmp,
    "unreadable": _unreadable,
}


@pytest.mark.sqlite
@pytest.mark.parametrize("make", BAD_FILES.values(), ids=BAD_FILES.keys())
def test_a_bad_sqlite_file_is_unavailable(tmp_path: Path, make: Callable[[Path], Path]) -> None:
    path = make(tmp_path)
    _fails_fast(lambda: _sync_store(f"sqlite:///{path}"))
    _fails_fast(lambda: asyncio.run(_async_store(f"sqlite:///{path}")))
    _fails_fast(lambda: SQLiteDriver(str(path)).get("k"))
    _fails_fast(lambda: AsyncSQLiteDriver(str(path)))


# ---------------------------------------------------------------- a server that stops


@pytest.fixture
def frozen_later(request: pytest.FixtureRequest) -> Iterator[Callable[[str], tuple[str, Proxy]]]:
    """Put a proxy between a store and its server; return the proxied URL and the proxy."""
    proxies: list[Proxy] = []

    def make(scheme: str) -> tuple[str, Proxy]:
        real = str(request.getfixturevalue(f"{scheme}_url"))
        proxies.append(Proxy("127.0.0.1", _port_of(real)))
        host = f"127.0.0.1:{_port_of(real)}"
        return _with_options(real.replace(host, f"127.0.0.1:{proxies[-1].port}")), proxies[-1]

    yield make
    for proxy in proxies:
        proxy.close()


STOPPING = ["mysql", "redis", pytest.param("postgres", id="postgres")]


def _answered(url: str) -> tuple[SessionManager, Any]:
    """A sync store at `url`, and a session of it with one message, answered."""
    manager = SessionManager(url)
    chat = manager.create()
    chat.append(Message.user("answered"))
    return manager, chat


def _answered_async(url: str) -> tuple[AsyncSessionManager, Any]:
    """`_answered` for an async store, opened on an event loop of its own."""

    async def open_async() -> tuple[AsyncSessionManager, Any]:
        manager = AsyncSessionManager(url)
        session = await manager.create()
        await session.append(Message.user("answered"))
        return manager, session

    return asyncio.run(open_async())


@pytest.mark.parametrize("scheme", STOPPING)
def test_a_server_that_stops_answering_mid_session(
    frozen_later: Callable[[str], tuple[str, Proxy]], scheme: str
) -> None:
    url, proxy = frozen_later(scheme)
    manager, chat = _answered(url)
    amanager, _ = _answered_async(url)
    bmanager, bsession = _answered_async(url)
    proxy.freeze()
    _fails_fast(lambda: chat.append(Message.user("unanswered")))
    _fails_fast(lambda: asyncio.run(amanager.create()))
    # A one-message append after a known head, from another event loop than the first
    # (on MariaDB: the CALL whose answer the driver reads itself).
    _fails_fast(lambda: asyncio.run(bsession.append(Message.user("unanswered"))))
    manager.close()
    asyncio.run(amanager.close())
    asyncio.run(bmanager.close())


@pytest.mark.parametrize("scheme", STOPPING)
def test_every_later_call_to_a_silent_server_fails_fast(
    frozen_later: Callable[[str], tuple[str, Proxy]], scheme: str
) -> None:
    # The first call after the server went silent spends the pool's one connection; each
    # later one needs a new connection, which cannot be made: it fails within the URL's
    # connect timeout, not after waiting the pool's `POOL_WAIT` (30 s) for one. (Found
    # 2026-11-28: aiomysql's pool made connections with no bound on the handshake, and
    # psycopg's pool kept retrying in the background while every caller waited.)
    url, proxy = frozen_later(scheme)
    manager, chat = _answered(url)
    amanager, asession = _answered_async(url)
    proxy.freeze()
    more = [Message.user("un"), Message.user("answered")]
    for attempt in (
        manager.create,
        lambda: chat.append(Message.user("unanswered")),
        lambda: chat.append_all(more),  # a transaction of several statements
        chat.history,
    ):
        _fails_fast(attempt)
    for call in (
        amanager.create,
        lambda: asession.append(Message.user("unanswered")),
        lambda: asession.append_all(more),
        asession.history,
        amanager.create,  # from yet another event loop
    ):
        _fails_fast(lambda: asyncio.run(call()))  # noqa: B023 (run at once)
    manager.close()
    asyncio.run(amanager.close())


@pytest.mark.postgres
def test_a_postgres_server_that_stops_answering_during_a_contended_append(
    frozen_later: Callable[[str], tuple[str, Proxy]], postgres_url: str
) -> None:
    # A session another writer moves is appended to by one CALL that commits, then waits
    # for the flush (`unlocked_append_sql`): that call is bounded like any other.
    url, proxy = frozen_later("postgres")

    async def contended_async() -> Any:
        amanager = AsyncSessionManager(url)
        achat = amanager.session("s")
        await achat.append(Message.user("async a"))
        other.session("s").append(Message.user("moves the head"))
        await achat.append(Message.user("async b"))  # its head moved: it locks from now on
        return amanager, achat

    with SessionManager(postgres_url) as other:
        other.create(id="s")
        manager = SessionManager(url)
        chat = manager.session("s")
        chat.append(Message.user("a"))
        other.session("s").append(Message.user("moves the head"))
        chat.append(Message.user("b"))
        amanager, achat = asyncio.run(contended_async())
        assert manager.store._moved and manager.store._driver.unlocks_early
        proxy.freeze()
        _fails_fast(lambda: chat.append(Message.user("unanswered")))
        _fails_fast(lambda: asyncio.run(achat.append(Message.user("unanswered"))))
        manager.close()
        asyncio.run(amanager.close())
        texts = [m.text for m in other.session("s").history()]
    assert texts[:6] == ["a", "moves the head", "b", "async a", "moves the head", "async b"]


@pytest.mark.redis
def test_a_redis_driver_whose_server_stops_answering(
    frozen_later: Callable[[str], tuple[str, Proxy]],
) -> None:
    url, proxy = frozen_later("redis")
    base, _, options = url.partition("?")
    namespace = options.split("namespace=", 1)[1].split("&", 1)[0]
    # (A reconnection's handshake waits `connect_timeout`, as every server store's does.)
    driver = RedisDriver(base, namespace=namespace, connect_timeout=1, timeout=1)
    adriver = AsyncRedisDriver(base, namespace=namespace, connect_timeout=1, timeout=1)
    driver.put("k", "v")
    asyncio.run(adriver.put("k", "v"))
    proxy.freeze()
    _fails_fast(lambda: driver.get("k"))
    _fails_fast(lambda: asyncio.run(adriver.get("k")))
    driver.close()
    asyncio.run(adriver.close())


# ---------------------------------------------------------------- the watch on psycopg


def _renewed_then_overdue(watch: Watch | AsyncWatch, pause: Callable[[float], Any]) -> Any:
    """Renew for twice the watch's time, then stop renewing until it fires."""
    for _ in range(10):  # 2 s of renewals, 0.2 s apart: never 1 s without one
        watch.renew()
        yield pause(0.2)
    assert not watch.fired
    started = time.monotonic()
    while not watch.fired and time.monotonic() - started < WITHIN:
        yield pause(0.05)


@pytest.mark.parametrize("kind", [Watch, AsyncWatch])
def test_a_watch_fires_only_on_an_overdue_answer(kind: type[Watch | AsyncWatch]) -> None:
    # A transaction of many quick statements may outlast `timeout`; one slow answer may not.
    mine, peer = socket.socketpair()

    async def wait_async() -> bool:
        watch = AsyncWatch(mine.fileno(), 1.0)
        for pause in _renewed_then_overdue(watch, asyncio.sleep):
            await pause
        return watch.stop()

    def wait_sync() -> bool:
        watch = Watch(mine.fileno(), 1.0)
        for _ in _renewed_then_overdue(watch, time.sleep):
            pass
        return watch.stop()

    assert (asyncio.run(wait_async()) if kind is AsyncWatch else wait_sync()) is True
    peer.settimeout(WITHIN)
    assert peer.recv(1) == b""  # the connection was hung up
    mine.close()
    peer.close()


def _hung_up(peer: socket.socket) -> bool:
    """Whether the other end of `peer` was shut down (without waiting for it)."""
    peer.setblocking(False)
    try:
        return peer.recv(1) == b""
    except BlockingIOError:
        return False


@pytest.mark.parametrize("kind", [Watch, AsyncWatch])
def test_a_watch_serves_its_connection_for_life(kind: type[Watch | AsyncWatch]) -> None:
    # One watch per connection: stopped after each use, it neither fires while the
    # connection idles in the pool, nor fails to fire on a later use's overdue answer.
    mine, peer = socket.socketpair()

    async def use_async() -> bool:
        watch = AsyncWatch(mine.fileno(), 0.2)
        for _ in range(3):
            watch.renew()
            await asyncio.sleep(0.01)
            assert watch.stop() is False
            await asyncio.sleep(0.4)  # past the deadline the stop cancelled
            assert not _hung_up(peer)
        watch.renew()
        for _ in range(int(WITHIN / 0.05)):
            if watch.fired:
                break
            await asyncio.sleep(0.05)
        return watch.stop()

    def use_sync() -> bool:
        watch = Watch(mine.fileno(), 0.2)
        for _ in range(3):
            watch.renew()
            time.sleep(0.01)
            assert watch.stop() is False
            time.sleep(0.4)
            assert not _hung_up(peer)
        watch.renew()
        started = time.monotonic()
        while not watch.fired and time.monotonic() - started < WITHIN:
            time.sleep(0.05)
        return watch.stop()

    assert (asyncio.run(use_async()) if kind is AsyncWatch else use_sync()) is True
    peer.setblocking(True)
    peer.settimeout(WITHIN)
    assert peer.recv(1) == b""
    mine.close()
    peer.close()


def test_the_watchdog_never_hangs_up_a_connection_its_owner_stopped_watching() -> None:
    # The watchdog reads a deadline without a lock: an owner may stop the watch (and give
    # the connection back to the pool) between that read and the hang-up. The hang-up
    # looks again after marking the watch fired, which the owner reads after its stop.
    mine, peer = socket.socketpair()
    watch = Watch(mine.fileno(), 60.0)
    later = time.monotonic() + 120.0  # a watchdog's look at which the answer is overdue
    watch.renew()
    assert watch.stop() is False
    watch.fire(later)  # the look came before the stop, the hang-up after it
    assert not watch.fired and not _hung_up(peer)
    watch.renew()
    watch.fire(later)  # not stopped: hung up, and its owner's stop says so
    assert watch.stop() is True
    peer.setblocking(True)
    peer.settimeout(WITHIN)
    assert peer.recv(1) == b""
    mine.close()
    peer.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_still_watches_the_connections_it_inherited() -> None:
    # A sync store is not rebuilt in a forked child, and a watch is registered once per
    # connection: the child's watchdog starts with the watches the parent had.
    mine, peer = socket.socketpair()
    watch = Watch(mine.fileno(), 0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
        pid = os.fork()
    if pid == 0:  # the child: its answer is overdue, and it has no lock to take
        code = 1
        try:
            watch.renew()
            started = time.monotonic()
            while not watch.fired and time.monotonic() - started < WITHIN:
                time.sleep(0.05)
            code = 0 if watch.stop() else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    peer.settimeout(WITHIN)
    assert peer.recv(1) == b""
    assert watch.stop() is False  # the parent's use of it never fired
    mine.close()
    peer.close()
