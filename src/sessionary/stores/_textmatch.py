"""Word matching in Python: the query language over a text's words, with a snippet.

The memory store searches this way, and the MySQL dialect re-checks its FULLTEXT
candidates this way, so both give exactly the same hits: whole words (or prefixes),
folded for case and accents as SQLite's unicode61 tokenizer folds them, no stemming.

Every term is found in time linear in the text's words: a phrase with the
Knuth-Morris-Pratt algorithm over the words, so a long phrase over a long, repetitive text
("0 0 0 …", a log line repeated) costs no more than a short one.

`marked_snippet` makes the same kind of snippet from a text a search engine has
highlighted throughout (SQLite's FTS5 `highlight()`), and `text_snippet` one from a text
no engine highlighted.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator

from sessionary.query import Query, Term, words
from sessionary.stores._common import HIGHLIGHT

__all__ = ["MARKS", "fold", "marked_snippet", "match_text", "text_snippet"]

MARKS = ("\x02", "\x03")
"""What a search engine is asked to put around the words it highlights for
`marked_snippet`: control characters no word holds, and hardly any text."""
_SPLIT_MARKS = re.compile("([\x02\x03])")
_BEFORE = 256
"""Characters before the first highlighted word that `marked_snippet` looks at."""
_AFTER = 4096
"""Characters from the first highlighted word on that `marked_snippet` looks at."""


def fold(word: str) -> str:
    """Case- and accent-fold a word, as SQLite's unicode61 tokenizer does by default."""
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


def _term_hits(term: Term, tokens: list[str]) -> set[int]:
    """Return the token positions where `term` matches."""
    wanted = [fold(w) for w in words(term.text)]
    if not wanted:
        return set()
    found: set[int] = set()
    covered = 0  # matches come in order: each position is added once, however they overlap
    for start in _starts(term, wanted, tokens):
        end = start + len(wanted)
        found.update(range(max(start, covered), end))
        covered = end
    return found


def match_text(query: Query, text: str) -> tuple[int, str]:
    """Score `text` against `query` and mark the matches; (0, "") when it does not match."""
    originals = words(text)
    tokens = [fold(w) for w in originals]
    marked: set[int] = set()
    for group in query.groups:
        group_hits = set().union(*(_term_hits(t, tokens) for t in group))
        if not group_hits:
            return 0, ""
        marked |= group_hits
    if any(_term_hits(t, tokens) for t in query.excluded):
        return 0, ""
    return len(marked), _snippet(originals, marked)


def marked_snippet(text: str) -> str:
    """Return a snippet around the first highlighted word of `text`.

    `text` is a whole text with the words a search matched between the two `MARKS`.
    Only a window of characters around the first of them is read, so the cost past
    finding it is bounded however long the text. The snippet has the shape
    `match_text` gives: words joined by spaces, hits between `HIGHLIGHT` marks, "…"
    where text was left out.
    """
    first = max(text.find(MARKS[0]), 0)
    start = max(first - _BEFORE, 0)
    stop = first + _AFTER
    originals: list[str] = []
    marked: set[int] = set()
    inside = False
    for piece in _SPLIT_MARKS.split(text[start:stop]):
        if piece in MARKS:
            inside = piece == MARKS[0]
            continue
        for word in words(piece):
            if inside:
                marked.add(len(originals))
            originals.append(word)
    # A window's cut may split a word: drop an unmarked word at a cut end.
    if start > 0 and originals and 0 not in marked:
        originals.pop(0)
        marked = {i - 1 for i in marked}
    if stop < len(text) and originals and len(originals) - 1 not in marked:
        originals.pop()
    return _snippet(originals, marked, before=start > 0, after=stop < len(text))


def text_snippet(query: Query, text: str) -> str:
    """Return `match_text`'s snippet of `text`, or its first words if that finds no hit.

    For a text a search engine matched, but whose hits it did not mark: a word it
    matched by its stem alone is no hit here.
    """
    score, snippet = match_text(query, text)
    if score:
        return snippet
    head = text[:_AFTER]
    return _snippet(words(head), set(), after=len(head) < len(text))


def _snippet(
    originals: list[str],
    marked: set[int],
    width: int = 16,
    *,
    before: bool = False,
    after: bool = False,
) -> str:
    """Up to `width` words from a little before the first marked one, hits marked.

    `before` and `after` say that the text goes on beyond `originals` on that side.
    """
    first = min(marked, default=0)
    start = max(0, first - width // 4)
    shown = originals[start : start + width]
    out = [
        f"{HIGHLIGHT[0]}{w}{HIGHLIGHT[1]}" if start + i in marked else w
        for i, w in enumerate(shown)
    ]
    prefix = "… " if start > 0 or before else ""
    suffix = " …" if start + width < len(originals) or after else ""
    return prefix + " ".join(out) + suffix
