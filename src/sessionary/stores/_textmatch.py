"""Word matching in Python: the query language over a text's words, with a snippet.

The memory store searches this way, and the MySQL dialect re-checks its FULLTEXT
candidates this way, so both give exactly the same hits: whole words (or prefixes),
folded for case and accents as SQLite's unicode61 tokenizer folds them, no stemming.
"""

from __future__ import annotations

import unicodedata

from sessionary.query import Query, Term, words
from sessionary.stores._common import HIGHLIGHT

__all__ = ["fold", "match_text"]


def fold(word: str) -> str:
    """Case- and accent-fold a word, as SQLite's unicode61 tokenizer does by default."""
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _term_hits(term: Term, tokens: list[str]) -> set[int]:
    """Return the token positions where `term` matches."""
    wanted = [fold(w) for w in words(term.text)]
    if not wanted:
        return set()
    found: set[int] = set()
    size = len(wanted)
    for i in range(len(tokens) - size + 1):
        window = tokens[i : i + size]
        head_ok = window[:-1] == wanted[:-1]
        last_ok = window[-1].startswith(wanted[-1]) if term.prefix else window[-1] == wanted[-1]
        if head_ok and last_ok:
            found.update(range(i, i + size))
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


def _snippet(originals: list[str], marked: set[int], width: int = 16) -> str:
    first = min(marked)
    start = max(0, first - width // 4)
    shown = originals[start : start + width]
    out = [
        f"{HIGHLIGHT[0]}{w}{HIGHLIGHT[1]}" if start + i in marked else w
        for i, w in enumerate(shown)
    ]
    prefix = "… " if start > 0 else ""
    suffix = " …" if start + width < len(originals) else ""
    return prefix + " ".join(out) + suffix
