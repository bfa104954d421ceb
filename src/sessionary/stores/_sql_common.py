"""What the SQL server backends share, apart from I/O: the dialect seam, SQL and row shapes.

`stores/sql.py` (an async source with a generated sync twin) runs every store method
through a driver (the I/O) and a `Dialect` (the SQL that differs between servers). This
module holds the plain, synchronous parts both need: the base `Dialect`, the SQL that
every server accepts as written, and the pure planning of an append.

Every server keeps the same layout:

- `sessions` caches its head (`head_id`, `head_depth`) and `message_count`, so a path's
  length and a session's size are one row read, and it is the row every write to a
  session locks (`SELECT ... FOR UPDATE`), which serialises appends across connections,
  processes and machines.
- `messages` keep their parent's id and their `depth`; `seq` (an identity column)
  orders them by insertion. A path is a recursive walk up `(session_pk, id)` that stops
  after `limit` steps, or for a session that is one chain a range of `(session_pk,
  depth)`; export pages through that index in (depth, seq) order.
- `messages.text` holds the searchable words of a message (see `search_text`), so the
  server's tokenizer sees exactly the words the query language sees.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from sessionary.errors import InvalidInput
from sessionary.model import (
    Message,
    decode_body,
    decode_lazy,
    message_text,
    plain_body_text,
    to_micros,
)
from sessionary.query import Query, words
from sessionary.records import (
    Document,
    DocumentHit,
    Expected,
    Head,
    Scope,
    SearchHit,
    SessionInfo,
    decode_cursor,
)
from sessionary.retention import live_sql, ttl_micros
from sessionary.stores._common import Prepared, check_stored_prefix, gc_paused
from sessionary.stores._documents import document_from_row
from sessionary.stores._rows import SESSION_COLUMNS, first, message_from_row, stored_copy
from sessionary.stores._textmatch import document_hits, message_hits

__all__ = [
    "CHUNK",
    "INSERT_MESSAGE",
    "INSERT_MESSAGES",
    "FIND_SQL",
    "INSERT_SESSION",
    "HEAD_AND_DOCUMENT_SQL",
    "LINEAR_HEAD_SQL",
    "LINEAR_LIVE",
    "LOCATE_SQL",
    "LOCK_SQL",
    "EXPIRY_COLUMNS",
    "expired_row",
    "head_and_document",
    "packed_document",
    "packed_messages",
    "MESSAGE_COLUMNS",
    "PATH_SQL",
    "SCOPED",
    "SESSION_COLUMNS",
    "STATE_COLUMNS",
    "STATE_KEY",
    "SUBTREE_SQL",
    "Dialect",
    "Migration",
    "decode_cursor_pair",
    "import_rows",
    "insert_chunks",
    "insert_statement",
    "session_row",
    "plan_chain",
    "redact",
    "search_text",
]

CHUNK = 500
"""The most rows one multi-row INSERT or IN list carries."""
MESSAGE_COLUMNS = "id, role, created_us, data, parent_id"
"""A message as `message_from_row` decodes it."""

Migration = tuple[int, str, tuple[str, ...]]
"""(version, name, statements), applied in order."""

SCOPED = "tenant = %s AND user_id = %s AND id = %s"
EXPIRY_COLUMNS = "ttl_us, ttl_sliding, created_us, updated_us"
"""What says whether a session expired (see `expired_row`), after a statement's own columns."""
LOCK_SQL = (
    f"SELECT pk, head_id, head_depth, {EXPIRY_COLUMNS} FROM sessions WHERE {SCOPED} FOR UPDATE"
)
FIND_SQL = (
    f"SELECT m.{MESSAGE_COLUMNS.replace(', ', ', m.')}, m.depth FROM sessions AS s "
    "JOIN messages AS m ON m.session_pk = s.pk "
    "WHERE s.tenant = %s AND s.user_id = %s AND s.id = %s"
)
"""A session's messages by scope; the caller adds `AND m.id IN (...)`."""
LOCATE_SQL = (
    "SELECT s.pk, s.head_id, s.head_depth, m.depth, s.ttl_us, s.ttl_sliding, s.created_us, "
    "s.updated_us FROM sessions AS s "
    "LEFT JOIN messages AS m ON m.session_pk = s.pk AND m.id = %s "
    "WHERE s.tenant = %s AND s.user_id = %s AND s.id = %s"
)
LINEAR_HEAD_SQL = f"""
SELECT m.{MESSAGE_COLUMNS.replace(", ", ", m.")}
FROM sessions AS s JOIN messages AS m ON m.session_pk = s.pk
    AND m.depth BETWEEN greatest(0, s.head_depth - %s + 1) AND s.head_depth
WHERE s.tenant = %s AND s.user_id = %s AND s.id = %s AND s.message_count = s.head_depth + 1
    AND s.ttl_us IS NULL
ORDER BY m.depth
"""
"""The head's path in one statement (one snapshot) for a session that is one chain and has
no TTL (one with a TTL takes the path that checks expiry)."""
LINEAR_LIVE = (
    "s.tenant = %s AND s.user_id = %s AND s.id = %s AND s.message_count = s.head_depth + 1 "
    f"AND {live_sql('%s', 's.')}"
)
HEAD_AND_DOCUMENT_SQL = f"""
SELECT m.depth, concat_ws(' ', m.id, m.role, m.created_us, coalesce(m.parent_id, ''), m.data)
FROM sessions AS s JOIN messages AS m ON m.session_pk = s.pk
    AND m.depth BETWEEN greatest(0, s.head_depth - %s + 1) AND s.head_depth
WHERE {LINEAR_LIVE}
UNION ALL
SELECT -v.version, concat_ws(%s, v.updated_us, v.author, v.body, v.text)
FROM sessions AS s JOIN documents AS d ON d.level = 'session' AND d.tenant = s.tenant
    AND d.user_id = s.user_id AND d.owner = s.id AND d.namespace = %s AND d.key_hash = %s
    AND d.version > 0
JOIN document_versions AS v ON v.document_pk = d.pk AND v.version = d.version
WHERE {LINEAR_LIVE}
"""
"""`LINEAR_HEAD_SQL` and a session document's latest version in one statement (one snapshot),
for a live session that is one chain: rows of (depth, message), the message's columns in
one text (MySQL's pure-Python driver pays per column and row: five columns cost more
than the split), and the document, if any, one row more with its version negated in
place of the depth and its columns joined by a newline, bound as the second part's
first parameter (see `head_and_document`). No rows: the session is not one chain, not live,
missing, or empty without the document."""
PATH_SQL = f"""
WITH RECURSIVE path (n, {MESSAGE_COLUMNS}) AS (
    SELECT 1, {MESSAGE_COLUMNS} FROM messages WHERE session_pk = %s AND id = %s
    UNION ALL
    SELECT path.n + 1, m.id, m.role, m.created_us, m.data, m.parent_id
    FROM path JOIN messages AS m ON m.session_pk = %s AND m.id = path.parent_id
    WHERE path.n < %s
)
SELECT {MESSAGE_COLUMNS} FROM path ORDER BY n DESC
"""
"""A path walked up from a leaf, stopped after `limit` steps, in one statement."""
SUBTREE_SQL = """
WITH RECURSIVE sub (id) AS (
    SELECT id FROM messages WHERE session_pk = %s AND id = %s
    UNION ALL
    SELECT m.id FROM sub JOIN messages AS m ON m.session_pk = %s AND m.parent_id = sub.id
)
SELECT id FROM sub
"""
INSERT_MESSAGE = "(%s, %s, %s, %s, %s, %s, %s, %s)"
INSERT_MESSAGES = (
    "INSERT INTO messages (session_pk, id, parent_id, depth, role, created_us, data, text) VALUES "
)
INSERT_SESSION = (
    "INSERT INTO sessions (tenant, user_id, id, name, parent_session_id, model, "
    "source, metadata, created_us, updated_us, ended_us, end_reason, input_tokens, "
    "output_tokens, cost, version, head_id, head_depth, message_count, ttl_us, ttl_sliding) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
STATE_KEY = "level = %s AND tenant = %s AND user_id = %s AND owner = %s"
STATE_COLUMNS = ("level", "tenant", "user_id", "owner", "data", "version")


class Dialect:
    """The SQL that differs between servers; one instance per store, no state, no I/O."""

    name = "sql"
    migrations: tuple[Migration, ...] = ()
    migrations_table = ""
    """DDL creating `sessionary_migrations (version, name, applied_at)` if missing."""
    current_schema = "DATABASE()"
    """The SQL naming the schema (database) unqualified table names resolve to."""
    activity_bucket: tuple[str, str] | None = None
    """A column ranking sessions by activity more coarsely than `updated_us` does, and
    its value for a given `updated_us` (a format string of a placeholder); or None.
    Sessions are listed by it, then by `updated_us` (see `_rows.list_sql`)."""

    def migration_lock(self) -> tuple[str, ...]:
        """Statements run first in the migration transaction: take the migration lock."""
        return ()

    def migration_unlock(self) -> tuple[str, ...]:
        """Statements run after migrating (also after a failure), releasing the lock."""
        return ()

    def insert_ignore(self, table: str, columns: Sequence[str]) -> str:
        """An INSERT of one row that does nothing if the row's key is taken."""
        raise NotImplementedError

    def search_sql(
        self,
        scope: Scope,
        query: Query,
        limit: int,
        session_id: str | None,
        role: str | None,
        now_us: int,
    ) -> tuple[str, list[Any]]:
        """The statement that finds candidate messages, newest first, and its parameters.

        Only sessions live at `now_us` are searched. Rows are (session id, message id,
        role, created_us, body), at most `pool_size(limit)` of them.
        """
        raise NotImplementedError

    def search_hits(
        self, rows: Sequence[Sequence[Any]], query: Query, limit: int
    ) -> list[SearchHit]:
        """Check the candidates `search_sql` returned, newest first, on their text.

        Rows are (session id, message id, role, created_us, body); the best `limit`
        that match are the hits, best first.
        """
        texts = (
            (r[0], r[1], r[2], r[3], message_text(decode_body(r[1], r[2], r[3], r[4], None)))
            for r in rows
        )
        return message_hits(query, texts, limit)

    def head_and_document_read(
        self, steps: int, live: Sequence[Any], namespace: str, digest: bytes
    ) -> tuple[str, tuple[Any, ...]]:
        """The one statement of `get_path_and_document` for a live one-chain session.

        Args:
            steps: The most messages to return, the head's and those before it.
            live: The session's tenant, user and id, and the time now in microseconds.
            namespace: The session document's namespace.
            digest: The SHA-256 of its key (`key_hash`).

        Returns:
            The statement and its parameters; no rows means the session is not one
            chain, not live, missing, or (here) empty without the document.
        """
        return HEAD_AND_DOCUMENT_SQL, (steps, *live, "\n", namespace, digest, *live)

    def head_and_document(
        self, rows: list[tuple[Any, ...]], namespace: str, key: str
    ) -> tuple[list[Message], Document | int | None]:
        """Decode the rows of `head_and_document_read`: the path, oldest first, and the document.

        The document may be given as its version alone (an int), which the store then
        reads in a statement of its own.
        """
        return head_and_document(rows, namespace, key)

    appends_alone = False
    """Whether the dialect has the two append scripts below (else appends lock and read)."""

    def append_sql(self, count: int) -> str:
        """One statement (or script) that appends `count` messages after the head.

        It locks the session's row, appends nothing unless the expected head holds, and
        returns one row if the session exists: the head before (id), 1 if it appended,
        the session's pk and the head's depth before. Its parameters are those
        `append_params` builds. A stored id makes it fail as a duplicate key, whole.
        """
        raise NotImplementedError

    def unlocked_append_sql(self, count: int) -> str:
        """`append_sql`, its transaction committing without waiting for the log's flush.

        For a driver that `unlocks_early`, which flushes after it before answering.
        """
        raise NotImplementedError

    def append_params(
        self, key: Sequence[Any], expected: Expected, rows: Sequence[Sequence[Any]], now: int
    ) -> list[Any]:
        """The parameters of `append_sql` for a chain of message rows.

        Args:
            key: The session's (tenant, user, id).
            expected: The head the caller expects, or `Head.ANY`.
            rows: The message rows as `plan_chain` lays them out, in chain order; their
                pk, first parent and depths are the script's to set, from the locked row.
            now: The time to record as the session's last activity, in microseconds.
        """
        params: list[Any] = [*key, expected is Head.ANY, None if expected is Head.ANY else expected]
        parent = None
        for number, row in enumerate(rows, 1):
            params += [number, row[1], parent, *row[4:]]
            parent = row[1]
        return [*params, parent, len(rows), len(rows), now]

    def append_after_sql(self, count: int) -> str:
        """One statement (or script) that appends `count` messages after a head it names.

        Its parameters are those `append_after_params` builds. It changes no row unless
        the session's row (by pk) still has the head id and depth the store saw; then it
        moves the head and inserts the rows, all committed together. A stored id makes
        it fail as a duplicate key, whole. The driver reports the rows it changed.
        """
        raise NotImplementedError

    def append_after_params(
        self, seen: tuple[int, str | None, int], rows: Sequence[Sequence[Any]], now: int
    ) -> list[Any]:
        """The parameters of `append_after_sql`.

        Args:
            seen: The session's (pk, head id, head depth) as the store last saw them.
            rows: The message rows `plan_chain` laid out under that head.
            now: The time to record as the session's last activity, in microseconds.
        """
        last = rows[-1]
        params: list[Any] = [last[1], last[3], len(rows), now, *seen]
        for row in rows:
            params += row
        return params

    pending_sql: str | None = None
    """A query of the messages the search index has yet to take in, a batch at a time,
    or None where the index is kept in step by every write."""
    pending_batch = 0
    """The most rows `pending_sql` returns at a time (a batch of fewer was all there was),
    or 0 where that is not known (the catch-up then reads until the queue is empty)."""

    index_lock = ""
    """A query taking the lock that catch-ups take turns under (its one parameter: the
    seconds to wait; it returns 1 if taken), or "" for none; and"""
    index_unlock = ""
    """the statement giving it back."""

    def index_pending(self, pending: Sequence[Sequence[Any]]) -> list[tuple[str, list[Any]]]:
        """The statements that index a batch of pending messages (rows of `pending_sql`)."""
        raise NotImplementedError

    def index_text(self, text: str) -> str:
        """What `messages.text` holds for a message's text; its words by default."""
        return search_text(text)

    share_lock = " FOR SHARE"
    """What a SELECT ends with to lock its rows against writers but not other readers."""

    def key_param(self, key: str) -> Any:
        """A document key as `documents.doc_key` holds it (the text itself by default)."""
        return key

    def document_search_sql(
        self, owner: Sequence[str], namespace: str | None, query: Query, limit: int
    ) -> tuple[str, list[Any]]:
        """The statement that finds candidate documents of one owner, and its parameters.

        Rows are (namespace, key, version, text) of latest versions, in (namespace, key)
        order, at most `pool_size(limit)` of them.
        """
        raise NotImplementedError

    def key_value(self, stored: Any) -> str:
        """A document key as `documents.doc_key` returns it, as text (itself by default)."""
        return str(stored)

    def document_hits(
        self, rows: Sequence[Sequence[Any]], query: Query, limit: int
    ) -> list[DocumentHit]:
        """Check the candidates `document_search_sql` returned on their text.

        The best `limit` that match are the hits, best first.
        """
        texts = ((r[0], self.key_value(r[1]), int(r[2]), r[3]) for r in rows)
        return document_hits(query, texts, limit)


def redact(url: str) -> str:
    """Return a server URL fit for an error message: its passwords, if any, masked.

    The one in its user part, and any connection parameter of its query whose name says
    it is one (libpq's `password`, `sslpassword`, an OAuth client secret).
    """
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    secret = any(_secret(key) for key, _ in pairs)
    if parts.password is None and not secret:
        return url
    netloc = parts.netloc
    if parts.password is not None:
        head, _, host = netloc.rpartition("@")
        netloc = f"{head.partition(':')[0]}:***@{host}"
    query = urlencode([(key, "***" if _secret(key) else value) for key, value in pairs], safe="*")
    return parts._replace(netloc=netloc, query=query).geturl()


def _secret(key: str) -> bool:
    return "password" in key or "secret" in key


def search_text(text: str) -> str:
    """Return what a server indexes of a message's text: its words, one space apart.

    The query language splits words its own way (see `sessionary.query.words`); handing a
    server's tokenizer only those words, NFC-normalised, means both sides agree on what
    a word is (no compound tokens for `foo-bar` or `3.14`, no NUL, which PostgreSQL's
    text cannot hold). Snippets therefore show words without punctuation, as the
    in-memory reference does.
    """
    return " ".join(words(text))


def plan_chain(
    session_pk: int,
    prepared: Sequence[Prepared],
    at: tuple[str | None, int],
    existing: Mapping[str, Sequence[Any]],
    index: Callable[[str], str],
) -> tuple[list[Message], list[tuple[Any, ...]], tuple[str | None, int]]:
    """Lay out a chain of messages under `at` = (parent id, parent depth).

    Args:
        session_pk: The session's key.
        prepared: The checked messages, in order.
        at: Where the chain hangs: (None, -1) for a new root.
        existing: Rows (`MESSAGE_COLUMNS`, then depth) of the batch's ids already stored;
            those are kept as they are and the chain continues from them. They may only
            come before every new message (see `check_stored_prefix`).
        index: What to store in `messages.text` for a message's text.

    Returns:
        The messages as stored, the rows to insert, and the chain's last (id, depth).

    Raises:
        InvalidMessage: If a stored message follows a new one.
    """
    check_stored_prefix(prepared, existing)
    parent_id, depth = at
    out: list[Message] = []
    rows: list[tuple[Any, ...]] = []
    for item in prepared:
        msg = item.message
        found = existing.get(msg.id)
        if found is not None:
            out.append(message_from_row(found))
            parent_id, depth = msg.id, found[5]
            continue
        depth += 1
        rows.append(
            (session_pk, msg.id, parent_id, depth, msg.role, item.created_us, item.body,
             index(item.text))
        )  # fmt: skip
        out.append(stored_copy(msg, parent_id))
        parent_id = msg.id
    return out, rows, (parent_id, depth)


def expired_row(columns: Sequence[Any], now: int) -> bool:
    """Whether the `EXPIRY_COLUMNS` values of a session row say it expired by `now`."""
    ttl, sliding, created, updated = columns
    return ttl is not None and (updated if sliding else created) + ttl <= now


def decode_cursor_pair(cursor: str | None) -> tuple[int, int]:
    """Return the (depth, seq) a `page_messages` cursor holds; (-1, 0) for the first page."""
    if cursor is None:
        return -1, 0
    depth, seq = decode_cursor(cursor, int, int)
    return depth, seq


def import_rows(
    info: SessionInfo, prepared: Sequence[Prepared], index: Callable[[str], str]
) -> tuple[list[tuple[Any, ...]], tuple[str | None, int, int]]:
    """Lay out imported messages (parents first) and the session's head.

    Returns:
        The message rows, less their session key, and the session's (head id, head
        depth, message count).

    Raises:
        InvalidInput: If a message's parent is not earlier in the import, or the head is
            not among the messages.
    """
    depths: dict[str, int] = {}
    rows: list[tuple[Any, ...]] = []
    for item in prepared:
        msg = item.message
        parent = msg.parent_id
        if parent is not None and parent not in depths:
            raise InvalidInput(
                f"message {msg.id!r} names parent {parent!r}, which is not earlier in the import"
            )
        depths[msg.id] = depths[parent] + 1 if parent is not None else 0
        rows.append(
            (msg.id, parent, depths[msg.id], msg.role, item.created_us, item.body,
             index(item.text))
        )  # fmt: skip
    if info.head_id is not None and info.head_id not in depths:
        raise InvalidInput(f"head {info.head_id!r} is not among the imported messages")
    head_depth = depths[info.head_id] if info.head_id is not None else -1
    return rows, (info.head_id, head_depth, len(rows))


def insert_chunks(rows: Sequence[Sequence[Any]]) -> Iterator[Sequence[Sequence[Any]]]:
    """Message rows in chunks for multi-row INSERTs: under `CHUNK` rows and about 4 MB each.

    A row larger than that goes in a chunk of its own.
    """
    start = size = 0
    for end, row in enumerate(rows):
        weight = len(row[6]) + len(row[7])
        if end > start and (end - start == CHUNK or size + weight > 4_000_000):
            yield rows[start:end]
            start, size = end, 0
        size += weight
    if start < len(rows):
        yield rows[start:]


def insert_statement(rows: Sequence[Sequence[Any]]) -> tuple[str, list[Any]]:
    """One multi-row INSERT of message rows, and its parameters."""
    return INSERT_MESSAGES + ", ".join([INSERT_MESSAGE] * len(rows)), [v for r in rows for v in r]


def session_row(
    scope: Scope, info: SessionInfo, metadata: str, head: Sequence[Any], now: int
) -> tuple[Any, ...]:
    """The parameters of `INSERT_SESSION`; `head` is (head id, head depth, message count)."""
    created = to_micros(info.created_at) if info.created_at else now
    return (
        scope.tenant, scope.user, info.id, info.name, info.parent_session_id, info.model,
        info.source, metadata, created,
        to_micros(info.updated_at) if info.updated_at else created,
        to_micros(info.ended_at) if info.ended_at else None, info.end_reason,
        info.input_tokens, info.output_tokens, info.cost, info.version, *head,
        ttl_micros(info.ttl), int(info.ttl_sliding),
    )  # fmt: skip


def head_and_document(
    rows: list[tuple[Any, ...]], namespace: str, key: str
) -> tuple[list[Message], Document | None]:
    """Decode the rows of `HEAD_AND_DOCUMENT_SQL`: the path, oldest first, and the document.

    A message is `id role created_us parent_id body` (ids and roles hold no spaces; no
    parent is ''); the document `updated_us author body text` with newlines between
    (an author and a body's JSON hold no newline; the text, last, may).
    """
    rows.sort(key=first)
    doc = None
    if rows and rows[0][0] < 0:
        version, packed = rows.pop(0)
        doc = packed_document(f"{-int(version)}\n{packed}", namespace, key)
    with gc_paused():
        return [_packed_message(row[1]) for row in rows], doc


def packed_document(packed: str, namespace: str, key: str) -> Document:
    """A document packed as `version updated_us author body text`, newlines between."""
    version, updated_us, author, body, text = packed.split("\n", 4)
    return document_from_row((namespace, key, body, int(version), author, int(updated_us), text))


def packed_messages(packed: Sequence[str]) -> list[Message]:
    """Messages packed as `HEAD_AND_DOCUMENT_SQL` packs them, in the same order."""
    with gc_paused():
        return [_packed_message(one) for one in packed]


def _packed_message(packed: str) -> Message:
    """A message of `HEAD_AND_DOCUMENT_SQL`, its body decoded on first use (as SQLite's).

    A plain-text body is taken apart at once (`plain_body_text`, a scan in C): the
    message then holds its text, as SQLite's plain rows do, and reading it decodes nothing.
    """
    message_id, role, created_us, parent_id, body = packed.split(" ", 4)
    text = plain_body_text(body)
    if text is not None:
        return decode_lazy(message_id, role, int(created_us), "", parent_id or None, text)
    return decode_lazy(message_id, role, int(created_us), body, parent_id or None, None)
