"""The SQLite search index: an FTS5 table kept in step with `messages` in batches.

The index is a contentless FTS5 table over the words of `messages.text`. Appends do not
touch it; a watermark (`search_progress.indexed_upto`) records how far it has caught
up, and `catch_up` indexes everything above it. The engine catches up every
`INDEX_BATCH` messages inside the append that crosses the boundary, and always before a
search runs, so search is complete without an FTS write in every append transaction.
Updates and deletes of messages below the watermark remove (and re-add) their index rows
at once.

The index is given a text's words as `sessionary.query.words` finds them (`index_text`,
also the SQL function `sessionary_words` on every connection), not the text as written.
FTS5's `unicode61` tokenizer knows Unicode 6.1: it takes every codepoint assigned since
(the emoji 🙂, 🤔, 🤖, a skin tone) for a letter, and a combining mark for part of a
word, so it indexed "robot🤖" as one word that the query `robot` never found, and
"postgres 🙂 ready" as three words, no phrase "postgres ready". Given text in which
every such character is a space, it splits out the words a query is split into, and
only folds them (see `_sqlite_schema.TOKENIZER`). The work is done at a catch-up, a
batch at a time, never in the append's own statement. Counted in instructions (valgrind,
2,048 appends of 300 characters, `durability=normal`), an append costs 2.5 % more when
its text is ASCII, which is passed as it is, and 23 % more when it is not (German, or
one message in four with emoji); with the default durability the fsync dwarfs either.

The index only finds candidates: each is checked, ranked and given its snippet in Python
on the message's own text (`stores._textmatch`), as on every store, so the index need
not hold the text. (FTS5's own `snippet()` and `highlight()` take time quadratic in a
row's hits: about 4 seconds for a text holding a word 20,000 times.)
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections.abc import Sequence
from typing import Any

__all__ = [
    "INDEX_BATCH",
    "catch_up",
    "index_pending",
    "index_text",
    "lower_watermark",
    "register_words",
    "reindex",
    "unindex_where",
]

INDEX_BATCH = 256
"""The search index catches up whenever a message's seq is a multiple of this."""


SEPARATORS_ALIKE = "\u00a0-\u00bf\u00d7\u00f7\u2010-\u2027\u2030-\u205e\u3000-\u303f\uff01-\uff65"
"""Non-ASCII characters (a regular expression's class) that split words for `unicode61`
as they do for `query.words`, when they are not letters or digits themselves: Latin-1's
punctuation, general punctuation (dashes, quotes, "…"), CJK and fullwidth punctuation."""
_PRIVATE_USE = "\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"
_SPLIT_APART = re.compile(f"[^\\x00-\\x7f\\w{_PRIVATE_USE}{SEPARATORS_ALIKE}]")
"""A character that is no part of a word and that `unicode61` may take for one: all but
ASCII, letters and digits (`\\w`), private use and `SEPARATORS_ALIKE`.
tests/test_sqlite_words.py checks every codepoint."""


def index_text(text: str) -> str:
    """What the search indexes are given for `text`: its words as `query.words` finds them.

    That is the NFC text with every character of `_SPLIT_APART` made a space: what is
    left of it `unicode61` splits into exactly those words, since it keeps every letter,
    digit and private-use character in a word (see `_sqlite_schema.TOKENIZER`) and
    splits at every other character left. One pass of a regular expression, and no
    list of words, keeps it cheap: ASCII text is its own answer, and a German message of
    300 characters takes 3 to 5 µs (splitting it into words and joining them: 21 to 28).
    """
    if text.isascii():
        return text
    return _SPLIT_APART.sub(" ", unicodedata.normalize("NFC", text))


def register_words(db: sqlite3.Connection) -> None:
    """Give `db` the SQL function `sessionary_words(text)`, which is `index_text`."""
    db.create_function("sessionary_words", 1, index_text, deterministic=True)


def catch_up(db: sqlite3.Connection) -> None:
    """Index every message added since the last catch-up (inside a write transaction)."""
    (upto,) = db.execute("SELECT indexed_upto FROM search_progress").fetchone()
    (top,) = db.execute("SELECT coalesce(max(seq), 0) FROM messages").fetchone()
    if top > upto:
        db.execute(
            "INSERT INTO messages_fts (rowid, text) SELECT seq, sessionary_words(text) "
            "FROM messages "
            "WHERE seq > ? AND seq <= ? AND text != ''",
            (upto, top),
        )
        db.execute("UPDATE search_progress SET indexed_upto = ?", (top,))


def unindex_where(db: sqlite3.Connection, where: str, params: Sequence[Any]) -> None:
    """Remove already indexed messages matching `where` from the search index."""
    db.execute(
        "INSERT INTO messages_fts (messages_fts, rowid, text) "
        "SELECT 'delete', seq, sessionary_words(text) "
        f"FROM messages WHERE {where} AND text != '' "
        "AND seq <= (SELECT indexed_upto FROM search_progress)",
        tuple(params),
    )


def lower_watermark(db: sqlite3.Connection) -> None:
    """After a delete, keep the watermark at or below the highest remaining seq.

    A new message takes seq = max(seq) + 1, which may reuse a deleted one; keeping
    the watermark at or below max(seq) means that message is still above it and
    will be indexed.
    """
    db.execute(
        "UPDATE search_progress SET indexed_upto = "
        "min(indexed_upto, (SELECT coalesce(max(seq), 0) FROM messages))"
    )


def reindex(db: sqlite3.Connection, seq: int, text: str) -> None:
    """Index a message's new text again, if the index had reached it."""
    if text:
        db.execute(
            "INSERT INTO messages_fts (rowid, text) SELECT ?, ? "
            "WHERE ? <= (SELECT indexed_upto FROM search_progress)",
            (seq, index_text(text), seq),
        )


def index_pending(db: sqlite3.Connection) -> bool:
    """Whether messages were added since the search index last caught up."""
    (upto,) = db.execute("SELECT indexed_upto FROM search_progress").fetchone()
    (top,) = db.execute("SELECT coalesce(max(seq), 0) FROM messages").fetchone()
    return bool(top > upto)
