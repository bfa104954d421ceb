"""Capabilities: a store says what it can do, and refuses clearly what it cannot.

These tests are not marked `requires`: they run on every store and check both sides.
A store with full-text search answers; one without raises `Unsupported` from every
search entry point, after refusing bad input the same way every store does.
"""

from __future__ import annotations

import pytest

import sessionary
from sessionary import InvalidInput, InvalidQuery, Message, SessionNotFound, Unsupported
from sessionary.stores.base import DOCUMENT_SEARCH, DOCUMENTS, SEARCH

KNOWN = {SEARCH, DOCUMENTS, DOCUMENT_SEARCH}


def test_capabilities_are_known_names(store_url: str, capabilities: frozenset[str]) -> None:
    assert capabilities <= KNOWN
    assert DOCUMENT_SEARCH not in capabilities or DOCUMENTS in capabilities


def test_search_answers_or_is_unsupported(
    manager: sessionary.SessionManager, capabilities: frozenset[str]
) -> None:
    chat = manager.create(id="s1")
    chat.append(Message.user("the okapi sleeps"))
    calls = [
        lambda: manager.search("okapi"),
        lambda: manager.search("okapi", session_id="s1", role="user"),
        lambda: chat.search("okapi"),
    ]
    for call in calls:
        if SEARCH in capabilities:
            assert [hit.session_id for hit in call()] == ["s1"]
        else:
            with pytest.raises(Unsupported, match="search"):
                call()


def test_bad_search_input_is_refused_before_the_capability(
    manager: sessionary.SessionManager,
) -> None:
    manager.create(id="s1")
    with pytest.raises(InvalidQuery):
        manager.search("")
    with pytest.raises(InvalidInput):
        manager.search("okapi", limit=0)
    with pytest.raises(SessionNotFound):
        manager.search("okapi", session_id="no-such-session")
