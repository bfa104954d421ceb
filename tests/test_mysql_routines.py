"""On MariaDB, an append of one message is a CALL of a stored procedure (migrations 6, 7).

`sessionary_append_after_seen` moves the head and inserts only if its UPDATE found the
head where the store saw it; `sessionary_append_by_key` (migration 7) finds, locks,
checks and moves the head in one UPDATE by the session's key and answers in one packed
column (`routine_rows`), as migration 6's `sessionary_append_locked` did after a locking
read. A store whose CALL the server refuses (the procedure dropped, redefined, or not
this user's to run) sends the script instead. A version 5 or 6 schema keeps its
procedures (clients of that release still CALL them) and gains these.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

import pymysql
import pytest

import sessionary
from sessionary import Message
from sessionary.stores import mysql
from sessionary.stores._mysql_sql import ROUTINE_NAMES, routine_rows
from sessionary.stores.mysql import _literal, connect_options

pytestmark = pytest.mark.mysql

_ROUTINES = (
    "SELECT routine_name FROM information_schema.routines WHERE routine_schema = DATABASE() "
    "ORDER BY routine_name"
)


def _rows(manager: sessionary.SessionManager, sql: str) -> list[tuple[Any, ...]]:
    store: Any = manager.store
    with store._begin() as tx:
        return tx.fetchall(sql)


def _mariadb(manager: sessionary.SessionManager) -> bool:
    return "mariadb" in str(_rows(manager, "SELECT VERSION()")[0][0]).lower()


def _calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements every PyMySQL connection sends from now on, in order.

    (Every query goes through `_execute_command`, the store's CALLs too, which read
    their answer themselves: `stores.mysql._Answer`.)
    """
    sent: list[str] = []
    execute = pymysql.connections.Connection._execute_command

    def counted(self: Any, command: int, sql: Any) -> Any:
        if command == pymysql.constants.COMMAND.COM_QUERY:
            sent.append(sql.decode() if isinstance(sql, bytes) else sql)
        return execute(self, command, sql)

    monkeypatch.setattr(pymysql.connections.Connection, "_execute_command", counted)
    return sent


def _writers(
    url: str, session_id: str, count: int, each: int, before: Any = None
) -> list[BaseException]:
    """`count` threads, each its own manager, appending `each` messages to one session.

    `before(n)`, if given, runs first in writer `n`'s thread.
    """
    errors: list[BaseException] = []
    start = threading.Barrier(count)

    def write(n: int) -> None:
        try:
            if before is not None:
                before(n)
            with sessionary.SessionManager(url) as manager:
                session = manager.session(session_id)
                start.wait(timeout=30)
                for k in range(each):
                    session.append(Message.user(f"w{n} {k}", id=f"w{n}-{k}"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def _whole(manager: sessionary.SessionManager, session_id: str, expected: set[str]) -> None:
    """The session is one chain holding each expected id once, and its count agrees."""
    path = manager.session(session_id).history()
    ids = [m.id for m in path]
    assert len(ids) == len(set(ids)) and set(ids) == expected
    assert [m.parent_id for m in path] == [None, *ids[:-1]]
    info = manager.get(session_id)
    assert info is not None and info.message_count == len(ids)
    children = _rows(
        manager,
        "SELECT count(*) FROM messages GROUP BY session_pk, parent_id HAVING count(*) > 1",
    )
    assert children == [], "a message with two children: the chain forked"


def test_the_locked_procedure_answers_in_one_column() -> None:
    assert routine_rows([]) == []
    assert routine_rows([("1 5 -1",)]) == [(None, 1, 5, -1)]
    assert routine_rows([("0 7 3 an id with spaces",)]) == [("an id with spaces", 0, 7, 3)]
    assert routine_rows([("1 7 3 ",)]) == [("", 1, 7, 3)]


def test_one_message_appends_call_the_procedures(
    mysql_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        sessionary.SessionManager(mysql_url) as mine,
        sessionary.SessionManager(mysql_url) as other,
    ):
        ours, theirs = mine.create(id="s"), other.session("s")
        first = ours.append(Message.user('first, it\'s "quoted" \\ and\nbroken\x00'))
        theirs.append(Message.user("theirs"))
        if not _mariadb(mine):
            pytest.skip("MySQL runs the scripts")
        sent = _calls(monkeypatch)
        moved = ours.append(Message.user("after theirs"))  # the head moved: locks, finds it
        learns = ours.append(Message.user("locks, finds its own"))
        after = ours.append(Message.user("after its own"))
        assert [sql.split("(")[0] for sql in sent] == [
            "CALL sessionary_append_after_seen",
            "CALL sessionary_append_by_key",
            "CALL sessionary_append_by_key",
            "CALL sessionary_append_after_seen",
        ]
        path = ours.history()
    texts = [first.text, "theirs", "after theirs", "locks, finds its own", "after its own"]
    assert [m.text for m in path] == texts
    assert moved.parent_id == path[1].id
    assert (learns.parent_id, after.parent_id) == (moved.id, learns.id)


@pytest.mark.parametrize("name", ["sessionary_append_locked", ROUTINE_NAMES[1]])
def test_a_call_for_a_missing_session_answers_without_warnings(mysql_url: str, name: str) -> None:
    with sessionary.SessionManager(mysql_url) as manager:
        manager.create(id="s")
        if not _mariadb(manager):
            pytest.skip("MySQL runs the scripts")
    conn = pymysql.connect(**connect_options(mysql_url, 5, "database"))
    try:
        with conn.cursor() as cursor:
            for session in ("s", "missing"):  # found (the head moves), then no row at all
                args = (True, None, "default", "default", session, f"id-{session}", "user")
                args += (1, "{}", "", 1)
                cursor.execute(f"CALL {name}({', '.join(['%s'] * 11)})", args)
                while cursor.nextset():
                    pass
                assert not conn.show_warnings(), session
    finally:
        conn.close()


async def test_an_async_append_to_a_missing_session_warns_of_nothing(mysql_url: str) -> None:
    # aiomysql turns a warning on an answer into a SHOW WARNINGS and a Python warning.
    async with sessionary.AsyncSessionManager(mysql_url) as manager:
        await manager.create(id="s")
        session = manager.session("s")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            await session.append(Message.user("first"))
            with pytest.raises(sessionary.SessionNotFound):
                await manager.session("missing").append(Message.user("lost"))
            assert [m.text for m in await session.history()] == ["first"]


@pytest.mark.parametrize("name", ROUTINE_NAMES)
def test_a_refused_call_falls_back_to_the_script(
    mysql_url: str, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    # The procedure goes after the store started (error 1305 on its CALL), then comes back
    # with other parameters (1318): nothing ran, so the script runs, and from then on.
    with (
        sessionary.SessionManager(mysql_url) as mine,
        sessionary.SessionManager(mysql_url) as other,
    ):
        session = mine.create(id="s")
        session.append(Message.user("zero"))
        driver: Any = mine.store._driver
        if not driver._routines:
            pytest.skip("this server runs the scripts")
        with other.store._begin() as tx:  # type: ignore[attr-defined]
            tx.execute(f"DROP PROCEDURE {name}")
        other.session("s").append(Message.user("moves the head"))
        sent = _calls(monkeypatch)
        session.append(Message.user("one"))
        session.append(Message.user("two"))
        assert driver._routines is False
        refused = next(i for i, sql in enumerate(sent) if sql.startswith(f"CALL {name}("))
        assert not any(sql.startswith("CALL") for sql in sent[refused + 1 :])
        with other.store._begin() as tx:  # type: ignore[attr-defined]
            tx.execute(f"CREATE PROCEDURE {name}() BEGIN END")
        fresh = sessionary.SessionManager(mysql_url)
        try:
            fresh.session("s").append(Message.user("three"))
            fresh.session("s").append(Message.user("four"))
            assert fresh.store._driver._routines is False  # type: ignore[attr-defined]
            texts = [m.text for m in fresh.session("s").history()]
        finally:
            fresh.close()
    assert texts == ["zero", "moves the head", "one", "two", "three", "four"]


def test_a_version_5_schema_keeps_its_procedures_and_gains_these(mysql_url: str) -> None:
    with sessionary.SessionManager(mysql_url) as old:
        store: Any = old.store
        store._dialect.migrations = store._dialect.migrations[:5]  # this instance only
        old.create(id="s").append(Message.user("before", id="m0"))
        assert [r[0] for r in _rows(old, _ROUTINES)] == [
            "sessionary_append",
            "sessionary_append_after",
        ]
        assert store._driver._routines is False
    with sessionary.SessionManager(mysql_url) as new:
        earlier = ["sessionary_append", "sessionary_append_after", "sessionary_append_locked"]
        assert [r[0] for r in _rows(new, _ROUTINES)] == sorted([*earlier, *ROUTINE_NAMES])
        new.session("s").append(Message.user("after", id="m1"))
        assert new.store._driver._routines is _mariadb(new)  # type: ignore[attr-defined]
    assert _writers(mysql_url, "s", 8, 25) == []
    with sessionary.SessionManager(mysql_url) as after:
        expected = {"m0", "m1", *(f"w{n}-{k}" for n in range(8) for k in range(25))}
        _whole(after, "s", expected)


def test_a_version_6_schema_keeps_the_locked_procedure_for_its_clients(
    mysql_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with sessionary.SessionManager(mysql_url) as old:
        store: Any = old.store
        store._dialect.migrations = store._dialect.migrations[:6]  # this instance only
        old.create(id="s").append(Message.user("before", id="m0"))
        names = [r[0] for r in _rows(old, _ROUTINES)]
        assert "sessionary_append_locked" in names and ROUTINE_NAMES[1] not in names
    with sessionary.SessionManager(mysql_url) as new:
        names = [r[0] for r in _rows(new, _ROUTINES)]
        assert {"sessionary_append_locked", *ROUTINE_NAMES} <= set(names)
        new.session("s").append(Message.user("after", id="m1"))
        mariadb = _mariadb(new)
    # Four writers CALL the version 6 procedure, as clients of that release do, while
    # four of this release CALL its successor, on the same session at once.
    released = threading.local()
    call = mysql._call_query

    def either(conn: Any, name: str, values: Any, packet: int) -> bytes:
        if name == ROUTINE_NAMES[1] and getattr(released, "old", False):
            name = "sessionary_append_locked"
        return call(conn, name, values, packet)

    def mark(n: int) -> None:
        released.old = n % 2 == 0

    monkeypatch.setattr(mysql, "_call_query", either)
    sent = _calls(monkeypatch)
    assert _writers(mysql_url, "s", 8, 25, mark) == []
    if mariadb:
        called = {sql.split("(")[0] for sql in sent if sql.startswith("CALL")}
        assert {"CALL sessionary_append_locked", f"CALL {ROUTINE_NAMES[1]}"} <= called
    with sessionary.SessionManager(mysql_url) as after:
        expected = {"m0", "m1", *(f"w{n}-{k}" for n in range(8) for k in range(25))}
        _whole(after, "s", expected)


def test_the_by_key_procedure_appends_only_after_the_expected_head(mysql_url: str) -> None:
    with sessionary.SessionManager(mysql_url) as manager:
        session = manager.create(id="s")
        if not _mariadb(manager):
            pytest.skip("MySQL runs the scripts")
        (pk,) = _rows(manager, "SELECT pk FROM sessions WHERE id = 's'")[0]
    conn = pymysql.connect(**connect_options(mysql_url, 5, "database"))
    marks = ", ".join(["%s"] * 11)

    def call(any_head: bool, expected: str | None, msg: str) -> list[tuple[Any, ...]]:
        args = (any_head, expected, "default", "default", "s", msg, "user", 1, "{}", "", 2)
        with conn.cursor() as cursor:
            cursor.execute(f"CALL {ROUTINE_NAMES[1]}({marks})", args)
            rows = list(cursor.fetchall()) if cursor.description else []
            while cursor.nextset():
                pass
        return rows

    def stored() -> list[tuple[Any, ...]]:
        with conn.cursor() as cursor:
            cursor.execute("SELECT head_id, head_depth, message_count FROM sessions")
            head = cursor.fetchone()
            cursor.execute("SELECT id, parent_id, depth FROM messages ORDER BY seq")
            return [head, *cursor.fetchall()]

    try:
        assert call(False, "nowhere", "a") == []  # an empty session's head is NULL
        assert stored() == [(None, -1, 0)]
        assert call(False, None, "a") == [(f"1 {pk} -1",)]
        assert call(True, None, "b") == [(f"1 {pk} 0 a",)]
        assert call(False, "a", "c") == []  # the head is b now: nothing changes
        assert stored() == [("b", 1, 2), ("a", None, 0), ("b", "a", 1)]
        assert call(False, "b", "c") == [(f"1 {pk} 1 b",)]
        assert stored() == [("c", 2, 3), ("a", None, 0), ("b", "a", 1), ("c", "b", 2)]
        with pytest.raises(pymysql.err.IntegrityError):  # an id stored: rolled back whole
            call(True, None, "a")
        conn.rollback()
        assert stored() == [("c", 2, 3), ("a", None, 0), ("b", "a", 1), ("c", "b", 2)]
    finally:
        conn.close()
    del session


def test_eight_writers_on_one_session_lose_repeat_and_fork_nothing(mysql_url: str) -> None:
    with sessionary.SessionManager(mysql_url) as manager:
        manager.create(id="s")
    assert _writers(mysql_url, "s", 8, 40) == []
    with sessionary.SessionManager(mysql_url) as manager:
        _whole(manager, "s", {f"w{n}-{k}" for n in range(8) for k in range(40)})


def test_a_literal_is_what_the_driver_escapes_without_backslash_escapes(mysql_url: str) -> None:
    # With NO_BACKSLASH_ESCAPES a backslash is an ordinary character and a quote is
    # doubled; the driver escapes so, and so must the store's own literals.
    conn = pymysql.connect(**connect_options(mysql_url, 5, "database"))
    try:
        with conn.cursor() as cursor:
            cursor.execute("SET SESSION sql_mode = concat(@@sql_mode, ',NO_BACKSLASH_ESCAPES')")
            for value in ('it\'s \\ "q"\n\x00\x1a\r', "plain", "", "é😀 ''"):
                assert _literal(conn, value) == conn.escape(value)
                cursor.execute(f"SELECT {_literal(conn, value)}")
                assert cursor.fetchone()[0] == value
    finally:
        conn.close()


async def test_a_refused_call_falls_back_to_the_script_async(mysql_url: str) -> None:
    async with sessionary.AsyncSessionManager(mysql_url) as manager:
        session = await manager.create(id="s")
        await session.append(Message.user("zero"))
        driver: Any = manager.store._driver  # type: ignore[attr-defined]
        if not driver._routines:
            pytest.skip("this server runs the scripts")
        conn = pymysql.connect(**connect_options(mysql_url, 5, "database"))
        try:
            conn.cursor().execute(f"DROP PROCEDURE {ROUTINE_NAMES[0]}")
        finally:
            conn.close()
        await session.append(Message.user("one"))
        assert driver._routines is False
        await session.append(Message.user("two"))
        assert [m.text for m in await session.history()] == ["zero", "one", "two"]
