"""The search-query language: parsing, FTS5 rendering, and behaviour on a real FTS5 table."""

from __future__ import annotations

import doctest
import itertools
import sqlite3
import unicodedata
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionary import query as query_module
from sessionary.errors import InvalidInput, InvalidQuery
from sessionary.query import Query, Term, is_word_char, parse_query, to_fts5, words
from sessionary.stores._mysql_sql import MySQLDialect, _token
from sessionary.stores._textmatch import _term_hits, fold, match_text

ROWS = {
    1: "the quick brown fox jumps",
    2: "brown quick fox",
    3: "session store design",
    4: "near the river",
    5: "cats and dogs",
    6: "fish only",
    7: "naïve café crème",
    8: "日本語 テキスト 🙂 emoji",
}


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61')")
    conn.executemany("INSERT INTO t(rowid, body) VALUES (?, ?)", ROWS.items())
    yield conn
    conn.close()


def search(conn: sqlite3.Connection, text: str) -> set[int]:
    expression = to_fts5(parse_query(text))
    return {row[0] for row in conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,))}


def w(text: str, *, prefix: bool = False) -> Term:
    return Term(text, prefix=prefix)


def p(text: str) -> Term:
    return Term(text, phrase=True)


def test_public_names() -> None:
    assert sorted(query_module.__all__) == [
        "MAX_QUERY_LENGTH",
        "MAX_QUERY_TERMS",
        "Query",
        "Term",
        "is_word_char",
        "parse_query",
        "to_fts5",
        "words",
    ]


def test_module_examples() -> None:
    assert doctest.testmod(query_module).failed == 0


# --- tokenizer ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("Hello, World!", ["Hello", "World"]),
        ("foo-bar_baz", ["foo", "bar", "baz"]),
        ("C++ and C#", ["C", "and", "C"]),
        ("v2.0", ["v2", "0"]),
        ("日本語", ["日本語"]),
        ("a\x00b", ["a", "b"]),
        ("🙂 emoji🙂x", ["emoji", "x"]),
        ("nai\u0308ve", ["naïve"]),  # decomposed accents are composed, not split
        ("\ue000x", ["\ue000x"]),  # private use is a word character
        ("x\ud800y", ["x", "y"]),  # a lone surrogate is a separator
        ("Ⅻ ½ ٣", ["Ⅻ", "½", "٣"]),  # every N* category counts
    ],
)
def test_words(text: str, expected: list[str]) -> None:
    assert words(text) == expected


def test_the_regular_expressions_of_words_agree_with_is_word_char_everywhere() -> None:
    """`words` finds runs of `is_word_char` with `re` (in C); both must say the same."""
    every = [chr(code) for code in range(0x110000)]
    apart = "\x00".join(every)  # one character a match: NUL is no word character
    found = {*query_module._LETTERS_AND_DIGITS.findall(apart)}
    found |= {*query_module._PRIVATE_USE.findall(apart)}
    assert found == {char for char in every if is_word_char(char)}


# --- parsing -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cat", Query(((w("cat"),),))),
        ("  cat   Dog ", Query(((w("cat"),), (w("Dog"),)))),
        ('"black cat"', Query(((p("black cat"),),))),
        ('"black   cat!!"', Query(((p("black cat"),),))),
        ('"open phrase', Query(((p("open phrase"),),))),
        ('a "b c', Query(((w("a"),), (p("b c"),)))),
        ('"cat"', Query(((p("cat"),),))),
        ('"cat*"', Query(((p("cat"),),))),
        ("cat*", Query(((w("cat", prefix=True),),))),
        ("cat**", Query(((w("cat", prefix=True),),))),
        ("*cat", Query(((w("cat"),),))),
        ("c*at", Query(((w("c at"),),))),
        ("cat.*", Query(((w("cat"),),))),
        ("foo-bar*", Query(((w("foo bar"),),))),
        ("foo-bar", Query(((w("foo bar"),),))),
        ("cat OR dog", Query(((w("cat"), w("dog")),))),
        ("a OR b OR c", Query(((w("a"), w("b"), w("c")),))),
        ("cat dog OR fish", Query(((w("cat"),), (w("dog"), w("fish"))))),
        ("a OR b c OR d", Query(((w("a"), w("b")), (w("c"), w("d"))))),
        ('a OR "b c" OR d*', Query(((w("a"), p("b c"), w("d", prefix=True)),))),
        ("cat or dog", Query(((w("cat"),), (w("or"),), (w("dog"),)))),
        ("cat Or dog", Query(((w("cat"),), (w("Or"),), (w("dog"),)))),
        ("OR cat", Query(((w("cat"),),))),
        ("cat OR", Query(((w("cat"),),))),
        ("cat OR OR dog", Query(((w("cat"), w("dog")),))),
        ("cat OR ! dog", Query(((w("cat"), w("dog")),))),
        ("cat -dog", Query(((w("cat"),),), (w("dog"),))),
        ('cat -"hot dog"', Query(((w("cat"),),), (p("hot dog"),))),
        ("cat -dog*", Query(((w("cat"),),), (w("dog", prefix=True),))),
        ("cat -foo-bar", Query(((w("cat"),),), (w("foo bar"),))),
        ("a OR -b", Query(((w("a"),),), (w("b"),))),
        ("a OR -b OR c", Query(((w("a"),), (w("c"),)), (w("b"),))),
        ("-b a", Query(((w("a"),),), (w("b"),))),
        ("cat - dog", Query(((w("cat"),), (w("dog"),)))),
        ("well-known", Query(((w("well known"),),))),
        ("-OR cat", Query(((w("cat"),),), (w("OR"),))),
        ('x"y z"', Query(((w("x"),), (p("y z"),)))),
        ('x-"y z"', Query(((w("x"),), (p("y z"),)))),
    ],
)
def test_parse(text: str, expected: Query) -> None:
    assert parse_query(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("NEAR(a b)", Query(((w("NEAR a"),), (w("b"),)))),
        ("a AND b", Query(((w("a"),), (w("AND"),), (w("b"),)))),
        ("a NOT b", Query(((w("a"),), (w("NOT"),), (w("b"),)))),
        ("col:term", Query(((w("col term"),),))),
        ("^start", Query(((w("start"),),))),
        ("{a b}: c", Query(((w("a"),), (w("b"),), (w("c"),)))),
        ("a + b", Query(((w("a"),), (w("b"),)))),
        ("'; DROP TABLE t; --", Query(((w("DROP"),), (w("TABLE"),), (w("t"),)))),
        ("1' OR '1'='1", Query(((w("1"), w("1 1")),))),  # a real OR, of literals
        ('" OR 1=1 --', Query(((p("OR 1 1"),),))),
        ("a\x00b", Query(((w("a b"),),))),
        ("🙂 smile", Query(((w("smile"),),))),
        ("cafe\u0301", Query(((w("café"),),))),
    ],
)
def test_hostile_text_is_literal(text: str, expected: Query) -> None:
    assert parse_query(text) == expected


NOTHING_TO_MATCH = ["", " ", '"', '""', "*", "-", "OR", "OR OR", "-cat", '-"hot dog"', "🙂", "\x00"]


@pytest.mark.parametrize("text", [*NOTHING_TO_MATCH, "!!! ... ???", "-a -b OR -c"])
def test_nothing_to_match(text: str) -> None:
    with pytest.raises(InvalidQuery, match="at least one word to match"):
        parse_query(text)


@pytest.mark.parametrize("value", [None, b"cat", 42, ["cat"], Query(((w("cat"),),))])
def test_non_str_is_rejected(value: object) -> None:
    with pytest.raises(InvalidQuery, match=type(value).__name__):
        parse_query(value)  # type: ignore[arg-type]


def test_length_limit() -> None:
    assert parse_query("a" * 1000) == Query(((w("a" * 1000),),))
    with pytest.raises(InvalidQuery, match="at most 1000 characters"):
        parse_query("a" * 1001)
    with pytest.raises(InvalidQuery, match="at most 5 characters"):
        parse_query("abcdef", max_length=5)
    assert parse_query("a b c", max_length=5).groups == ((w("a"),), (w("b"),), (w("c"),))


def test_very_long_input_is_refused_quickly() -> None:
    with pytest.raises(InvalidQuery):
        parse_query('"(' * 5_000_000)


def test_term_limit_counts_alternatives_and_exclusions() -> None:
    assert len(parse_query(" ".join(["x"] * 32)).groups) == 32
    with pytest.raises(InvalidQuery, match="at most 32 terms, not 33"):
        parse_query(" ".join(["x"] * 33))
    with pytest.raises(InvalidQuery, match="at most 3 terms, not 4"):
        parse_query("a OR b -c -d", max_terms=3)
    # Dropped punctuation and ORs are not terms.
    assert parse_query("a OR b ! ? -", max_terms=2).groups == ((w("a"), w("b")),)


def test_invalid_query_is_a_value_error() -> None:
    assert issubclass(InvalidQuery, InvalidInput)
    with pytest.raises(ValueError):
        parse_query("")


# --- FTS5 rendering ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cat", '"cat"'),
        ("cat dog", '"cat" AND "dog"'),
        ('"black cat"', '"black cat"'),
        ("cat*", '"cat" *'),
        ("cat OR dog", '("cat" OR "dog")'),
        ("pet cat OR dog*", '"pet" AND ("cat" OR "dog" *)'),
        ("cat -dog", '("cat") NOT ("dog")'),
        ('a OR b -c -"d e" -f*', '(("a" OR "b")) NOT ("c" OR "d e" OR "f" *)'),
        ("NEAR(a b)", '"NEAR a" AND "b"'),
    ],
)
def test_to_fts5(text: str, expected: str) -> None:
    assert to_fts5(parse_query(text)) == expected


def test_to_fts5_is_safe_for_hand_built_terms() -> None:
    query = Query(((Term('say "hi"\x00 NEAR'), Term("x", prefix=True)),), (Term(""),))
    assert to_fts5(query) == '(("say hi NEAR" OR "x" *)) NOT ("")'


@pytest.mark.parametrize("query", [Query(()), Query(((),)), Query((), (w("x"),))])
def test_to_fts5_refuses_a_query_with_nothing_to_match(query: Query) -> None:
    with pytest.raises(InvalidQuery):
        to_fts5(query)


# --- behaviour on a real FTS5 table ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("quick fox", {1, 2}),
        ("Quick FOX", {1, 2}),
        ("quick river", set()),
        ('"quick brown"', {1}),
        ('"brown quick"', {2}),
        ("quick-brown", {1}),
        ("sess*", {3}),
        ("sess", set()),
        ("dogs OR fish", {5, 6}),
        ("cats dogs OR fish", {5}),
        ("river OR session OR only", {3, 4, 6}),
        ("brown -jumps", {2}),
        ('fox -"quick brown"', {2}),
        ("fox -brown", set()),
        ("fox -river -session", {1, 2}),
        ("NEAR", {4}),
        ("AND", {5}),
        ("NOT", set()),
        ("river NEAR", {4}),
        ("NEAR(river)", set()),  # the phrase "near river", not NEAR()
        ("body:river", set()),
        ("^near", {4}),
        ("fox OR", {1, 2}),
        ("naive", {7}),
        ("café", {7}),
        ("cre\u0300me", {7}),
        ("日本語", {8}),
        ("🙂 emoji", {8}),
    ],
)
def test_fts5_semantics(fts: sqlite3.Connection, text: str, expected: set[int]) -> None:
    assert search(fts, text) == expected


def test_raw_fts5_would_have_treated_these_as_operators(fts: sqlite3.Connection) -> None:
    # The contrast that makes the literal results above meaningful.
    raw = "SELECT rowid FROM t WHERE t MATCH ?"
    assert {r[0] for r in fts.execute(raw, ("body:river",))} == {4}
    assert {r[0] for r in fts.execute(raw, ("NEAR(river)",))} == {4}
    for text in ('"open', "a AND", "(", "-cat", "*", "x:y"):
        with pytest.raises(sqlite3.OperationalError):
            fts.execute(raw, (text,)).fetchall()
        check_query_runs(fts, text)


# --- properties --------------------------------------------------------------------------

_SYNTAX = [
    "OR", "or", "-", "*", '"', "'", "(", ")", "{", "}", ":", "^", "+", ";", "--", "/*",
    "AND", "NOT", "NEAR", "NEAR(", "body:", "\x00", "\\", "=", ",", "🙂", "\u0301", "\ufeff",
]  # fmt: skip
_WORD = st.text(st.characters(categories=("L", "N", "Co")), min_size=1, max_size=8)
_ATOM = st.one_of(st.sampled_from(_SYNTAX), _WORD, st.text(max_size=3))
_PIECE = st.builds(
    lambda head, atom, tail: head + atom + tail,
    st.sampled_from(["", "", "-", '"', '-"']),
    _ATOM,
    st.sampled_from(["", "", "*", '"', "**", '*"']),
)
_GRAMMAR = st.builds(
    lambda pieces, sep: sep.join(pieces),
    st.lists(_PIECE, max_size=16),
    st.sampled_from([" ", " ", "", "\t", "\u3000"]),
)


def check_query_runs(conn: sqlite3.Connection, text: str) -> None:
    try:
        query = parse_query(text)
    except InvalidQuery:
        return
    assert query.groups and all(query.groups)
    for term in (*(t for group in query.groups for t in group), *query.excluded):
        assert term.text and term.text == " ".join(words(term.text))
        assert not term.prefix or len(words(term.text)) == 1
    conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (to_fts5(query),)).fetchall()


@settings(max_examples=300)
@given(st.text())
def test_any_text_parses_or_is_refused_and_runs(fts: sqlite3.Connection, text: str) -> None:
    check_query_runs(fts, text)


@settings(max_examples=500)
@given(_GRAMMAR)
def test_grammar_like_text_parses_or_is_refused_and_runs(
    fts: sqlite3.Connection, text: str
) -> None:
    check_query_runs(fts, text)


@given(st.lists(_WORD.filter(lambda word: word != "OR"), min_size=1, max_size=5))
def test_plain_words_become_one_group_each(items: list[str]) -> None:
    query = parse_query(" ".join(items))
    assert query.excluded == ()
    texts = [[term.text for term in group] for group in query.groups]
    # A word holding a separator (say, a combining mark) is one term: a phrase of its words.
    assert texts == [[" ".join(words(item))] for item in items if words(item)]


def _words_by_category(text: str) -> list[str]:
    """`words` by its definition: the runs of letters, digits and private-use characters."""

    def keep(char: str) -> bool:
        category = unicodedata.category(char)
        return category[0] in "LN" or category == "Co"

    normal = unicodedata.normalize("NFC", text)
    return ["".join(run) for kept, run in itertools.groupby(normal, keep) if kept]


@settings(max_examples=500)
@given(st.text(alphabet=st.characters(max_codepoint=127)) | st.text())
def test_words_of_ascii_text_take_a_shortcut_to_the_same_words(text: str) -> None:
    assert words(text) == _words_by_category(text)


@settings(max_examples=300)
@given(st.text(alphabet=st.characters(max_codepoint=127)) | st.text())
def test_mysql_tokens_of_ascii_text_take_a_shortcut_to_the_same_tokens(text: str) -> None:
    tokens = MySQLDialect().index_text(text)
    assert tokens == " ".join(_token(word) for word in _words_by_category(text))


# --- matching in Python (the memory store, MySQL's check) ------------------------------


def _naive_hits(term: Term, tokens: list[str]) -> set[int]:
    """Every window of the term's length compared in full: the definition of a hit."""
    wanted = [fold(word) for word in words(term.text)]
    size, found = len(wanted), set()
    for i in range(len(tokens) - size + 1):
        window = tokens[i : i + size]
        last = window[-1].startswith(wanted[-1]) if term.prefix else window[-1] == wanted[-1]
        if window[:-1] == wanted[:-1] and last:
            found.update(range(i, i + size))
    return found


_TOKENS = st.lists(st.sampled_from(["a", "b", "ab", "ba"]), max_size=40)


@settings(max_examples=500)
@given(_TOKENS, st.lists(st.sampled_from(["a", "b", "ab"]), min_size=1, max_size=6), st.booleans())
def test_phrases_are_found_where_a_window_compared_in_full_finds_them(
    tokens: list[str], phrase: list[str], prefix: bool
) -> None:
    term = Term(" ".join(phrase), prefix=prefix)
    assert _term_hits(term, tokens) == _naive_hits(term, tokens)


def test_a_long_phrase_over_a_long_repetitive_text_is_found_everywhere() -> None:
    tokens = ["ab"] * 20_000
    assert _term_hits(Term(" ".join(["ab"] * 300)), tokens) == set(range(20_000))
    assert _term_hits(Term(" ".join(["ab"] * 300) + " cd"), tokens) == set()


@pytest.mark.parametrize(
    ("query", "text", "snippet", "hits"),
    [
        ("two", "one two three", "one two three", ["two"]),
        ("words", "**Two**, words!", "**Two**, words!", ["words"]),
        ("two", "**Two**, words!", "**Two**, words!", ["Two"]),
        ("bold", "a ****bold**** claim", "a ****bold**** claim", ["bold"]),
        (
            "20",
            " ".join(map(str, range(40))),
            "… " + " ".join(map(str, range(16, 32))) + " …",
            ["20"],
        ),
        ("z", "x" * 1000 + " y z", "… " + "x" * 77 + " y z", ["z"]),  # a long word is cut
        ("a", "a " + "b " * 5000, "a " + "b " * 14 + "b …", ["a"]),
        ("ca*", "  Ça\n\n\tva  ", "Ça va", ["Ça"]),
        ('"b c"', "a b\nc d", "a b c d", ["b", "c"]),
    ],
)
def test_snippets_are_the_text_as_written_with_spans_on_the_hits(
    query: str, text: str, snippet: str, hits: list[str]
) -> None:
    found = match_text(parse_query(query), text)
    assert found is not None
    assert found.snippet == snippet
    assert [found.snippet[a:b] for a, b in found.spans] == hits


def test_a_text_the_query_misses_has_no_match() -> None:
    assert match_text(parse_query("cat"), "category") is None
    assert match_text(parse_query("cat -dog"), "cat and dog") is None
    assert match_text(parse_query("cat*"), "") is None


@given(st.text(max_size=300), st.sampled_from(["a", "b*", "ab", '"a b"', "é", "1"]))
@settings(max_examples=300)
def test_spans_always_lie_on_matched_words_of_the_snippet(text: str, query: str) -> None:
    parsed = parse_query(query)
    found = match_text(parsed, text)
    if found is None:
        return
    assert 0 < found.rank <= 1
    ends = [0, *(x for span in found.spans for x in span), len(found.snippet)]
    assert ends == sorted(ends)
    for a, b in found.spans:
        assert words(found.snippet[a:b]) == [found.snippet[a:b]]
