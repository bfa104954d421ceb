"""What only the Redis store has: snapshot chunks, `max_messages`, a native TTL, its keys.

The conformance suite covers the store protocol on Redis; these tests look at the layout
underneath through a plain redis-py redis_client.
"""

from __future__ import annotations

import time

import pytest
from _redis_keys import namespace, session_keys

import sessionary
from sessionary import InvalidURL, Message

pytestmark = pytest.mark.redis


def _with(url: str, option: str) -> str:
    return f"{url}&{option}"


def test_roll_ups_add_chunks_and_never_rewrite_old_ones(
    redis_url: str, redis_client: object
) -> None:
    url = _with(redis_url, "snapshot_frequency=4")
    with sessionary.SessionManager(url) as manager:
        chat = manager.create(id="c")
        for n in range(10):
            chat.append(Message.user(f"m{n}", id=f"m{n}"))
        keys = session_keys(redis_client, url, "c")
        snap = redis_client.hgetall(keys["snap"])  # type: ignore[attr-defined]
        assert sorted(snap) == ["0", "4"]  # two chunks of four; two messages loose
        assert redis_client.hlen(keys["loose"]) == 2  # type: ignore[attr-defined]
        first_chunk = snap["0"]
        for n in range(10, 14):
            chat.append(Message.user(f"m{n}", id=f"m{n}"))
        assert redis_client.hget(keys["snap"], "0") == first_chunk  # type: ignore[attr-defined]
        assert [m.id for m in chat.history()] == [f"m{n}" for n in range(14)]
        assert [m.id for m in chat.history(limit=3)] == ["m11", "m12", "m13"]
        assert chat.path_length() == 14


def test_a_large_batch_rolls_up_into_chunks_of_at_most_the_frequency(
    redis_url: str, redis_client: object
) -> None:
    url = _with(redis_url, "snapshot_frequency=4")
    with sessionary.SessionManager(url) as manager:
        chat = manager.create(id="c")
        chat.append_all([Message.user(f"m{n}", id=f"m{n}") for n in range(10)])
        keys = session_keys(redis_client, url, "c")
        snap = redis_client.hgetall(keys["snap"])  # type: ignore[attr-defined]
        assert sorted(snap, key=int) == ["0", "4", "8"]
        assert "loose" not in keys  # an empty hash is no key
        chat.append(Message.user("m10", id="m10"))
        manager.store.roll_up(manager.scope, "c")  # type: ignore[attr-defined]
        snap = redis_client.hgetall(keys["snap"])  # type: ignore[attr-defined]
        assert sorted(snap, key=int) == ["0", "4", "8", "10"]
        assert [m.id for m in chat.history(limit=2)] == ["m9", "m10"]
        assert [m.id for m in chat.history()] == [f"m{n}" for n in range(11)]


def test_edits_inside_a_chunk_are_read_back(redis_url: str) -> None:
    url = _with(redis_url, "snapshot_frequency=3")
    with sessionary.SessionManager(url) as manager:
        chat = manager.create(id="c")
        chat.append_all([Message.user(f"m{n}", id=f"m{n}") for n in range(7)])
        chat.update(Message.user("changed", id="m1"))
        assert chat.get_message("m1").text == "changed"  # type: ignore[union-attr]
        branch = chat.append(Message.assistant("branch"), parent="m1")
        assert [m.id for m in chat.branches("m1")] == ["m2", branch.id]
        assert sorted(chat.delete("m4")) == ["m4", "m5", "m6"]
        assert [m.id for m in chat.history(leaf="m3")] == ["m0", "m1", "m2", "m3"]
        assert chat.message_count() == 5


def test_max_messages_trims_the_oldest_at_a_roll_up(redis_url: str) -> None:
    url = _with(redis_url, "snapshot_frequency=5&max_messages=6")
    with sessionary.SessionManager(url) as manager:
        chat = manager.create(id="c")
        for n in range(20):
            chat.append(Message.user(f"m{n}", id=f"m{n}"))
        ids = [m.id for m in chat.history()]
        assert ids == [f"m{n}" for n in range(14, 20)]
        assert chat.history()[0].parent_id is None
        assert chat.path_length() == 6 == chat.message_count()
        assert chat.get_message("m0") is None


def test_ttl_is_a_native_expiry_on_every_key_of_the_session(
    redis_url: str, redis_client: object
) -> None:
    url = _with(redis_url, "ttl=30")
    with sessionary.SessionManager(url) as manager:
        chat = manager.create(id="c")
        first = chat.append(Message.user("hi"))
        chat.append(Message.assistant("hello"))
        chat.append(Message.assistant("hello again"), parent=first.id)  # a branch
        chat.update_state({"k": 1})
        keys = session_keys(redis_client, url, "c")
        assert {"meta", "ids", "loose", "kids", "order", "state"} <= set(keys)
        for key in keys.values():
            assert 0 < redis_client.pttl(key) <= 30_000  # type: ignore[attr-defined]


def test_an_expired_session_is_gone(redis_url: str) -> None:
    url = _with(redis_url, "ttl=0.2")
    with sessionary.SessionManager(url) as manager:
        manager.create(id="c").append(Message.user("hi"))
        deadline = time.monotonic() + 10
        while manager.get("c") is not None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert manager.get("c") is None
        assert manager.list().items == []
        assert manager.create(id="c").history() == []


def test_keys_stay_under_the_namespace_and_apart_per_scope(
    redis_url: str, redis_client: object
) -> None:
    prefix = namespace(redis_url)
    with sessionary.SessionManager(redis_url, tenant="a", user="b-c") as one:
        one.create(id="s").append(Message.user("one"))
    with sessionary.SessionManager(redis_url, tenant="a-b", user="c") as two:
        assert two.get("s") is None
    keys = list(redis_client.scan_iter(match="*"))  # type: ignore[attr-defined]
    mine = [key for key in keys if key.startswith(prefix + ":")]
    assert mine and all(":t:1:a:u:3:b-c:" in k or k.endswith(":scopes") for k in mine)


@pytest.mark.parametrize(
    "url",
    [
        "redis://localhost/x",
        "redis://localhost:6379/0?snapshot_frequency=-1",
        "redis://localhost:6379/0?ttl=0",
        "redis://localhost:6379/0?namespace=has space",
        "redis://localhost:6379/0?password=x",
    ],
)
def test_bad_redis_urls_are_refused(url: str) -> None:
    with pytest.raises(InvalidURL):
        sessionary.open_store(url)


def _bytes_sent(redis_client: object) -> int:
    return int(redis_client.info("stats")["total_net_output_bytes"])  # type: ignore[attr-defined]


def _read_cost(redis_client: object, chat: sessionary.Session) -> int:
    before = _bytes_sent(redis_client)
    assert len(chat.history(limit=20)) == 20
    return _bytes_sent(redis_client) - before


def test_a_short_read_costs_what_it_returns_at_any_depth(
    redis_url: str, redis_client: object
) -> None:
    # What the server sends for history(limit=20) must not grow with the session: the
    # invariant "reads cost what they return", measured on the wire.
    with sessionary.SessionManager(redis_url) as manager:
        small, big = manager.create(id="small"), manager.create(id="big")
        small.append_all([Message.user(f"message {n:05d} " + "x" * 80) for n in range(40)])
        for start in range(0, 3000, 250):
            batch = range(start, start + 250)
            big.append_all([Message.user(f"message {n:05d} " + "x" * 80) for n in batch])
        shallow, deep = _read_cost(redis_client, small), _read_cost(redis_client, big)
        whole = _bytes_sent(redis_client)
        assert len(big.history()) == 3000
        whole = _bytes_sent(redis_client) - whole
    assert deep < 2 * shallow, (shallow, deep)
    assert deep * 20 < whole, (deep, whole)
