"""What only the SQL server backends have: URLs, migrations, driver errors, query rendering.

Everything else they do is pinned by tests/conformance and tests/guarantees.
"""

from __future__ import annotations

import asyncio
import doctest
import random
import string
import sys
import threading
from collections.abc import Callable
from typing import Any

import pymysql
import pytest

import sessionary
from sessionary import Message
from sessionary.errors import BackendNotInstalled, InvalidURL, SchemaError, StoreUnavailable
from sessionary.query import parse_query, words
from sessionary.records import Scope, SessionInfo
from sessionary.stores import _mysql_sql, _postgres_sql, mysql
from sessionary.stores import _sql_common as shared
from sessionary.stores._common import prepare_messages
from sessionary.stores._sql_common import search_text
from sessionary.stores._textmatch import fold
from sessionary.stores.mysql import connect_options
from sessionary.stores.urls import parse_store_url

SERVERS = [
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("mysql", marks=pytest.mark.mysql),
]


@pytest.fixture(params=SERVERS)
def server_url(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{request.param}_url"))


def _migrations(url: str) -> list[Any]:
    with sessionary.SessionManager(url) as manager:
        store: Any = manager.store
        with store._begin() as tx:
            return list(
                tx.fetchall("SELECT version, name FROM sessionary_migrations ORDER BY version")
            )


# ---------------------------------------------------------------- URLs


@pytest.mark.parametrize(
    ("url", "scheme", "location", "options"),
    [
        ("postgresql://u:p@h:5/db", "postgresql", "postgresql://u:p@h:5/db", {}),
        ("postgres://h/db?schema=s1&pool_size=3", "postgresql", "postgresql://h/db",
         {"schema": "s1", "pool_size": 3}),
        ("mysql://root@h:3306/db?connect_timeout=2.5", "mysql", "mysql://root@h:3306/db",
         {"connect_timeout": 2.5}),
        ("mariadb://h/db?max_message_bytes=1000", "mysql", "mysql://h/db",
         {"max_message_bytes": 1000}),
        # libpq's own parameters stay in the URL the driver connects with
        ("postgresql://h/db?sslmode=require&schema=s&application_name=a", "postgresql",
         "postgresql://h/db?sslmode=require&application_name=a", {"schema": "s"}),
    ],
)  # fmt: skip
def test_server_urls(url: str, scheme: str, location: str, options: dict[str, Any]) -> None:
    parsed = parse_store_url(url)
    assert (parsed.scheme, parsed.location, parsed.options) == (scheme, location, options)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://h/db?bogus=1",
        "postgresql://h/db?sslmod=require",
        "postgresql://h/db?schema=a;drop",
        "postgresql://h/db?schema=",
        "postgresql://h/db?pool_size=0",
        "postgresql://h:port/db",
        "mysql://h/db?schema=x",
        "mysql://h",
        "mysql:///db",
        "mariadb://h/db?pool_size=many",
    ],
)
def test_bad_server_urls(url: str) -> None:
    with pytest.raises(InvalidURL):
        parse_store_url(url)


def test_a_missing_driver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in ("psycopg", "sessionary.stores.postgres"):
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(BackendNotInstalled, match=r"sessionary\[postgres\]"):
        sessionary.open_store("postgresql://127.0.0.1/test")
    for module in ("pymysql", "sessionary.stores.mysql"):
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(BackendNotInstalled, match=r"sessionary\[mysql\]"):
        sessionary.open_store("mysql://127.0.0.1/test")


# ---------------------------------------------------------------- unreachable servers


@pytest.mark.parametrize(
    "url", ["postgresql://postgres:secret@127.0.0.1:1/test", "mysql://root:secret@127.0.0.1:1/test"]
)
def test_a_closed_port_is_store_unavailable(url: str) -> None:
    with sessionary.SessionManager(url) as manager, pytest.raises(StoreUnavailable) as caught:
        manager.list()
    assert "secret" not in str(caught.value)
    assert "127.0.0.1" in str(caught.value)


@pytest.mark.parametrize(
    "url", ["postgresql://postgres@127.0.0.1:1/test", "mysql://root@127.0.0.1:1/test"]
)
async def test_a_closed_port_is_store_unavailable_async(url: str) -> None:
    async with sessionary.AsyncSessionManager(url) as manager:
        with pytest.raises(StoreUnavailable):
            await manager.create()


# ---------------------------------------------------------------- migrations


def test_migrations_are_recorded_once(server_url: str) -> None:
    assert _migrations(server_url) == _migrations(server_url) == _migration_names(server_url)


def _migration_names(url: str) -> list[tuple[int, str]]:
    dialect = (
        _postgres_sql.PostgresDialect if url.startswith("postgres") else _mysql_sql.MySQLDialect
    )
    return [(version, name) for version, name, _ in dialect.migrations]


def _write_v1_session(tx: Any, store: Any, scope: Scope, session_id: str, text: str) -> str:
    """A session with one message, as version 1 code wrote it (today's rows have more).

    Returns the message's id.
    """
    v1_columns = len(shared.INSERT_SESSION.split("(")[1].split(",")) - 2  # no TTL columns
    insert = shared.INSERT_SESSION.replace(", ttl_us, ttl_sliding", "").rsplit("(", 1)[0]
    row = shared.session_row(scope, SessionInfo(id=session_id), "{}", (None, -1, 0), 1)
    pk = tx.insert(insert + "(" + ", ".join(["%s"] * v1_columns) + ")", row[:v1_columns], "pk")
    prepared = prepare_messages([Message.user(text)], store.max_message_bytes)
    _, rows, last = shared.plan_chain(pk, prepared, (None, -1), {}, store._dialect.index_text)
    tx.execute(shared.INSERT_MESSAGES + shared.INSERT_MESSAGE, rows[0])
    tx.execute(
        "UPDATE sessions SET head_id = %s, head_depth = %s, message_count = 1 WHERE pk = %s",
        (last[0], last[1], pk),
    )
    return str(rows[0][1])


def test_a_version_1_schema_is_upgraded_in_place(server_url: str) -> None:
    with sessionary.SessionManager(server_url) as old:
        store: Any = old.store
        store._dialect.migrations = store._dialect.migrations[:1]  # this instance only
        store._dialect.pending_sql = None  # nor does version 1 code catch up a search index
        with store._begin() as tx:
            _write_v1_session(tx, store, old.scope, "kept", "written before the upgrade")
        old.update_state({"n": 1})
        with store._begin() as tx:
            applied = tx.fetchall("SELECT version FROM sessionary_migrations")
        assert [tuple(row) for row in applied] == [(1,)]
    with sessionary.SessionManager(server_url) as new:
        assert [m.text for m in new.session("kept").history()] == ["written before the upgrade"]
        assert new.get_state().data == {"n": 1}
        docs = new.store
        docs.put_document(new.scope, "session", "kept", "block", "k", {}, "pelican", "user", 0)
        hits = docs.search_documents(new.scope, "session", "kept", None, parse_query("pelican"), 5)
        assert [h.key for h in hits] == ["k"]
    assert _migrations(server_url) == _migration_names(server_url)


def _at_once(count: int, work: Callable[[int, threading.Barrier], None]) -> list[BaseException]:
    """Run `work(n, start)` for n in range(count) on threads of their own; what they raised.

    Each waits on `start` (a barrier of `count`) where it means to begin with the others.
    """
    errors: list[BaseException] = []
    start = threading.Barrier(count)

    def run(n: int) -> None:
        try:
            work(n, start)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return errors


def test_stores_opened_at_once_migrate_once(server_url: str) -> None:
    def open_and_write(n: int, start: threading.Barrier) -> None:
        start.wait(timeout=30)
        with sessionary.SessionManager(server_url) as manager:
            manager.create(id=f"s{n}").append(Message.user(f"hello {n}"))

    assert _at_once(4, open_and_write) == []
    assert _migrations(server_url) == _migration_names(server_url)
    with sessionary.SessionManager(server_url) as manager:
        assert len(manager.list().items) == 4


def test_a_newer_schema_is_refused(server_url: str) -> None:
    with sessionary.SessionManager(server_url) as manager:
        manager.create(id="kept")
        store: Any = manager.store
        with store._begin() as tx:
            tx.execute("INSERT INTO sessionary_migrations (version, name) VALUES (99, 'future')")
    with sessionary.SessionManager(server_url) as manager, pytest.raises(SchemaError):
        manager.get("kept")


# ---------------------------------------------------------------- search specifics


def test_query_rendering_examples() -> None:
    for module in (_postgres_sql, _mysql_sql):
        assert doctest.testmod(module).failed == 0


def test_postgres_never_asks_for_a_headline_and_searches_folded_words() -> None:
    """`ts_headline` given a phrase took memory enough to get the server process killed,
    and rebuilt snippets from indexed words; snippets are now made in Python from the
    message's own text. The tsquery holds the folded words the index holds.
    """
    dialect = _postgres_sql.PostgresDialect()
    query = parse_query('"Black CAT" OR Café* -"hot dog"')
    sql, params = dialect.search_sql(Scope(), query, 10, None, None, 0)
    doc_sql, doc_params = dialect.document_search_sql(("session", "t", "u", "s"), None, query, 10)
    for statement in (sql, doc_sql):
        assert "ts_headline" not in statement and "ts_rank" not in statement
    assert params[0] == doc_params[0] == "('black' <-> 'cat' | 'cafe':*) & !('hot' <-> 'dog')"
    assert dialect.index_text("Naïve CAFÉ, ½!") == "naive cafe 1 2"


def test_postgres_folds_ascii_text_in_one_pass_to_the_same_words() -> None:
    rng = random.Random(18)
    alphabet = string.ascii_letters + string.digits + string.punctuation + " \t\n_"
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(40)))
        by_word = [part for word in words(text) for part in words(fold(word))]
        assert _postgres_sql.folded_words(text) == by_word


def test_every_word_is_searchable(server_url: str) -> None:
    with sessionary.SessionManager(server_url) as manager:
        chat = manager.create()
        short = chat.append(Message.user("to be or not to be, ox"))
        other = chat.append(Message.user("the other one"))
        assert {h.message_id for h in manager.search('"or not"')} == {short.id}
        assert {h.message_id for h in manager.search("ox")} == {short.id}
        assert {h.message_id for h in manager.search("the")} == {other.id}
        assert manager.search("½") == []
        assert manager.search("be ½") == []


def _count(manager: sessionary.SessionManager, sql: str) -> int:
    store: Any = manager.store
    with store._begin() as tx:
        row = tx.fetchone(sql)
    return int(row[0])


def test_mysql_message_search_catches_up_before_a_search(mysql_url: str) -> None:
    # Appends only queue a message for the index (a trigger); a search first indexes
    # the queue, so it is complete, and edits and deletes reach the index the same way.
    with sessionary.SessionManager(mysql_url) as old:
        store: Any = old.store
        store._dialect.migrations = store._dialect.migrations[:2]  # before the index moved
        store._dialect.pending_sql = None  # and the code that caught it up
        with store._begin() as tx:
            before = _write_v1_session(tx, store, old.scope, "s", "pelican before the upgrade")
    with sessionary.SessionManager(mysql_url) as manager:
        indexes = (
            "SELECT count(*) FROM information_schema.statistics WHERE table_schema = DATABASE() "
            "AND table_name = 'messages' AND index_type = 'FULLTEXT'"
        )
        assert _count(manager, indexes) == 0
        chat = manager.session("s")
        after = chat.append(Message.user("pelican after it"))
        heron = chat.append(Message.user("a heron"))
        assert _count(manager, "SELECT count(*) FROM search_pending") == 2
        assert {h.message_id for h in manager.search("pelican")} == {before, after.id}
        assert _count(manager, "SELECT count(*) FROM search_pending") == 0
        chat.update(Message.user("a pelican now", id=heron.id))
        assert {h.message_id for h in manager.search("pelican")} == {
            before,
            after.id,
            heron.id,
        }
        assert manager.search("heron") == []
        chat.delete(after.id)
        assert {h.message_id for h in manager.search("pelican")} == {before}
        assert _count(manager, "SELECT count(*) FROM message_search") == 1
        many = manager.create(id="many")
        for start in range(0, 1200, 400):  # more than one catch-up batch
            many.append_all([Message.user(f"albatross {n}") for n in range(start, start + 400)])
        # Appending, the store caught up before each batch past the first: only the
        # last one waits for a search.
        assert _count(manager, "SELECT count(*) FROM search_pending") == 400
        assert len(manager.search("albatross", limit=5)) == 5
        assert _count(manager, "SELECT count(*) FROM message_search") == 1201
        assert _count(manager, "SELECT count(*) FROM search_pending") == 0


def test_mysql_search_backlog_stays_short_with_short_lived_stores(mysql_url: str) -> None:
    # Each store catches the index up before its first append, so many stores that
    # each append a little leave at most their own last messages to a search.
    with sessionary.SessionManager(mysql_url) as first:
        first.create(id="s").append_all([Message.user(f"tern {n}") for n in range(5)])
        assert _count(first, "SELECT count(*) FROM search_pending") == 5
    for n in range(3):
        with sessionary.SessionManager(mysql_url) as later:
            later.session("s").append(Message.user(f"gull {n}"))
            assert _count(later, "SELECT count(*) FROM search_pending") == 1


def test_mysql_appends_take_one_request_each(
    mysql_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An append is one request. On MariaDB an append of one message is a CALL of its
    # stored procedure (a script as one compound statement for more), so it is also one
    # answer, not one per statement. A store that found another writer had moved the
    # head locks the row at once until it finds the head where it left it. (Every
    # request goes through `_execute_command`; a CALL's answer is read by the store's
    # driver itself, `mysql._Answer`, a script's by the cursor, one result at a time.)
    requests: list[str] = []
    answers = [0]
    execute = pymysql.connections.Connection._execute_command
    query = pymysql.connections.Connection.query
    next_result = pymysql.connections.Connection.next_result
    ended = mysql._Answer._ended

    def counted_execute(self: Any, command: int, sql: Any) -> Any:
        if command == pymysql.constants.COMMAND.COM_QUERY:
            requests.append(sql.decode() if isinstance(sql, bytes) else sql)
        return execute(self, command, sql)

    def counted_query(self: Any, sql: Any, unbuffered: bool = False) -> int:
        answers[0] += 1
        return int(query(self, sql, unbuffered))

    def counted_next(self: Any, unbuffered: bool = False) -> int:
        answers[0] += 1
        return int(next_result(self, unbuffered))

    def counted_end(self: Any, conn: Any, status: int) -> bool:
        answers[0] += 1
        return bool(ended(self, conn, status))

    with (
        sessionary.SessionManager(mysql_url) as mine,
        sessionary.SessionManager(mysql_url) as other,
    ):
        ours, theirs = mine.create(id="s"), other.session("s")
        ours.append(Message.user("first"))
        theirs.append(Message.user("warm-up"))  # both stores connected and caught up
        ours.append(Message.user("moved"))  # finds the head moved: two scripts
        with mine.store._begin() as tx:
            mariadb = "mariadb" in str(tx.fetchone("SELECT VERSION()")[0]).lower()
        monkeypatch.setattr(pymysql.connections.Connection, "_execute_command", counted_execute)
        monkeypatch.setattr(pymysql.connections.Connection, "query", counted_query)
        monkeypatch.setattr(pymysql.connections.Connection, "next_result", counted_next)
        monkeypatch.setattr(mysql._Answer, "_ended", counted_end)
        theirs.append(Message.user("theirs"))
        requests.clear()
        answers[0] = 0
        ours.append(Message.user("locks at once"))
        locked = f"CALL {_mysql_sql.ROUTINE_NAMES[1]}(" if mariadb else "FOR UPDATE"
        assert len(requests) == 1 and locked in requests[0]
        assert answers[0] == (2 if mariadb else 7)  # the head it found, and the end
        ours.append(Message.user("finds its own head"))  # locking still, and so learns
        requests.clear()
        answers[0] = 0
        ours.append(Message.user("after its own head"))
        assert len(requests) == 1 and "FOR UPDATE" not in requests[0]
        assert answers[0] == (1 if mariadb else 4)
        if mariadb:
            assert requests[0].startswith("CALL sessionary_append_after_seen(")
        requests.clear()
        answers[0] = 0
        ours.append_all([Message.user("two after"), Message.user("its own head")])
        assert len(requests) == 1 and "FOR UPDATE" not in requests[0]
        assert answers[0] == (1 if mariadb else 4)
        if mariadb:
            assert requests[0].startswith("BEGIN NOT ATOMIC ")
        texts = [m.text for m in ours.history()]
    assert texts == [
        "first", "warm-up", "moved", "theirs", "locks at once", "finds its own head",
        "after its own head", "two after", "its own head",
    ]  # fmt: skip


def test_mysql_a_version_4_schema_gets_the_append_procedures(mysql_url: str) -> None:
    # Version 4 had no stored procedures, and its stores run the scripts. Upgraded, a
    # store CALLs them for one-message appends (on MariaDB), and eight writers on one
    # session lose, repeat and fork nothing.
    routines = (
        "SELECT count(*) FROM information_schema.routines WHERE routine_schema = DATABASE() "
        f"AND routine_name IN {_mysql_sql.ROUTINE_NAMES}"
    )
    with sessionary.SessionManager(mysql_url) as old:
        store: Any = old.store
        store._dialect.migrations = store._dialect.migrations[:4]  # this instance only
        old.create(id="s").append(Message.user("before", id="m0"))
        assert _count(old, routines) == 0
        assert store._driver._routines is False
    with sessionary.SessionManager(mysql_url) as new:
        with new.store._begin() as tx:
            mariadb = "mariadb" in str(tx.fetchone("SELECT VERSION()")[0]).lower()
        assert _count(new, routines) == 2
        assert new.store._driver._routines is mariadb
    written: list[str] = []

    def write(n: int, start: threading.Barrier) -> None:
        with sessionary.SessionManager(mysql_url) as manager:
            session = manager.session("s")
            start.wait(timeout=30)
            for k in range(25):
                written.append(session.append(Message.user(f"w{n} {k}", id=f"w{n}-{k}")).id)

    assert _at_once(8, write) == []
    with sessionary.SessionManager(mysql_url) as after:
        path = [m.id for m in after.session("s").history()]
        info = after.get("s")
        assert info is not None and info.message_count == len(path) == 1 + 8 * 25
    assert path[0] == "m0" and sorted(path[1:]) == sorted(written)
    for n in range(8):  # each writer's messages in its own order
        mine = [i for i in path if i.startswith(f"w{n}-")]
        assert mine == [f"w{n}-{k}" for k in range(25)]


async def test_mysql_an_append_cancelled_in_a_search_catch_up_ends_cancelled(
    mysql_url: str,
) -> None:
    # A new store catches the search index up before its first append. An append
    # cancelled there must end cancelled (wait_for's TimeoutError), not as the
    # connection error of giving the index lock back on the connection the
    # cancellation closed (the server released the lock with that connection).
    # The store's own call runs on to its end (see stores/_home_loop.py): the
    # cancelled message is then stored whole, or not at all, and the next append
    # works either way.
    async with sessionary.AsyncSessionManager(mysql_url) as first:
        queued = await (await first.create(id="s")).append(Message.user("pelican"))
    blocker = pymysql.connect(**connect_options(mysql_url, 5, "database"))
    try:
        blocker.begin()
        with blocker.cursor() as cursor:  # the catch-up's DELETE of it waits for this lock
            assert cursor.execute("SELECT seq FROM search_pending FOR UPDATE") == 1
        async with sessionary.AsyncSessionManager(mysql_url) as manager:
            session = manager.session("s")
            assert len(await session.history()) == 1  # the store is open and migrated
            cancelled = Message.user("heron")
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(session.append(cancelled), timeout=1)
            blocker.rollback()
            after = await session.append(Message.user("egret"))
        # Closing waited for the cancelled call, wherever it had got to.
        async with sessionary.AsyncSessionManager(mysql_url) as manager:
            stored = [m.id for m in await manager.session("s").history()]
            assert stored[0] == queued.id and after.id in stored
            assert set(stored) <= {queued.id, after.id, cancelled.id}
            assert len(stored) == len(set(stored))
            assert [hit.message_id for hit in await manager.search("pelican")] == [queued.id]
    finally:
        blocker.close()


@pytest.mark.mysql
@pytest.mark.parametrize("lock", ["index", "migrations"])
def test_mysql_named_locks_are_private_to_a_database(
    mysql_url: str, mysql_admin: Any, lock: str
) -> None:
    """`GET_LOCK` names are server-wide: two databases' stores must not wait for each other."""
    dialect = _mysql_sql.MySQLDialect()
    take = dialect.index_lock if lock == "index" else dialect.migration_lock()[1]
    take = take.replace("%s", "0").replace(", 60)", ", 0)")
    ours = mysql_url.rsplit("/", 1)[1].split("?")[0]
    holder, same, other = mysql_admin(ours), mysql_admin(ours), mysql_admin(None)
    try:
        with holder.cursor() as a, same.cursor() as b, other.cursor() as c:
            a.execute(take)
            assert a.fetchone() == (1,)
            b.execute(take)
            assert b.fetchone() == (0,), "the same database's lock must be shared"
            c.execute(take)
            assert c.fetchone() == (1,), "another database's lock must be another lock"
    finally:
        for conn in (holder, same, other):
            conn.close()


def test_a_version_3_postgres_schema_gets_folded_unstemmed_search(postgres_url: str) -> None:
    """Version 3 indexed English stems: `deploy` found "deployment", `naive` missed "Naïve"."""
    with sessionary.SessionManager(postgres_url) as old:
        store: Any = old.store
        store._dialect.migrations = store._dialect.migrations[:3]  # this instance only
        store._dialect.index_text = search_text  # as version 3 wrote messages.text
        old.create(id="kept").append(Message.user("Naïve deployment FAILED"))
        owner = (old.scope, "user", None)
        store.put_document(*owner, "notes", "k", {}, "Café deployed", "user", None)
    with sessionary.SessionManager(postgres_url) as new:
        assert [h.snippet for h in new.search("naive deploym*")] == ["Naïve deployment FAILED"]
        assert new.search("deploy") == [] and len(new.search("failed")) == 1
        hits = new.store.search_documents(*owner, None, parse_query("cafe deployed"), 5)
        assert [h.key for h in hits] == ["k"]
    assert _migrations(postgres_url) == _migration_names(postgres_url)


def _list_all(manager: Any, limit: int) -> list[str]:
    """Every session's id, page by page, as `list` ranks them."""
    ids: list[str] = []
    cursor = None
    while True:
        page = manager.list(limit=limit, cursor=cursor)
        ids += [info.id for info in page.items]
        if page.next_cursor is None:
            return ids
        cursor = page.next_cursor


def test_a_version_4_postgres_schema_lists_sessions_by_activity_after_the_upgrade(
    postgres_url: str,
) -> None:
    """Version 5 ranks sessions by the second of their last activity, then to the µs."""
    with sessionary.SessionManager(postgres_url) as old:
        store: Any = old.store
        store._dialect.migrations = store._dialect.migrations[:4]  # this instance only
        store._dialect.activity_bucket = None
        for n in range(7):
            old.create(id=f"s{n}").append(Message.user(f"before the upgrade {n}"))
        # Ties to the microsecond, seconds apart, and within one second, in no id order.
        times = [5_000_000, 7_999_999, 7_000_001, 7_000_001, 7_000_001, 9_000_000, 7_500_000]
        with store._begin() as tx:
            for n, at in enumerate(times):
                tx.execute("UPDATE sessions SET updated_us = %s WHERE id = %s", (at, f"s{n}"))
    with sessionary.SessionManager(postgres_url) as new:
        expected = sorted(range(7), key=lambda n: (times[n], f"s{n}"), reverse=True)
        for limit in (1, 2, 3, 7):
            assert _list_all(new, limit) == [f"s{n}" for n in expected]
        new.session("s0").append(Message.assistant("after it"))  # s0 is the newest now
        assert _list_all(new, 2)[0] == "s0"
        assert [m.text for m in new.session("s0").history()] == [
            "before the upgrade 0",
            "after it",
        ]
    assert _migrations(postgres_url) == _migration_names(postgres_url)


def test_an_append_changes_no_column_an_index_of_sessions_holds(postgres_url: str) -> None:
    # So that its UPDATE of the session's row is heap-only (HOT): no new index entries,
    # however many appends one session takes.
    with sessionary.SessionManager(postgres_url) as manager:
        store: Any = manager.store
        manager.create(id="s").append(Message.user("hello"))
        with store._begin() as tx:
            indexed = tx.fetchall(
                "SELECT DISTINCT a.attname FROM pg_index AS i JOIN pg_attribute AS a "
                "ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) "
                "WHERE i.indrelid = 'sessions'::regclass"
            )
    changed = {"head_id", "head_depth", "message_count", "updated_us"}
    assert {"tenant", "user_id", "id", "active_s"} <= {row[0] for row in indexed}
    assert not changed & {row[0] for row in indexed}
