"""PostgreSQL's SQL: the schema as migrations, and full-text search.

Search uses a stored generated `tsvector` column over `messages.text` with a GIN index,
so a message is searchable the moment its append commits. `messages.text` holds the
message's words case- and accent-folded (`stores._textmatch.fold`), one space apart, and
the text search configuration `sessionary_words` (a copy of `simple`: no stemmer, no
stopwords) indexes them as they are. Up to version 3 the configuration was English with
the Snowball stemmer; version 4 re-folds the stored words in SQL (lower case, NFKD, Latin
combining marks dropped) and rebuilds the index.

A `Query` is rendered to a tsquery string here (terms are runs of letters and digits
only, each folded and single-quoted): words of a phrase joined by `<->`, a prefix as
`:*`, a group as `|`, groups joined by `&`, exclusions as `& !(...)`. The string is bound
as a parameter of `to_tsquery`, never spliced into SQL. A group whose terms hold no word
the parser indexes can match nothing, so the query is guarded with `numnode(...) > 0` per
group rather than letting PostgreSQL drop that group and match more than asked.

The index only finds candidates, the newest first: each is checked, ranked and given its
snippet in Python on the message's own text (`stores._textmatch`), as on every store.
(`ts_headline` would rebuild a snippet from the indexed words, without the author's
punctuation, and given a phrase over a long repetitive text it took memory enough to get
the server process killed.) PostgreSQL's own limits stay: a `tsvector` keeps at most 256
positions per word and none past 16,383, so a phrase is found only among a word's first
256 occurrences in a message and within its first 16,383 words, and a word over 2,047
bytes is not indexed (nor searched: its group matches nothing). A `tsvector` holds at
most 1 MB of words and positions, and PostgreSQL refuses a row whose words need more:
`index_text` gives the index a text's words up to `MAX_INDEXED_BYTES` of that, so a long
text of many distinct words (a log, a word list) is stored whole, and searched among its
first words only.

Sessions are listed by `active_s`, the second of their last activity (`updated_us`,
which every append moves), then by `updated_us` within it (an incremental sort of the
few rows that share the second): an append's UPDATE of its session then changes no
indexed column, except once a second, and is heap-only (HOT), writing no index entry
and leaving none behind for the next lock to step over.

Documents keep their own text in `documents.text` (returned as written) and its words in
`documents.search` (as `messages.text` does), which the `tsvector` column indexes; only a
document's latest version is in that row, so only latest versions can match.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sessionary.errors import InvalidQuery
from sessionary.query import Query, Term, words
from sessionary.records import Scope
from sessionary.retention import live_sql
from sessionary.stores._sql_common import Dialect, Migration
from sessionary.stores._textmatch import fold, pool_size

__all__ = ["FLUSH_MESSAGE", "MAX_INDEXED_BYTES", "PostgresDialect", "folded_words", "to_tsquery"]

MAX_INDEXED_BYTES = 1_000_000
"""How much of a `tsvector` (its words and positions) `index_text` fills; PostgreSQL
refuses one over 1,048,575 bytes with "string is too long for tsvector"."""

_MAX_POSITIONS = 256
"""How many positions a `tsvector` keeps per word."""

_CONFIG = "'sessionary_words'"
_OLD_CONFIG = "'sessionary_search'"

_V1: tuple[str, ...] = (
    "CREATE TEXT SEARCH DICTIONARY sessionary_stem (TEMPLATE = snowball, LANGUAGE = english)",
    "CREATE TEXT SEARCH CONFIGURATION sessionary_search (COPY = pg_catalog.english)",
    "ALTER TEXT SEARCH CONFIGURATION sessionary_search ALTER MAPPING FOR asciiword, "
    "asciihword, hword_asciipart, word, hword, hword_part WITH sessionary_stem",
    """CREATE TABLE sessions (
        pk BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        tenant TEXT COLLATE "C" NOT NULL,
        user_id TEXT COLLATE "C" NOT NULL,
        id TEXT COLLATE "C" NOT NULL,
        name TEXT,
        parent_session_id TEXT COLLATE "C",
        model TEXT,
        source TEXT,
        metadata TEXT NOT NULL,
        created_us BIGINT NOT NULL,
        updated_us BIGINT NOT NULL,
        ended_us BIGINT,
        end_reason TEXT,
        input_tokens BIGINT NOT NULL,
        output_tokens BIGINT NOT NULL,
        cost DOUBLE PRECISION NOT NULL,
        version BIGINT NOT NULL,
        head_id TEXT COLLATE "C",
        head_depth INTEGER NOT NULL,
        message_count BIGINT NOT NULL,
        UNIQUE (tenant, user_id, id)
    )""",
    "CREATE INDEX sessions_activity ON sessions (tenant, user_id, updated_us, id)",
    f"""CREATE TABLE messages (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        session_pk BIGINT NOT NULL,
        id TEXT COLLATE "C" NOT NULL,
        parent_id TEXT COLLATE "C",
        depth INTEGER NOT NULL,
        role TEXT NOT NULL,
        created_us BIGINT NOT NULL,
        data TEXT NOT NULL,
        text TEXT NOT NULL,
        text_tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector({_OLD_CONFIG}::regconfig, text)) STORED,
        UNIQUE (session_pk, id)
    )""",
    "CREATE INDEX messages_depth ON messages (session_pk, depth, seq)",
    "CREATE INDEX messages_parent ON messages (session_pk, parent_id, seq)",
    "CREATE INDEX messages_search ON messages USING gin (text_tsv)",
    """CREATE TABLE states (
        level TEXT NOT NULL,
        tenant TEXT COLLATE "C" NOT NULL,
        user_id TEXT COLLATE "C" NOT NULL,
        owner TEXT COLLATE "C" NOT NULL,
        data TEXT NOT NULL,
        version BIGINT NOT NULL,
        PRIMARY KEY (level, tenant, user_id, owner)
    )""",
)

_V2: tuple[str, ...] = (
    f"""CREATE TABLE documents (
        pk BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        level TEXT NOT NULL,
        tenant TEXT COLLATE "C" NOT NULL,
        user_id TEXT COLLATE "C" NOT NULL,
        owner TEXT COLLATE "C" NOT NULL,
        namespace TEXT COLLATE "C" NOT NULL,
        doc_key TEXT COLLATE "C" NOT NULL,
        key_hash BYTEA NOT NULL,
        version BIGINT NOT NULL,
        text TEXT NOT NULL,
        search TEXT NOT NULL,
        search_tsv TSVECTOR
            GENERATED ALWAYS AS (to_tsvector({_OLD_CONFIG}::regconfig, search)) STORED,
        UNIQUE (level, tenant, user_id, owner, namespace, key_hash)
    )""",
    "CREATE INDEX documents_search ON documents USING gin (search_tsv)",
    """CREATE TABLE document_versions (
        document_pk BIGINT NOT NULL,
        version BIGINT NOT NULL,
        body TEXT NOT NULL,
        text TEXT NOT NULL,
        author TEXT NOT NULL,
        updated_us BIGINT NOT NULL,
        PRIMARY KEY (document_pk, version)
    )""",
)

_V3: tuple[str, ...] = (
    "ALTER TABLE sessions ADD COLUMN ttl_us BIGINT",
    "ALTER TABLE sessions ADD COLUMN ttl_sliding SMALLINT NOT NULL DEFAULT 1",
    "CREATE INDEX sessions_ttl ON sessions (ttl_us) WHERE ttl_us IS NOT NULL",
)

_UNLOCKED = "set_config('synchronous_commit', 'off', true)"
"""Run first in a transaction, so that its commit does not wait for the flush (then a
`FLUSH_MESSAGE` flushes, see `_V6` and `stores.postgres`)."""

FLUSH_MESSAGE = "pg_logical_emit_message(true, 'sessionary', '')"
"""A transactional WAL message: the synchronous commit of a transaction that writes it
returns once the WAL is flushed past it, hence past every commit before it."""

_FOLD = r"regexp_replace(normalize(lower({}), NFKD), U&'[\0300-\036F]', '', 'g')"
"""Folds a column of words in SQL much as `fold` does (for rows written before v4)."""

_V4: tuple[str, ...] = (
    "CREATE TEXT SEARCH CONFIGURATION sessionary_words (COPY = pg_catalog.simple)",
    "ALTER TABLE messages DROP COLUMN text_tsv",
    f"UPDATE messages SET text = {_FOLD.format('text')}",
    "ALTER TABLE messages ADD COLUMN text_tsv TSVECTOR "
    f"GENERATED ALWAYS AS (to_tsvector({_CONFIG}::regconfig, text)) STORED",
    "CREATE INDEX messages_search ON messages USING gin (text_tsv)",
    "ALTER TABLE documents DROP COLUMN search_tsv",
    f"UPDATE documents SET search = {_FOLD.format('search')}",
    "ALTER TABLE documents ADD COLUMN search_tsv TSVECTOR "
    f"GENERATED ALWAYS AS (to_tsvector({_CONFIG}::regconfig, search)) STORED",
    "CREATE INDEX documents_search ON documents USING gin (search_tsv)",
)

_V5: tuple[str, ...] = (
    # An append's UPDATE of the session then changes no indexed column (the second
    # mostly), so it is a heap-only update: no new entry in the session's indexes.
    "ALTER TABLE sessions ADD COLUMN active_s BIGINT "
    "GENERATED ALWAYS AS (updated_us / 1000000) STORED",
    "DROP INDEX sessions_activity",
    "CREATE INDEX sessions_activity ON sessions (tenant, user_id, active_s)",
    "ALTER TABLE sessions SET (fillfactor = 80)",  # room on the page for those updates
)

_V6: tuple[str, ...] = (
    # `unlocked_append_sql`: one round trip that locks, appends, commits without waiting
    # for the flush (releasing the row), then commits a WAL message synchronously, whose
    # flush covers the first commit, before it answers. The append after the lock is a
    # statement of its own, with a snapshot taken after the lock's wait: it sees the row
    # the lock returned, with no re-check of a newer version (as `append_sql`'s parts
    # each make when the lock waited).
    "CREATE TYPE sessionary_message AS (n INTEGER, id TEXT, parent_id TEXT, role TEXT, "
    "created_us BIGINT, data TEXT, text TEXT)",
    f"""CREATE PROCEDURE sessionary_append(
    p_tenant TEXT, p_user TEXT, p_id TEXT, p_any BOOLEAN, p_expected TEXT,
    p_rows sessionary_message[], p_head TEXT, p_moves INTEGER, p_count INTEGER,
    p_now BIGINT,
    INOUT o_parent TEXT DEFAULT NULL, INOUT o_appended BIGINT DEFAULT 0,
    INOUT o_pk BIGINT DEFAULT NULL, INOUT o_depth INTEGER DEFAULT NULL
) LANGUAGE plpgsql AS $$
BEGIN
    SELECT pk, head_id, head_depth INTO o_pk, o_parent, o_depth FROM sessions
    WHERE tenant = p_tenant AND user_id = p_user AND id = p_id AND ttl_us IS NULL
        AND {_UNLOCKED} IS NOT NULL
    FOR UPDATE;
    IF FOUND AND (p_any OR o_parent IS NOT DISTINCT FROM p_expected) THEN
        WITH ins AS (
            INSERT INTO messages (session_pk, id, parent_id, depth, role, created_us, data, text)
            SELECT o_pk, v.id, CASE WHEN v.n = 1 THEN o_parent ELSE v.parent_id END,
                o_depth + v.n, v.role, v.created_us, v.data, v.text
            FROM unnest(p_rows) AS v  -- in the array's order
        )
        UPDATE sessions SET head_id = p_head, head_depth = o_depth + p_moves,
            message_count = message_count + p_count, updated_us = p_now
        WHERE pk = o_pk;
        o_appended := 1;
    END IF;
    COMMIT;
    PERFORM {FLUSH_MESSAGE};
    COMMIT;
END $$""",
)


class PostgresDialect(Dialect):
    """PostgreSQL 12 or later.

    Args:
        schema: The schema the tables live in (created if missing); None for the
            connection's default (normally `public`).
    """

    name = "postgresql"
    appends_alone = True
    migrations: tuple[Migration, ...] = (
        (1, "sessions, messages with a tsvector index, and state", _V1),
        (2, "versioned documents with a tsvector index", _V2),
        (3, "a TTL per session (retention), sliding or fixed", _V3),
        (4, "search indexes of folded whole words, unstemmed", _V4),
        (5, "sessions listed by activity to the second, so appends update no index", _V5),
        (6, "appends to a shared session unlock, then flush, in one call", _V6),
    )
    activity_bucket = ("active_s", "{}::bigint / 1000000")

    def append_sql(self, count: int) -> str:
        """One statement, run alone (autocommit): lock, check the head, insert, move it.

        Every part sees the session row the lock returns (PostgreSQL re-reads a row
        that changed while the lock waited), so the chain hangs under the current head;
        the row lock queues concurrent appenders as a transaction would.
        """
        values = ", ".join(["(%s, %s, %s, %s, %s, %s, %s)"] * count)
        return f"""WITH s AS (
    SELECT pk, head_id, head_depth FROM sessions
    WHERE tenant = %s AND user_id = %s AND id = %s AND ttl_us IS NULL FOR UPDATE
), ok AS (
    SELECT pk, head_id, head_depth FROM s WHERE %s::boolean OR head_id IS NOT DISTINCT FROM %s::text
), v (n, id, parent_id, role, created_us, data, text) AS (
    SELECT n::integer, id::text, parent_id::text, role::text, created_us::bigint, data::text,
        text::text
    FROM (VALUES {values}) AS given (n, id, parent_id, role, created_us, data, text)
), ins AS (
    INSERT INTO messages (session_pk, id, parent_id, depth, role, created_us, data, text)
    SELECT ok.pk, v.id, CASE WHEN v.n = 1 THEN ok.head_id ELSE v.parent_id END,
        ok.head_depth + v.n, v.role, v.created_us, v.data, v.text
    FROM ok CROSS JOIN v ORDER BY v.n
    RETURNING 1
), upd AS (
    UPDATE sessions SET head_id = %s, head_depth = ok.head_depth + %s,
        message_count = message_count + %s, updated_us = %s
    FROM ok WHERE sessions.pk = ok.pk
    RETURNING 1
)
SELECT s.head_id, (SELECT count(*) FROM ok), s.pk, s.head_depth FROM s"""

    def unlocked_append_sql(self, count: int) -> str:
        """`append_sql` as a CALL of `sessionary_append` (see `_V6`), the same parameters.

        Its append commits with `synchronous_commit` off (local to that transaction: the
        connection is left as it was whatever happens), so the row is unlocked at once;
        a second transaction then commits synchronously, so the CALL answers once the
        flush covers the append's commit, in one round trip.
        """
        rows = ", ".join(["ROW(%s, %s, %s, %s, %s, %s, %s)"] * count)
        return (
            "CALL sessionary_append(%s, %s, %s, %s, %s, "
            f"ARRAY[{rows}]::sessionary_message[], %s, %s, %s, %s)"
        )

    def append_after_sql(self, count: int) -> str:
        """One statement: move the head if it is still where the store saw it, then insert.

        The rows go in only if the UPDATE moved the head (a data-modifying CTE runs
        whether or not the INSERT reads it).
        """
        values = ", ".join(
            ["(%s::bigint, %s::text, %s::text, %s::integer, %s::text, %s::bigint, %s::text, "
             "%s::text)"] * count
        )  # fmt: skip
        return f"""WITH moved AS (
    UPDATE sessions SET head_id = %s, head_depth = %s, message_count = message_count + %s,
        updated_us = %s
    WHERE pk = %s AND head_id IS NOT DISTINCT FROM %s::text AND head_depth = %s
        AND ttl_us IS NULL
    RETURNING 1
)
INSERT INTO messages (session_pk, id, parent_id, depth, role, created_us, data, text)
SELECT v.* FROM (VALUES {values}) AS v WHERE EXISTS (SELECT FROM moved)"""

    migrations_table = (
        "CREATE TABLE IF NOT EXISTS sessionary_migrations (version INTEGER PRIMARY KEY, "
        "name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
    )
    current_schema = "current_schema()"

    def __init__(self, schema: str | None = None) -> None:
        self.schema = schema

    def migration_lock(self) -> tuple[str, ...]:
        """Serialise migrations across every client of the database, until commit."""
        lock = "SELECT pg_advisory_xact_lock(hashtext('sessionary migrations'))"
        if self.schema is None:
            return (lock,)
        return (lock, f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')

    def insert_ignore(self, table: str, columns: Sequence[str]) -> str:
        """An INSERT of one row that does nothing if the row's key is taken."""
        marks = ", ".join(["%s"] * len(columns))
        return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks}) ON CONFLICT DO NOTHING"

    def index_text(self, text: str) -> str:
        """What `messages.text` (and `documents.search`) hold: the folded words."""
        return " ".join(_within_tsvector(folded_words(text)))

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
        tsquery = to_tsquery(query)
        guards = " AND ".join([f"numnode(to_tsquery({_CONFIG}, %s)) > 0"] * len(query.groups))
        filters = f" AND {live_sql('%s', 's.')}"
        params: list[Any] = [tsquery, scope.tenant, scope.user, now_us]
        if session_id is not None:
            filters += " AND s.id = %s"
            params.append(session_id)
        if role is not None:
            filters += " AND m.role = %s"
            params.append(role)
        sql = (
            "SELECT s.id, m.id, m.role, m.created_us, m.data FROM messages AS m "
            "JOIN sessions AS s ON s.pk = m.session_pk "
            f"WHERE m.text_tsv @@ to_tsquery({_CONFIG}, %s) AND s.tenant = %s "
            f"AND s.user_id = %s{filters} AND {guards} ORDER BY m.seq DESC LIMIT %s"
        )
        group_params = [_group_tsquery(group) for group in query.groups]
        return sql, [*params, *group_params, pool_size(limit)]

    def document_search_sql(
        self, owner: Sequence[str], namespace: str | None, query: Query, limit: int
    ) -> tuple[str, list[Any]]:
        """Candidate latest versions, with their text to check them on."""
        guards = " AND ".join([f"numnode(to_tsquery({_CONFIG}, %s)) > 0"] * len(query.groups))
        where = "" if namespace is None else " AND d.namespace = %s"
        sql = (
            "SELECT d.namespace, d.doc_key, d.version, d.text FROM documents AS d "
            f"WHERE d.search_tsv @@ to_tsquery({_CONFIG}, %s) AND d.level = %s "
            "AND d.tenant = %s AND d.user_id = %s AND d.owner = %s AND d.version > 0"
            f"{where} AND {guards} ORDER BY d.namespace, d.doc_key LIMIT %s"
        )
        params: list[Any] = [to_tsquery(query), *owner]
        if namespace is not None:
            params.append(namespace)
        params += [_group_tsquery(group) for group in query.groups]
        return sql, [*params, pool_size(limit)]


def to_tsquery(query: Query) -> str:
    """Render a query as a `to_tsquery` string (see the module docstring).

    Examples:
        >>> from sessionary.query import parse_query
        >>> to_tsquery(parse_query('pet cat OR dog* -"hot dog"'))
        "('pet') & ('cat' | 'dog':*) & !('hot' <-> 'dog')"
    """
    positive = " & ".join(map(_group_tsquery, query.groups))
    if not query.excluded:
        return positive
    return f"{positive} & !({' | '.join(map(_term_tsquery, query.excluded))})"


def folded_words(text: str) -> list[str]:
    """The words of `text`, folded; a folded word's punctuation splits it into parts.

    (Folding ``½`` gives ``1``, a fraction slash and ``2``; PostgreSQL's parser splits it.)
    """
    if text.isascii():  # folding is lowering, which moves no word's bounds: one pass
        return words(text.lower())
    return [part for word in words(text) for part in words(fold(word))]


def _within_tsvector(folded: list[str]) -> list[str]:
    """The first of `folded` whose `tsvector` fits in `MAX_INDEXED_BYTES`.

    A distinct word costs its bytes, an alignment byte, a count of positions and a
    position (2 bytes each); each of its next 255 occurrences a position more.
    """
    # A word costs at most 5 bytes more than its characters, each at most 4 bytes:
    # a text this short fits whole.
    if 4 * sum(map(len, folded)) + 5 * len(folded) <= MAX_INDEXED_BYTES:
        return folded
    cost = 0
    seen: dict[str, int] = {}
    for n, word in enumerate(folded):
        count = seen.get(word, 0)
        more = len(word.encode()) + 5 if count == 0 else 2 if count < _MAX_POSITIONS else 0
        if cost + more > MAX_INDEXED_BYTES:
            return folded[:n]
        cost += more
        seen[word] = count + 1
    return folded


def _group_tsquery(group: Sequence[Term]) -> str:
    return "(" + " | ".join(map(_term_tsquery, group)) + ")"


def _term_tsquery(term: Term) -> str:
    # Re-split the text so that a hand-built Term cannot carry a quote or an operator.
    quoted = [f"'{word}'" for word in folded_words(term.text)]
    if not quoted:
        raise InvalidQuery(f"the search term {term.text!r} holds no word")
    if term.prefix:
        quoted[-1] += ":*"
    return " <-> ".join(quoted)
