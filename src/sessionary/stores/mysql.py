"""The MySQL / MariaDB drivers: `mysql://` (or `mariadb://`) through aiomysql and PyMySQL.

`AsyncMySQLDriver` (aiomysql) and `MySQLDriver` (PyMySQL), each behind a small pool
written here (`_AsyncPool`, `_Pool`), are a hand-written pair with identical method names;
`AsyncSQLStore` / `SQLStore` do the rest. Connections use `utf8mb4`, autocommit, and
READ COMMITTED (so a locking read never takes gap locks, and each statement sees the
latest commits, as on PostgreSQL; see `session_setup`); every unit of work is an
explicit transaction.
`store_error` is the one place the driver's exceptions become sessionary's.

The pool opens on first use, after a first connection has migrated the schema (see
`MySQLDialect`) and read the server's `max_allowed_packet`. Every statement, its values
escaped, must be smaller than that packet, or the server refuses it and may drop the
connection; so a statement that would not fit is refused before it is sent, as
`PayloadTooLarge` (`_fitting`), and the store writes a large batch in several
statements. The effective limit of one message is therefore the smaller of the store's
`max_message_bytes` and what its row takes in an INSERT: its JSON body (a quote,
backslash or line break escaped to two bytes) plus its search tokens (each indexable
word again, prefixed with `s_`), plus a few hundred bytes. With MariaDB's default packet
of 16 MiB that is about 7 MB of prose; MySQL 8's default is 64 MiB. Install with
`pip install 'sessionary[mysql]'`.

On MariaDB, a single statement run alone (the store's one-statement reads) is prepared
once per pooled connection and then run as `EXECUTE ... USING` its values, escaped as a
plain query escapes them (`_prepared_name`): the server then skips parsing and resolving
it on every read (a quarter of the server's time of a path read, more than reading its
rows).

A one-message append CALLs its stored procedure (`routine_call`), and the driver reads
the answer itself rather than through a cursor (`_call`, `_Answer`; on PyMySQL its
packets through `_payload`): the procedures answer with OK packets and
text result sets only, and PyMySQL's result objects (column definitions parsed,
values converted, one `nextset` per result) took as much of the client's CPU of an
append as everything else in the driver. Errors, timeouts, lost connections and packet
sizes are handled as the drivers handle them; a connection left in the middle of an
answer is closed.

Waits are bounded (see `_waits`): connecting, the server's greeting and login included,
takes at most `connect_timeout` seconds; a lock wait at most `timeout`
(`innodb_lock_wait_timeout`, so the server says so itself); and any one answer at most
`timeout` plus `GRACE` (PyMySQL's socket read and write timeouts; a deadline on the async
driver's loop). Taking a connection from a full pool waits at most `POOL_WAIT` seconds;
a pool that must make one makes it then, within `connect_timeout`, and fails as it does.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import math
import ssl
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any
from urllib.parse import unquote, urlsplit

import aiomysql  # type: ignore[import-untyped]
import pymysql  # type: ignore[import-untyped]

from sessionary.errors import (
    AlreadyExists,
    Closed,
    InvalidURL,
    PayloadTooLarge,
    SessionaryError,
    StoreError,
    StoreUnavailable,
)
from sessionary.stores._mysql_sql import ROUTINE_NAMES, routine_call, routine_rows
from sessionary.stores._sql_common import redact
from sessionary.stores._waits import GRACE, IDLE_LOOK, deadline, said_goodbye
from sessionary.stores.urls import CONNECT_TIMEOUT, REQUEST_TIMEOUT

__all__ = [
    "POOL_WAIT",
    "AsyncMySQLDriver",
    "MySQLDriver",
    "connect_error",
    "connect_options",
    "opportunistic_tls",
    "session_setup",
    "store_error",
    "tls_context",
]

Row = tuple[Any, ...]

_UNREACHABLE = {1040, 1044, 1045, 1049, 1053, 1698, 2002, 2003, 2005, 2006, 2013, 2055}
"""Too many connections, access denied, unknown database, shutdown, no route, gone away."""
_BUSY = {1205, 1213}
"""Lock wait timeout, deadlock."""
_IDLE_CHECK = 30.0
"""Seconds a pooled connection may sit idle before it is pinged (and reconnected)."""
POOL_WAIT = 30.0
"""Seconds a transaction waits for a pooled connection when every one is busy."""
_QUIT_WAIT = 1.0
"""Seconds closing the async pool gives each idle connection to say goodbye."""
_ERRORS = (pymysql.err.Error, OSError, asyncio.TimeoutError)


def _busy() -> StoreError:
    """The error of a caller that waited `POOL_WAIT` seconds for a pooled connection."""
    return StoreError(f"mysql: every pooled connection stayed busy for {POOL_WAIT:g} s")


def store_error(where: str, exc: BaseException) -> SessionaryError:
    """Map one of PyMySQL's (or aiomysql's) exceptions onto the error tree; the only place.

    Args:
        where: The server's URL, its password masked, to start the message with.
        exc: What the driver raised.
    """
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, TimeoutError):
        return StoreUnavailable(f"{where}: the server did not answer in time")
    if isinstance(exc, pymysql.err.IntegrityError) and code == 1062:
        return AlreadyExists(f"{where}: {text}")
    if code in _BUSY:
        return StoreError(f"{where}: the server gave up waiting: {text}")
    if code in _UNREACHABLE or not isinstance(exc, pymysql.err.DatabaseError):
        return StoreUnavailable(f"{where}: {text}")
    return StoreError(f"{where}: {text}")


def connect_error(where: str, exc: BaseException) -> StoreUnavailable:
    """The error for a connection that could not be made, whatever went wrong.

    A peer that is not a MySQL server can make the drivers fail in any way while they
    read its greeting (a wrong packet number, a `struct.error`): the store cannot be
    reached either way.
    """
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, TimeoutError):
        text = "the server did not answer in time"
    return StoreUnavailable(f"{where}: cannot connect: {text}")


def connect_options(
    url: str,
    connect_timeout: float,
    database: str = "db",
    *,
    unix_socket: str | None = None,
    tls: ssl.SSLContext | None = None,
) -> dict[str, Any]:
    """The keyword arguments of a connection to the server a `mysql://` URL names.

    Args:
        url: The `mysql://` URL.
        connect_timeout: Seconds to wait for the server.
        database: The name of the database argument (`db` for aiomysql, `database` for
            PyMySQL, which deprecates `db`).
        unix_socket: The server's socket file, to connect through instead of TCP.
        tls: The TLS the connection uses (see `tls_context`, `opportunistic_tls`);
            None: the driver's own choice (PyMySQL tries TLS, unverified, where the
            server offers it, unless its driver adds `ssl_disabled`; aiomysql none).
    """
    parts = urlsplit(url)
    options: dict[str, Any] = {
        "host": parts.hostname or "localhost",
        "port": parts.port or 3306,
        "user": unquote(parts.username or "root"),
        "password": unquote(parts.password or ""),
        database: unquote(parts.path.lstrip("/")),
        "charset": "utf8mb4",
        "autocommit": True,
        "connect_timeout": connect_timeout,
        # The append scripts (`MySQLDialect.append_sql`, `append_after_sql`) are several
        # statements in one round trip. Every value is still escaped by the driver, never
        # spliced.
        "client_flag": pymysql.constants.CLIENT.MULTI_STATEMENTS,
    }
    if unix_socket is not None:
        options["unix_socket"] = unix_socket
    if tls is not None:
        options["ssl"] = tls
    return options


def tls_context(
    mode: str | None,
    ca: str | None = None,
    cert: str | None = None,
    key: str | None = None,
    where: str = "mysql",
) -> ssl.SSLContext | None:
    """The TLS a URL's `ssl_mode`, `ssl_ca`, `ssl_cert` and `ssl_key` insist on; else None.

    `required` encrypts without checking the server's certificate (unless `ca` is
    given: then as `verify_ca`); `verify_ca` checks it against `ca` (else the system's
    roots); `verify_identity` also checks that it names the host. No mode with `ca`
    given is `verify_ca`; with only a client certificate, `required`. A connection that
    asked for TLS and did not get it fails (`_insist_on_tls`). None: `disabled`, or TLS
    where the server offers it (`preferred`, and no mode: see `opportunistic_tls`).

    Raises:
        InvalidURL: If a file cannot be read or is not what it should be.
    """
    if mode is None:
        mode = "verify_ca" if ca is not None else "required" if cert is not None else None
    if mode is None or mode in ("disabled", "preferred"):
        return None
    try:
        context = ssl.create_default_context(cafile=ca)
        if cert is not None:
            context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise InvalidURL(f"{where}: the TLS files cannot be used: {exc}") from None
    context.check_hostname = mode == "verify_identity"
    if mode == "required" and ca is None:
        context.verify_mode = ssl.CERT_NONE
    return context


_OPPORTUNISTIC_TLS: list[ssl.SSLContext] = []
"""`opportunistic_tls`'s context, once built (two threads may each build one at first;
either serves)."""


def opportunistic_tls() -> ssl.SSLContext:
    """The TLS of `ssl_mode=preferred`, and of no mode: encrypted where the server offers it.

    As MySQL's own client does by default, and PyMySQL given no TLS options: the server's
    certificate is not checked, and a server that offers no TLS is spoken to in the
    clear. One context serves every connection, sync and async (it holds no connection's
    state); it loads no certificates, which this mode never checks against.
    """
    if not _OPPORTUNISTIC_TLS:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        _OPPORTUNISTIC_TLS.append(context)
    return _OPPORTUNISTIC_TLS[0]


def _insist_on_tls(conn: Any, options: dict[str, Any], where: str) -> None:
    """Close a connection that asked for TLS and got none; raise `StoreUnavailable`.

    aiomysql goes on in the clear, asking nothing, when the server offers no TLS.
    """
    if options.get("ssl") in (None, opportunistic_tls()):
        return
    writer = getattr(conn, "_writer", None)
    if writer is not None:
        secure = writer.get_extra_info("ssl_object") is not None
    else:
        secure = isinstance(getattr(conn, "_sock", None), ssl.SSLSocket)
    if not secure:
        conn.close()
        raise StoreUnavailable(f"{where}: cannot connect: the server does not offer TLS")


def session_setup(version: str, timeout: float = REQUEST_TIMEOUT) -> str:
    """The statement every pooled connection starts with, for a server's `VERSION()`.

    READ COMMITTED, no cap on recursive queries (a path or a subtree is walked by a
    recursive CTE; MariaDB stops at 1000 steps by default, MySQL fails), and lock waits
    of at most `timeout` seconds. The variables' names differ between MariaDB and MySQL.
    """
    waits = f"innodb_lock_wait_timeout = {max(1, math.ceil(timeout))}"
    if "mariadb" in version.lower():
        return (
            "SET SESSION tx_isolation = 'READ-COMMITTED', "
            f"max_recursive_iterations = 4294967295, {waits}"
        )
    return (
        "SET SESSION transaction_isolation = 'READ-COMMITTED', "
        f"cte_max_recursion_depth = 4294967295, {waits}"
    )


def _fitting(cursor: Any, sql: str, params: Sequence[Any], packet: int) -> str:
    """A statement, its values written in, known to fit in a packet (for `cursor.execute`).

    The server refuses a statement of `packet` bytes or more (`max_allowed_packet`, the
    command byte included), and may drop the connection. The values are written in
    here (`_literal`, as the driver's `mogrify` would, in a fraction of its time: it
    escapes each value through a chain of calls, several microseconds for a search
    catch-up's hundreds of seqs); a bound clears most statements at once, and one near
    the limit is measured.

    Raises:
        PayloadTooLarge: If the statement does not fit; nothing was sent.
    """
    if not params:
        return sql  # the driver leaves such a statement as it is, `%%` included
    conn = cursor.connection
    query: str = sql % tuple([_literal(conn, v) for v in params])
    if packet and 1 + 4 * len(query) >= packet:
        _check_fits(len(query.encode()), packet)
    return query


def _check_fits(size: int, packet: int) -> None:
    """Refuse a statement of `size` bytes that, with its command byte, is over `packet`.

    Raises:
        PayloadTooLarge: If it is.
    """
    if packet and size + 1 >= packet:
        limit = f"the server's max_allowed_packet ({packet} bytes)"
        raise PayloadTooLarge(f"a statement of {size + 1} bytes is over {limit}")


def _one_statement(sql: str, version: str) -> str:
    """A script of several statements as one compound statement, where MariaDB runs those.

    MariaDB (10.1 and later) runs `BEGIN NOT ATOMIC ... END` as one statement: the server
    answers it with one result (and any result sets its queries return) rather than one
    per statement, which the client reads and the server writes a fraction as often
    (about half the client's time of an append). Inside, no result is written to the
    client, so nothing the statements do depends on the client still reading. The
    final result counts the rows the statements changed in total, as the results of
    the separate statements add up to. MySQL has no such statement; a script stays as
    it is there.
    """
    if ";" not in sql or "mariadb" not in version.lower():
        return sql
    return f"BEGIN NOT ATOMIC {sql}; END"


_ROUTINES_SQL = (
    "SELECT COUNT(*) FROM information_schema.routines WHERE routine_schema = DATABASE() "
    f"AND routine_type = 'PROCEDURE' AND routine_name IN {ROUTINE_NAMES}"
)
"""How many of the append procedures this connection's user may see (and so call)."""


def _calls_routines(version: str, visible: int, conn: Any = None) -> bool:
    """Whether one-message appends CALL their stored procedures (see `routine_call`).

    On MariaDB only, where a CALL's answer counts the rows its statements changed, as
    the script's does (MySQL's counts the last statement's alone), and only if this
    user may see them: a user granted no more than SELECT, INSERT, UPDATE and DELETE
    (a schema applied by hand, `migrate=false`) runs the scripts. So does a store whose
    CALL the server refused later (`_refused`), and one whose driver's connection `conn`
    lacks what `_call` reads an answer with (`_reads_answers`).
    """
    return (
        "mariadb" in version.lower()
        and visible == len(ROUTINE_NAMES)
        and (conn is None or _reads_answers(conn))
    )


_ANSWER_PARTS = (
    "_execute_command",
    "_read_packet",
    "server_status",
    "_rfile",
    "_sock",
    "_read_timeout",
    "_next_seq_id",
    "_force_close",
)
"""What of a driver's connection `_call` uses to read an answer: aiomysql's the first
three, PyMySQL's all (see `_payload`)."""


def _reads_answers(conn: Any) -> bool:
    """Whether `_call` can read answers on connections like `conn` (its driver's internals).

    They are not the drivers' public API: a release of PyMySQL or aiomysql that renamed
    one would make every CALL fail. Such a store sends the scripts, through the cursor.
    """
    pymysql_conn = isinstance(conn, pymysql.connections.Connection)
    parts = _ANSWER_PARTS if pymysql_conn else _ANSWER_PARTS[:3]
    return all(hasattr(conn, part) for part in parts)


def _call_query(conn: Any, name: str, values: Sequence[Any], packet: int) -> bytes:
    """The CALL of a procedure (see `routine_call`), its values written in, as sent.

    Written here as `_literal` writes them, not by the driver's `mogrify`: its escaping
    of every value costs a one-message append about a third of the driver's time of it.
    Measured exactly (it is the query, as sent), not bounded as `_fitting` bounds one.

    Raises:
        PayloadTooLarge: If it does not fit in the server's packet; nothing was sent.
    """
    query = f"CALL {name}({', '.join([_literal(conn, v) for v in values])})".encode()
    _check_fits(len(query), packet)
    return query


_COM_QUERY = pymysql.constants.COMMAND.COM_QUERY
_MORE_RESULTS = pymysql.constants.SERVER_STATUS.SERVER_MORE_RESULTS_EXISTS


class _Answer:
    """A CALL's answer read packet by packet, as `_results` reads a cursor's, in less.

    The cursor reads an answer through PyMySQL's result objects, which parse every
    column's definition and convert every value by its type, and the answer's results
    one `nextset` at a time: of a one-message append, as much of the client's CPU as
    the rest of the driver's glue. A procedure's answer (`routine_call`) is known:
    OK packets (their changed rows add up), and result sets of text columns
    (`routine_rows`), read here as text, their definitions skipped unread. `take`
    parses each packet's payload and keeps `server_status` as the driver does (the
    pool and `_literal` read it). The packets are read as the driver reads them: by
    the connection's `_read_packet` (aiomysql), or by `_payload` (PyMySQL).
    """

    __slots__ = ("_columns", "_left", "_step", "changed", "rows")

    def __init__(self) -> None:
        self.changed = 0
        """The rows the statements changed, in total (the OK packets' counts)."""
        self.rows: list[Row] = []
        """The last result set's rows."""
        self._columns = 0
        self._left = 0
        self._step = 0  # 0: a result's first packet; 1: column definitions; 2: rows

    def take(self, conn: Any, data: bytes) -> bool:
        """Read the answer's next packet (its payload); True once it was the last."""
        if not data:
            raise pymysql.err.InternalError("mysql: an empty packet")
        step = self._step
        eof = data[0] == 0xFE and len(data) < 9  # (0xFE also starts a long row)
        if step == 2:
            if not eof:
                self.rows.append(_row(data, self._columns))
                return False
            return self._ended(conn, data[3] | data[4] << 8)  # after the warnings' count
        if step == 1:
            self._left -= 1
            if self._left < 0:  # the EOF packet after the definitions
                if not eof:
                    raise pymysql.err.InternalError("mysql: a malformed result set")
                self._step = 2
            return False
        if data[0] == 0 and len(data) >= 7:  # an OK packet
            changed, at = _number(data, 1)
            _, at = _number(data, at)  # the last insert id
            self.changed += changed or 0
            return self._ended(conn, data[at] | data[at + 1] << 8)
        columns, _ = _number(data, 0)
        if not columns:  # NULL: the server asks for a local file (no procedure does)
            raise pymysql.err.InternalError("mysql: an answer no procedure gives")
        self._columns = self._left = columns
        self._step = 1
        self.rows = []
        return False

    def _ended(self, conn: Any, status: int) -> bool:
        """A result ended with the server's `status`: whether it was the answer's last."""
        conn.server_status = status
        self._step = 0
        return not status & _MORE_RESULTS


def _number(data: bytes, at: int) -> tuple[int | None, int]:
    """The length-encoded integer at `at` (None: NULL), and where what follows starts."""
    first = data[at]
    if first < 0xFB:
        return first, at + 1
    if first == 0xFB:
        return None, at + 1
    size = (2, 3, 8)[first - 0xFC] if first < 0xFF else 0
    if not size or at + 1 + size > len(data):
        raise pymysql.err.InternalError("mysql: a malformed packet")
    return int.from_bytes(data[at + 1 : at + 1 + size], "little"), at + 1 + size


def _row(data: bytes, columns: int) -> Row:
    """A text row's values (NULL: None)."""
    values: list[str | None] = []
    at = 0
    for _ in range(columns):
        size, at = _number(data, at)
        if size is None:
            values.append(None)
            continue
        if at + size > len(data):
            raise pymysql.err.InternalError("mysql: a malformed row")
        values.append(data[at : at + size].decode())
        at += size
    return tuple(values)


_MAX_PACKET = 0xFFFFFF
"""A payload this long goes on in the next packet (`pymysql.connections.MAX_PACKET_LEN`)."""


def _payload(conn: Any) -> bytes:
    """The payload of a PyMySQL connection's next packet, as its `_read_packet` reads it.

    The same reads and checks, in fewer calls and without a packet object (most of the
    client's time of an answer of a few packets): its buffered socket file read as
    `_read_bytes` reads it (a failed or short read closes the connection, as lost),
    the sequence number (a wrong one closes it), payloads over 16 MiB in several
    packets, and an error packet raised as the server's error. The socket's timeout
    must be the read timeout already (see `_first_payload`).
    """
    read = conn._rfile.read
    parts: list[bytes] = []
    while True:
        try:
            header = read(4)
            size = header[0] | header[1] << 8 | header[2] << 16 if len(header) == 4 else -1
            data = read(size) if size > 0 else b""
        except OSError as exc:
            conn._force_close()
            raise _lost(f" ({exc})") from exc
        except BaseException:
            conn._force_close()
            raise
        if size < 0 or len(data) < size:
            conn._force_close()
            raise _lost("")
        if header[3] != conn._next_seq_id:
            conn._force_close()
            if header[3] == 0:  # MariaDB's error packet as it shuts down
                raise _lost("")
            raise pymysql.err.InternalError(
                f"Packet sequence number wrong - got {header[3]} expected {conn._next_seq_id}"
            )
        conn._next_seq_id = (header[3] + 1) % 256
        parts.append(data)
        if size < _MAX_PACKET:
            break
    data = parts[0] if len(parts) == 1 else b"".join(parts)
    if data[:1] == b"\xff":
        pymysql.protocol.MysqlPacket(data, conn.encoding).raise_for_error()
    return data


def _first_payload(conn: Any) -> bytes:
    """The payload of the first packet of an answer to a query `conn` just sent.

    Where the socket's timeout is the connection's read timeout already (PyMySQL sets
    its write timeout before it writes, the same on the pool's connections, see
    `_connect`), `_payload` reads the answer at once; else the connection's
    `_read_packet` sets the read timeout first.
    """
    if conn._sock.gettimeout() == conn._read_timeout:
        return _payload(conn)
    data: bytes = conn._read_packet().get_all_data()
    return data


def _lost(why: str) -> pymysql.err.OperationalError:
    """PyMySQL's error for a connection lost while reading an answer."""
    text = f"Lost connection to MySQL server during query{why}"
    return pymysql.err.OperationalError(pymysql.constants.CR.CR_SERVER_LOST, text)


_REFUSED = {1305, 1318, 1370}
"""The server has no such procedure, not with these parameters, or will not let this
user run it: it refused the CALL before running anything (see `_refused`)."""


def _refused(exc: BaseException) -> bool:
    """Whether a CALL failed because the server would not run the procedure at all.

    Then nothing ran (a procedure dropped, or its EXECUTE revoked, after the store
    started): the driver sends the script instead, from then on.
    """
    return isinstance(exc, pymysql.err.Error) and bool(exc.args) and exc.args[0] in _REFUSED


_PREPARED_MAX = 32
"""The most statements one connection keeps prepared (`max_prepared_stmt_count` bounds
them all on the server, 16,382 by default)."""


def _prepared_name(
    conn: Any, sql: str, params: Sequence[Any], version: str, packet: int
) -> tuple[str, bool] | None:
    """The name a statement runs under as a prepared statement of `conn`, and whether new.

    MariaDB parses a statement, resolves its names and sets up its query blocks anew on
    every plain query: for the store's path read (`MySQLDialect.head_and_document_read`)
    about a quarter of the server's time (its profile), more than reading its rows. Prepared
    once per connection, each read is a short `EXECUTE ... USING` of its values (MariaDB
    takes literals there; MySQL only user variables, so it keeps plain queries). Only one
    statement is prepared, not a script, and none with a literal `?` or `%` (a marker, or
    the driver's escape of one), at most `_PREPARED_MAX` per connection, and only with
    values that clearly fit in the server's packet (else the plain query measures them).
    None: run it as a plain query.
    """
    prepared = _statements(conn)
    name = prepared.get(sql)
    if name == "":  # the server would not prepare it (see `_not_prepared`)
        return None
    new = name is None
    if name is None:
        if ";" in sql or "?" in sql or "%%" in sql or len(prepared) >= _PREPARED_MAX:
            return None
        if "mariadb" not in version.lower():
            return None
        name = f"sessionary_{len(prepared)}"
    if packet and _size_bound(name, params) + 32 >= packet:
        return None
    return name, new


def _prepare(name: str, sql: str) -> tuple[str, tuple[str]]:
    """The `PREPARE` of a statement written for the driver (`%s` markers) under `name`."""
    return f"PREPARE {name} FROM %s", (sql.replace("%s", "?"),)


_UNPREPARED = {1295, 1461}
"""The server cannot prepare this statement, or its `max_prepared_stmt_count` (over all
its clients) is reached: the statement runs as a plain query instead."""


def _not_prepared(conn: Any, sql: str, exc: BaseException) -> tuple[str, bool] | None:
    """After a failed `PREPARE`: None, for plain queries of `sql` on `conn` from now on.

    Only where the server would not prepare it (`_UNPREPARED`); any other failure is
    raised, as the plain query would fail as well.
    """
    if not (exc.args and exc.args[0] in _UNPREPARED):
        raise exc
    _statements(conn)[sql] = ""
    return None


def _statements(conn: Any) -> dict[str, str]:
    """The statements prepared on a connection (by their SQL), their names; kept on it."""
    found: dict[str, str] = conn.__dict__.setdefault("_sessionary_prepared", {})
    return found


_NO_BACKSLASH_ESCAPES = pymysql.constants.SERVER_STATUS.SERVER_STATUS_NO_BACKSLASH_ESCAPES
"""The server's `sql_mode` has NO_BACKSLASH_ESCAPES: a quote is escaped by doubling it."""


_ESCAPES = (
    ("\\", "\\\\"),
    ("\0", "\\0"),
    ("\n", "\\n"),
    ("\r", "\\r"),
    ("\x1a", "\\Z"),
    ("'", "\\'"),
    ('"', '\\"'),
)
"""What the driver escapes in text, and how, the backslash first (see `_literal`)."""


def _literal(conn: Any, value: Any) -> str:
    """A value as the driver escapes it into a query (bytes as a hex literal).

    Integers and text are written here directly: the driver escapes text one character
    at a time (`str.translate` over a table), a dozen microseconds for a message's body,
    where a `str.replace` per character to escape scans it in C, and only for the
    characters the text holds (a test for one is a fraction of a replace: a message's
    search text holds none, its JSON body only quotes). The same characters get the
    same escapes (NUL, line ends, ^Z, backslash first, quotes); None is NULL.
    """
    kind = type(value)
    if kind is str and not conn.server_status & _NO_BACKSLASH_ESCAPES:
        for char, escape in _ESCAPES:
            if char in value:  # a scan in C; most characters occur in no value
                value = value.replace(char, escape)
        return f"'{value}'"
    if kind is int:
        return str(value)
    if kind is bool:
        return "1" if value else "0"
    if value is None:
        return "NULL"
    if kind is bytes or kind is bytearray:
        return f"X'{value.hex()}'"
    return str(conn.escape(value))


def _execute_sql(conn: Any, name: str, params: Sequence[Any]) -> str:
    """The `EXECUTE` of a prepared statement with its values as literals."""
    if not params:
        return f"EXECUTE {name}"
    return f"EXECUTE {name} USING {', '.join([_literal(conn, v) for v in params])}"


_TEXTS = (str, bytes, bytearray)
"""What `_size_bound` measures (a tuple: `isinstance` takes it sooner than a union)."""


def _size_bound(sql: str, args: Sequence[Any]) -> int:
    """At least a statement's bytes: a character takes at most 4, escaped or in UTF-8."""
    chars = len(sql) + sum([len(a) for a in args if isinstance(a, _TEXTS)])
    return 1 + 4 * chars + 32 * len(args)


def _results(cursor: Any) -> tuple[list[Row], int]:
    """A request's last result's rows, and the rows all its statements changed, in total."""
    rows: list[Row] = []
    changed = 0
    while True:
        if cursor.description is None:
            changed += cursor.rowcount
        else:
            rows = list(cursor.fetchall())
        if not cursor.nextset():
            return rows, changed


async def _async_results(cursor: Any) -> tuple[list[Row], int]:
    """`_results` on aiomysql's cursor."""
    rows: list[Row] = []
    changed = 0
    while True:
        if cursor.description is None:
            changed += cursor.rowcount
        else:
            rows = list(await cursor.fetchall())
        if not await cursor.nextset():
            return rows, changed


class _Cursor(aiomysql.Cursor):  # type: ignore[misc]
    """aiomysql's cursor, sending binary parameters as hex literals.

    aiomysql 0.3 escapes bytes with a PyMySQL helper that PyMySQL 1.2 replaced by a
    placeholder string, so any bytes parameter failed ("'str' object is not callable").
    """

    def _escape_args(self, args: Any, conn: Any) -> Any:
        if not isinstance(args, tuple):
            return super()._escape_args(args, conn)
        return tuple(
            f"X'{arg.hex()}'" if isinstance(arg, bytes | bytearray) else conn.escape(arg)
            for arg in args
        )


class _AsyncTransaction:
    """A transaction's statements; each first renews the deadline on its answer."""

    __slots__ = ("_cursor", "_packet", "_renew")

    def __init__(self, cursor: aiomysql.Cursor, renew: Callable[[], None], packet: int) -> None:
        self._cursor = cursor
        self._renew = renew
        self._packet = packet

    def _args(self, sql: str, params: Sequence[Any]) -> str:
        self._renew()
        return _fitting(self._cursor, sql, params, self._packet)

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return int(await self._cursor.execute(self._args(sql, params)))

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        await self._cursor.execute(self._args(sql, params))
        row: Row | None = await self._cursor.fetchone()
        return row

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        await self._cursor.execute(self._args(sql, params))
        return list(await self._cursor.fetchall())

    async def insert(self, sql: str, params: Sequence[Any], key: str) -> int:
        del key  # the AUTO_INCREMENT column
        await self._cursor.execute(self._args(sql, params))
        return int(self._cursor.lastrowid)

    async def fetch_each(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[list[Row]]:
        return [await self.fetchall(sql, params) for sql, params in statements]


def _unbounded() -> None:
    """Migrations run without the request bound (see `_waits`)."""


async def _aconnect(options: dict[str, Any], where: str) -> Any:
    """An aiomysql connection, its greeting and login included, within `connect_timeout`.

    aiomysql bounds only the TCP connect: a peer that accepts and then says nothing
    would hold the handshake forever. A connection given up half made is closed (aiomysql
    closes one cancelled while it reads; this covers the other waits too).

    Raises:
        StoreUnavailable: If no connection could be made (see `connect_error`).
    """
    conn = aiomysql.Connection(**options)
    try:
        async with asyncio.timeout(options["connect_timeout"]):
            await conn._connect()
    except BaseException as exc:
        conn.close()
        if isinstance(exc, Exception):
            raise connect_error(where, exc) from exc
        raise
    _insist_on_tls(conn, options, where)
    return conn


async def _undo(conn: Any, exc: BaseException) -> None:
    """After a unit of work failed with `exc`: roll it back, on a connection still in step.

    A wait cut short (the deadline passed, the call was cancelled) leaves the
    connection in the middle of an answer, which nothing may read on, nor send a
    ROLLBACK: it is closed instead (the server rolls back what it had begun).
    """
    if isinstance(exc, asyncio.CancelledError | TimeoutError):
        conn.close()
        return
    with contextlib.suppress(*_ERRORS):
        await conn.rollback()


class _AsyncPool:
    """At most `size` aiomysql connections, on the driver's loop; the twin of `_Pool`.

    Written here rather than aiomysql's pool, which made each new connection while it
    held the lock every caller takes, with its handshake unbounded: after a server went
    silent, every later call waited `POOL_WAIT` for a connection instead of failing
    within `connect_timeout`. Here a new connection is made by the caller that needs
    it, within `connect_timeout` (`_aconnect`); a caller finds the pool full only when
    `size` connections are out, and then waits, in turn, at most `POOL_WAIT` for one to
    be given back (the slot passes straight to it). Only the driver's loop touches it.
    """

    def __init__(self, options: dict[str, Any], size: int, where: str) -> None:
        self._options = options
        self._where = where
        self._size = size
        self._out = 0
        """Connections taken and not given back (or slots taken to make one)."""
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._idle: list[tuple[float, Any]] = []
        self.closed = False

    async def take(self) -> Any:
        """A connection for one caller alone, until it `give`s it back."""
        if self.closed:
            raise Closed(f"{self._where}: the store is closed")
        if self._out < self._size:
            self._out += 1
        else:
            await self._wait()
        found = self._idle.pop() if self._idle else None
        if found is not None and time.monotonic() - found[0] <= _IDLE_CHECK:
            reader = found[1]._reader
            # The server's goodbye, read by the loop: its close (MySQL 8 first sends an
            # error, which `at_eof` does not see past; aiomysql's reader notes the EOF).
            if not (reader.at_eof() or getattr(reader, "eof_received", False)):
                return found[1]
            found[1].close()
            found = None
        try:
            if self.closed:
                raise Closed(f"{self._where}: the store is closed")
            return await self._checked(found)
        except BaseException:
            self._release()
            raise

    async def _wait(self) -> None:
        """Wait, in turn, for a slot `give` hands over; or fail after `POOL_WAIT` s."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(max(POOL_WAIT, self._options["connect_timeout"])):
                await waiter
        except BaseException as exc:
            if waiter.done() and not waiter.cancelled():  # handed a slot as it gave up
                self._release()
            if isinstance(exc, TimeoutError):
                raise _busy() from None
            raise

    async def _checked(self, found: tuple[float, Any] | None) -> Any:
        """An idle connection, pinged (it was idle long), or else a new one."""
        if found is not None:
            conn = found[1]
            try:
                async with asyncio.timeout(self._options["connect_timeout"]):
                    await conn.ping(reconnect=False)
                return conn
            except _ERRORS:  # gone while idle: a new one, connected within connect_timeout
                conn.close()
        return await _aconnect(self._options, self._where)

    def give(self, conn: Any) -> None:
        """Take back a connection from `take`: kept if still open, for the next caller."""
        # A failed unit of work was rolled back; a connection left mid-answer is closed.
        if self.closed:
            conn.close()
        elif not conn.closed:
            self._idle.append((time.monotonic(), conn))
        self._release()

    def _release(self) -> None:
        """Give back a slot: to the first caller still waiting, else to the pool."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._out -= 1

    async def close(self) -> None:
        """Close the idle connections (each says goodbye, briefly); later `take`s fail.

        Each is waited for until its socket is closed: a TLS connection's closing is an
        exchange of its own, which a loop stopped in the middle leaves with its socket open.
        """
        self.closed = True
        idle, self._idle = self._idle, []
        for _, conn in idle:
            writer = conn._writer
            with contextlib.suppress(Exception):
                async with asyncio.timeout(_QUIT_WAIT):
                    await conn.ensure_closed()
                    if writer is not None:
                        await writer.wait_closed()
            conn.close()


class AsyncMySQLDriver:
    """aiomysql connections on one database, in a pool (`_AsyncPool`).

    Args:
        url: `mysql://user:password@host:port/database`.
        pool_size: The most connections the pool opens.
        connect_timeout: Seconds to wait for a connection.
        timeout: Seconds one request may wait for its answer (see the module).
    """

    unlocks_early = False  # see `AsyncDriver.unlocks_early`

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 10,
        connect_timeout: float = CONNECT_TIMEOUT,
        timeout: float = REQUEST_TIMEOUT,
        unix_socket: str | None = None,
        ssl_mode: str | None = None,
        ssl_ca: str | None = None,
        ssl_cert: str | None = None,
        ssl_key: str | None = None,
    ) -> None:
        self._where = redact(url)
        tls = tls_context(ssl_mode, ssl_ca, ssl_cert, ssl_key, self._where)
        if tls is None and ssl_mode != "disabled":  # aiomysql tries no TLS unasked
            tls = opportunistic_tls()
        self._options = connect_options(url, connect_timeout, unix_socket=unix_socket, tls=tls)
        self._size = max(1, pool_size)
        self._timeout = timeout
        self._pool = _AsyncPool(self._options, self._size, self._where)
        self._lock = asyncio.Lock()
        self._started = False
        self._packet = 0
        """The server's `max_allowed_packet`, read at `start`."""
        self._version = ""
        """The server's `VERSION()`, read at `start`."""
        self._routines = False
        """Whether one-message appends CALL their procedures, found at `start`."""

    async def start(self, setup: Callable[[_AsyncTransaction], Awaitable[None]]) -> None:
        """Run `setup` (the migrations) on a first connection, then open the pool."""
        async with self._lock:
            if self._pool.closed:
                raise Closed(f"{self._where}: the store is closed")
            if self._started:
                return
            conn = await _aconnect(self._options, self._where)
            try:
                async with conn.cursor(_Cursor) as cursor:
                    await cursor.execute("SELECT VERSION(), @@max_allowed_packet")
                    version, self._packet = await cursor.fetchone()
                    self._version = version
                    self._options["init_command"] = session_setup(version, self._timeout)
                    await setup(_AsyncTransaction(cursor, _unbounded, self._packet))
                    await cursor.execute(_ROUTINES_SQL)
                    visible = (await cursor.fetchone())[0]
                    self._routines = _calls_routines(version, visible, conn)
            except _ERRORS as exc:
                raise store_error(self._where, exc) from exc
            finally:
                conn.close()
            self._started = True

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[Any]:
        """A pooled connection, taken (or made) as `_AsyncPool.take` says."""
        if not self._started:
            raise Closed(f"{self._where}: the store is closed")
        conn = await self._pool.take()
        try:
            yield conn
        finally:
            self._pool.give(conn)

    async def run_alone(
        self, sql: str, params: Sequence[Any], unlock_early: bool = False
    ) -> tuple[list[Row], int]:
        """Run a script that is a transaction of its own (`unlock_early` changes nothing).

        Returns its last result's rows and the rows its statements changed, in total. If
        a statement fails, the server runs none after it: the open transaction is rolled
        back here.
        """
        if self._routines and (found := routine_call(sql, params)) is not None:
            answer = await self._call(*found)
            if answer is not None:
                return routine_rows(answer.rows), answer.changed
        try:
            async with self._connection() as conn, deadline(self._timeout + GRACE):
                try:
                    async with conn.cursor(_Cursor) as cursor:
                        prepared = _prepared_name(conn, sql, params, self._version, self._packet)
                        if prepared is not None and prepared[1]:
                            try:
                                await cursor.execute(*_prepare(prepared[0], sql))
                                _statements(conn)[sql] = prepared[0]
                            except pymysql.err.Error as exc:
                                prepared = _not_prepared(conn, sql, exc)
                        if prepared is None:
                            script = _one_statement(sql, self._version)
                            await cursor.execute(_fitting(cursor, script, params, self._packet))
                        else:
                            await cursor.execute(_execute_sql(conn, prepared[0], params))
                        return await _async_results(cursor)
                except BaseException as exc:
                    await _undo(conn, exc)
                    raise
        except _ERRORS as exc:
            raise store_error(self._where, exc) from exc

    async def _call(self, name: str, values: Sequence[Any]) -> _Answer | None:
        """CALL a procedure (see `routine_call`) and read its answer (`_Answer`).

        None: the server refused the CALL before running anything (`_refused`); the
        store sends the scripts from then on. A statement that fails is rolled back, as
        in `run_alone`; a connection left in the middle of an answer (cancelled, timed
        out) is closed, never reused.
        """
        try:
            async with self._connection() as conn, deadline(self._timeout + GRACE):
                query = _call_query(conn, name, values, self._packet)
                try:
                    answer = _Answer()
                    await conn._execute_command(_COM_QUERY, query)
                    while not answer.take(conn, (await conn._read_packet()).get_all_data()):
                        pass
                    return answer
                except pymysql.err.Error as exc:
                    if _refused(exc):
                        self._routines = False
                        return None
                    with contextlib.suppress(*_ERRORS):
                        await conn.rollback()
                    raise
                except BaseException:
                    conn.close()
                    raise
        except _ERRORS as exc:
            raise store_error(self._where, exc) from exc

    @asynccontextmanager
    async def transaction(self, batched: bool = False) -> AsyncIterator[_AsyncTransaction]:
        """One transaction on a pooled connection: commit on success, else roll back."""
        del batched  # every statement is its own round trip here
        try:
            async with self._connection() as conn, deadline(self._timeout + GRACE) as renew:
                renew()
                await conn.begin()
                try:
                    async with conn.cursor(_Cursor) as cursor:
                        yield _AsyncTransaction(cursor, renew, self._packet)
                    renew()
                    await conn.commit()
                except BaseException as exc:
                    await _undo(conn, exc)
                    raise
        except _ERRORS as exc:
            raise store_error(self._where, exc) from exc

    async def close(self) -> None:
        """Close the pool and its idle connections (one in use is closed when given back)."""
        await self._pool.close()


class _Transaction:
    __slots__ = ("_cursor", "_packet")

    def __init__(self, cursor: pymysql.cursors.Cursor, packet: int = 0) -> None:
        self._cursor = cursor
        self._packet = packet

    def _args(self, sql: str, params: Sequence[Any]) -> str:
        return _fitting(self._cursor, sql, params, self._packet)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return int(self._cursor.execute(self._args(sql, params)))

    def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Row | None:
        self._cursor.execute(self._args(sql, params))
        row: Row | None = self._cursor.fetchone()
        return row

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        self._cursor.execute(self._args(sql, params))
        return list(self._cursor.fetchall())

    def insert(self, sql: str, params: Sequence[Any], key: str) -> int:
        del key  # the AUTO_INCREMENT column
        self._cursor.execute(self._args(sql, params))
        return int(self._cursor.lastrowid)

    def fetch_each(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[list[Row]]:
        return [self.fetchall(sql, params) for sql, params in statements]


class _Connection(pymysql.connections.Connection):  # type: ignore[misc]
    """PyMySQL's connection, its opportunistic TLS that of `opportunistic_tls`.

    PyMySQL (1.1.2 and later), given no TLS options, tries TLS wherever the server offers
    it, without verifying the server's certificate, and builds that mode's context anew
    for every connection: `ssl.create_default_context()` loads the system's certificates
    (which that mode never checks against), about 30 ms of CPU, as much as a hundred
    appends. A connection given TLS options gets its own, as before.
    """

    def _create_ssl_ctx(self, sslp: Any) -> Any:
        if sslp:
            return super()._create_ssl_ctx(sslp)
        return opportunistic_tls()


def _connect(
    options: dict[str, Any], timeout: float | None, where: str
) -> pymysql.connections.Connection:
    """A PyMySQL connection whose handshake waits `connect_timeout`, each answer `timeout`.

    PyMySQL has one pair of socket timeouts, for the greeting and login as for what
    follows; they are set to `connect_timeout` to connect, then to `timeout` (None: no
    bound, for migrations).

    Raises:
        StoreUnavailable: If no connection could be made (see `connect_error`).
    """
    bound = options["connect_timeout"]
    try:
        conn = _Connection(**options, read_timeout=bound, write_timeout=bound)
    except Exception as exc:
        raise connect_error(where, exc) from exc
    _insist_on_tls(conn, options, where)
    conn._read_timeout = conn._write_timeout = timeout
    return conn


def _abandon(conn: pymysql.connections.Connection) -> None:
    """Close a connection left in the middle of an answer, which nothing may read on."""
    with contextlib.suppress(Exception):
        conn._force_close()


def _fresh(idle_since: float, conn: pymysql.connections.Connection) -> bool:
    """Whether an idle connection may be handed out as it is, with no ping.

    One idle for `IDLE_LOOK` is looked at (`said_goodbye`: the server closed it, when it
    restarted or reaped idle connections), and one idle for `_IDLE_CHECK` is pinged.
    """
    idle = time.monotonic() - idle_since
    if idle <= IDLE_LOOK:
        return True
    return idle <= _IDLE_CHECK and not said_goodbye(conn._sock.fileno())


class _Pool:
    """At most `size` PyMySQL connections, shared by threads; idle ones are reused.

    The count of connections out and the idle ones are kept under one lock, taken once
    by `take` and once by `give` where a connection is free (a semaphore's `acquire`
    and `release` are Python code around a condition: a few microseconds of every
    statement's client time). A thread finds the pool full only when `size` are out;
    it then waits on the lock's condition, which `give` notifies only while one waits.
    """

    def __init__(self, options: dict[str, Any], size: int, timeout: float, where: str) -> None:
        self._options = options
        self._timeout = timeout
        self._where = where
        self._size = size
        self._lock = threading.Lock()
        self._freed = threading.Condition(self._lock)
        self._out = 0
        """Connections taken and not given back (or slots taken to make one)."""
        self._waiting = 0
        """Threads waiting for a connection to be given back."""
        self._idle: list[tuple[float, pymysql.connections.Connection]] = []
        self.closed = False

    @contextmanager
    def connection(self) -> Iterator[pymysql.connections.Connection]:
        conn = self.take()
        try:
            yield conn
        finally:
            self.give(conn)

    def take(self) -> pymysql.connections.Connection:
        """A connection for this thread alone, until it `give`s it back."""
        if self.closed:
            raise Closed("mysql: the store is closed")
        with self._lock:
            if self._out >= self._size:
                self._wait()
            self._out += 1
            found = self._idle.pop() if self._idle else None
        if found is not None and _fresh(*found):
            return found[1]
        try:
            return self._checked(found)
        except BaseException:
            self._release()
            raise

    def _wait(self) -> None:
        """Wait (the lock held) until fewer than `size` connections are out, or fail."""
        wait = max(POOL_WAIT, self._options["connect_timeout"])
        self._waiting += 1
        try:
            if not self._freed.wait_for(lambda: self._out < self._size, wait):
                raise _busy()
        finally:
            self._waiting -= 1

    def give(self, conn: pymysql.connections.Connection) -> None:
        """Take back a connection from `take`: kept if still open, for the next one."""
        # A failed transaction was rolled back; a broken connection is closed.
        idle = (time.monotonic(), conn) if conn.open else None
        with self._lock:
            if idle is not None:
                self._idle.append(idle)
            self._out -= 1
            if self._waiting:
                self._freed.notify()

    def _release(self) -> None:
        """Give back a slot `take` counted but could not fill."""
        with self._lock:
            self._out -= 1
            if self._waiting:
                self._freed.notify()

    def _checked(
        self, found: tuple[float, pymysql.connections.Connection] | None
    ) -> pymysql.connections.Connection:
        """An idle connection, pinged (idle long, or written to by the server); or a new one."""
        if found is not None:
            conn = found[1]
            try:
                conn.ping(reconnect=False)
                return conn
            except _ERRORS:  # gone while idle: a new one, connected within connect_timeout
                with contextlib.suppress(*_ERRORS):
                    conn.close()
        return _connect(self._options, self._timeout, self._where)

    def close(self) -> None:
        self.closed = True
        with self._lock:
            idle, self._idle = self._idle, []
        for _, conn in idle:
            with contextlib.suppress(*_ERRORS):
                conn.close()


class MySQLDriver:
    """PyMySQL connections in a thread-safe pool; see `AsyncMySQLDriver`."""

    unlocks_early = False  # see `AsyncDriver.unlocks_early`

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 10,
        connect_timeout: float = CONNECT_TIMEOUT,
        timeout: float = REQUEST_TIMEOUT,
        unix_socket: str | None = None,
        ssl_mode: str | None = None,
        ssl_ca: str | None = None,
        ssl_cert: str | None = None,
        ssl_key: str | None = None,
    ) -> None:
        self._where = redact(url)
        tls = tls_context(ssl_mode, ssl_ca, ssl_cert, ssl_key, self._where)
        self._options = connect_options(
            url, connect_timeout, "database", unix_socket=unix_socket, tls=tls
        )
        if ssl_mode == "disabled":  # else PyMySQL tries TLS (see `opportunistic_tls`)
            self._options["ssl_disabled"] = True
        self._timeout = timeout
        self._pool = _Pool(self._options, max(1, pool_size), timeout + GRACE, self._where)
        self._lock = threading.Lock()
        self._started = False
        self._packet = 0
        """The server's `max_allowed_packet`, read at `start`."""
        self._version = ""
        """The server's `VERSION()`, read at `start`."""
        self._routines = False
        """Whether one-message appends CALL their procedures, found at `start`."""

    def start(self, setup: Callable[[_Transaction], None]) -> None:
        """Run `setup` (the migrations) on a first connection, then use the pool."""
        with self._lock:
            if self._pool.closed:
                raise Closed(f"{self._where}: the store is closed")
            if self._started:
                return
            conn = _connect(self._options, None, self._where)
            try:
                with conn.cursor() as cursor:
                    cursor.execute("SELECT VERSION(), @@max_allowed_packet")
                    version, self._packet = cursor.fetchone()
                    self._version = version
                    self._options["init_command"] = session_setup(version, self._timeout)
                    setup(_Transaction(cursor, self._packet))
                    cursor.execute(_ROUTINES_SQL)
                    self._routines = _calls_routines(version, cursor.fetchone()[0], conn)
            except _ERRORS as exc:
                raise store_error(self._where, exc) from exc
            finally:
                with contextlib.suppress(*_ERRORS):
                    conn.close()
            self._started = True

    def run_alone(
        self, sql: str, params: Sequence[Any], unlock_early: bool = False
    ) -> tuple[list[Row], int]:
        """Run a script that is a transaction of its own; see `AsyncMySQLDriver.run_alone`."""
        if self._routines and (found := routine_call(sql, params)) is not None:
            answer = self._call(*found)
            if answer is not None:
                return routine_rows(answer.rows), answer.changed
        try:
            with self._pool.connection() as conn:
                try:
                    with conn.cursor() as cursor:
                        prepared = _prepared_name(conn, sql, params, self._version, self._packet)
                        if prepared is not None and prepared[1]:
                            try:
                                cursor.execute(*_prepare(prepared[0], sql))
                                _statements(conn)[sql] = prepared[0]
                            except pymysql.err.Error as exc:
                                prepared = _not_prepared(conn, sql, exc)
                        if prepared is None:
                            script = _one_statement(sql, self._version)
                            cursor.execute(_fitting(cursor, script, params, self._packet))
                        else:
                            cursor.execute(_execute_sql(conn, prepared[0], params))
                        return _results(cursor)
                except BaseException:
                    with contextlib.suppress(*_ERRORS):
                        conn.rollback()
                    raise
        except _ERRORS as exc:
            raise store_error(self._where, exc) from exc

    def _call(self, name: str, values: Sequence[Any]) -> _Answer | None:
        """CALL a procedure and read its answer; see `AsyncMySQLDriver._call`."""
        pool = self._pool
        try:
            conn = pool.take()
            try:
                query = _call_query(conn, name, values, self._packet)
                try:
                    answer = _Answer()
                    conn._execute_command(_COM_QUERY, query)
                    done = answer.take(conn, _first_payload(conn))
                    while not done:
                        done = answer.take(conn, _payload(conn))
                    return answer
                except pymysql.err.Error as exc:
                    if _refused(exc):
                        self._routines = False
                        return None
                    with contextlib.suppress(*_ERRORS):
                        conn.rollback()
                    raise
                except BaseException:
                    _abandon(conn)
                    raise
            finally:
                pool.give(conn)
        except _ERRORS as exc:
            raise store_error(self._where, exc) from exc

    @contextmanager
    def transaction(self, batched: bool = False) -> Iterator[_Transaction]:
        """One transaction on a pooled connection: commit on success, else roll back."""
        del batched  # every statement is its own round trip here
        try:
            with self._pool.connection() as conn:
                conn.begin()
                try:
                    with conn.cursor() as cursor:
                        yield _Transaction(cursor, self._packet)
                    conn.commit()
                except BaseException:
                    with contextlib.suppress(*_ERRORS):
                        conn.rollback()
                    raise
        except _ERRORS as exc:
            raise store_error(self._where, exc) from exc

    def close(self) -> None:
        """Close the pooled connections."""
        self._pool.close()
