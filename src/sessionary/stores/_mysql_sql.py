"""MySQL's and MariaDB's SQL: the schema as migrations, and full-text search.

Tables are InnoDB, `utf8mb4` with the binary collation `utf8mb4_bin` (ids compare
byte for byte, as everywhere else).

Migrations: MySQL commits DDL implicitly, so a migration cannot be one transaction.
Instead every migration runs under a named lock (`GET_LOCK`, one per database: one
migrating client at a time) and every statement is idempotent (`CREATE TABLE IF NOT
EXISTS`), so a migration interrupted half-way is simply completed by the next client.

Search: InnoDB's FULLTEXT parser ignores words shorter than `innodb_ft_min_token_size`
(3 by default, a server setting) and words on its stopword list, and folds case by
collation. To search every word the same way on any server, `messages.text` holds each
word as a token of its own making: `s_` + the word case- and accent-folded (as the
in-memory store folds it). `_` is a word character to InnoDB and never part of a word of
the query language, so tokens cannot collide with anything, are never too short, and
are not stopwords. Queries are rendered to `MATCH ... AGAINST (... IN BOOLEAN MODE)`
from the parsed `Query` (`+(a b)` per group, `"s_a s_b"` for a phrase, `s_a*` for a
prefix, `-x` per exclusion), bound as a parameter. The index only finds candidates, the
newest first; every one is then checked, ranked and given its snippet in Python on the
message's own text (`stores._textmatch`), so the hits are exactly the in-memory store's
(no stemming; case and accents folded). What differs: words longer than
`innodb_ft_max_token_size` (84) less 2 characters are not indexed and cannot be found.
A phrase over InnoDB's 128 words is searched by its runs of 128 words and checked whole
in Python (see `to_boolean_mode`).

The FULLTEXT index over messages lives in a table of its own, `message_search (seq,
text)`, kept in step in batches (migration 3). InnoDB updates a FULLTEXT index at every
commit that touches its table, which cost an append about a sixth of its rate; now a
trigger on `messages` only queues the seq in `search_pending` (in the writer's own
transaction, so a message is queued exactly when it commits), edits queue it again and
deletes drop its index row. Every search first indexes the whole queue
(`pending_sql`, `index_pending`), so it sees every committed message. The triggers need
the TRIGGER privilege when the schema is created or upgraded.

Appends after the head: `append_sql` and `append_after_sql` are each one script, one
round trip, ending in COMMIT. If the client goes away (killed, or its task cancelled),
the server still runs the script to its end, but every result it then fails to write
raises a network error that also sets `ROW_COUNT()` to -1. So no guard in a script may
read `ROW_COUNT()` or anything else a result write can change: `append_sql` guards on
user variables set by its locking read, `append_after_sql` on the session row as its
own UPDATE left it. A statement that fails stops the script before COMMIT, and the
transaction is rolled back (by the driver, or by the server when the connection goes).
On MariaDB the driver sends each script as one compound statement (`BEGIN NOT ATOMIC`,
see `stores.mysql`): one answer instead of one per statement, and no result written
while the script runs. Every other write is a transaction of single statements whose
COMMIT is sent alone.

Stored procedures (migrations 5 to 7): an append of one message, the usual case, is
also a procedure of the same statements and guards, `sessionary_append_after_seen` and
`sessionary_append_locked`, which the MariaDB driver CALLs instead of sending the script
(`routine_call`). The server parses a compound statement at every call but a procedure
once per connection, and keeps it; the CALL also carries fewer parameters. That took
7-12 % off the server's CPU per append (bench/probe_mysql_stmt.py). A procedure runs to
its end with its client gone as a script does, and writes no result before its COMMIT:
so, unlike a script's, its guards may read `ROW_COUNT()`, which nothing but its own
statements sets. `sessionary_append_after_seen` inserts the message with `VALUES` only if
its UPDATE moved the head (migration 5's `INSERT ... SELECT` re-read the session's row to
know: a join planned at every call, about a sixth of the server's CPU of an append). Both
UPDATE the session's row by its primary key alone (`FORCE INDEX`; else the range
optimizer weighs `sessions_ttl` for `ttl_us IS NULL` at every call, another tenth).
`sessionary_append_locked` keeps what it locked in local variables and answers in one
packed column (`routine_rows`) instead of four, each of which PyMySQL parses a
definition of. Migration 7's `sessionary_append_by_key` replaces it: its UPDATE locks,
checks and moves the head at once, with no locking read before it (see `ROUTINE_NAMES`).
The procedures of earlier migrations stay, for clients of those releases still running
against an upgraded schema. The procedures run
with the caller's rights (`SQL SECURITY INVOKER`) and need the CREATE ROUTINE privilege
when the schema is created or upgraded; a user who may not see them (no EXECUTE) runs
the scripts, as does a store whose CALL the server refuses (`stores.mysql._refused`).
Their parameters are declared `utf8mb4_bin`, the columns' collation: one of the
database's default collation could not be compared with them.

Documents are searched the same way: `documents.search` holds the tokens of a document's
latest text, `documents.text` the text itself for the check and the snippet. A key is
kept as `VARBINARY` (byte order, trailing spaces significant) and found by its SHA-256,
since a 512-character key is too long for a unique index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sessionary.errors import InvalidQuery
from sessionary.model import Message
from sessionary.query import Query, Term, words
from sessionary.records import Document, Expected, Head, Scope
from sessionary.retention import live_sql
from sessionary.stores._sql_common import (
    LINEAR_LIVE,
    Dialect,
    Migration,
    packed_messages,
)
from sessionary.stores._textmatch import fold, pool_size

__all__ = [
    "PHRASE_WORDS",
    "ROUTINE_NAMES",
    "MySQLDialect",
    "routine_call",
    "routine_rows",
    "to_boolean_mode",
]

PHRASE_WORDS = 128
"""The most words InnoDB searches as one phrase (`MAX_PROXIMITY_ITEM` in its source)."""
_TOKEN = "s_"
_ID = "VARCHAR(128) NOT NULL"
_TABLE = "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
_LONGEST = 254
"""The longest token a server can index: `s_` and a word of the largest setting of
`innodb_ft_max_token_size` (252 characters)."""
"""Candidates fetched beyond `limit`, for the few the Python check may drop."""

_V1: tuple[str, ...] = (
    "SET SESSION innodb_ft_enable_stopword = OFF",
    f"""CREATE TABLE IF NOT EXISTS sessions (
        pk BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
        tenant {_ID},
        user_id {_ID},
        id {_ID},
        name TEXT NULL,
        parent_session_id VARCHAR(128) NULL,
        model TEXT NULL,
        source TEXT NULL,
        metadata LONGTEXT NOT NULL,
        created_us BIGINT NOT NULL,
        updated_us BIGINT NOT NULL,
        ended_us BIGINT NULL,
        end_reason TEXT NULL,
        input_tokens BIGINT NOT NULL,
        output_tokens BIGINT NOT NULL,
        cost DOUBLE NOT NULL,
        version BIGINT NOT NULL,
        head_id VARCHAR(128) NULL,
        head_depth INT NOT NULL,
        message_count BIGINT NOT NULL,
        UNIQUE KEY sessions_key (tenant, user_id, id),
        KEY sessions_activity (tenant, user_id, updated_us, id)
    ) {_TABLE}""",
    f"""CREATE TABLE IF NOT EXISTS messages (
        seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
        session_pk BIGINT NOT NULL,
        id {_ID},
        parent_id VARCHAR(128) NULL,
        depth INT NOT NULL,
        role VARCHAR(64) NOT NULL,
        created_us BIGINT NOT NULL,
        data LONGTEXT NOT NULL,
        text LONGTEXT NOT NULL,
        UNIQUE KEY messages_id (session_pk, id),
        KEY messages_depth (session_pk, depth, seq),
        KEY messages_parent (session_pk, parent_id, seq),
        FULLTEXT KEY messages_search (text)
    ) {_TABLE}""",
    f"""CREATE TABLE IF NOT EXISTS states (
        level VARCHAR(16) NOT NULL,
        tenant {_ID},
        user_id {_ID},
        owner {_ID},
        data LONGTEXT NOT NULL,
        version BIGINT NOT NULL,
        PRIMARY KEY (level, tenant, user_id, owner)
    ) {_TABLE}""",
)

_V2: tuple[str, ...] = (
    "SET SESSION innodb_ft_enable_stopword = OFF",
    f"""CREATE TABLE IF NOT EXISTS documents (
        pk BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
        level VARCHAR(16) NOT NULL,
        tenant {_ID},
        user_id {_ID},
        owner {_ID},
        namespace VARCHAR(128) NOT NULL,
        doc_key VARBINARY(2048) NOT NULL,
        key_hash BINARY(32) NOT NULL,
        version BIGINT NOT NULL,
        text LONGTEXT NOT NULL,
        search LONGTEXT NOT NULL,
        UNIQUE KEY documents_key (level, tenant, user_id, owner, namespace, key_hash),
        FULLTEXT KEY documents_search (search)
    ) {_TABLE}""",
    f"""CREATE TABLE IF NOT EXISTS document_versions (
        document_pk BIGINT NOT NULL,
        version BIGINT NOT NULL,
        body LONGTEXT NOT NULL,
        text LONGTEXT NOT NULL,
        author VARCHAR(128) NOT NULL,
        updated_us BIGINT NOT NULL,
        PRIMARY KEY (document_pk, version)
    ) {_TABLE}""",
)


_PENDING = (
    "INSERT INTO search_pending (seq, n) VALUES (NEW.seq, 1) ON DUPLICATE KEY UPDATE n = n + 1"
)
"""Queue an edited message again. (A new one is queued with a plain INSERT: its seq is
new, and concurrent `ON DUPLICATE KEY` inserts at the end of the key deadlock.)"""
_V3: tuple[str, ...] = (
    "SET SESSION innodb_ft_enable_stopword = OFF",
    f"""CREATE TABLE IF NOT EXISTS message_search (
        seq BIGINT NOT NULL PRIMARY KEY,
        text LONGTEXT NOT NULL,
        FULLTEXT KEY message_search_text (text)
    ) {_TABLE}""",
    f"""CREATE TABLE IF NOT EXISTS search_pending (
        seq BIGINT NOT NULL PRIMARY KEY,
        n BIGINT NOT NULL
    ) {_TABLE}""",
    # Dropped first (MySQL before 8.0.29 has no CREATE TRIGGER IF NOT EXISTS); a message
    # written between the two is still indexed, by the copy below.
    "DROP TRIGGER IF EXISTS messages_search_insert",
    "CREATE TRIGGER messages_search_insert AFTER INSERT ON messages FOR EACH ROW "
    "INSERT INTO search_pending (seq, n) VALUES (NEW.seq, 1)",
    "DROP TRIGGER IF EXISTS messages_search_update",
    "CREATE TRIGGER messages_search_update AFTER UPDATE ON messages FOR EACH ROW "
    f"BEGIN IF NOT (NEW.text <=> OLD.text) THEN {_PENDING}; END IF; END",
    "DROP TRIGGER IF EXISTS messages_search_delete",
    "CREATE TRIGGER messages_search_delete AFTER DELETE ON messages FOR EACH ROW "
    "BEGIN DELETE FROM message_search WHERE seq = OLD.seq; "
    "DELETE FROM search_pending WHERE seq = OLD.seq; END",
    "INSERT INTO message_search (seq, text) SELECT seq, text FROM messages WHERE text != '' "
    "ON DUPLICATE KEY UPDATE text = VALUES(text)",
    # DROP INDEX has no IF EXISTS on MySQL: drop it only where it is still there.
    "SET @sx_drop = IF(EXISTS(SELECT 1 FROM information_schema.statistics "
    "WHERE table_schema = DATABASE() AND table_name = 'messages' "
    "AND index_name = 'messages_search'), 'ALTER TABLE messages DROP INDEX messages_search', "
    "'DO 0')",
    "PREPARE sx_drop FROM @sx_drop",
    "EXECUTE sx_drop",
    "DEALLOCATE PREPARE sx_drop",
)


def _lock_name(purpose: str) -> str:
    """The SQL of a named lock's name for `purpose`, private to the connection's database.

    `GET_LOCK` names are global to the server, so a bare name would make stores in
    separate databases wait for each other. The database's name is hashed to keep the
    lock name within the server's 64 characters.
    """
    return f"CONCAT('sessionary {purpose} ', SHA1(COALESCE(DATABASE(), '')))"


def _if_missing(kind: str, name: str, ddl: str) -> tuple[str, ...]:
    """Run `ddl` on `sessions` only where its column or index `name` is missing yet.

    MySQL has no `ADD COLUMN IF NOT EXISTS` (MariaDB has), and its DDL commits at once,
    so every statement of a migration must be safe to run again.
    """
    table = "columns" if kind == "column" else "statistics"
    field = "column_name" if kind == "column" else "index_name"
    return (
        f"SET @sx_ddl = IF(EXISTS(SELECT 1 FROM information_schema.{table} "
        f"WHERE table_schema = DATABASE() AND table_name = 'sessions' AND {field} = '{name}'), "
        f"'DO 0', '{ddl}')",
        "PREPARE sx_ddl FROM @sx_ddl",
        "EXECUTE sx_ddl",
        "DEALLOCATE PREPARE sx_ddl",
    )


_V4: tuple[str, ...] = (
    *_if_missing("column", "ttl_us", "ALTER TABLE sessions ADD COLUMN ttl_us BIGINT NULL"),
    *_if_missing(
        "column",
        "ttl_sliding",
        "ALTER TABLE sessions ADD COLUMN ttl_sliding TINYINT NOT NULL DEFAULT 1",
    ),
    *_if_missing("index", "sessions_ttl", "CREATE INDEX sessions_ttl ON sessions (ttl_us)"),
)


_TEXT = "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
"""A procedure parameter's character set and collation: those of the columns it meets."""
_ROUTINE_ID = f"VARCHAR(128) {_TEXT}"
_ROUTINE_HEAD = """MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
START TRANSACTION;"""
_AFTER_PARAMETERS = f"""(p_id {_ROUTINE_ID}, p_depth INT,
    p_now BIGINT, p_pk BIGINT, p_seen {_ROUTINE_ID}, p_seen_depth INT,
    p_role VARCHAR(64) {_TEXT}, p_created BIGINT, p_data LONGTEXT {_TEXT},
    p_text LONGTEXT {_TEXT})"""
"""The parameters of the procedures that append after the head a store saw."""
_LOCKED_PARAMETERS = f"""(p_any BOOLEAN, p_expected {_ROUTINE_ID},
    p_tenant {_ROUTINE_ID}, p_user {_ROUTINE_ID}, p_session {_ROUTINE_ID}, p_id {_ROUTINE_ID},
    p_role VARCHAR(64) {_TEXT}, p_created BIGINT, p_data LONGTEXT {_TEXT},
    p_text LONGTEXT {_TEXT}, p_now BIGINT)"""
"""The parameters of the procedures that lock the session's row, check it and append."""
_V5: tuple[str, ...] = (
    "DROP PROCEDURE IF EXISTS sessionary_append_after",
    f"""CREATE PROCEDURE sessionary_append_after{_AFTER_PARAMETERS} {_ROUTINE_HEAD}
UPDATE sessions SET head_id = p_id, head_depth = p_depth, message_count = message_count + 1,
    updated_us = p_now WHERE pk = p_pk AND head_id <=> p_seen AND head_depth = p_seen_depth
    AND ttl_us IS NULL;
INSERT INTO messages (session_pk, id, parent_id, depth, role, created_us, data, text)
    SELECT p_pk, p_id, p_seen, p_depth, p_role, p_created, p_data, p_text
    FROM sessions WHERE pk = p_pk AND head_id = p_id;
COMMIT;
END""",
    "DROP PROCEDURE IF EXISTS sessionary_append",
    f"""CREATE PROCEDURE sessionary_append{_LOCKED_PARAMETERS} {_ROUTINE_HEAD}
SET @sx_pk = NULL, @sx_head = NULL, @sx_depth = NULL, @sx_ok = NULL;
SELECT pk, head_id, head_depth, p_any OR head_id <=> p_expected
    INTO @sx_pk, @sx_head, @sx_depth, @sx_ok
    FROM sessions WHERE tenant = p_tenant AND user_id = p_user AND id = p_session
    AND ttl_us IS NULL FOR UPDATE;
INSERT INTO messages (session_pk, id, parent_id, depth, role, created_us, data, text)
    SELECT @sx_pk, p_id, @sx_head, @sx_depth + 1, p_role, p_created, p_data, p_text
    FROM DUAL WHERE @sx_ok;
UPDATE sessions SET head_id = p_id, head_depth = @sx_depth + 1,
    message_count = message_count + 1, updated_us = p_now WHERE pk = @sx_pk AND @sx_ok;
COMMIT;
SELECT @sx_head, @sx_ok, @sx_pk, @sx_depth FROM DUAL WHERE @sx_pk IS NOT NULL;
END""",
)
_V6: tuple[str, ...] = (
    "DROP PROCEDURE IF EXISTS sessionary_append_after_seen",
    f"""CREATE PROCEDURE sessionary_append_after_seen{_AFTER_PARAMETERS} {_ROUTINE_HEAD}
UPDATE sessions FORCE INDEX (PRIMARY) SET head_id = p_id, head_depth = p_depth,
    message_count = message_count + 1, updated_us = p_now
    WHERE pk = p_pk AND head_id <=> p_seen AND head_depth = p_seen_depth AND ttl_us IS NULL;
IF ROW_COUNT() > 0 THEN
    INSERT INTO messages (session_pk, id, parent_id, depth, role, created_us, data, text)
        VALUES (p_pk, p_id, p_seen, p_depth, p_role, p_created, p_data, p_text);
END IF;
COMMIT;
END""",
    "DROP PROCEDURE IF EXISTS sessionary_append_locked",
    f"""CREATE PROCEDURE sessionary_append_locked{_LOCKED_PARAMETERS}
MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
DECLARE v_pk BIGINT DEFAULT NULL;
DECLARE v_head {_ROUTINE_ID} DEFAULT NULL;
DECLARE v_depth INT DEFAULT NULL;
DECLARE v_ok BOOLEAN DEFAULT FALSE;
DECLARE CONTINUE HANDLER FOR NOT FOUND BEGIN END;
START TRANSACTION;
SELECT pk, head_id, head_depth, p_any OR head_id <=> p_expected
    INTO v_pk, v_head, v_depth, v_ok
    FROM sessions WHERE tenant = p_tenant AND user_id = p_user AND id = p_session
    AND ttl_us IS NULL FOR UPDATE;
IF v_ok THEN
    INSERT INTO messages (session_pk, id, parent_id, depth, role, created_us, data, text)
        VALUES (v_pk, p_id, v_head, v_depth + 1, p_role, p_created, p_data, p_text);
    UPDATE sessions FORCE INDEX (PRIMARY) SET head_id = p_id, head_depth = v_depth + 1,
        message_count = message_count + 1, updated_us = p_now WHERE pk = v_pk;
END IF;
COMMIT;
IF v_pk IS NOT NULL THEN
    SELECT concat_ws(' ', v_ok, v_pk, v_depth, v_head);
END IF;
END""",
)
_V7: tuple[str, ...] = (
    "DROP PROCEDURE IF EXISTS sessionary_append_by_key",
    f"""CREATE PROCEDURE sessionary_append_by_key{_LOCKED_PARAMETERS}
MODIFIES SQL DATA SQL SECURITY INVOKER
BEGIN
DECLARE v_ok BOOLEAN DEFAULT FALSE;
START TRANSACTION;
UPDATE sessions FORCE INDEX (sessions_key)
    SET head_id = IF((@sx_head := head_id) IS NULL, p_id, p_id),
    head_depth = (@sx_depth := head_depth) + 1, message_count = message_count + 1,
    updated_us = p_now + LEAST(0, @sx_pk := pk)
    WHERE tenant = p_tenant AND user_id = p_user AND id = p_session AND ttl_us IS NULL
    AND (p_any OR head_id <=> p_expected);
SET v_ok = ROW_COUNT() > 0;
IF v_ok THEN
    INSERT INTO messages (session_pk, id, parent_id, depth, role, created_us, data, text)
        VALUES (@sx_pk, p_id, @sx_head, @sx_depth + 1, p_role, p_created, p_data, p_text);
END IF;
COMMIT;
IF v_ok THEN
    SELECT concat_ws(' ', 1, @sx_pk, @sx_depth, @sx_head);
END IF;
END""",
)
ROUTINE_NAMES = ("sessionary_append_after_seen", "sessionary_append_by_key")
"""The stored procedures one-message appends CALL (migrations 6 and 7, see `routine_call`).

`sessionary_append_by_key` (migration 7) does what migration 6's
`sessionary_append_locked` does, without its locking read: the UPDATE that moves the head
finds the session by its key, locks its row, checks the expected head, and keeps the
row's pk, head and depth as it found them in user variables (`@v := column` in its SET
clause, evaluated for the one row it changes, before the head moves), which the INSERT
and the answer then read. On MariaDB a `SELECT ... FOR UPDATE` is planned by the join
optimizer at every call (a const table read while planning), about a sixth of the
server's CPU of an append on a session eight writers share (bench/probe_mysql_locked.py).
It answers only when it appended, with nothing when the session is missing or its head
is elsewhere: the store's general path sorts those out, as it did `ok = 0`. Its UPDATE
finds no row for a missing session without a warning, so it needs no NOT FOUND handler
(`sessionary_append_locked`'s `SELECT ... INTO` does: warning 1329 would reach aiomysql,
which fetches it, one more round trip, and raises it as a Python warning). MySQL 8
deprecates `:=` in expressions but still runs it; its stores send the scripts anyway
(`stores.mysql._calls_routines`). `sessionary_append_locked` stays, for clients of the
release that CALLs it.
(No SQL comment in a routine's body: the `mysql` client strips them from a script run by
hand, and the routine would then differ from the one a store creates.)"""
_HEAD_AND_DOCUMENT = f"""
SELECT concat_ws(%s,
    concat_ws(' ', m.id, m.role, m.created_us, coalesce(m.parent_id, ''), m.data),
    IF(m.depth = s.head_depth, d.version, NULL))
FROM sessions AS s FORCE INDEX (sessions_key)
LEFT JOIN documents AS d ON d.level = 'session' AND d.tenant = s.tenant
    AND d.user_id = s.user_id AND d.owner = s.id AND d.namespace = %s AND d.key_hash = %s
    AND d.version > 0
JOIN messages AS m FORCE INDEX (messages_depth) ON m.session_pk = s.pk
    AND m.depth BETWEEN greatest(0, s.head_depth - %s + 1) AND s.head_depth
WHERE {LINEAR_LIVE}
ORDER BY m.depth"""
"""`get_path_and_document`'s read on MariaDB and MySQL: one query block, no UNION.

The session's row and the document's are constants to the optimizer (each found by a
unique key from constants), read once while it plans; the messages are then one range
of `messages_depth`, already in depth order (no sort). On MariaDB every table and query
block a statement names costs parse and planning time on every read, far more than
reading 20 rows: the `UNION ALL` of `HEAD_AND_DOCUMENT_SQL` opened and planned the
session's row twice, in two query blocks, and cost the server about 30 % more than one
block. So only the document's latest version number is read here (its version row would
be a fourth table, about 15 % of the server's time of every read, for the few sessions
that have the document): the store reads that version (immutable once written) in a
second statement when there is one. The index hints spare the range optimizer its
estimates over the other indexes, which can only be worse.

One column per row, a message packed as `HEAD_AND_DOCUMENT_SQL` packs it (PyMySQL pays
per column of every row); the head's row continues, after a newline, with the
document's version, if any. A message holds no newline (its id, role and time hold none,
and its JSON body escapes it), so the first one ends the message."""


class MySQLDialect(Dialect):
    """MySQL 8 or MariaDB 10.6 or later (recursive CTEs, InnoDB FULLTEXT)."""

    name = "mysql"
    migrations: tuple[Migration, ...] = (
        (1, "sessions, messages with a FULLTEXT index, and state", _V1),
        (2, "versioned documents with a FULLTEXT index", _V2),
        (3, "message search in a table of its own, caught up in batches", _V3),
        (4, "a TTL per session (retention), sliding or fixed", _V4),
        (5, "appends of one message as stored procedures, parsed once per connection", _V5),
        (6, "append procedures guarded by the head's UPDATE, answering in one column", _V6),
        (7, "an append procedure that locks the session by its UPDATE, not a locking read", _V7),
    )
    appends_alone = True

    def head_and_document_read(
        self, steps: int, live: Sequence[Any], namespace: str, digest: bytes
    ) -> tuple[str, tuple[Any, ...]]:
        """`_HEAD_AND_DOCUMENT` and its parameters (an empty session has no rows here)."""
        return _HEAD_AND_DOCUMENT, ("\n", namespace, digest, steps, *live)

    def head_and_document(
        self, rows: list[tuple[Any, ...]], namespace: str, key: str
    ) -> tuple[list[Message], Document | int | None]:
        """Rows of one packed message each, in depth order; the head's may end in a version."""
        head, _, version = rows[-1][0].partition("\n")
        return packed_messages([*(row[0] for row in rows[:-1]), head]), (
            int(version) if version else None
        )

    pending_batch = 500
    pending_sql = f"SELECT seq, n FROM search_pending ORDER BY seq LIMIT {pending_batch}"
    index_lock = f"SELECT GET_LOCK({_lock_name('index')}, %s)"
    index_unlock = f"SELECT RELEASE_LOCK({_lock_name('index')})"
    share_lock = " LOCK IN SHARE MODE"
    """Understood by MySQL 8 and MariaDB alike (MariaDB has no `FOR SHARE`)."""

    def append_sql(self, count: int) -> str:
        """One script, one round trip: a transaction that locks, checks, inserts, moves.

        User variables carry the locked row from statement to statement (they are reset
        first: a `SELECT ... INTO` that finds no row leaves them as they were). A failing
        statement stops the script with its transaction open; the driver rolls it back.
        The rows are a `UNION ALL` of one-row selects (no derived table, so no temporary
        table), each inserting only if the check passed.
        """
        first = "SELECT @sx_pk, %s, @sx_head, @sx_depth + 1, %s, %s, %s, %s FROM DUAL WHERE @sx_ok"
        rest = [
            f"SELECT @sx_pk, %s, %s, @sx_depth + {n}, %s, %s, %s, %s FROM DUAL WHERE @sx_ok"
            for n in range(2, count + 1)
        ]
        return f"""SET @sx_pk = NULL, @sx_head = NULL, @sx_depth = NULL, @sx_ok = NULL;
START TRANSACTION;
SELECT pk, head_id, head_depth, %s OR head_id <=> %s INTO @sx_pk, @sx_head, @sx_depth, @sx_ok
    FROM sessions WHERE tenant = %s AND user_id = %s AND id = %s AND ttl_us IS NULL
    FOR UPDATE;
INSERT INTO messages (session_pk, id, parent_id, depth, role, created_us, data, text)
    {" UNION ALL ".join([first, *rest])};
UPDATE sessions SET head_id = %s, head_depth = @sx_depth + {count},
    message_count = message_count + {count}, updated_us = %s WHERE pk = @sx_pk AND @sx_ok;
COMMIT;
SELECT @sx_head, @sx_ok, @sx_pk, @sx_depth FROM DUAL WHERE @sx_pk IS NOT NULL"""

    def append_params(
        self, key: Sequence[Any], expected: Expected, rows: Sequence[Sequence[Any]], now: int
    ) -> list[Any]:
        """The parameters of `append_sql`: the check, the key, the rows, the new head."""
        params: list[Any] = [expected is Head.ANY, None if expected is Head.ANY else expected]
        params += key
        parent = None
        for row in rows:
            params += [row[1], *row[4:]] if parent is None else [row[1], parent, *row[4:]]
            parent = row[1]
        return [*params, parent, now]

    def append_after_sql(self, count: int) -> str:
        """Move the head if it is still where the store saw it, then insert the rows.

        Each row is selected from the session's row as this transaction left it: only
        where the head is now the chain's last message. So the rows go in exactly when
        the UPDATE moved the head (else that message is stored already, and the INSERT
        fails as a duplicate key, whole). The guard must not be `ROW_COUNT()`: once the
        client has gone, the server still runs the script, but a failed write of the
        UPDATE's result resets `ROW_COUNT()` to -1, and COMMIT would commit the head
        move without the messages. A table row is all the guard may read.
        """
        row = "SELECT %s, %s, %s, %s, %s, %s, %s, %s FROM sessions WHERE pk = %s AND head_id = %s"
        return f"""START TRANSACTION;
UPDATE sessions SET head_id = %s, head_depth = %s, message_count = message_count + %s,
    updated_us = %s WHERE pk = %s AND head_id <=> %s AND head_depth = %s AND ttl_us IS NULL;
INSERT INTO messages (session_pk, id, parent_id, depth, role, created_us, data, text)
    {" UNION ALL ".join([row] * count)};
COMMIT"""

    def append_after_params(
        self, seen: tuple[int, str | None, int], rows: Sequence[Sequence[Any]], now: int
    ) -> list[Any]:
        """The parameters of `append_after_sql`: each row's are followed by its guard's."""
        last = rows[-1]
        params: list[Any] = [last[1], last[3], len(rows), now, *seen]
        for row in rows:
            params += [*row, seen[0], last[1]]
        return params

    migrations_table = (
        "CREATE TABLE IF NOT EXISTS sessionary_migrations (version INT NOT NULL PRIMARY KEY, "
        "name VARCHAR(200) NOT NULL, "
        f"applied_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) {_TABLE}"
    )

    def migration_lock(self) -> tuple[str, ...]:
        """Take the named migration lock (DDL cannot run in a transaction).

        Notes ("table already exists" from an idempotent `IF NOT EXISTS`) are silenced
        on this connection, which only migrates.
        """
        return ("SET SESSION sql_notes = 0", f"SELECT GET_LOCK({_lock_name('migrations')}, 60)")

    def migration_unlock(self) -> tuple[str, ...]:
        """Release the named migration lock."""
        return (f"SELECT RELEASE_LOCK({_lock_name('migrations')})",)

    def insert_ignore(self, table: str, columns: Sequence[str]) -> str:
        """An INSERT of one row that does nothing if the row's key is taken.

        `ON DUPLICATE KEY UPDATE` (not `INSERT IGNORE`) so that a taken key is locked
        exclusively at once, and no other error is turned into a warning.
        """
        marks = ", ".join(["%s"] * len(columns))
        return (
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks}) "
            f"ON DUPLICATE KEY UPDATE {columns[0]} = {columns[0]}"
        )

    def index_text(self, text: str) -> str:
        """The tokens `messages.text` holds for a message's text (see the module docstring).

        A token longer than any server indexes (`_LONGEST`) is left out: it could never
        be found, and a long one (a base64 blob in a tool result) would double what the
        INSERT carries, which must fit in `max_allowed_packet`.
        """
        if text.isascii():  # folding ASCII is lowering it, and leaves each word one word
            found = words(text.lower())
            longest = _LONGEST - len(_TOKEN)
            if not found or max(map(len, found)) <= longest:  # the usual case, joined in C
                return _TOKEN + f" {_TOKEN}".join(found) if found else ""
            return " ".join([_TOKEN + w for w in found if len(w) <= longest])
        return " ".join([t for t in map(_token, words(text)) if len(t) <= _LONGEST])

    def search_sql(
        self,
        scope: Scope,
        query: Query,
        limit: int,
        session_id: str | None,
        role: str | None,
        now_us: int,
    ) -> tuple[str, list[Any]]:
        """The newest candidates, with the message bodies to check them on."""
        against = to_boolean_mode(query)
        match = "MATCH (x.text) AGAINST (%s IN BOOLEAN MODE)"
        params: list[Any] = [against, scope.tenant, scope.user, now_us]
        filters = f" AND {live_sql('%s', 's.')}"
        if session_id is not None:
            filters += " AND s.id = %s"
            params.append(session_id)
        if role is not None:
            filters += " AND m.role = %s"
            params.append(role)
        sql = (
            "SELECT s.id, m.id, m.role, m.created_us, m.data "
            "FROM message_search AS x JOIN messages AS m ON m.seq = x.seq "
            "JOIN sessions AS s ON s.pk = m.session_pk "
            f"WHERE {match} AND s.tenant = %s AND s.user_id = %s{filters} "
            "ORDER BY m.seq DESC LIMIT %s"
        )
        return sql, [*params, pool_size(limit)]

    def index_pending(self, pending: Sequence[Sequence[Any]]) -> list[tuple[str, list[Any]]]:
        """The statements that index a batch of pending messages (rows of `pending_sql`).

        The batch is read as it stands, the messages' current text replaces their index
        rows, and a pending row goes only if nobody queued it again since (its count `n`
        is unchanged). Index rows are written in seq order, then the pending ones, as a
        delete's trigger writes them. Catch-ups take turns under a named lock
        (`index_lock`), since two writing the same index rows could deadlock.
        """
        seqs = [row[0] for row in pending]
        marks = ", ".join(["%s"] * len(seqs))
        pairs = ", ".join(["(%s, %s)"] * len(pending))
        return [
            (f"DELETE FROM message_search WHERE seq IN ({marks})", seqs),
            (
                "INSERT INTO message_search (seq, text) SELECT seq, text FROM messages "
                f"WHERE seq IN ({marks}) AND text != '' "
                "ON DUPLICATE KEY UPDATE text = VALUES(text)",
                seqs,
            ),
            (
                f"DELETE FROM search_pending WHERE seq IN ({marks}) AND (seq, n) IN ({pairs})",
                [*seqs, *(value for row in pending for value in row)],
            ),
        ]

    def key_param(self, key: str) -> bytes:
        """A key as `doc_key` holds it: UTF-8 bytes, compared and sorted byte by byte.

        (The `_bin` collations ignore trailing spaces; keys may end with one.)
        """
        return key.encode()

    def document_search_sql(
        self, owner: Sequence[str], namespace: str | None, query: Query, limit: int
    ) -> tuple[str, list[Any]]:
        """Candidate latest versions, with their text to check them on."""
        against = to_boolean_mode(query)
        match = "MATCH (d.search) AGAINST (%s IN BOOLEAN MODE)"
        where = "" if namespace is None else " AND d.namespace = %s"
        sql = (
            "SELECT d.namespace, d.doc_key, d.version, d.text "
            f"FROM documents AS d WHERE {match} AND d.level = %s AND d.tenant = %s "
            f"AND d.user_id = %s AND d.owner = %s AND d.version > 0{where} "
            "ORDER BY d.namespace, d.doc_key LIMIT %s"
        )
        params: list[Any] = [against, *owner]
        if namespace is not None:
            params.append(namespace)
        return sql, [*params, pool_size(limit)]

    def key_value(self, stored: Any) -> str:
        """A document key as `doc_key` returns it (bytes), as text."""
        return bytes(stored).decode()


_ROUTINES: dict[str, tuple[str, tuple[int, ...]]] = {
    MySQLDialect().append_after_sql(1): (
        "sessionary_append_after_seen",
        (0, 1, 3, 4, 5, 6, 11, 12, 13, 14),
    ),
    MySQLDialect().append_sql(1): (
        "sessionary_append_by_key",
        (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11),
    ),
}
"""Per one-message append script, its procedure's name and the script's parameters the
procedure takes, by position (see `routine_call`)."""


def routine_call(sql: str, params: Sequence[Any]) -> tuple[str, list[Any]] | None:
    """The stored procedure that does what a one-message append script does, and its values.

    The procedures (migrations 6 and 7) hold the scripts' statements, with the same guards: the
    server parses a procedure once per connection and keeps it, where a script is
    parsed at every call, and the CALL carries fewer parameters. None for any other
    statement, which runs as it is.
    """
    found = _ROUTINES.get(sql)
    if found is None:
        return None
    name, picked = found
    return name, [params[i] for i in picked]


def routine_rows(rows: Sequence[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """The rows `append_sql` ends with, from `sessionary_append_by_key`'s one column.

    The procedure packs its answer (whether it appended, the session's pk, and the
    head's depth and id as it found them) into one text column, since PyMySQL parses
    every column's definition in Python, most of a client's time of reading the
    answer. The head is the rest of the text after the third space; a session without
    messages has none (NULL, which `concat_ws` leaves out). (`sessionary_append_locked`,
    migration 6's, answered so too, with `0` first where it did not append.)
    """
    out = []
    for (packed,) in rows:
        ok, pk, depth, *head = packed.split(" ", 3)
        out.append((head[0] if head else None, int(ok), int(pk), int(depth)))
    return out


def to_boolean_mode(query: Query) -> str:
    """Render a query for `MATCH ... AGAINST (... IN BOOLEAN MODE)`.

    InnoDB refuses a phrase of more than `PHRASE_WORDS` words ("Too many words in a FTS
    phrase"). A longer phrase is searched as all of its runs of that many words, each a
    phrase of its own (`(+"run 1" +"run 2")`): every message holding the phrase holds
    them, and the check in Python drops the few that hold them apart. A longer phrase
    to exclude is left to that check alone, since excluding its runs could drop a
    message that holds them apart.

    InnoDB also answers wrongly where one query holds both a phrase and a prefix: it
    misses messages that match (`+("a b") +(c*)` finds nothing where `+"a b" +c*` finds
    them), or keeps ones an excluded prefix should drop; a random check against MariaDB
    10.11 (queries of up to three groups of words, phrases and prefixes) missed matches
    in about a quarter of such queries, and in none of those with only one of the two.
    So in a query with a prefix anywhere, every phrase is searched as all of its words
    (`(+s_a +s_b)`), and phrases to exclude are left to the check in Python: InnoDB then
    finds a few messages too many, never too few, and the check drops them.

    Examples:
        >>> from sessionary.query import parse_query
        >>> to_boolean_mode(parse_query('pet Cat OR dog -"hot dog"'))
        '+(s_pet) +(s_cat s_dog) -"s_hot s_dog"'
        >>> to_boolean_mode(parse_query('pet Cat OR dog* -"hot dog"'))
        '+(s_pet) +(s_cat s_dog*)'
        >>> to_boolean_mode(parse_query('under_score redis*'))
        '+((+s_under +s_score)) +(s_redis*)'
        >>> long = to_boolean_mode(parse_query(".".join(["x"] * 130)))
        >>> long.startswith('+((+"s_x s_x s_x'), long.endswith('s_x" +"s_x s_x"))')
        (True, True)
    """
    loose = any(term.prefix for group in query.groups for term in group) or any(
        term.prefix for term in query.excluded
    )
    positive = " ".join(
        "+(" + " ".join(_term(term, loose) for term in group) + ")" for group in query.groups
    )
    excluded = "".join(
        f" -{_term(term)}"
        for term in query.excluded
        if len(found := words(term.text)) == 1 or (not loose and len(found) <= PHRASE_WORDS)
    )
    return positive + excluded


def _term(term: Term, loose: bool = False) -> str:
    """A term as InnoDB reads it; with `loose`, a phrase as all of its words (see above)."""
    # Re-split the text so that a hand-built Term cannot carry an operator or a quote.
    tokens = list(map(_token, words(term.text)))
    if not tokens:
        raise InvalidQuery(f"the search term {term.text!r} holds no word")
    if len(tokens) > 1 and loose:
        return "(" + " ".join("+" + token for token in tokens) + ")"
    if len(tokens) > PHRASE_WORDS:
        runs = [tokens[i : i + PHRASE_WORDS] for i in range(0, len(tokens), PHRASE_WORDS)]
        return "(" + " ".join('+"' + " ".join(run) + '"' for run in runs) + ")"
    if len(tokens) > 1:
        return '"' + " ".join(tokens) + '"'
    return tokens[0] + ("*" if term.prefix else "")


def _token(word: str) -> str:
    """`s_` + the word folded; folding may yield punctuation (`⑴` is `(1)`), which goes."""
    return _TOKEN + "".join(words(fold(word)))
