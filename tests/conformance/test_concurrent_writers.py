"""Concurrent writers through separate managers: no lost or interleaved turns."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

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


def test_writers_taking_turns_build_on_each_others_appends(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    # A store may remember where its own last append left the head; the other writer's
    # appends move it on, and each append must still go after the real head.
    manager.create(id="s")
    first, second = open_scope().session("s"), open_scope().session("s")
    written: list[str] = []
    for turn in range(4):
        writer = first if turn % 2 == 0 else second
        written.append(writer.append(Message.user(f"ask {turn}")).id)
        pair = [Message.assistant(f"answer {turn}"), Message.user(f"more {turn}")]
        written += [m.id for m in writer.append_all(pair)]
    history = manager.session("s").history()
    assert [m.id for m in history] == written
    assert [m.parent_id for m in history] == [None, *written[:-1]]
    assert manager.session("s").message_count() == len(written)


def test_an_append_follows_a_head_another_writer_moved_back(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    writer, other = open_scope().session("s0"), open_scope()
    manager.create(id="s0")
    one = writer.append(Message.user("one"))
    two = writer.append(Message.assistant("two"))
    other.session("s0").checkout(one.id)
    three = writer.append(Message.assistant("three"))
    assert three.parent_id == one.id
    assert [m.id for m in manager.session("s0").history()] == [one.id, three.id]
    assert [m.id for m in manager.session("s0").branches(one.id)] == [two.id, three.id]
    other.session("s0").delete(three.id)
    four = writer.append(Message.assistant("four"))
    assert four.parent_id == one.id
    assert manager.session("s0").path_length() == 2


def test_an_append_lands_in_a_session_recreated_under_the_same_id(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    # The new session's head even has the old head's id and depth.
    writer, other = open_scope().session("s1"), open_scope()
    manager.create(id="s1")
    writer.append(Message.user("old", id="m1"))
    other.delete("s1")
    other.create(id="s1").append(Message.user("again", id="m1"))
    fresh = writer.append(Message.user("new"))
    assert fresh.parent_id == "m1"
    assert [m.text for m in manager.session("s1").history()] == ["again", "new"]
    assert manager.session("s1").message_count() == 2


def test_one_store_keeps_same_named_sessions_of_two_scopes_apart(
    manager: sessionary.SessionManager,
) -> None:
    # A store remembers heads per session; the same id in another scope is another
    # session, however the appends to the two alternate through that one store.
    other = sessionary.SessionManager(manager.store, tenant="other-tenant")
    mine, theirs = manager.create(id="same"), other.create(id="same")
    for turn in range(3):
        mine.append(Message.user(f"mine {turn}"))
        theirs.append(Message.user(f"theirs {turn}"))
    assert [m.text for m in manager.session("same").history()] == [f"mine {n}" for n in range(3)]
    assert [m.text for m in other.session("same").history()] == [f"theirs {n}" for n in range(3)]
    assert manager.session("same").message_count() == other.session("same").message_count() == 3


def test_an_exact_delete_racing_an_append_below_never_orphans_it(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    # One writer answers leaf x while another deletes exactly x: either the delete
    # comes first (the answer finds no parent) or the answer does (the delete is
    # refused); never both, whichever connection, process or server each one uses.
    manager.create(id="s")
    appender, deleter = open_scope().session("s"), open_scope().session("s")
    for round_ in range(12):
        leaf = manager.append("s", Message.user(f"leaf {round_}", id=f"x{round_}"), parent=None)
        start = threading.Barrier(2, timeout=60)

        def answer(leaf_id: str = leaf.id, n: int = round_, start: Any = start) -> str:
            start.wait()
            try:
                appender.append(Message.assistant("answer", id=f"y{n}"), parent=leaf_id)
            except sessionary.MessageNotFound:
                return "answer lost"
            return "answered"

        def delete(leaf_id: str = leaf.id, start: Any = start) -> str:
            start.wait()
            try:
                deleter.delete_messages([leaf_id])
            except sessionary.MessageHasChildren:
                return "delete refused"
            return "deleted"

        with ThreadPoolExecutor(2) as pool:
            answered, deleted = pool.submit(answer), pool.submit(delete)
            got = (answered.result(timeout=60), deleted.result(timeout=60))
        assert got in {("answered", "delete refused"), ("answer lost", "deleted")}, got
        if got[0] == "answered":
            assert [m.id for m in manager.history("s", f"y{round_}")] == [leaf.id, f"y{round_}"]
        else:
            assert manager.session("s").get_message(leaf.id) is None
    records = [r["message"] for r in manager.export("s") if r["type"] == "message"]
    present = {m["id"] for m in records}
    assert all(m.get("parent_id") in (None, *present) for m in records)
    assert manager.message_count("s") == len(records)
