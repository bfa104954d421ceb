"""The driver protocol, pinned on every driver (memory, SQLite, Redis; sync and async)."""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
import time
from typing import Any

import pytest
from _kv_helpers import REDIS_URL, open_async_driver, open_driver

from sessionary import kv
from sessionary.errors import InvalidInput

KEYS = ["a:1", "a:2", "a:10", "a:é", "a:z", "a:\U0001f600", "a;", "ab", "a", "b:1"]


def test_get_put_overwrite_delete(driver: Any) -> None:
    assert driver.get("k") is None
    driver.put("k", "one")
    assert driver.get("k") == "one"
    driver.put("k", "two ✓")
    assert driver.get("k") == "two ✓"
    assert driver.delete("k") is True
    assert driver.delete("k") is False
    assert driver.get("k") is None
    assert driver.list_prefix("") == []


def test_list_prefix_returns_exactly_the_prefix_in_key_order(driver: Any) -> None:
    for i, key in enumerate(KEYS):
        driver.put(key, f"v{i}")
    values = dict(zip(KEYS, (f"v{i}" for i in range(len(KEYS))), strict=True))
    listed = driver.list_prefix("a:")
    assert [k for k, _ in listed] == sorted(k for k in KEYS if k.startswith("a:"))
    assert all(values[k] == v for k, v in listed)
    assert [k for k, _ in driver.list_prefix("")] == sorted(KEYS)
    assert driver.list_prefix("a:1") == [("a:1", "v0"), ("a:10", "v2")]
    assert driver.list_prefix("c") == []
    assert [k for k, _ in driver.list_prefix("a:\U0001f600")] == ["a:\U0001f600"]


def test_zero_padded_keys_list_in_numeric_order(driver: Any) -> None:
    for seq in (10, 2, 100, 1, 11):
        driver.put(f"s:msg:{seq:012d}", str(seq))
    assert [v for _, v in driver.list_prefix("s:msg:")] == ["1", "2", "10", "11", "100"]


def test_commit_applies_every_write_when_expectations_hold(driver: Any) -> None:
    driver.put("old", "x")
    assert driver.commit({"meta": None}, {"meta": "1", "a": "A", "old": None}) is True
    assert driver.list_prefix("") == [("a", "A"), ("meta", "1")]
    assert driver.commit({"meta": "1", "a": "A"}, {"meta": "2"}) is True
    assert driver.get("meta") == "2"


@pytest.mark.parametrize(
    "expect", [{"meta": None}, {"meta": "wrong"}, {"meta": "1", "a": None}, {"gone": "x"}]
)
def test_commit_changes_nothing_when_an_expectation_fails(
    driver: Any, expect: dict[str, str | None]
) -> None:
    driver.commit({}, {"meta": "1", "a": "A"})
    before = driver.list_prefix("")
    assert driver.commit(expect, {"meta": "9", "a": None, "new": "N"}) is False
    assert driver.list_prefix("") == before


def test_commit_with_no_expectations_always_applies(driver: Any) -> None:
    assert driver.commit({}, {"x": "1", "y": "2"}) is True
    assert driver.commit({}, {"x": None, "missing": None}) is True
    assert driver.list_prefix("") == [("y", "2")]


@pytest.mark.parametrize("key", ["", 7, None, "bad\ud800"])
def test_bad_keys_are_refused_and_nothing_is_written(driver: Any, key: Any) -> None:
    with pytest.raises(InvalidInput):
        driver.put(key, "v")
    with pytest.raises(InvalidInput):
        driver.commit({}, {"fine": "v", key: "v"})
    with pytest.raises(InvalidInput):
        driver.get(key)
    assert driver.list_prefix("") == []


@pytest.mark.parametrize("value", [b"bytes", 3, "lone\udfff"])
def test_bad_values_are_refused_and_nothing_is_written(driver: Any, value: Any) -> None:
    with pytest.raises(InvalidInput):
        driver.commit({}, {"fine": "v", "k": value})
    assert driver.list_prefix("") == []


def test_compare_and_set_counter_loses_no_increment_across_threads(driver: Any) -> None:
    threads, rounds = 4, 40

    def bump() -> None:
        for _ in range(rounds):
            while True:
                current = driver.get("counter")
                new = str(int(current or 0) + 1)
                if driver.commit({"counter": current}, {"counter": new}):
                    break

    workers = [threading.Thread(target=bump) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert driver.get("counter") == str(threads * rounds)


async def test_async_driver_protocol(adriver: Any) -> None:
    assert await adriver.get("k") is None
    await adriver.put("b:2", "two")
    await adriver.put("b:1", "one")
    await adriver.put("c", "three")
    assert await adriver.list_prefix("b:") == [("b:1", "one"), ("b:2", "two")]
    assert await adriver.commit({"b:1": "one"}, {"b:1": None, "d": "four"}) is True
    assert await adriver.commit({"b:1": "one"}, {"e": "five"}) is False
    assert await adriver.delete("c") is True
    assert await adriver.delete("c") is False
    assert await adriver.list_prefix("") == [("b:2", "two"), ("d", "four")]
    with pytest.raises(InvalidInput):
        await adriver.put("", "v")


def test_a_driver_closes_twice(kind: str, place: str) -> None:
    driver = open_driver(kind, place)
    driver.put("k", "v")
    driver.close()
    driver.close()


async def test_an_async_driver_closes_twice(kind: str, place: str) -> None:
    driver = open_async_driver(kind, place)
    await driver.put("k", "v")
    await asyncio.wait_for(driver.close(), 30)  # the second close used to hang on SQLite
    await asyncio.wait_for(driver.close(), 30)


def test_a_redis_commit_survives_a_lost_script_and_a_killed_connection(
    kind: str, driver: Any
) -> None:
    # Commits go straight down a connection the driver keeps: a server that lost the
    # script gets them the ordinary way (which loads it), and a connection the server
    # closed is given back to the pool and replaced.
    if kind != "redis":
        pytest.skip("Redis only")
    import redis

    admin = redis.Redis(connection_pool=driver._client.connection_pool)
    driver.put("a", "1")
    admin.script_flush()
    assert driver.commit({"a": "1"}, {"a": "2", "b": "3"})
    assert driver.commit({"b": "3"}, {"b": "3"})
    (kept,) = driver._lane._idle
    host, port = kept._sock.getsockname()[:2]
    assert admin.client_kill_filter(addr=f"{host}:{port}", skipme=False) == 1
    assert driver.commit({"a": "2"}, {"a": None})
    assert driver.list_prefix("") == [("b", "3")]
    admin.close()


def test_a_redis_driver_gives_back_the_connections_it_kept(kind: str, place: str) -> None:
    if kind != "redis":
        pytest.skip("Redis only")
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    driver = kv.RedisDriver(client=client, namespace=place)
    try:
        for n in range(5):
            assert driver.commit({}, {f"k{n}": "v"})
        assert len(client.connection_pool._in_use_connections) == 1  # one kept, reused
        driver.close()
        assert not client.connection_pool._in_use_connections
        assert client.get(f"{place}:v:k4") == b"v"  # the caller's client still works
    finally:
        for key in client.scan_iter(match=f"{place}:*"):
            client.delete(key)
        client.close()


def _commit_many(driver: Any, owner: str, count: int, start: Any) -> None:
    # The child's commits all fail (an expectation never holds), the parent's all pass:
    # a reply read by the wrong process shows as a wrong answer.
    start.wait(30)
    for n in range(count):
        if owner == "child":
            assert driver.commit({"absent": "x"}, {f"child:{n:04d}": "-"}) is False
        else:
            assert driver.commit({}, {f"{owner}:{n:04d}": f"{owner} {n}"}) is True


def test_a_forked_child_does_not_share_the_parents_redis_connection(kind: str, driver: Any) -> None:
    # The kept connection's socket is inherited by a forked child; if both sent on it
    # at once, replies would cross. The child must open its own.
    if kind != "redis":
        pytest.skip("Redis only")
    count = 500
    driver.put("before", "fork")  # the driver now keeps a connection
    context = multiprocessing.get_context("fork")
    start = context.Event()
    child = context.Process(target=_commit_many, args=(driver, "child", count, start))
    child.start()
    time.sleep(0.2)  # the child waits at the start line
    start.set()
    _commit_many(driver, "parent", count, start)
    child.join(60)
    assert child.exitcode == 0
    stored = dict(driver.list_prefix(""))
    assert [stored[f"parent:{n:04d}"] for n in range(count)] == [
        f"parent {n}" for n in range(count)
    ]
    assert not any(key.startswith("child:") for key in stored)
