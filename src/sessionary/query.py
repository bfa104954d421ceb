"""The search-query language every backend shares, and its rendering to SQLite FTS5.

A user's query is parsed once into a `Query` (groups of alternative terms, plus exclusions);
each backend renders that structure into its own syntax, so nothing the user types ever
reaches a search engine as an operator.

The language, web-search style:

- ``cat dog``: plain words; every one must match (AND).
- ``"black cat"``: a quoted phrase; its words must appear in this order. A quote left open
  runs to the end of the input.
- ``cat*``: a trailing ``*`` on a single word matches every word starting with ``cat``.
  A ``*`` anywhere else is punctuation.
- ``cat OR dog``: alternatives; ``OR`` must be uppercase and stand alone. A chain
  ``a OR b OR c`` is one group, and OR binds tighter than the implicit AND, so
  ``pet cat OR dog`` means ``pet AND (cat OR dog)``. An ``OR`` with no term on one side
  (leading, trailing, doubled, or next to an exclusion) is ignored.
- ``-cat``, ``-"black cat"``: exclude results that match. An exclusion is never an OR
  alternative: ``a OR -b`` means ``a`` without ``b``.
- Everything else is literal text. Punctuation separates words, and a word that contains
  punctuation is matched as a phrase of its parts: ``foo-bar`` finds "foo bar",
  ``col:term`` finds "col term". SQL, ``NEAR``, ``AND``, ``NOT``, ``^``, ``(``, ``{`` and the
  like have no operator meaning: ``NEAR`` finds the word "near".

Words are runs of letters, digits and private-use characters (Unicode categories ``L*``,
``N*`` and ``Co``, as this Python's `unicodedata` knows them) after NFC normalisation:
everything else, emoji and combining marks included, separates words. Every store's
index is given these words (SQLite's ``unicode61``, whose Unicode 6.1 tables take newer
emoji for letters, is not left to split the text: see `sessionary.stores._sqlite_index`).
Case is kept here; matching folds case and accents and never stems (see
`sessionary.stores._textmatch`, which decides every store's hits).

Limits, the same on every backend: a query is at most `MAX_QUERY_LENGTH` (1,000)
characters and holds at most `MAX_QUERY_TERMS` (32) terms, excluded ones included; a
phrase may hold as many words as that length allows (up to 500). More is `InvalidQuery`.
Every backend searches any query within these limits (MySQL's InnoDB takes a phrase of
at most 128 words, so its dialect splits a longer one); what an index cannot hand over
as a candidate cannot be found (see the store modules and the README).

Examples:
    >>> query = parse_query('pet cat OR dog -"hot dog"')
    >>> [[term.text for term in group] for group in query.groups]
    [['pet'], ['cat', 'dog']]
    >>> query.excluded
    (Term(text='hot dog', prefix=False, phrase=True),)
    >>> to_fts5(query)
    '("pet" AND ("cat" OR "dog")) NOT ("hot dog")'
    >>> to_fts5(parse_query("sess* NEAR(x) col:y"))
    '"sess" * AND "NEAR x" AND "col y"'
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

from sessionary.errors import InvalidQuery

__all__ = [
    "MAX_QUERY_LENGTH",
    "MAX_QUERY_TERMS",
    "Query",
    "Term",
    "is_word_char",
    "parse_query",
    "to_fts5",
    "words",
]

MAX_QUERY_LENGTH = 1000
"""The most characters a search query may have."""
MAX_QUERY_TERMS = 32
"""The most terms (words, phrases, prefixes; excluded ones included) a query may hold."""

# A quoted phrase (optionally negated; an open quote runs to the end), or a run of anything
# but whitespace and quotes. `\s` is Unicode whitespace, the same set as `str.isspace`.
_CHUNK = re.compile(r'(-?)"([^"]*)(?:"|\Z)|([^\s"]+)')
_OR = "OR"
_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")
"""A word of ASCII text: of the ASCII characters, only these are letters or digits."""
_ASCII_SPACED = bytes(c if chr(c).isalnum() and c < 128 else 0x20 for c in range(256))
"""A `bytes.translate` table that turns every ASCII byte but the `_ASCII_WORD` ones into a
space, so that splitting on spaces leaves the words."""
_LETTERS_AND_DIGITS = re.compile(r"[^\W_]+")
"""Runs of letters and digits: `\\w` is `str.isalnum` and `_`, and `isalnum` is exactly the
categories ``L*`` and ``N*`` (tests/test_query.py checks every codepoint)."""
_PRIVATE_USE = re.compile("[\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd]")
"""A private-use character (category ``Co``), which `_LETTERS_AND_DIGITS` leaves out."""


@dataclass(frozen=True, slots=True)
class Term:
    """One thing to match: a word, a phrase, or a word prefix.

    Attributes:
        text: The term's words, joined by single spaces, in the case the user typed them.
            Several words are matched as a phrase.
        prefix: Match any word starting with `text`; only ever set on single-word terms.
        phrase: The term came from quotes (it may still hold a single word).
    """

    text: str
    prefix: bool = False
    phrase: bool = False


@dataclass(frozen=True, slots=True)
class Query:
    """A parsed search query: every group must match, and no exclusion may.

    Attributes:
        groups: The AND of these groups; each group is the OR of its terms.
        excluded: Terms that must not match.
    """

    groups: tuple[tuple[Term, ...], ...]
    excluded: tuple[Term, ...] = ()


def words(text: str) -> list[str]:
    """Split text into words the way the query language (and every store's index) does.

    Args:
        text: Any text.

    Returns:
        The maximal runs of letters, digits and private-use characters of the NFC-normalised
        text, in order and with their case kept.
    """
    if text.isascii():  # already NFC: the runs of `_ASCII_WORD`, found in C in a few passes
        return text.encode().translate(_ASCII_SPACED).decode().split()
    normal = unicodedata.normalize("NFC", text)
    if _PRIVATE_USE.search(normal) is None:  # the usual case, found in C: 3 times as fast
        return _LETTERS_AND_DIGITS.findall(normal)
    return ["".join(run) for keep, run in itertools.groupby(normal, is_word_char) if keep]


def parse_query(
    text: str, *, max_length: int = MAX_QUERY_LENGTH, max_terms: int = MAX_QUERY_TERMS
) -> Query:
    """Parse what a user typed into a `Query`; see the module docstring for the language.

    Args:
        text: The user's query.
        max_length: The most characters `text` may have.
        max_terms: The most terms (positive and excluded) the query may hold.

    Returns:
        The parsed query, with at least one positive term.

    Raises:
        InvalidQuery: `text` is not a str, is too long, holds too many terms, or has no
            word left to match once punctuation and exclusions are set aside.
    """
    if not isinstance(text, str):
        raise InvalidQuery(f"a search query must be a str, not {type(text).__name__}")
    if len(text) > max_length:
        raise InvalidQuery(
            f"a search query may be at most {max_length} characters long, not {len(text)}"
        )
    groups, excluded = _group(_lex(unicodedata.normalize("NFC", text)))
    count = sum(map(len, groups)) + len(excluded)
    if count > max_terms:
        raise InvalidQuery(f"a search query may hold at most {max_terms} terms, not {count}")
    if not groups:
        raise InvalidQuery("a search query needs at least one word to match")
    return Query(tuple(map(tuple, groups)), tuple(excluded))


def to_fts5(query: Query) -> str:
    """Render a query as an SQLite FTS5 ``MATCH`` expression.

    Every term becomes a quoted FTS5 string, so only the operators written here are ever
    operators. FTS5's ``NOT`` is binary, hence the ``(positive) NOT (exclusions)`` shape.
    FTS5 limits neither a phrase's words nor (it flattens them) chains of ``AND`` and
    ``OR``, so every query within `MAX_QUERY_LENGTH` and `MAX_QUERY_TERMS` runs.

    Args:
        query: A query, normally from `parse_query`.

    Returns:
        The expression, to be bound as a parameter of ``MATCH``.

    Raises:
        InvalidQuery: The query has no group, or an empty group.
    """
    if not query.groups or not all(query.groups):
        raise InvalidQuery("a search query needs at least one word to match")
    positive = " AND ".join(map(_fts5_group, query.groups))
    if not query.excluded:
        return positive
    excluded = " OR ".join(map(_fts5_term, query.excluded))
    return f"({positive}) NOT ({excluded})"


def is_word_char(char: str) -> bool:
    """Whether `char` belongs in a word: a letter, a digit or a private-use character."""
    category = unicodedata.category(char)
    return category[0] in "LN" or category == "Co"


def _lex(text: str) -> Iterator[tuple[bool, Term] | str]:
    """Yield `_OR`, or each term with whether it is excluded; terms without words vanish."""
    for match in _CHUNK.finditer(text):
        dash, quoted, bare = match.groups()
        if bare == _OR:
            yield _OR
            continue
        item = _bare_term(bare) if quoted is None else _quoted_term(quoted, bool(dash))
        if item is not None:
            yield item


def _quoted_term(quoted: str, excluded: bool) -> tuple[bool, Term] | None:
    found = words(quoted)
    return (excluded, Term(" ".join(found), phrase=True)) if found else None


def _bare_term(bare: str) -> tuple[bool, Term] | None:
    excluded = bare.startswith("-")
    body = bare[1:] if excluded else bare
    stem = body.rstrip("*")
    found = words(stem)
    if not found:
        return None
    # The `*` must sit right on a word: "foo*" is a prefix, "foo.*" and "foo-bar*" are not.
    prefix = len(found) == 1 and stem != body and is_word_char(stem[-1])
    return excluded, Term(" ".join(found), prefix=prefix)


def _group(items: Iterator[tuple[bool, Term] | str]) -> tuple[list[list[Term]], list[Term]]:
    """Fold the lexed items into OR groups and exclusions; dangling ORs are dropped."""
    groups: list[list[Term]] = []
    excluded: list[Term] = []
    after_term = False  # the last term seen was positive, so an OR may extend its group
    joining = False  # an OR has followed that term
    for item in items:
        if isinstance(item, str):
            joining = after_term
        elif item[0]:
            excluded.append(item[1])
            after_term = joining = False
        else:
            if joining:
                groups[-1].append(item[1])
            else:
                groups.append([item[1]])
            after_term, joining = True, False
    return groups, excluded


def _fts5_group(group: tuple[Term, ...]) -> str:
    if len(group) == 1:
        return _fts5_term(group[0])
    return "(" + " OR ".join(map(_fts5_term, group)) + ")"


def _fts5_term(term: Term) -> str:
    # Re-split the text so a hand-built Term cannot smuggle in a quote or a NUL (which FTS5
    # reads as the end of the string); inner quotes are doubled all the same.
    text = " ".join(words(term.text)).replace('"', '""')
    return f'"{text}" *' if term.prefix else f'"{text}"'
