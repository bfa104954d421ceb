"""PostgreSQL's `tsvector` holds at most 1 MB of words and positions.

A message or document under the store's size limit but with more distinct words than
that (a log dump, a word list) is stored whole; the search index takes its words up to
the limit, so the write is not refused by the server halfway through an append.
"""

from __future__ import annotations

import pytest

import sessionary
from sessionary.query import parse_query
from sessionary.stores import _postgres_sql

pytestmark = pytest.mark.postgres


def _word_list(count: int) -> str:
    """`count` distinct words of ten letters or digits."""
    return " ".join(f"w{n:09d}" for n in range(count))


def test_a_text_of_2_mb_of_distinct_words_is_stored_and_its_first_words_found(
    postgres_url: str,
) -> None:
    text = _word_list(200_000)  # 2.2 MB: a tsvector of 2.6 MB, over PostgreSQL's limit
    with sessionary.SessionManager(postgres_url) as manager:
        session = manager.create(id="s")
        stored = session.append({"role": "user", "content": text})
        assert session.get_message(stored.id) == stored
        assert [hit.message_id for hit in session.search("w000000001")] == [stored.id]
        session.append({"role": "assistant", "content": "after"})  # the connection works
        assert session.message_count() == 2
        manager.store.put_document(
            manager.scope, "user", None, "notes", "k", {}, text, "test", None
        )
        found = manager.store.search_documents(
            manager.scope, "user", None, None, parse_query("w000000002"), 5
        )
        assert [hit.key for hit in found] == ["k"]


def test_the_indexed_words_stay_under_the_limit_and_short_texts_are_whole() -> None:
    dialect = _postgres_sql.PostgresDialect()
    assert dialect.index_text("Hello, wörld!") == "hello world"
    indexed = dialect.index_text(_word_list(200_000))
    assert indexed.startswith("w000000000 w000000001 ")
    # each distinct word costs its bytes, an alignment byte and one position of 4 bytes
    assert sum(len(w) + 5 for w in set(indexed.split())) <= _postgres_sql.MAX_INDEXED_BYTES
    repeated = "pelican " * 300_000  # one word: 256 positions at most, whatever the count
    assert len(_postgres_sql.folded_words(dialect.index_text(repeated))) == 300_000


def test_a_value_over_a_server_limit_is_payload_too_large_not_an_outage() -> None:
    from psycopg import errors as pg_errors

    from sessionary.errors import PayloadTooLarge, StoreUnavailable
    from sessionary.stores.postgres import store_error

    raised = pg_errors.ProgramLimitExceeded("string is too long for tsvector")
    mapped = store_error("postgresql://h/db", raised)
    assert isinstance(mapped, PayloadTooLarge)
    assert not isinstance(mapped, StoreUnavailable)
