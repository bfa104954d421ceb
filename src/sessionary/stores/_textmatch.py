"""Word matching in Python: the one definition of a search hit, its rank and its snippet.

Every searchable store answers a search this way. The memory store matches every message
here; SQLite's FTS5, PostgreSQL's `tsvector` and MySQL's FULLTEXT index only narrow the
messages down to candidates (their indexes hold the same unstemmed, folded words), and
each candidate is checked here on its own text. So every store returns the same hits,
ranks and snippets for the same data:

- a word matches that whole word, case- and accent-folded (`fold`), never stemmed:
  ``deploy`` finds "Deploy" and "déploy", not "deployment";
- ``word*`` matches every word starting with ``word`` (folded, never stemmed);
- a phrase matches its words one after another;
- the rank is the share of the text's words that the query matched, in (0, 1]: higher
  is better, and it means the same on every store;
- the snippet is a window of the text as written (runs of whitespace shown as one
  space, "…" where text was left out), and `TextMatch.spans` are the matched words'
  ``[start, end)`` offsets into it: nothing is marked in-band.

Every term is found in time linear in the text's words: a phrase with the
Knuth-Morris-Pratt algorithm over the words, so a long phrase over a long, repetitive text
("0 0 0 …", a log line repeated) costs no more than a short one.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from sessionary.model import from_micros
from sessionary.query import Query, Term, is_word_char, words
from sessionary.records import DocumentHit, SearchHit

__all__ = [
    "SEARCH_POOL",
    "Spans",
    "TextMatch",
    "best_matches",
    "document_hits",
    "fold",
    "match_text",
    "message_hits",
    "pool_size",
    "word_offsets",
]

SEARCH_POOL = 200
"""The most candidates a store's index hands over for one search: when more messages
match, the hits are ranked among the newest `SEARCH_POOL` of them (on every store)."""

SNIPPET_WORDS = 16
"""The most words a snippet shows."""
SNIPPET_CHARS = 320
"""The most characters of text a snippet shows (a very long word is cut)."""

Spans = tuple[tuple[int, int], ...]
"""``[start, end)`` character offsets into a snippet, in order, never overlapping."""

_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class TextMatch:
    """How a text matched a query: its rank, a snippet of it and the hits in the snippet."""

    rank: float
    snippet: str
    spans: Spans


def fold(word: str) -> str:
    """Case- and accent-fold a word, as SQLite's unicode61 tokenizer does by default."""
    if word.isascii():
        return word.lower()
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _find(pattern: list[str], tokens: list[str]) -> Iterator[int]:
    """Yield, in order, every position where `pattern` starts in `tokens` (KMP)."""
    if len(pattern) == 1:
        only = pattern[0]
        yield from (i for i, token in enumerate(tokens) if token == only)
        return
    fallback = [0] * len(pattern)  # the longest proper prefix that is also a suffix
    k = 0
    for i in range(1, len(pattern)):
        while k and pattern[i] != pattern[k]:
            k = fallback[k - 1]
        if pattern[i] == pattern[k]:
            k += 1
        fallback[i] = k
    k = 0
    for i, token in enumerate(tokens):
        while k and token != pattern[k]:
            k = fallback[k - 1]
        if token == pattern[k]:
            k += 1
            if k == len(pattern):
                yield i - k + 1
                k = fallback[k - 1]


def _starts(term: Term, wanted: list[str], tokens: list[str]) -> Iterable[int]:
    """Return the positions where `term` (its folded words `wanted`) starts."""
    if not term.prefix:
        return _find(wanted, tokens)
    head, last = wanted[:-1], wanted[-1]
    if not head:
        return (i for i, token in enumerate(tokens) if token.startswith(last))
    end = len(head)
    return (
        i for i in _find(head, tokens) if i + end < len(tokens) and tokens[i + end].startswith(last)
    )


def _term_hits(term: Term, tokens: list[str], wanted: list[str] | None = None) -> set[int]:
    """Return the token positions where `term` (its folded words `wanted`) matches."""
    if wanted is None:
        wanted = _wanted(term)
    if not wanted:
        return set()
    found: set[int] = set()
    covered = 0  # matches come in order: each position is added once, however they overlap
    for start in _starts(term, wanted, tokens):
        end = start + len(wanted)
        found.update(range(max(start, covered), end))
        covered = end
    return found


def _wanted(term: Term) -> list[str]:
    return [fold(w) for w in words(term.text)]


def word_offsets(text: str) -> list[tuple[int, int]]:
    """Return the ``[start, end)`` offsets of `text`'s words (as `sessionary.query.words`).

    `text` must already be NFC-normalised for the words to be those `words` finds.
    """
    if text.isascii():
        return [m.span() for m in _ASCII_WORD.finditer(text)]
    out: list[tuple[int, int]] = []
    at = 0
    for keep, run in itertools.groupby(text, is_word_char):
        size = sum(1 for _ in run)
        if keep:
            out.append((at, at + size))
        at += size
    return out


def match_text(query: Query, text: str) -> TextMatch | None:
    """Match `text` against `query`: its rank, snippet and spans, or None if it misses."""
    found = _match(query, text)
    return None if found is None else found.result()


@dataclass(slots=True)
class _Found:
    """A text that matched: enough to rank it, and to cut its snippet only if it is shown."""

    rank: float
    text: str
    marked: set[int]

    def result(self) -> TextMatch:
        snippet, spans = _snippet(self.text, word_offsets(self.text), self.marked)
        return TextMatch(self.rank, snippet, spans)


_Wanted = tuple[tuple[Term, list[str]], ...]
"""Terms, each with its folded words."""
_Compiled = tuple[tuple[_Wanted, ...], _Wanted]
"""A query's groups and exclusions, each term with its folded words."""


def _compile(query: Query) -> _Compiled:
    groups = tuple(tuple((t, _wanted(t)) for t in group) for group in query.groups)
    return groups, tuple((t, _wanted(t)) for t in query.excluded)


def _match(query: Query | _Compiled, text: str) -> _Found | None:
    groups, excluded = _compile(query) if isinstance(query, Query) else query
    if text.isascii():  # folding ASCII is lowering it, which moves no word's bounds
        tokens = words(text.lower())
    else:
        text = unicodedata.normalize("NFC", text)
        tokens = [fold(word) for word in words(text)]
    marked: set[int] = set()
    for group in groups:
        group_hits = set().union(*(_term_hits(t, tokens, w) for t, w in group))
        if not group_hits:
            return None
        marked |= group_hits
    if any(_term_hits(t, tokens, w) for t, w in excluded):
        return None
    return _Found(len(marked) / len(tokens), text, marked)


def best_matches(
    query: Query,
    candidates: Iterable[tuple[Hashable, _T, str]],
    limit: int,
    pool: int | None = None,
) -> list[tuple[_T, TextMatch]]:
    """Check candidates on their text and keep the best `limit`, best first.

    `candidates` are (identity, payload, text) in the store's order (messages newest
    first): a candidate whose identity came before is skipped (one hit per message and
    session), among equal ranks the earlier comes first, and only the first `pool`
    matches (all if None) are ranked.
    """
    seen: set[Hashable] = set()
    found: list[tuple[_T, _Found]] = []
    compiled = _compile(query)
    for identity, payload, text in candidates:
        if identity in seen:
            continue
        seen.add(identity)
        match = _match(compiled, text)
        if match is not None:
            found.append((payload, match))
            if len(found) == pool:
                break
    found.sort(key=lambda item: -item[1].rank)  # stable: ties stay newest first
    return [(payload, match.result()) for payload, match in found[:limit]]


def pool_size(limit: int) -> int:
    """How many candidates a store's index hands over for a search of `limit` hits."""
    return max(SEARCH_POOL, 2 * limit)


def message_hits(
    query: Query,
    rows: Iterable[tuple[str, str, str, int, str]],
    limit: int,
    pool: int | None = None,
) -> list[SearchHit]:
    """The best `limit` hits among candidate messages, newest first.

    Each row is (session id, message id, role, created_us, text).
    """
    candidates = (((r[0], r[1]), r, r[4]) for r in rows)
    return [
        SearchHit(r[0], r[1], r[2], m.snippet, m.rank, from_micros(r[3]), m.spans)
        for r, m in best_matches(query, candidates, limit, pool)
    ]


def document_hits(
    query: Query,
    rows: Iterable[tuple[str, str, int, str]],
    limit: int,
    pool: int | None = None,
) -> list[DocumentHit]:
    """The best `limit` hits among candidate documents, in (namespace, key) order.

    Each row is (namespace, key, version, text) of a document's latest version.
    """
    candidates = (((r[0], r[1]), r, r[3]) for r in rows)
    return [
        DocumentHit(r[0], r[1], m.snippet, m.rank, r[2], m.spans)
        for r, m in best_matches(query, candidates, limit, pool)
    ]


def _snippet(text: str, offsets: list[tuple[int, int]], marked: set[int]) -> tuple[str, Spans]:
    """A window of `text` from a little before its first marked word, and the hits in it."""
    first = min(marked)
    start = max(0, min(first - SNIPPET_WORDS // 4, len(offsets) - SNIPPET_WORDS))
    stop = min(len(offsets), start + SNIPPET_WORDS)
    # Whole whitespace-separated chunks where they are short: "(see", "app.log)".
    left = _widen(text, offsets[start][0], -1) if start else 0
    left = max(left, offsets[first][0] - SNIPPET_CHARS // 4)
    right = _widen(text, offsets[stop - 1][1], 1) if stop < len(offsets) else len(text)
    right = min(right, left + SNIPPET_CHARS)
    window = [
        (max(a, left), min(b, right))
        for a, b in (offsets[i] for i in sorted(marked) if start <= i < stop)
        if a < right and b > left
    ]
    piece, spans = _squeeze(text[left:right], [(a - left, b - left) for a, b in window])
    before = "… " if text[:left].strip() else ""
    after = " …" if text[right:].strip() else ""
    shift = len(before)
    return before + piece + after, tuple((a + shift, b + shift) for a, b in spans)


def _widen(text: str, at: int, step: int, most: int = 24) -> int:
    """Move `at` by `step` over up to `most` characters that are not whitespace."""
    for _ in range(most):
        nxt = at if step > 0 else at - 1
        if not 0 <= nxt < len(text) or text[nxt].isspace():
            break
        at += step
    return at


def _squeeze(piece: str, spans: list[tuple[int, int]]) -> tuple[str, Spans]:
    """Show each run of whitespace in `piece` as one space (none at the ends), moving spans."""
    out: list[str] = []
    land = [0] * (len(piece) + 1)  # land[i]: where piece[i] is in the output
    gap = False
    for i, char in enumerate(piece):
        if char.isspace():
            gap = bool(out)
            land[i] = len(out)
            continue
        if gap:
            out.append(" ")
            gap = False
        land[i] = len(out)
        out.append(char)
    # A span starts and ends on a word character, which is always kept.
    return "".join(out), tuple((land[a], land[b - 1] + 1) for a, b in spans)
