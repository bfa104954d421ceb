"""The Redis store's run layout: linear appends write no index, and older data still reads.

A message appended at the head of a linear session is not listed in `kids` (its parent's
seq plus one is found by reading that entry) nor in `order` (the run is paged by
arithmetic). These tests check that every tree read (children, paging in depth order,
paths, deletes) gives what the memory store gives for the same operations, on sessions
written now and on sessions in the layout written before runs (every child in `kids`,
every message in `order`, no run in the meta hash, chunks as JSON arrays).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from _redis_keys import session_keys

import sessionary
from sessionary import Message

pytestmark = pytest.mark.redis

Ops = Callable[[sessionary.Session], None]


def _entries(redis_client: Any, keys: dict[str, str]) -> dict[int, str]:
    """Every stored entry of a session by seq, from its chunks and loose entries."""
    found: dict[int, str] = {}
    for start, chunk in redis_client.hgetall(keys.get("snap", "-")).items():
        lines = json.loads(chunk) if chunk.startswith("[") else chunk.split("\n")[1:]
        for offset, entry in enumerate(lines):
            if entry:
                found[int(start) + offset] = entry
    for field, entry in redis_client.hgetall(keys.get("loose", "-")).items():
        found[int(field)] = entry
    return found


def _to_old_layout(redis_client: Any, url: str, session_id: str) -> None:
    """Rewrite a session as the store wrote it before runs: indexes, meta, JSON chunks."""
    keys = session_keys(redis_client, url, session_id)
    kids: dict[int, list[int]] = {}
    prefix = keys["meta"][: -len("meta")]
    redis_client.delete(prefix + "kids", prefix + "order")
    for seq, entry in sorted(_entries(redis_client, keys).items()):
        parent, depth = (int(part) for part in entry.split(" ", 2)[:2])
        redis_client.zadd(prefix + "order", {f"{depth:08d}:{seq:012d}": 0})
        if parent >= 0:
            kids.setdefault(parent, []).append(seq)
    for parent, seqs in kids.items():
        redis_client.hset(prefix + "kids", f"{parent:012d}", ",".join(map(str, seqs)))
    redis_client.hdel(keys["meta"], "base", "bdepth", "lin")
    meta = redis_client.hgetall(keys["meta"])
    redis_client.hset(keys["meta"], "since", int(meta["next"]) - int(meta["rolled"]))
    for start, chunk in redis_client.hgetall(keys.get("snap", "-")).items():
        if not chunk.startswith("["):  # chunks were JSON arrays
            lines = chunk.split("\n")[1:]
            redis_client.hset(keys["snap"], start, json.dumps(lines, ensure_ascii=False))


def _tree(chat: sessionary.Session) -> None:
    """A linear start, a branch, a branch of the branch, more on the main line."""
    for n in range(6):
        chat.append(Message.user(f"m{n}", id=f"m{n}"))
    chat.append(Message.user("b0", id="b0"), parent="m2")
    chat.append(Message.user("b1", id="b1"))
    chat.append(Message.user("c0", id="c0"), parent="b0")
    chat.checkout("m5")
    chat.append(Message.user("m6", id="m6"))


def _more(chat: sessionary.Session) -> None:
    chat.append(Message.user("m7", id="m7"))
    chat.append_all([Message.user(f"x{n}", id=f"x{n}") for n in range(3)], parent="m1")
    chat.append(Message.user("m8", id="m8"), parent="m7")
    chat.delete("b1")
    chat.append(Message.user("r0", id="r0"), parent=None)


def _view(manager: sessionary.SessionManager, chat: sessionary.Session) -> dict[str, Any]:
    """Everything a tree read returns, as ids."""
    pages: list[list[str]] = []
    cursor = None
    while True:
        page, cursor = manager.store.page_messages(manager.scope, chat.id, cursor, 3)
        pages.append([m.id for m in page])
        if cursor is None:
            break
    ids = [m for page in pages for m in page]
    return {
        "pages": pages,
        "children": {m: [k.id for k in chat.branches(m)] for m in ids},
        "paths": {m: [p.id for p in chat.history(leaf=m)] for m in ids},
        "lengths": {m: chat.path_length(m) for m in ids},
        "head": [m.id for m in chat.history()],
    }


def _run(url: str, steps: list[Ops], old_after: int | None = None, **redis: Any) -> Any:
    with sessionary.SessionManager(url) as manager:
        chat = manager.create(id="c")
        for number, step in enumerate(steps):
            step(chat)
            if number == old_after:
                _to_old_layout(redis["redis_client"], url, "c")
        return _view(manager, chat)


@pytest.mark.parametrize("frequency", [0, 4])
@pytest.mark.parametrize("old", [False, True], ids=["new", "written-before-runs"])
def test_tree_reads_match_the_memory_store(
    redis_url: str, redis_client: Any, frequency: int, old: bool
) -> None:
    url = f"{redis_url}&snapshot_frequency={frequency}"
    steps: list[Ops] = [_tree, _more]
    expected = _run("memory://", steps)
    assert _run(url, steps, old_after=0 if old else None, redis_client=redis_client) == expected


def test_linear_appends_write_no_children_or_order(redis_url: str, redis_client: Any) -> None:
    with sessionary.SessionManager(f"{redis_url}&snapshot_frequency=4") as manager:
        chat = manager.create(id="c")
        for n in range(10):
            chat.append(Message.user(f"m{n}", id=f"m{n}"))
        assert not {"kids", "order"} & set(session_keys(redis_client, redis_url, "c"))
        chat.append(Message.user("b", id="b"), parent="m3")
        assert {"kids", "order"} <= set(session_keys(redis_client, redis_url, "c"))


def test_a_session_written_before_runs_starts_one_and_pages_in_order(
    redis_url: str, redis_client: Any
) -> None:
    url = f"{redis_url}&snapshot_frequency=4"
    with sessionary.SessionManager(url) as manager:
        chat = manager.create(id="c")
        chat.append_all([Message.user(f"m{n}", id=f"m{n}") for n in range(6)])
        chat.append(Message.user("b", id="b"), parent="m1")
        _to_old_layout(redis_client, url, "c")
        keys = session_keys(redis_client, url, "c")
        assert redis_client.zcard(keys["order"]) == 7
        chat.checkout("m5")
        for n in range(6, 12):
            chat.append(Message.user(f"m{n}", id=f"m{n}"))
        assert redis_client.zcard(keys["order"]) == 7  # the new messages form a run
        assert redis_client.hget(keys["meta"], "base") == "7"
        page, _ = manager.store.page_messages(manager.scope, "c", None, 100)
    assert [m.id for m in page] == ["m0", "m1", "m2", "b", "m3", *(f"m{n}" for n in range(4, 12))]


def test_clear_then_import_keep_runs(redis_url: str, redis_client: Any) -> None:
    with sessionary.SessionManager(redis_url) as manager:
        chat = manager.create(id="c")
        chat.append_all([Message.user(f"m{n}", id=f"m{n}") for n in range(4)])
        chat.append(Message.user("b", id="b"), parent="m1")
        chat.append(Message.user("b1", id="b1"))
        chat.clear()
        chat.append_all([Message.user(f"n{n}", id=f"n{n}") for n in range(3)])
        assert [m.id for m in chat.history()] == ["n0", "n1", "n2"]
        fork = manager.fork("c", name="f")
        keys = session_keys(redis_client, redis_url, fork.id)
        assert not {"kids", "order"} & set(keys)
        fork.append(Message.user("n3", id="n3"))
        page, _ = manager.store.page_messages(manager.scope, fork.id, None, 10)
        assert [m.id for m in page] == ["n0", "n1", "n2", "n3"]


def _kill_connections_of(redis_client: Any, store_client: Any) -> None:
    """Close, on the server side, the connection a store's redis_client has open."""
    redis_client.client_kill_filter(_id=store_client.client_id())


def test_appends_survive_a_lost_script_and_a_killed_connection(
    redis_url: str, redis_client: Any
) -> None:
    # Appends go straight down a pooled connection: a server that lost the script gets
    # them the ordinary way (which loads it), and a connection the server closed is
    # replaced when the pool hands it out.
    with sessionary.SessionManager(redis_url) as manager:
        chat = manager.create(id="c")
        chat.append(Message.user("m0", id="m0"))
        redis_client.script_flush()
        chat.append(Message.user("m1", id="m1"))
        _kill_connections_of(redis_client, manager.store._conn.client)  # type: ignore[attr-defined]
        chat.append(Message.user("m2", id="m2"))
        assert [m.id for m in chat.history()] == ["m0", "m1", "m2"]


async def test_async_appends_survive_a_lost_script_and_a_killed_connection(
    redis_url: str, redis_client: Any
) -> None:
    async with sessionary.AsyncSessionManager(redis_url) as manager:
        chat = await manager.create(id="c")
        await chat.append(Message.user("m0", id="m0"))
        redis_client.script_flush()
        await chat.append(Message.user("m1", id="m1"))
        store_client = manager.store._conn.client  # type: ignore[attr-defined]
        # The store's client lives on the store's own loop (see stores/_home_loop.py).
        home = manager.store._home._loop  # type: ignore[attr-defined]
        asked = asyncio.run_coroutine_threadsafe(store_client.client_id(), home)
        redis_client.client_kill_filter(_id=await asyncio.wrap_future(asked))
        await chat.append(Message.user("m2", id="m2"))
        assert [m.id for m in await chat.history()] == ["m0", "m1", "m2"]
