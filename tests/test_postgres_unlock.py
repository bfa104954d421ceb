"""PostgreSQL's early unlock: appends to a shared session release the row before the flush.

`PostgresDialect.unlocked_append_sql` turns `synchronous_commit` off for its own
transaction, and `run_alone(..., unlock_early=True)` answers only after a second
transaction's synchronous commit, whose flush covers the statement's commit (see
stores/postgres.py).
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import sessionary
from sessionary import AlreadyExists, Message
from sessionary._sync.stores.sql import SQLStore
from sessionary.stores import postgres
from sessionary.stores._postgres_sql import _UNLOCKED
from sessionary.stores.sql import AsyncSQLStore

pytestmark = pytest.mark.postgres

_SETTING = "SELECT current_setting('synchronous_commit')"
_INSERT = f"INSERT INTO t SELECT k FROM (VALUES (%s), (%s)) AS v (k) WHERE {_UNLOCKED} IS NOT NULL"
"""Two rows, committed as `unlocked_append_sql` commits."""
_AT = (
    f"INSERT INTO t SELECT %s WHERE {_UNLOCKED} IS NOT NULL "
    "RETURNING pg_current_wal_insert_lsn()::text"
)
"""A row, committed so, and where the WAL's insertion stood after it went in."""
_FLUSHED = "SELECT pg_current_wal_flush_lsn() >= %s::pg_lsn"


def _driver(url: str) -> postgres.PostgresDriver:
    location, _, schema = url.partition("?schema=")
    driver = postgres.PostgresDriver(location, schema=schema, pool_size=1)
    driver.start(lambda tx: tx.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"'))
    return driver


def test_the_statement_commits_without_waiting_and_the_connection_is_left_as_it_was(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = _driver(postgres_url)
    try:
        assert driver.unlocks_early  # the test role may write a WAL message
        driver.run_alone("CREATE TABLE t (k INTEGER PRIMARY KEY)", ())
        assert driver.run_alone(_INSERT, (1, 2), unlock_early=True) == ([], 2)
        assert driver.run_alone(_SETTING, ()) == ([("on",)], 0)  # the one pooled connection
        for _ in range(8):  # past psycopg's threshold for preparing what it sends again
            with pytest.raises(AlreadyExists):  # its transaction is rolled back, whole
                driver.run_alone(_INSERT, (3, 1), unlock_early=True)
            assert driver.run_alone(_SETTING, ()) == ([("on",)], 0)
            assert driver.run_alone(_INSERT, (4, 5), unlock_early=True) == ([], 2)
            driver.run_alone("DELETE FROM t WHERE k > 2", ())
        rows = driver.run_alone("SELECT k FROM t ORDER BY k", (), unlock_early=True)
        assert rows == ([(1,), (2,)], 0)
        assert driver.run_alone(_SETTING, ()) == ([("on",)], 0)
        # Without the flush step, the answer comes before the WAL is flushed (mostly:
        # other clients' commits flush it too, at any moment).
        monkeypatch.setattr(postgres, "_FLUSH", "SELECT 1")
        unflushed = 0
        for k in range(10, 30):
            ((inserted,),), _ = driver.run_alone(_AT, (k,), unlock_early=True)
            unflushed += driver.run_alone(_FLUSHED, (inserted,)) == ([(False,)], 0)
        assert unflushed
    finally:
        driver.close()


def test_a_failed_flush_is_an_error_not_an_answer(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = _driver(postgres_url)
    try:
        driver.run_alone("CREATE TABLE t (k INTEGER PRIMARY KEY)", ())
        monkeypatch.setattr(postgres, "_FLUSH", "SELECT 1 / 0")
        with pytest.raises(sessionary.StoreError):
            driver.run_alone(_INSERT, (1, 2), unlock_early=True)
        monkeypatch.undo()
        assert driver.run_alone(_SETTING, ()) == ([("on",)], 0)
    finally:
        driver.close()


def test_the_answer_comes_after_the_flush_covers_the_commit(postgres_url: str) -> None:
    # Each row reads where the WAL's insertion stood after it went in; the statement
    # commits without waiting for the flush, and yet, when it answers, the WAL is flushed
    # at least that far.
    driver = _driver(postgres_url)
    try:
        driver.run_alone("CREATE TABLE t (k INTEGER)", ())
        for k in range(20):
            ((inserted,),), _ = driver.run_alone(_AT, (k,), unlock_early=True)
            assert driver.run_alone(_FLUSHED, (inserted,)) == ([(True,)], 0)
    finally:
        driver.close()


def _spy_on_unlocks(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each `run_alone` call's `unlock_early`, in order, from now on."""
    early: list[bool] = []
    run_alone = postgres.PostgresDriver.run_alone

    def spy(self: Any, sql: str, params: Any, unlock_early: bool = False) -> Any:
        early.append(unlock_early)
        return run_alone(self, sql, params, unlock_early)

    monkeypatch.setattr(postgres.PostgresDriver, "run_alone", spy)
    return early


def test_appends_to_a_session_another_writer_moves_unlock_early(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    early = _spy_on_unlocks(monkeypatch)
    with (
        sessionary.SessionManager(postgres_url) as one,
        sessionary.SessionManager(postgres_url) as two,
    ):
        one.create(id="s")
        first, second = one.session("s"), two.session("s")
        written = [first.append(Message.user("a")).id, first.append(Message.user("b")).id]
        early.clear()
        written.append(second.append(Message.user("c")).id)  # no head seen: locks
        assert early == [False]
        written.append(first.append(Message.user("d")).id)  # its head moved: then locks
        assert early[1:] == [False, True]
        written.append(second.append(Message.user("e")).id)
        assert early[3:] == [False, True]
        written.append(first.append(Message.user("f")).id)  # moved before: locks at once
        written.append(first.append(Message.user("g")).id)  # and finds its own head
        assert early[5:] == [True, True]
        written.append(first.append(Message.user("h")).id)  # so appends after it again
        assert early[7:] == [False]
        history = one.session("s").history()
        assert [m.id for m in history] == written
        assert [m.parent_id for m in history] == [None, *written[:-1]]


def _eight_writers(url: str, before: list[str]) -> None:
    """8 stores append 25 messages each to session `s` at once (after ids `before`).

    Every acknowledged message is stored once, on one chain, each writer's in its order.
    """
    managers = [sessionary.SessionManager(url) for _ in range(8)]
    try:
        start = threading.Barrier(8)

        def write(n: int) -> list[str]:
            session = managers[n].session("s")
            start.wait()
            return [session.append(Message.user(f"w{n} #{i}")).id for i in range(25)]

        with ThreadPoolExecutor(8) as pool:
            acked = [mid for ids in pool.map(write, range(8)) for mid in ids]
        history = managers[0].session("s").history()
        assert sorted(m.id for m in history) == sorted([*before, *acked])  # none lost or twice
        assert [m.parent_id for m in history] == [None, *(m.id for m in history[:-1])]
        assert managers[0].session("s").message_count() == len(before) + 200
        for n in range(8):  # each writer's messages in the order it wrote them
            mine = [m.text for m in history if m.text.startswith(f"w{n} ")]
            assert mine == [f"w{n} #{i}" for i in range(25)]
        assert managers[0].store._driver.unlocks_early
    finally:
        for manager in managers:
            manager.close()


def test_eight_writers_on_one_session_form_one_chain_unlocking_early(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    early = _spy_on_unlocks(monkeypatch)
    with sessionary.SessionManager(postgres_url) as manager:
        manager.create(id="s")
    _eight_writers(postgres_url, [])
    assert any(early)  # the writers did find the head moved, and unlocked early


_KILLED_WRITER = """
import sys
import sessionary
url, prefix = sys.argv[1:]
one, two = sessionary.SessionManager(url), sessionary.SessionManager(url)
sessions = [one.session("s"), two.session("s")]
for n in range(100_000):  # two stores in turn: each append finds its head moved
    sessions[n % 2].append(sessionary.Message.user("x", id=f"{prefix}-{n}"))
    print(f"{prefix}-{n}", flush=True)
"""


@pytest.mark.slow
def test_a_writer_killed_while_unlocking_early_loses_nothing_acknowledged(
    postgres_url: str, tmp_path: Path
) -> None:
    with sessionary.SessionManager(postgres_url) as manager:
        manager.create(id="s")
    acked: list[str] = []
    for trial in range(6):
        out = tmp_path / f"{trial}.out"
        with out.open("w") as sink:
            writer = subprocess.Popen(
                [sys.executable, "-c", _KILLED_WRITER, postgres_url, f"t{trial}"], stdout=sink
            )
            deadline = time.monotonic() + 60
            while len(out.read_text().split()) < 10 and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(random.uniform(0, 0.02))  # at some moment of an append
            writer.send_signal(signal.SIGKILL)
            writer.wait()
        acked += out.read_text().split()
        with sessionary.SessionManager(postgres_url) as manager:
            ids = [m.id for m in manager.session("s").history()]
            assert ids[: len(acked)] == acked  # the acks, in order, on one chain
            assert len(ids) <= len(acked) + 1  # and at most the call in flight
            assert manager.session("s").message_count() == len(ids)
        acked = ids
    assert len(acked) >= 60


# ---------------------------------------------------------------- the procedure


def calls(monkeypatch: pytest.MonkeyPatch, driver: type[Any]) -> list[str]:
    """The SQL of each `run_alone` call with `unlock_early`, from now on."""
    sent: list[str] = []
    run_alone = driver.run_alone

    def spy(self: Any, sql: str, params: Any, unlock_early: bool = False) -> Any:
        if unlock_early:
            sent.append(sql)
        return run_alone(self, sql, params, unlock_early)

    monkeypatch.setattr(driver, "run_alone", spy)
    return sent


class _Everywhere(set[Any]):
    """A `_moved` in which every session is: each append locks and unlocks early."""

    def __contains__(self, key: object) -> bool:
        return True

    def discard(self, key: Any) -> None:
        pass


def always_contended(monkeypatch: pytest.MonkeyPatch) -> None:
    for store in (AsyncSQLStore, SQLStore):
        init = store.__init__

        def contended(self: Any, *args: Any, init: Any = init, **kwargs: Any) -> None:
            init(self, *args, **kwargs)
            self._moved = _Everywhere()

        monkeypatch.setattr(store, "__init__", contended)


def test_a_contended_append_is_one_call_that_answers_after_the_flush(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A trigger notes where the WAL's insertion stood as each message went in: when the
    # CALL answers, the WAL is flushed at least that far, with no second statement.
    sent = calls(monkeypatch, postgres.PostgresDriver)
    monkeypatch.setattr(postgres, "_FLUSH", "SELECT 1 / 0")  # never needed on success
    always_contended(monkeypatch)
    with sessionary.SessionManager(postgres_url) as manager:
        session = manager.create(id="s")
        with manager.store._begin() as tx:
            tx.execute("CREATE TABLE at (id TEXT, lsn PG_LSN)")
            tx.execute(
                "CREATE FUNCTION note() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                "INSERT INTO at VALUES (NEW.id, pg_current_wal_insert_lsn()); RETURN NEW; "
                "END $$"
            )
            tx.execute(
                "CREATE TRIGGER note AFTER INSERT ON messages FOR EACH ROW EXECUTE FUNCTION note()"
            )
        for n in range(20):
            stored = session.append(Message.user(f"m{n}", id=f"m{n}"))
            rows = manager.store._read_alone(
                "SELECT pg_current_wal_flush_lsn() >= lsn, "
                "current_setting('synchronous_commit') FROM at WHERE id = %s",
                (stored.id,),
            )
            assert rows == [(True, "on")]
        batch = session.append_all([Message.user(k, id=k) for k in "abcde"])
        assert [m.parent_id for m in batch] == ["m19", *"abcd"]
        history = session.history()
        by_seq = manager.store._read_alone("SELECT id FROM messages ORDER BY seq", ())
    assert [m.id for m in history] == [*(f"m{n}" for n in range(20)), *"abcde"]
    assert [m.parent_id for m in history] == [None, *(m.id for m in history[:-1])]
    assert [row[0] for row in by_seq] == [m.id for m in history]  # inserted in chain order
    assert len(sent) == 21 and all(sql.startswith("CALL sessionary_append(") for sql in sent)


def test_a_contended_append_of_a_stored_id_or_under_a_stale_head_changes_nothing(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = calls(monkeypatch, postgres.PostgresDriver)
    always_contended(monkeypatch)
    with sessionary.SessionManager(postgres_url) as manager:
        session = manager.create(id="s")
        first = session.append(Message.user("first", id="m1"))
        session.append(Message.user("second", id="m2"))
        for _ in range(8):  # past psycopg's threshold for preparing what it sends again
            again = session.append(Message.user("first, again", id="m1"))
            assert again == first  # the CALL failed whole; the general path found it
            with pytest.raises(sessionary.HeadConflict):
                session.append(Message.user("late"), expected_head="m1")
            assert manager.store._read_alone(_SETTING, ()) == [("on",)]
        assert [m.id for m in session.history()] == ["m1", "m2"]
        assert session.message_count() == 2
        assert session.append(Message.user("third", id="m3")).parent_id == "m2"
    assert len(sent) == 1 + 1 + 8 * 2 + 1


def test_a_version_5_schema_gets_the_procedure_and_eight_writers_keep_one_chain(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with sessionary.SessionManager(postgres_url) as old:
        store: Any = old.store
        store._dialect.migrations = store._dialect.migrations[:5]  # this instance only
        store._dialect.unlocked_append_sql = store._dialect.append_sql  # as version 5 had
        old.create(id="s").append(Message.user("before", id="m0"))
        assert store._read_alone("SELECT to_regproc('sessionary_append')", ()) == [(None,)]
    sent = calls(monkeypatch, postgres.PostgresDriver)
    _eight_writers(postgres_url, ["m0"])
    assert sent and all(sql.startswith("CALL sessionary_append(") for sql in sent)
    with sessionary.SessionManager(postgres_url) as new:
        versions = new.store._read_alone("SELECT max(version) FROM sessionary_migrations", ())
    assert versions == [(6,)]


def test_a_role_that_may_not_call_the_procedure_appends_without_unlocking_early(
    postgres_url: str,
) -> None:
    with sessionary.SessionManager(postgres_url) as manager:
        manager.create(id="s")
        manager.store._read_alone("REVOKE EXECUTE ON PROCEDURE sessionary_append FROM PUBLIC", ())
    role = f"sx_nocall_{uuid.uuid4().hex[:12]}"
    admin = postgres_url.split("?")[0]
    schema = postgres_url.partition("?schema=")[2]
    import psycopg

    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO {role}')
        conn.execute(
            f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "{schema}" TO {role}'
        )
        conn.execute(f'GRANT USAGE ON ALL SEQUENCES IN SCHEMA "{schema}" TO {role}')
    try:
        parts = admin.split("://", 1)[1].split("@", 1)[1]
        url = f"postgresql://{role}@{parts}?schema={schema}&migrate=false"
        with sessionary.SessionManager(url) as one, sessionary.SessionManager(url) as two:
            sessions = [one.session("s"), two.session("s")]
            ids = [sessions[n % 2].append(Message.user(f"m{n}")).id for n in range(6)]
            assert not one.store._driver.unlocks_early
            assert [m.id for m in one.session("s").history()] == ids
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")


def test_a_contended_append_stays_inside_its_scope(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The CALL finds the session by tenant, user and id, as every other statement does: the
    # same id in another scope is another session, and one only another scope has is absent.
    sent = calls(monkeypatch, postgres.PostgresDriver)
    always_contended(monkeypatch)
    scopes = [("acme", "u1"), ("acme", "u2"), ("globex", "u1")]
    managers = [sessionary.SessionManager(postgres_url, tenant=t, user=u) for t, u in scopes]
    try:
        for (tenant, user), manager in zip(scopes, managers, strict=True):
            manager.create(id="s").append(Message.user(f"{tenant} {user}"))
        managers[0].create(id="only-acme-u1").append(Message.user("mine"))
        for manager in managers[1:]:
            with pytest.raises(sessionary.SessionNotFound):
                manager.session("only-acme-u1").append(Message.user("across the wall"))
        for (tenant, user), manager in zip(scopes, managers, strict=True):
            assert [m.text for m in manager.session("s").history()] == [f"{tenant} {user}"]
        assert [m.text for m in managers[0].session("only-acme-u1").history()] == ["mine"]
        assert len(sent) == 6 and all(sql.startswith("CALL sessionary_append(") for sql in sent)
    finally:
        for manager in managers:
            manager.close()
