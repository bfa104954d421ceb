"""Invariants 4 and 5 across processes: concurrent appends form one chain, nothing lost.

Every test starts real worker processes (`_worker.py`) on one shared store, releases
them together, and checks the session they built. No timing is asserted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _guarantees import check_batches, check_chain, children, start_together, writer_sequences

import sessionary
from sessionary import Message

pytestmark = pytest.mark.slow

N = 4
"""Worker processes per test."""
M = 150
"""Messages each worker appends."""
BATCH = 5


def _run_workers(tmp_path: Path, url: str, mode: str, *args: object) -> None:
    commands = [(mode, url, "shared", w, *args) for w in range(N)]
    with children(tmp_path, commands) as workers:
        start_together(workers)
        for worker in workers:
            assert worker.expect() == "done"
        for worker in workers:
            worker.finish()


def test_concurrent_appends_form_one_chain(tmp_path: Path, shared_store_url: str) -> None:
    with sessionary.SessionManager(shared_store_url) as manager:
        manager.create(id="shared")
    _run_workers(tmp_path, shared_store_url, "append", M)

    with sessionary.SessionManager(shared_store_url) as manager:
        session = manager.session("shared")
        path = session.history()
        check_chain(path, session.message_count(), N * M)
        assert session.path_length() == N * M
        assert session.head() == path[-1]
        # Each worker's messages appear in the order it appended them, none missing.
        assert writer_sequences(path, "worker", "i") == {w: list(range(M)) for w in range(N)}
        assert sorted(m.text for m in path) == sorted(
            f"w{w}-{i}" for w in range(N) for i in range(M)
        )


def test_concurrent_batches_never_interleave(tmp_path: Path, shared_store_url: str) -> None:
    batches = M // BATCH
    with sessionary.SessionManager(shared_store_url) as manager:
        manager.create(id="shared")
    _run_workers(tmp_path, shared_store_url, "batches", batches, BATCH)

    with sessionary.SessionManager(shared_store_url) as manager:
        session = manager.session("shared")
        path = session.history()
        check_chain(path, session.message_count(), N * batches * BATCH)
        check_batches(path, N, batches, BATCH)
        for message in path:
            meta = message.metadata
            assert message.id == f"w{meta['worker']}-b{meta['batch']}-{meta['k']}"


def test_concurrent_retries_are_idempotent(tmp_path: Path, shared_store_url: str) -> None:
    with sessionary.SessionManager(shared_store_url) as manager:
        manager.create(id="shared")
    _run_workers(tmp_path, shared_store_url, "retry", M)

    with sessionary.SessionManager(shared_store_url) as manager:
        session = manager.session("shared")
        path = session.history()
        # Every message was sent two or three times: still exactly one copy of each, and
        # a late retry never moved the head back (which would have forked the chain).
        check_chain(path, session.message_count(), N * M)
        assert writer_sequences(path, "worker", "i") == {w: list(range(M)) for w in range(N)}
        assert {m.id for m in path} == {f"w{w}-{i}" for w in range(N) for i in range(M)}


# ---------------------------------------------------------------- stale writers


def test_stale_head_conflicts_across_handles(shared_store_url: str) -> None:
    with (
        sessionary.SessionManager(shared_store_url) as first,
        sessionary.SessionManager(shared_store_url) as second,
    ):
        mine = first.create(id="shared")
        mine.append(Message.user("hello", id="m0"))
        theirs = second.session("shared")
        old = mine.head()
        assert old is not None and theirs.head() == old

        mine.append(Message.assistant("first writer", id="m1"), expected_head=old.id)
        with pytest.raises(sessionary.HeadConflict):
            theirs.append(Message.assistant("stale writer", id="m2"), expected_head=old.id)
        with pytest.raises(sessionary.HeadConflict):
            theirs.append_all(
                [Message.assistant("stale", id="m3"), Message.user("batch", id="m4")],
                expected_head=old.id,
            )
        with pytest.raises(sessionary.HeadConflict):
            theirs.append(Message.assistant("stale", id="m5"), expected_head=None)

        for handle in (mine, theirs):
            assert [m.id for m in handle.history()] == ["m0", "m1"]
            assert handle.message_count() == 2
            for lost in ("m2", "m3", "m4", "m5"):
                assert handle.get_message(lost) is None
        # The stale writer re-reads and retries: now it succeeds.
        head = theirs.head()
        assert head is not None
        theirs.append(Message.assistant("retried", id="m2"), expected_head=head.id)
        assert [m.id for m in mine.history()] == ["m0", "m1", "m2"]


def test_stale_head_conflicts_across_processes(tmp_path: Path, shared_store_url: str) -> None:
    rounds = 20
    with sessionary.SessionManager(shared_store_url) as manager:
        session = manager.create(id="shared")
        with children(tmp_path, [("serve", shared_store_url, "shared")] * 2) as pair:
            for child in pair:
                assert child.expect() == "ready"
            for r in range(rounds):
                head = session.head()
                old = head.id if head is not None else None
                # Both race to build on the head they both saw.
                sent = {}
                for n, child in enumerate(pair):
                    command = {"op": "append", "id": f"r{r}-p{n}", "text": f"round {r}"}
                    sent[child] = json.dumps({**command, "expected_head": old})
                    child.send(sent[child])
                replies = [json.loads(child.expect()) for child in pair]
                wins = [n for n, reply in enumerate(replies) if reply == {"ok": True}]
                assert len(wins) == 1, (r, replies)
                (winner,) = wins
                assert replies[1 - winner] == {"error": "HeadConflict"}, (r, replies)
                head = session.head()
                assert head is not None and head.id == f"r{r}-p{winner}"
                assert head.parent_id == old
                assert session.get_message(f"r{r}-p{1 - winner}") is None
                # Both retry the very same call: the winner's is acknowledged again (its
                # message is stored), the loser's still conflicts; nothing moves.
                for child in pair:
                    child.send(sent[child])
                retried = [json.loads(child.expect()) for child in pair]
                assert retried == replies, (r, retried)
                assert session.head() == head
            for child in pair:
                child.finish()
        check_chain(session.history(), session.message_count(), rounds)


def test_stale_state_version_conflicts_across_processes(
    tmp_path: Path, shared_store_url: str
) -> None:
    rounds = 20
    with sessionary.SessionManager(shared_store_url) as manager:
        session = manager.create(id="shared")
        with children(tmp_path, [("serve", shared_store_url, "shared")] * 2) as pair:
            for child in pair:
                assert child.expect() == "ready"
            for r in range(rounds):
                version = session.get_state().version
                assert version == r
                for n, child in enumerate(pair):
                    patch = {"round": r, "by": n, f"p{n}": r}
                    command = {"op": "update_state", "patch": patch, "expected_version": version}
                    child.send(json.dumps(command))
                replies = [json.loads(child.expect()) for child in pair]
                wins = [n for n, reply in enumerate(replies) if reply.get("ok")]
                assert len(wins) == 1, (r, replies)
                (winner,) = wins
                assert replies[1 - winner] == {"error": "VersionConflict"}, (r, replies)
                assert replies[winner] == {"ok": True, "version": version + 1}
                state = session.get_state()
                assert state.version == version + 1
                assert state.data["round"] == r and state.data["by"] == winner
                assert state.data[f"p{winner}"] == r
                # The loser's patch wrote nothing: its key holds an older round, if any.
                assert state.data.get(f"p{1 - winner}", -1) < r
            for child in pair:
                child.finish()
