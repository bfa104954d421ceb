"""Concurrent writers through separate managers: no lost or interleaved turns."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import sessionary
from sessionary import HeadConflict, Message, VersionConflict

OpenScope = Callable[..., sessionary.SessionManager]
WRITERS = 4
EACH = 15


def test_concurrent_appends_after_the_head_form_one_chain(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    manager.create(id="s")
    handles = [open_scope().session("s") for _ in range(WRITERS)]
    start = threading.Barrier(WRITERS)

    def write(n: int) -> list[str]:
        start.wait()
        return [handles[n].append(Message.user(f"w{n} #{i}")).id for i in range(EACH)]

    with ThreadPoolExecutor(WRITERS) as pool:
        written = [mid for ids in pool.map(write, range(WRITERS)) for mid in ids]
    chat = manager.session("s")
    assert chat.message_count() == WRITERS * EACH
    assert chat.path_length() == WRITERS * EACH
    history = chat.history()
    assert sorted(m.id for m in history) == sorted(written)
    assert [m.parent_id for m in history] == [None, *(m.id for m in history[:-1])]
    for n in range(WRITERS):  # each writer's own messages keep their order
        mine = [m.text for m in history if m.text.startswith(f"w{n} ")]
        assert mine == [f"w{n} #{i}" for i in range(EACH)]


def test_only_one_writer_wins_an_expected_head(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    chat = manager.create(id="s")
    base = chat.append(Message.user("base"))
    handles = [open_scope().session("s") for _ in range(WRITERS)]
    start = threading.Barrier(WRITERS)

    def write(n: int) -> str:
        start.wait()
        try:
            handles[n].append(Message.assistant(f"reply {n}", id=f"r{n}"), expected_head=base.id)
        except HeadConflict:
            return "conflict"
        return "won"

    with ThreadPoolExecutor(WRITERS) as pool:
        outcomes = list(pool.map(write, range(WRITERS)))
    assert sorted(outcomes) == ["conflict"] * (WRITERS - 1) + ["won"]
    winner = f"r{outcomes.index('won')}"
    assert chat.message_count() == 2
    assert [m.id for m in chat.history()] == [base.id, winner]


def test_only_one_writer_wins_an_expected_version(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    chat = manager.create(id="s")
    chat.update_state({"n": 0})
    handles = [open_scope().session("s") for _ in range(WRITERS)]
    start = threading.Barrier(WRITERS)

    def write(n: int) -> str:
        start.wait()
        try:
            handles[n].update_state({"n": n + 1, f"w{n}": True}, expected_version=1)
        except VersionConflict:
            return "conflict"
        return "won"

    with ThreadPoolExecutor(WRITERS) as pool:
        outcomes = list(pool.map(write, range(WRITERS)))
    assert sorted(outcomes) == ["conflict"] * (WRITERS - 1) + ["won"]
    n = outcomes.index("won")
    assert chat.get_state() == sessionary.State({"n": n + 1, f"w{n}": True}, 2)


def test_concurrent_state_patches_are_all_applied(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    chat = manager.create(id="s")
    handles = [open_scope().session("s") for _ in range(WRITERS)]
    start = threading.Barrier(WRITERS)

    def write(n: int) -> None:
        start.wait()
        for i in range(EACH):
            handles[n].update_state({f"w{n}": i})

    with ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(write, range(WRITERS)))
    state = chat.get_state()
    assert state.data == {f"w{n}": EACH - 1 for n in range(WRITERS)}
    assert state.version == WRITERS * EACH


def test_concurrent_usage_is_all_counted(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    manager.create(id="s")
    managers = [open_scope() for _ in range(WRITERS)]
    start = threading.Barrier(WRITERS)

    def write(n: int) -> None:
        start.wait()
        for _ in range(EACH):
            managers[n].add_usage("s", 1, 2, 0.5)

    with ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(write, range(WRITERS)))
    info = manager.get("s")
    assert info is not None
    assert (info.input_tokens, info.output_tokens) == (WRITERS * EACH, 2 * WRITERS * EACH)
    assert info.cost == 0.5 * WRITERS * EACH
