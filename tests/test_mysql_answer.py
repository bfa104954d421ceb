"""The MariaDB drivers read a CALL's answer themselves (`stores.mysql._Answer`).

A one-message append CALLs its procedure and reads the answer packet by packet instead of
through PyMySQL's cursor. These tests hold that reader to what the cursor reads
(`_results`) for answers of every shape, and check what it leaves behind: after a
failing CALL no open transaction, after a killed, cancelled or timed-out one no
connection that the next CALL would read a stale answer on, and a CALL that would not
fit in the server's packet never sent.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pymysql
import pytest

import sessionary
from sessionary.errors import PayloadTooLarge, StoreError
from sessionary.stores import mysql
from sessionary.stores.mysql import (
    AsyncMySQLDriver,
    _Answer,
    _number,
    _payload,
    _results,
    connect_options,
)

pytestmark = pytest.mark.mysql

_MORE_RESULTS = pymysql.constants.SERVER_STATUS.SERVER_MORE_RESULTS_EXISTS

_PROCEDURES = (
    "CREATE TABLE h_t (x INT PRIMARY KEY)",
    "CREATE PROCEDURE h_nothing() BEGIN END",
    "CREATE PROCEDURE h_change() BEGIN INSERT INTO h_t VALUES (1), (2); END",
    """CREATE PROCEDURE h_two(v TEXT) BEGIN
        SELECT 'a', NULL, v;
        INSERT INTO h_t VALUES (3);
        SELECT 'b', 'c', concat(v, v) UNION ALL SELECT 'd', NULL, '';
        UPDATE h_t SET x = x + 10 WHERE x < 3;
    END""",
    "CREATE PROCEDURE h_empty() BEGIN SELECT x FROM h_t WHERE x < 0; END",
    "CREATE PROCEDURE h_length(v LONGTEXT) BEGIN SELECT length(v); END",
    "CREATE PROCEDURE h_sleep(s DOUBLE) BEGIN SELECT sleep(s); END",
    """CREATE PROCEDURE h_fail() BEGIN
        START TRANSACTION;
        INSERT INTO h_t VALUES (99);
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused on purpose';
    END""",
)


def _connect(url: str) -> Any:
    return pymysql.connect(**connect_options(url, 5, "database"))


@pytest.fixture
def url(mysql_url: str) -> Iterator[str]:
    """A store's database, with the procedures above; MariaDB only (MySQL runs scripts)."""
    with sessionary.SessionManager(mysql_url) as manager:
        manager.create(id="s")
        if not manager.store._driver._routines:  # type: ignore[attr-defined]
            pytest.skip("this server runs the scripts")
    conn = _connect(mysql_url)
    try:
        with conn.cursor() as cursor:
            for statement in _PROCEDURES:
                cursor.execute(statement)
    finally:
        conn.close()
    yield mysql_url


def _reset(url: str) -> None:
    conn = _connect(url)
    try:
        with conn.cursor() as cursor:
            cursor.execute("DELETE FROM h_t")
    finally:
        conn.close()


def _by_cursor(url: str, name: str, values: list[Any]) -> tuple[list[Any], int]:
    """What PyMySQL's cursor reads of the CALL (texts as text, as the procedures give)."""
    conn = _connect(url)
    try:
        with conn.cursor() as cursor:
            marks = ", ".join(["%s"] * len(values))
            cursor.execute(f"CALL {name}({marks})", values)
            rows, changed = _results(cursor)
    finally:
        conn.close()
    return [tuple(v if v is None else str(v) for v in row) for row in rows], changed


@pytest.mark.parametrize(
    ("name", "values"),
    [
        ("h_nothing", []),
        ("h_change", []),
        ("h_two", ['it\'s "x" \\ \n']),
        ("h_two", ["é long " * 5000]),  # lengths in 2 and 3 bytes
        ("h_empty", []),
        ("h_length", ["é" * 300]),
    ],
)
def test_an_answer_reads_as_the_cursor_reads_it(url: str, name: str, values: list[Any]) -> None:
    expected = _by_cursor(url, name, values)
    _reset(url)
    with sessionary.SessionManager(url) as manager:
        manager.session("s").history()
        driver: Any = manager.store._driver
        answer = driver._call(name, values)
        assert (answer.rows, answer.changed) == expected
        conn = driver._pool.take()
        try:
            assert (
                not conn.server_status & pymysql.constants.SERVER_STATUS.SERVER_MORE_RESULTS_EXISTS
            )
            with conn.cursor() as cursor:  # the connection goes on where the answer ended
                cursor.execute("SELECT 1")
                assert cursor.fetchall() == ((1,),)
        finally:
            driver._pool.give(conn)


def test_the_reader_keeps_the_last_result_set_and_adds_up_changed_rows() -> None:
    more = _MORE_RESULTS
    conn = type("Conn", (), {"server_status": 0})()
    answer = _Answer()
    packets = [
        b"\x02",  # two columns
        b"def-a",  # their definitions, not read
        b"def-b",
        b"\xfe\x00\x00" + more.to_bytes(2, "little"),  # EOF after the definitions
        b"\x01a\xfb",  # ('a', NULL)
        b"\xfe\x00\x00" + more.to_bytes(2, "little"),  # end of rows, more to come
        b"\x00\x03\x00" + more.to_bytes(2, "little") + b"\x00\x00",  # OK: 3 rows changed
        b"\x01",
        b"def-c",
        b"\xfe\x00\x00" + more.to_bytes(2, "little"),
        b"\x02\xc3\xa9",  # ('é',)
        b"\xfe\x00\x00" + more.to_bytes(2, "little"),
        b"\x00\x02\x00\x02\x00\x00\x00",  # OK: 2 more rows; the last result
    ]
    done = [answer.take(conn, data) for data in packets]
    assert done == [False] * (len(packets) - 1) + [True]
    assert (answer.rows, answer.changed) == ([("é",)], 5)
    assert conn.server_status == 2


def test_the_reader_refuses_what_no_procedure_answers() -> None:
    conn = type("Conn", (), {"server_status": 0})()
    with pytest.raises(pymysql.err.InternalError):
        _Answer().take(conn, b"\xfbfile.txt")  # LOAD DATA LOCAL's request
    answer = _Answer()
    answer.take(conn, b"\x01")
    answer.take(conn, b"def")
    with pytest.raises(pymysql.err.InternalError):
        answer.take(conn, b"\x01x")  # a row where the definitions' EOF belongs


class _Wire:
    """What `_payload` reads of a connection: bytes in order, and its sequence number."""

    encoding = "utf8"

    def __init__(self, data: bytes, seq: int = 1) -> None:
        self._data = data
        self._next_seq_id = seq
        self.closed = False
        self._rfile = self  # its own buffered file

    def read(self, count: int) -> bytes:
        got, self._data = self._data[:count], self._data[count:]
        return got

    def _force_close(self) -> None:
        self.closed = True


def _framed(payload: bytes, seq: int) -> bytes:
    return len(payload).to_bytes(3, "little") + bytes([seq]) + payload


def test_a_payload_is_read_as_the_driver_reads_it() -> None:
    wire = _Wire(_framed(b"\x00\x01\x00\x02\x00\x00\x00", 1) + _framed(b"\x01", 2))
    assert _payload(wire) == b"\x00\x01\x00\x02\x00\x00\x00"
    assert _payload(wire) == b"\x01" and wire._next_seq_id == 3
    big = b"x" * 0xFFFFFF
    wire = _Wire(_framed(big, 255) + _framed(b"yz", 0), seq=255)  # sequence numbers wrap
    assert _payload(wire) == big + b"yz" and wire._next_seq_id == 1
    wire = _Wire(_framed(b"\x01", 5), seq=2)
    with pytest.raises(pymysql.err.InternalError, match="sequence"):
        _payload(wire)
    assert wire.closed
    wire = _Wire(_framed(b"\x01", 0), seq=2)
    with pytest.raises(pymysql.err.OperationalError):
        _payload(wire)
    error = b"\xff" + (1213).to_bytes(2, "little") + b"#40001Deadlock found"
    wire = _Wire(_framed(error, 1))
    with pytest.raises(pymysql.err.OperationalError) as raised:
        _payload(wire)
    assert raised.value.args[0] == 1213 and not wire.closed
    for cut in (b"\x05\x00", _framed(b"\x01\x02", 1)[:-1]):  # a connection lost mid-packet
        wire = _Wire(cut)
        with pytest.raises(pymysql.err.OperationalError, match="Lost connection"):
            _payload(wire)
        assert wire.closed


def test_length_encoded_numbers() -> None:
    assert _number(b"\xfa", 0) == (250, 1)
    assert _number(b"\xfb", 0) == (None, 1)
    assert _number(b"\x00\xfc\x01\x02", 1) == (0x0201, 4)
    assert _number(b"\xfd\x01\x02\x03", 0) == (0x030201, 4)
    assert _number(b"\xfe" + (2**40).to_bytes(8, "little"), 0) == (2**40, 9)
    for bad in (b"\xff", b"\xfc\x01"):
        with pytest.raises(pymysql.err.InternalError):
            _number(bad, 0)


def test_a_failed_call_leaves_no_transaction_open(url: str) -> None:
    with sessionary.SessionManager(f"{url}?pool_size=1") as manager:
        manager.session("s").history()
        driver: Any = manager.store._driver
        with pytest.raises(StoreError, match="refused on purpose"):
            driver._call("h_fail", [])
        conn = driver._pool.take()
        try:
            with conn.cursor() as cursor:
                cursor.execute("SELECT @@in_transaction, (SELECT COUNT(*) FROM h_t)")
                assert cursor.fetchone() == (0, 0)
        finally:
            driver._pool.give(conn)
        manager.session("s").append(sessionary.Message.user("after"))
        assert [m.text for m in manager.session("s").history()] == ["after"]


def test_a_call_over_the_packet_is_refused_before_it_is_sent(url: str) -> None:
    with sessionary.SessionManager(url) as manager:
        manager.session("s").history()
        driver: Any = manager.store._driver
        packet = driver._packet
        if packet > 64 * 1024 * 1024:
            pytest.skip(f"max_allowed_packet is {packet} bytes: too large for a quick test")
        around = len("CALL h_length('')") + 1  # the command byte
        assert driver._call("h_length", ["x" * (packet - around - 1)]).rows == [
            (str(packet - around - 1),)
        ]
        sent: list[bytes] = []
        execute = pymysql.connections.Connection._execute_command

        def counted(self: Any, command: int, sql: Any) -> Any:
            sent.append(sql)
            return execute(self, command, sql)

        pymysql.connections.Connection._execute_command = counted  # type: ignore[method-assign]
        try:
            with pytest.raises(PayloadTooLarge):
                driver._call("h_length", ["x" * (packet - around)])
        finally:
            pymysql.connections.Connection._execute_command = execute  # type: ignore[method-assign]
        assert sent == []
        assert driver._call("h_length", ["abc"]).rows == [("3",)]


def test_a_killed_call_leaves_no_connection_behind(url: str, mysql_admin: Any) -> None:
    with sessionary.SessionManager(f"{url}?pool_size=1") as manager:
        manager.session("s").history()
        driver: Any = manager.store._driver
        conn = driver._pool.take()
        victim = conn.thread_id()
        driver._pool.give(conn)

        def kill() -> None:
            time.sleep(0.3)
            admin = mysql_admin(None)
            try:
                with admin.cursor() as cursor:
                    cursor.execute(f"KILL CONNECTION {victim}")
            finally:
                admin.close()

        killer = threading.Thread(target=kill)
        killer.start()
        try:
            with pytest.raises(StoreError):
                driver._call("h_sleep", [5])
        finally:
            killer.join()
        # The next CALL gets a connection that reads its own answer (the killed one's
        # end may cost one more failure where the server's error left it open).
        for _ in range(2):
            try:
                answer = driver._call("h_two", ["z"])
                break
            except StoreError:
                continue
        assert answer.rows == [("b", "c", "zz"), ("d", None, "")]


async def _no_setup(tx: Any) -> None:
    """The schema is there already (the `url` fixture made it)."""


async def test_a_cancelled_call_closes_its_connection(url: str) -> None:
    driver = AsyncMySQLDriver(url, pool_size=1)
    try:
        await driver.start(_no_setup)
        task = asyncio.create_task(driver._call("h_sleep", [1]))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # A connection left mid-answer would hand the sleep's answer to this CALL.
        answer = await driver._call("h_two", ["q"])
        assert answer is not None and answer.rows == [("b", "c", "qq"), ("d", None, "")]
        await asyncio.sleep(1)  # the sleep's answer would have come by now
        answer = await driver._call("h_length", ["four"])
        assert answer is not None and answer.rows == [("4",)]
    finally:
        await driver.close()


async def test_a_call_past_its_deadline_fails_and_leaves_no_connection_behind(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mysql, "GRACE", 0.0)
    driver = AsyncMySQLDriver(url, pool_size=1, timeout=0.5)
    try:
        await driver.start(_no_setup)
        start = time.monotonic()
        with pytest.raises(sessionary.StoreUnavailable, match="in time"):
            await driver._call("h_sleep", [3])
        assert time.monotonic() - start < 2.5
        answer = await driver._call("h_length", ["four"])
        assert answer is not None and answer.rows == [("4",)]
    finally:
        await driver.close()


async def test_an_async_answer_reads_as_the_cursor_reads_it(url: str) -> None:
    expected = _by_cursor(url, "h_two", ["w"])
    _reset(url)
    driver = AsyncMySQLDriver(url, pool_size=1)
    try:
        await driver.start(_no_setup)
        answer = await driver._call("h_two", ["w"])
        assert answer is not None and (answer.rows, answer.changed) == expected
        with pytest.raises(StoreError, match="refused on purpose"):
            await driver._call("h_fail", [])
        rows, _ = await driver.run_alone("SELECT @@in_transaction, COUNT(*) FROM h_t", ())
        assert rows == [(0, 1)]  # h_two's row 3; h_fail's 99 rolled back
    finally:
        await driver.close()


def test_a_call_waits_no_longer_than_its_timeout(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The answer is read straight from the socket (`_payload`), under the read timeout.
    monkeypatch.setattr(mysql, "GRACE", 0.0)
    driver = mysql.MySQLDriver(url, pool_size=1, timeout=0.5)
    try:
        driver.start(lambda tx: None)
        start = time.monotonic()
        with pytest.raises(sessionary.StoreUnavailable):
            driver._call("h_sleep", [3])
        assert time.monotonic() - start < 2.5
        answer = driver._call("h_length", ["four"])
        assert answer is not None and answer.rows == [("4",)]
    finally:
        driver.close()


def test_both_drivers_connections_have_what_the_reader_uses(url: str) -> None:
    # Fails when a PyMySQL or aiomysql release renames an internal the reader uses: the
    # stores would then quietly send scripts (slower), as the next test shows.
    conn = _connect(url)
    try:
        assert mysql._reads_answers(conn)
    finally:
        conn.close()

    async def check() -> None:
        driver = AsyncMySQLDriver(url, pool_size=1)
        try:
            await driver.start(_no_setup)
            assert driver._routines
        finally:
            await driver.close()

    asyncio.run(check())


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_a_driver_without_those_internals_appends_by_script(
    url: str, flavour: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mysql, "_ANSWER_PARTS", ("_no_such_part", *mysql._ANSWER_PARTS))
    called: list[str] = []
    real = mysql._call_query

    def spy(conn: Any, name: str, values: Any, packet: int) -> bytes:
        called.append(name)
        return real(conn, name, values, packet)

    monkeypatch.setattr(mysql, "_call_query", spy)
    if flavour == "sync":
        with sessionary.SessionManager(url) as manager:
            session = manager.session("s")
            for n in range(3):
                session.append(sessionary.Message.user(f"by script {n}"))
            texts = [m.text for m in session.history()]
    else:

        async def run() -> list[str]:
            async with sessionary.AsyncSessionManager(url) as manager:
                session = manager.session("s")
                for n in range(3):
                    await session.append(sessionary.Message.user(f"by script {n}"))
                return [m.text for m in await session.history()]

        texts = asyncio.run(run())
    assert texts[-3:] == ["by script 0", "by script 1", "by script 2"]
    assert called == []
