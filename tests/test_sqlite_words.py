"""What SQLite's search indexes are given: a text's words, split as queries split them.

`unicode61` knows Unicode 6.1 alone: left to split a text itself, it glued words to the
emoji assigned since ("robot🤖") and to combining marks. The indexes are given the text
with every such character made a space (`_sqlite_index.index_text`), which `unicode61`
splits into the words of `sessionary.query.words`; these tests hold both sides to that,
on every codepoint this Python knows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionary.query import is_word_char, words
from sessionary.stores import _sqlite_index
from sessionary.stores._sqlite_index import index_text
from sessionary.stores._sqlite_schema import TOKENIZER

pytestmark = pytest.mark.sqlite

EVERY_CHARACTER = [chr(code) for code in range(0x110000) if not 0xD800 <= code < 0xE000]


@pytest.fixture(scope="module")
def index() -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(":memory:")
    db.execute(f'CREATE VIRTUAL TABLE t USING fts5 (x, tokenize = "{TOKENIZER}")')
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab (t, 'instance')")
    yield db
    db.close()


def tokens(db: sqlite3.Connection, text: str) -> list[str]:
    """The words the tokenizer of the indexes makes of `text`, in order."""
    db.execute("DELETE FROM t")
    db.execute("INSERT INTO t (rowid, x) VALUES (1, ?)", (text,))
    return [term for (term,) in db.execute("SELECT term FROM v ORDER BY offset")]


def test_the_tokenizer_keeps_every_word_character_in_its_word(index: sqlite3.Connection) -> None:
    """Given words one space apart, the tokenizer splits at the spaces alone."""
    letters = [char for char in EVERY_CHARACTER if is_word_char(char)]
    assert len(tokens(index, " ".join(letters))) == len(letters)


def test_every_other_character_left_splits_words_for_the_tokenizer(
    index: sqlite3.Connection,
) -> None:
    split_apart = _sqlite_index._SPLIT_APART
    assert [
        char for char in EVERY_CHARACTER if is_word_char(char) and split_apart.match(char)
    ] == []
    left = [
        char for char in EVERY_CHARACTER if not is_word_char(char) and not split_apart.match(char)
    ]
    assert len(left) > 200  # ASCII's and SEPARATORS_ALIKE
    assert tokens(index, "a".join(left)) == ["a"] * (len(left) - 1)


ALPHABET = st.sampled_from(
    [
        *"ab Zz09 .,-_'\"\t\n",
        *"éÄßøœĳ",  # Latin-1 and Latin Extended letters
        "e\u0301",  # an accent to compose
        "q\u0308",  # one that stays combining in NFC
        "\u1eb9\u0300",  # Yoruba: a dot below, a grave on top
        *"\u1100\u1161\u11a8",  # Hangul jamo, composed by NFC
        "\u212b",  # the Angstrom sign, Å in NFC
        *"日本語。「」、",
        *"Привет",
        *"\u19b0\u19c8\u1cf2",  # letters now, marks in Unicode 6.1
        *"🙏🙂🤔🤖🏽\u200d\ufe0f",  # emoji old and new, a skin tone, a joiner, a selector
        *"\u2013\u2014\u201c\u201d\u201e\u2026\u00a0\u2066",  # dashes, quotes, NBSP, an isolate
        "\ue000",  # private use
        "\U000e0001",  # a tag character
    ]
)


def check_words(index: sqlite3.Connection, text: str) -> None:
    found = words(text)
    given_words = tokens(index, index_text(text))
    assert given_words == tokens(index, " ".join(found))
    assert len(given_words) == len(found)


@pytest.mark.parametrize(
    "text",
    [
        "Thinking\U0001f914 the robot\U0001f916 said postgres \U0001f642 ready",
        "\U0001f44d\U0001f3fdok",  # a skin tone (Unicode 8) glued a word on
        "Yor\u00f9b\u00e1 \u1eb9\u0300k\u1ecd\u0301",  # marks NFC cannot compose
        "nai\u0308ve cafe\u0301",  # marks NFC composes
        "\u1100\u1161\u11a8 \u1100\u1161",  # Hangul jamo, syllables in NFC
        "\uf900\uf9ff",  # CJK compatibility ideographs, unified ones in NFC
        "Der Bär läuft über die Straße \u2013 \u201egrößer\u201c\u2026",
        "日本語のテキスト。「テスト」です、",
        "\u19b0\u19c8 \u1cf2",
        "a\u2066b\u2069c",  # isolates (Unicode 6.3)
        "\ue000x\U000f0000",
    ],
)
def test_texts_that_unicode61_splits_otherwise(index: sqlite3.Connection, text: str) -> None:
    check_words(index, text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(ALPHABET, st.characters(exclude_categories=["Cs"])), max_size=24))
def test_the_index_gets_exactly_the_words_queries_split(
    index: sqlite3.Connection, pieces: list[str]
) -> None:
    check_words(index, "".join(pieces))
