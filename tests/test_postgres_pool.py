"""How a PostgreSQL driver waits for a pooled connection (`stores.postgres._take`).

A caller waits for a busy pool up to `POOL_WAIT` seconds and then fails with
`StoreError`; but once the pool's latest attempt to connect has failed, a caller that
has waited `_LOOK` fails at once with that attempt's error (`StoreUnavailable`), since
no connection is coming. Which of the two happened is told apart by the pool's own
attempts (`_Attempts`), recorded per driver.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import psycopg
import pytest

from sessionary.errors import StoreError, StoreUnavailable
from sessionary.stores import postgres

pytestmark = pytest.mark.postgres


def _parts(url: str) -> tuple[str, str]:
    location, _, schema = url.partition("?schema=")
    return location, schema


def _setup(schema: str) -> Any:
    return lambda tx: tx.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """Look every 0.1 s; give up on a busy pool after 0.6 s."""
    monkeypatch.setattr(postgres, "_LOOK", 0.1)
    monkeypatch.setattr(postgres, "POOL_WAIT", 0.6)


@pytest.mark.usefixtures("quick")
def test_a_busy_pool_keeps_its_waiter_until_a_connection_comes_back(postgres_url: str) -> None:
    location, schema = _parts(postgres_url)
    driver = postgres.PostgresDriver(location, schema=schema, pool_size=1)
    driver.start(_setup(schema))
    try:
        held = driver._take()
        started = time.monotonic()
        with pytest.raises(StoreError, match="stayed busy") as caught:
            driver._take()
        assert not isinstance(caught.value, StoreUnavailable)  # the server is fine
        assert time.monotonic() - started >= 0.6
        got: list[Any] = []
        waiter = threading.Thread(target=lambda: got.append(driver._take()))
        waiter.start()
        time.sleep(0.3)  # several looks, each finding no failed attempt
        assert got == []
        driver._give(held)
        waiter.join(timeout=5)
        assert got == [held]
        driver._give(held)
    finally:
        driver.close()


@pytest.mark.usefixtures("quick")
async def test_a_busy_async_pool_keeps_its_waiter_until_a_connection_comes_back(
    postgres_url: str,
) -> None:
    location, schema = _parts(postgres_url)
    driver = postgres.AsyncPostgresDriver(location, schema=schema, pool_size=1)
    await driver.start(_setup(schema))
    try:
        held = await driver._take()
        with pytest.raises(StoreError, match="stayed busy") as caught:
            await driver._take()
        assert not isinstance(caught.value, StoreUnavailable)
        waiter = asyncio.create_task(driver._take())
        await asyncio.sleep(0.3)
        assert not waiter.done()
        await driver._give(held)
        assert await asyncio.wait_for(waiter, 5) is held
        await driver._give(held)
    finally:
        await driver.close()


def test_each_driver_records_its_own_pools_attempts(postgres_url: str) -> None:
    location, schema = _parts(postgres_url)
    good = postgres.PostgresDriver(location, schema=schema, pool_size=1)
    bad = postgres.PostgresDriver(
        "postgresql://postgres@127.0.0.1:1/test", pool_size=1, connect_timeout=1
    )
    try:
        good.start(_setup(schema))
        good._give(good._take())
        bad_class = bad._pool.connection_class
        with pytest.raises(psycopg.OperationalError):
            bad_class.connect(bad._pool.conninfo, **bad._pool.kwargs)
        assert bad._attempts.failed is not None
        assert good._attempts.failed is None  # another driver's failure is not its own
        assert bad_class is not good._pool.connection_class
    finally:
        good.close()
        bad.close()


async def test_a_pool_that_cannot_connect_fails_its_waiter_with_the_reason(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server ends the pool's one connection while it is out; the pool cannot make
    # another (it is told the wrong port from now on): the next caller is told why
    # after a look or two, not after `POOL_WAIT`.
    monkeypatch.setattr(postgres, "_LOOK", 0.2)
    location, schema = _parts(postgres_url)
    driver = postgres.AsyncPostgresDriver(location, schema=schema, pool_size=1)
    await driver.start(_setup(schema))
    try:
        conn = await driver._take()
        driver._pool.conninfo = "postgresql://postgres@127.0.0.1:1/test"
        await conn.close()
        await driver._give(conn)  # closed: the pool tries to replace it, and fails
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="cannot connect") as caught:
            await driver._take()
        assert time.monotonic() - started < 10
        assert "stayed busy" not in str(caught.value)
    finally:
        await driver.close()
