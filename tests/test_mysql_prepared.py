"""On MariaDB, single statements a store runs alone (its reads) are prepared once per connection.

Each later run is an `EXECUTE ... USING` with its values as literals, escaped as the driver
escapes them in a plain query; so values come back exactly as sent, whatever they hold
(quotes, backslashes, a `?` or `%s`, bytes, NULL, text beyond the BMP). MySQL keeps plain
queries (its `EXECUTE` takes no literals).
"""

from __future__ import annotations

import asyncio
import contextlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pymysql
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sessionary
from sessionary import Message
from sessionary.stores.mysql import AsyncMySQLDriver, MySQLDriver, _literal, connect_options

pytestmark = pytest.mark.mysql

ODD: tuple[Any, ...] = (
    "it's \\ 'q' \" ? %s %%",
    b"\x00'\\\xff",
    None,
    12,
    "é😀",
    "",
    -5,
    "a-b_c.d",
)
SELECT_ODD = "SELECT %s, %s, %s, %s, %s, %s, %s, %s"
COUNTERS = (
    "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.SESSION_STATUS "
    "WHERE VARIABLE_NAME IN ('COM_STMT_PREPARE', 'COM_PREPARE_SQL', 'COM_EXECUTE_SQL')"
)


def _setup(tx: Any) -> None:
    """No schema: these tests send their own statements."""


async def _setup_async(tx: Any) -> None:
    """No schema (async)."""


def _counts(rows: list[tuple[Any, ...]]) -> dict[str, int]:
    return {str(name).upper(): int(value) for name, value in rows}


def _expected(version: str) -> bool:
    return "mariadb" in version.lower()


def test_values_come_back_as_sent_and_reads_are_prepared_once(mysql_url: str) -> None:
    driver = MySQLDriver(mysql_url, pool_size=1)
    try:
        driver.start(_setup)
        before = _counts(driver.run_alone(COUNTERS, ())[0])
        for _ in range(3):
            rows, _ = driver.run_alone(SELECT_ODD, ODD)
            assert rows == [ODD]
        after = _counts(driver.run_alone(COUNTERS, ())[0])
        prepared = after["COM_PREPARE_SQL"] - before["COM_PREPARE_SQL"]
        executed = after["COM_EXECUTE_SQL"] - before["COM_EXECUTE_SQL"]
        if _expected(driver._version):
            assert (prepared, executed) == (1, 4)  # the statement once; it, 3 times, and COUNTERS
        else:
            assert (prepared, executed) == (0, 0)
    finally:
        driver.close()


async def test_values_come_back_as_sent_and_reads_are_prepared_once_async(mysql_url: str) -> None:
    driver = AsyncMySQLDriver(mysql_url, pool_size=1)
    try:
        await driver.start(_setup_async)
        before = _counts((await driver.run_alone(COUNTERS, ()))[0])
        for _ in range(3):
            rows, _ = await driver.run_alone(SELECT_ODD, ODD)
            assert rows == [ODD]
        after = _counts((await driver.run_alone(COUNTERS, ()))[0])
        prepared = after["COM_PREPARE_SQL"] - before["COM_PREPARE_SQL"]
        executed = after["COM_EXECUTE_SQL"] - before["COM_EXECUTE_SQL"]
        if _expected(driver._version):
            assert (prepared, executed) == (1, 4)
        else:
            assert (prepared, executed) == (0, 0)
    finally:
        await driver.close()


def test_scripts_and_markers_run_as_plain_queries(mysql_url: str) -> None:
    # A script (several statements) and a statement holding a literal `?` or `%` are never
    # prepared: a `?` would be taken for a marker.
    driver = MySQLDriver(mysql_url, pool_size=1)
    try:
        driver.start(_setup)
        before = _counts(driver.run_alone(COUNTERS, ())[0])
        assert driver.run_alone("SELECT '?', %s", ("x",))[0] == [("?", "x")]
        assert driver.run_alone("SELECT '%%', %s", ("x",))[0] == [("%", "x")]
        assert driver.run_alone("SELECT %s; SELECT %s", (1, 2))[0] == [(2,)]
        after = _counts(driver.run_alone(COUNTERS, ())[0])
        # COUNTERS itself was prepared by the first call, if at all.
        assert after["COM_PREPARE_SQL"] == before["COM_PREPARE_SQL"]
    finally:
        driver.close()


def test_a_literal_is_what_the_driver_escapes(mysql_url: str) -> None:
    conn = pymysql.connect(**connect_options(mysql_url, 5, "database"))

    @given(st.one_of(st.text(), st.integers(), st.binary(), st.none(), st.booleans()))
    def check(value: Any) -> None:
        expected = f"X'{value.hex()}'" if isinstance(value, bytes) else conn.escape(value)
        assert _literal(conn, value) == expected

    try:
        check()
    finally:
        conn.close()


def test_a_statement_the_server_will_not_prepare_runs_plain(mysql_url: str) -> None:
    # MariaDB refuses to prepare `EXECUTE IMMEDIATE` (error 1295); the plain query works.
    driver = MySQLDriver(mysql_url, pool_size=1)
    try:
        driver.start(_setup)
        if not _expected(driver._version):
            pytest.skip("MySQL runs every statement plain")
        for _ in range(2):
            assert driver.run_alone("EXECUTE IMMEDIATE %s", ("SELECT 7",))[0] == [(7,)]
    finally:
        driver.close()


async def test_a_read_cancelled_anywhere_leaves_the_next_one_whole(mysql_url: str) -> None:
    # Cancelled before, during or after its PREPARE or EXECUTE (each round cuts one loop turn
    # later; the sleep makes sure some cuts land while the server is executing): the
    # connection is closed or left as it was, and the next read on the one pooled
    # connection prepares again where needed and answers exactly.
    driver = AsyncMySQLDriver(mysql_url, pool_size=1)
    slow = "SELECT SLEEP(%s) = 0, %s, %s, %s, %s, %s, %s, %s, %s"
    try:
        await driver.start(_setup_async)
        cut = 0
        for turns in range(40):
            sql, params = (slow, (0.02, *ODD)) if turns % 4 == 3 else (SELECT_ODD, ODD)
            task = asyncio.ensure_future(driver.run_alone(sql, params))
            for _ in range(turns):
                await asyncio.sleep(0)
            if turns % 4 == 3:
                await asyncio.sleep(0.005)
            cut += task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            assert (await driver.run_alone(SELECT_ODD, ODD))[0] == [ODD]
            assert (await driver.run_alone(slow, (0, *ODD)))[0] == [(1, *ODD)]
        assert cut > 0  # some calls were in flight when cancelled
    finally:
        await driver.close()
        await driver.close()  # a second close is a no-op


def test_one_async_store_reads_from_two_event_loops(mysql_url: str) -> None:
    # The store's prepared reads run on its own loop: callers on any loop in any thread
    # get the same answer.
    async def fill(manager: sessionary.AsyncSessionManager) -> str:
        session = await manager.create(name="loops")
        await session.append_all([Message.user(f"turn {i}") for i in range(30)])
        return session.id

    async def texts(manager: sessionary.AsyncSessionManager, sid: str) -> list[str]:
        return [m.text for m in await manager.session(sid).history(limit=5)]

    manager = sessionary.AsyncSessionManager(mysql_url)
    try:
        sid = asyncio.run(fill(manager))
        first = asyncio.run(texts(manager, sid))
        with ThreadPoolExecutor(2) as pool:
            others = list(pool.map(lambda _: asyncio.run(texts(manager, sid)), range(4)))
        assert first == [f"turn {i}" for i in range(25, 30)]
        assert others == [first] * 4
    finally:
        asyncio.run(manager.close())
