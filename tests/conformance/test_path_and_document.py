"""`get_path_and_document`, the optional one-call read of `history(limit=N)`, on every store.

It must answer exactly what its two calls answer (`get_path`, then the session document
with `get_document`), errors included: on a linear session and a branched one, with and
without the document, for every leaf and limit, and for a session that has expired, is
missing or is empty. The wrappers (encryption, audit) answer it too, opened.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import sessionary
from sessionary import Encryption, Keyring, Message, SessionManager, TextPart, ToolCallPart

NS, KEY = "compaction.index", "overlays"


class FakeClock:
    """A clock that stands still until a test moves it."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


def _outcome(call: Any) -> Any:
    try:
        return call()
    except sessionary.SessionaryError as exc:
        return type(exc)


def _same(manager: SessionManager, session_id: str, leaf: str | None, limit: int | None) -> Any:
    """Assert that the method and its two calls agree; return what they answered."""
    store, scope = manager.store, manager.scope

    def two() -> Any:
        path = store.get_path(scope, session_id, leaf, limit)
        return path, store.get_document(scope, "session", session_id, NS, KEY, None)

    got = _outcome(lambda: store.get_path_and_document(scope, session_id, leaf, limit, NS, KEY))
    assert got == _outcome(two)
    return got


def _chat(manager: SessionManager, turns: int, **fields: Any) -> tuple[str, list[str]]:
    session = manager.create(name="chat", **fields)
    ids = []
    for n in range(turns):
        if n % 5 == 3:  # a tool call and its result now and then
            call = ToolCallPart(id=f"c{n}", name="look", arguments={"n": n})
            ids.append(session.append(Message.assistant(tool_calls=[call])).id)
            ids.append(session.append(Message.tool(f"c{n}", {"n": n})).id)
        else:
            ids.append(session.append(Message.user(f"turn {n}")).id)
    return session.id, ids


def _document(manager: SessionManager, session_id: str, versions: int = 1) -> None:
    for v in range(versions):
        body = {"entries": [], "v": v}
        manager.store.put_document(
            manager.scope, "session", session_id, NS, KEY, body, f"text {v}", "me", None
        )


LIMITS = [None, 1, 2, 7, 30, 1000]


@pytest.mark.requires("documents")
@pytest.mark.parametrize("with_document", [False, True])
def test_it_answers_what_the_two_calls_answer(manager: SessionManager, with_document: bool) -> None:
    session_id, ids = _chat(manager, 24)
    if with_document:
        _document(manager, session_id, versions=3)
    for leaf in [None, ids[0], ids[5], ids[-1]]:
        for limit in LIMITS:
            path, doc = _same(manager, session_id, leaf, limit)
            assert (doc is not None) == with_document
            end = len(ids) if leaf is None else ids.index(leaf) + 1
            start = 0 if limit is None else max(0, end - limit)
            assert [m.id for m in path] == ids[start:end]
    if with_document:
        assert _same(manager, session_id, None, 3)[1].body == {"entries": [], "v": 2}


@pytest.mark.requires("documents")
@pytest.mark.parametrize("with_document", [False, True])
def test_a_branched_session(manager: SessionManager, with_document: bool) -> None:
    session_id, ids = _chat(manager, 12)
    if with_document:
        _document(manager, session_id)
    session = manager.session(session_id)
    branch = session.append(Message.user("another way"), parent=ids[4])
    for leaf in [None, ids[-1], branch.id, ids[4]]:
        for limit in LIMITS:
            _same(manager, session_id, leaf, limit)
    session.checkout(ids[-1])
    assert [m.id for m in _same(manager, session_id, None, 3)[0]] == ids[-3:]


TAIL = '","type":"text"}]}'
"""How a plain-text body ends: a text may end so too, and a body of several parts does."""


@pytest.mark.requires("documents")
def test_bodies_read_back_as_written(manager: SessionManager) -> None:
    # Plain texts, texts that look like the end of a plain body, several text parts,
    # metadata: what a read gives back is what was written, its text and its tool parts.
    session = manager.create(name="bodies")
    written = [
        Message.user('plain "quoted" \\ back\nslash \u00e9 \U0001f600 \x00'),
        Message.user("ends like a body" + TAIL),
        Message("assistant", [TextPart("a" + TAIL), TextPart("b" + TAIL)]),
        Message.user("with metadata", metadata={"k": 1}),
        Message.assistant(tool_calls=[ToolCallPart(id="c1", name="look", arguments={})]),
        Message.tool("c1", "done"),
        Message.user(""),
    ]
    for message in written:
        session.append(message)
    path, _ = _same(manager, session.id, None, 20)
    for got, sent in zip(path, written, strict=True):
        assert (got.text, got.tool_calls, got.tool_results) == (
            sent.text,
            sent.tool_calls,
            sent.tool_results,
        )
        assert (got.parts, got.metadata, got.extra) == (sent.parts, sent.metadata, sent.extra)


@pytest.mark.requires("documents")
def test_empty_missing_and_unknown(manager: SessionManager) -> None:
    empty = manager.create(name="empty").id
    assert _same(manager, empty, None, 20) == ([], None)
    _document(manager, empty)
    path, doc = _same(manager, empty, None, 20)
    assert path == [] and doc is not None
    assert _same(manager, "no-such-session", None, 20) is sessionary.SessionNotFound
    session_id, _ = _chat(manager, 3)
    assert _same(manager, session_id, "no-such-message", 20) is sessionary.MessageNotFound


@pytest.mark.requires("documents")
def test_scope_is_a_wall(manager: SessionManager) -> None:
    # The same session id in another user's and another tenant's scope: each read sees
    # its own scope's messages and document, never the other's.
    others = [
        SessionManager(manager.store, tenant=manager.scope.tenant, user="someone-else"),
        SessionManager(manager.store, tenant="another-tenant", user=manager.scope.user),
    ]
    session_id, ids = _chat(manager, 5)
    _document(manager, session_id, versions=2)
    for other in others:
        assert _same(other, session_id, None, 20) is sessionary.SessionNotFound
        other.create(id=session_id)
        assert _same(other, session_id, None, 20) == ([], None)
        mine = other.session(session_id).append(Message.user("theirs"))
        assert _same(other, session_id, None, 20) == ([mine], None)
        assert _same(other, session_id, ids[1], 20) is sessionary.MessageNotFound
    path, doc = _same(manager, session_id, None, 20)
    assert [m.id for m in path] == ids and doc is not None and doc.body["v"] == 1


@pytest.mark.requires("documents")
@pytest.mark.parametrize("sliding", [False, True])
def test_an_expired_session_is_not_found(store_url: str, sliding: bool) -> None:
    clock = FakeClock()
    with SessionManager(store_url, clock=clock) as manager:
        session_id, ids = _chat(manager, 6, ttl=100, ttl_sliding=sliding)
        _document(manager, session_id)
        clock.now += timedelta(seconds=60)
        path, doc = _same(manager, session_id, None, 4)
        assert [m.id for m in path] == ids[-4:] and doc is not None
        _same(manager, session_id, ids[2], 4)
        clock.now += timedelta(seconds=41)
        for leaf in [None, ids[2]]:
            assert _same(manager, session_id, leaf, 4) is sessionary.SessionNotFound


@pytest.fixture
def plain(store_url: str) -> Iterator[Any]:
    store = sessionary.open_store(store_url)
    yield store
    store.close()


@pytest.mark.requires("documents")
@pytest.mark.parametrize("wrapper", ["encrypted", "audited"])
def test_the_wrappers_answer_it_opened(plain: Any, wrapper: str) -> None:
    if wrapper == "encrypted":
        manager = SessionManager(plain, encryption=Encryption(Keyring({"k": os.urandom(32)}, "k")))
    else:
        manager = SessionManager(plain, audit=True, actor="alice")
    with manager:
        session_id, ids = _chat(manager, 9)
        _document(manager, session_id, versions=2)
        for leaf in [None, ids[3]]:
            for limit in [1, 5, None]:
                path, doc = _same(manager, session_id, leaf, limit)
                assert (
                    path[-1].text
                    == manager.store.get_message(manager.scope, session_id, path[-1].id).text
                )
                assert doc.body == {"entries": [], "v": 1} and doc.text == "text 1"
