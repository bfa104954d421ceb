"""Invariant 7 under generated input: hostile search queries, messages and state patches.

Hypothesis builds the input; every backend gets it. What must hold, whatever it is:

- only `SessionaryError` subclasses escape (no driver error, no RecursionError);
- a query is refused (`InvalidQuery`) exactly when the pure parser refuses it, on every
  backend, and a store without full-text search says `Unsupported` for the others;
- a hit belongs to the caller's scope: a rival tenant holds the same texts;
- a JSON value is accepted exactly when it is JSON within the documented limits, comes
  back exactly as written, and is refused with the same error the in-memory store
  gives, with nothing written (message count, head, state, metadata, documents).

`tests/test_query.py` runs the pure parser on many more examples; here the examples are
few and bounded, since each costs round trips to a server.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sessionary
from sessionary import (
    DataPart,
    InvalidInput,
    InvalidQuery,
    Message,
    SearchHit,
    SessionaryError,
    SessionManager,
    TextPart,
    ToolCallPart,
    Unsupported,
)
from sessionary.query import parse_query
from sessionary.records import MAX_JSON_DEPTH, merge_patch
from sessionary.stores.base import DOCUMENT_SEARCH, SEARCH

LIMIT = 65_536
"""The stores' `max_message_bytes` here, so that an oversized value stays cheap."""

BACKEND_EXAMPLES = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _with_limit(url: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}max_message_bytes={LIMIT}"


@pytest.fixture
def hostile(store_url: str) -> Iterator[SessionManager]:
    with SessionManager(_with_limit(store_url), tenant="home", user="me") as manager:
        yield manager


# ---------------------------------------------------------------- search

VOCABULARY = ["alpha", "beta", "gamma", "naïve", "café", "日本語", "x1", "ab", "near", "or"]
TEXTS = [
    "alpha beta gamma",
    "naïve café 日本語",
    "x1 ab ab ab near or",
    'alpha-beta: gamma (near) "or" ^x1',
    " ".join(VOCABULARY * 20),
]
OPERATORS = [
    "OR", "AND", "NOT", "NEAR", "NEAR/2", "NEAR(", "-", "*", '"', "'", "(", ")", ":", "^",
    "+", "~", "<", ">", "@", "\\", ";", "--", "/*", "%", "_", "{", "}", "[", "]", "|", "&",
    "!", "<->", ":*", "\x00", "$1", "?",
]  # fmt: skip
UNICODE = [
    "\u0301", "e\u0301", "\u05d0\u05d1\u05d2", "\u202e", "\u200f", "\u200b", "\ufeff",
    "🙂", "👩\u200d👩\u200d👧", "\ufdfa", "ǅ", "İ", "ß", "ﬁ", "⑴", "\ud800", "\U0010ffff",
    "Ⅻ", "٣", "\u3000", "\ue000",
]  # fmt: skip
_ATOM = st.one_of(
    st.sampled_from(VOCABULARY),
    st.sampled_from(OPERATORS),
    st.sampled_from(UNICODE),
    st.text(max_size=6),
)
_PIECE = st.builds(
    lambda head, atom, tail: head + atom + tail,
    st.sampled_from(["", "", "-", '"', '-"']),
    _ATOM,
    st.sampled_from(["", "", "*", '"', "**"]),
)
QUERIES = st.one_of(
    st.builds(
        lambda pieces, sep: sep.join(pieces),
        st.lists(_PIECE, max_size=40),
        st.sampled_from([" ", " ", "", ".", "\t", "\u3000"]),
    ),
    # many words: long phrases (quoted, or joined by punctuation; InnoDB takes at most
    # 128 words in one), many terms, and over the limits too
    st.builds(
        lambda words, sep, quote: quote + sep.join(words) + quote,
        st.integers(100, 400).flatmap(
            lambda n: st.lists(
                st.sampled_from(["ab", "x1", "or", "near", "日本語"]), min_size=n, max_size=n
            )
        ),
        st.sampled_from([" ", ".", "-", "_"]),
        st.sampled_from(["", '"', '-"']),
    ),
    st.text(min_size=900, max_size=1100),  # around the length limit
    st.text(),
)


@pytest.fixture
def corpus(hostile: SessionManager) -> tuple[SessionManager, set[str], set[str]]:
    """The caller's sessions and messages; a rival tenant holds the same texts."""
    rival = hostile.for_user("me", tenant="rival")
    ids: set[str] = set()
    sessions: set[str] = set()
    for manager in (hostile, rival):
        for i, text in enumerate(TEXTS):
            chat = manager.create(id=f"s{i}")
            stored = chat.append_all([Message.user(text), Message.assistant(text.upper())])
            if manager is hostile:
                sessions.add(chat.id)
                ids.update(m.id for m in stored)
    return hostile, sessions, ids


def _expect_query(manager: SessionManager, query: str) -> type[SessionaryError] | None:
    try:
        parse_query(query)
    except InvalidQuery:
        return InvalidQuery
    return None if SEARCH in manager.store.capabilities else Unsupported


@BACKEND_EXAMPLES
@given(query=QUERIES)
def test_hostile_queries_get_hits_in_scope_or_a_typed_error(
    corpus: tuple[SessionManager, set[str], set[str]], query: str
) -> None:
    manager, sessions, ids = corpus
    expected = _expect_query(manager, query)
    for search in (
        lambda: manager.search(query, limit=50),
        lambda: manager.session("s4").search(query),
        lambda: manager.search(query, session_id="s2", role="user"),
    ):
        if expected is not None:
            with pytest.raises(expected):
                search()
            continue
        hits = search()
        assert all(isinstance(hit, SearchHit) for hit in hits)
        assert {hit.session_id for hit in hits} <= sessions
        assert {hit.message_id for hit in hits} <= ids, "a hit from another scope"


@BACKEND_EXAMPLES
@given(query=QUERIES)
def test_hostile_queries_over_documents(hostile: SessionManager, query: str) -> None:
    store = hostile.store
    if DOCUMENT_SEARCH not in store.capabilities:
        pytest.skip("the store has no document search")
    store.put_document(hostile.scope, "user", None, "notes", "k", {}, TEXTS[4], "test", None)
    rival = sessionary.Scope("rival", "me")
    store.put_document(rival, "user", None, "notes", "rival", {}, TEXTS[4], "test", None)
    try:
        parsed = parse_query(query)
    except InvalidQuery:
        return
    hits = store.search_documents(hostile.scope, "user", None, None, parsed, 10)
    assert all(hit.key == "k" for hit in hits) and len(hits) <= 1


# ---------------------------------------------------------------- JSON values

DIGITS = sys.get_int_max_str_digits()
_HUGE = [2**63, -(2**63) - 1, 2**64, 10**30, -(10**30), 10**308 * 10, 10 ** (DIGITS - 1)]
_TEXT = st.text(
    st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(["\x00", "\ud800", "\udfff", "\u0301", "\u202e", "🙂", '"', "\\"]),
    ),
    max_size=12,
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from(_HUGE),
    st.floats(),  # NaN and the infinities included
    _TEXT,
    st.just("x" * (LIMIT + 1)),  # oversized
    st.sampled_from([b"bytes", frozenset({1}), 1j]),  # not JSON at all
)
KEYS = st.one_of(_TEXT, st.sampled_from([1, None, True, 2.5, (1, 2)]))
TREES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=10,
)


def nested(depth: int, leaf: Any) -> Any:
    """`leaf` inside `depth` containers, objects and arrays in turn."""
    for level in range(depth):
        leaf = {"k": leaf} if level % 2 else [leaf]
    return leaf


VALUES = st.one_of(
    TREES,
    st.builds(nested, st.sampled_from([MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH, 1000, 5000]), SCALARS),
)


def acceptable(value: Any) -> bool:
    """Whether `value` (as the value of a key of the object written) is JSON we keep.

    The reference: keys are strings, nesting (with that object) at most
    `MAX_JSON_DEPTH`, no NaN or infinity, no lone surrogate, no integer Python cannot
    write as text, nothing that is not JSON, and not oversized (every string generated
    is either short or over the limit).
    """
    stack = [(value, 2)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_JSON_DEPTH:
                return False
            if isinstance(item, dict):
                if not all(isinstance(key, str) and _good_text(key) for key in item):
                    return False
                stack += [(child, depth + 1) for child in item.values()]
            else:
                stack += [(child, depth + 1) for child in item]
        elif not _good_scalar(item):
            return False
    return True


def _good_text(text: str) -> bool:
    return len(text) <= LIMIT // 8 and not any("\ud800" <= c <= "\udfff" for c in text)


def _good_scalar(item: Any) -> bool:
    if item is None or isinstance(item, bool):
        return True
    if isinstance(item, int):
        return abs(item) < 10**DIGITS
    if isinstance(item, float):
        return math.isfinite(item)
    return isinstance(item, str) and _good_text(item)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON, exactly: types (1 and 1.0, 0 and False), -0.0, key order."""
    return json.dumps(a) == json.dumps(b)


Write = Callable[[SessionManager, sessionary.Session, Any], Callable[[], Any]]
"""A write of a value; it returns what reads the value back."""


def _metadata(m: SessionManager, s: sessionary.Session, v: Any) -> Callable[[], Any]:
    stored = s.append(Message.user("hostile", metadata={"k": v}))
    return lambda: s.get_message(stored.id).metadata["k"]


def _arguments(m: SessionManager, s: sessionary.Session, v: Any) -> Callable[[], Any]:
    stored = s.append(Message.assistant(tool_calls=[ToolCallPart("c1", "f", {"k": v})]))
    return lambda: s.get_message(stored.id).tool_calls[0].arguments["k"]


def _output(m: SessionManager, s: sessionary.Session, v: Any) -> Callable[[], Any]:
    call = Message.assistant(tool_calls=[ToolCallPart("c2", "f", {})])
    _, result = s.append_all([call, Message.tool("c2", {"k": v})])
    return lambda: s.get_message(result.id).tool_results[0].output["k"]


def _data(m: SessionManager, s: sessionary.Session, v: Any) -> Callable[[], Any]:
    stored = s.append(Message(role="user", parts=[TextPart("hostile"), DataPart({"k": v})]))
    return lambda: s.get_message(stored.id).parts[1].data["k"]  # type: ignore[union-attr]


def _unknown(m: SessionManager, s: sessionary.Session, v: Any) -> Callable[[], Any]:
    stored = s.append({"role": "user", "content": "hostile", "later": v})
    return lambda: s.get_message(stored.id).extra["later"]


def _text(m: SessionManager, s: sessionary.Session, v: Any) -> Callable[[], Any]:
    stored = s.append(Message.user(v))
    return lambda: s.get_message(stored.id).text


def _state(m: SessionManager, s: sessionary.Session, v: Any) -> Callable[[], Any]:
    before = s.get_state().data
    s.update_state({"k": v})
    expected = merge_patch(before, {"k": v})
    return lambda: (s.get_state().data, expected)


def _app_state(m: SessionManager, s: sessionary.Session, v: Any) -> Callable[[], Any]:
    before = m.get_state("app").data
    m.update_state({"k": v}, level="app")
    expected = merge_patch(before, {"k": v})
    return lambda: (m.get_state("app").data, expected)


def _session_metadata(m: SessionManager, s: sessionary.Session, v: Any) -> Callable[[], Any]:
    m.set_metadata(s.id, {"k": v})
    return lambda: m.get(s.id).metadata["k"]  # type: ignore[union-attr]


def _new_session(m: SessionManager, s: sessionary.Session, v: Any) -> Callable[[], Any]:
    made = m.create(metadata={"k": v})
    return lambda: m.get(made.id).metadata["k"]  # type: ignore[union-attr]


def _document(m: SessionManager, s: sessionary.Session, v: Any) -> Callable[[], Any]:
    m.store.put_document(m.scope, "session", s.id, "notes", "k", {"k": v}, "", "test", None)
    return lambda: m.store.get_document(m.scope, "session", s.id, "notes", "k", None).body["k"]


WRITES: dict[str, Write] = {
    "metadata": _metadata,
    "tool arguments": _arguments,
    "tool output": _output,
    "data part": _data,
    "unknown field": _unknown,
    "session state": _state,
    "app state": _app_state,
    "session metadata": _session_metadata,
    "new session's metadata": _new_session,
    "document body": _document,
}


def _snapshot(m: SessionManager, s: sessionary.Session) -> Any:
    document = m.store.get_document(m.scope, "session", s.id, "notes", "k", None)
    return (
        s.message_count(),
        s.path_length(),
        getattr(s.head(), "id", None),
        s.get_state(),
        m.get_state("app"),
        m.get(s.id).metadata,  # type: ignore[union-attr]
        len(m.list(limit=1000).items),
        None if document is None else document.version,
    )


def _outcome(
    manager: SessionManager, session: sessionary.Session, write: Write, value: Any
) -> tuple[str, Any]:
    """Write `value`; return ("ok", what was read back) or ("refused", the error's type)."""
    before = _snapshot(manager, session)
    try:
        read = write(manager, session, value)
    except SessionaryError as exc:
        assert isinstance(exc, InvalidInput), repr(exc)
        assert str(exc), "the error says nothing"
        assert _snapshot(manager, session) == before, "a refused write changed the store"
        return "refused", type(exc)
    return "ok", read()


@BACKEND_EXAMPLES
@given(value=VALUES)
def test_hostile_json_round_trips_or_is_refused_the_same_everywhere(
    hostile: SessionManager, value: Any
) -> None:
    session = hostile.create()
    writes = dict(WRITES)
    if isinstance(value, str):
        writes["message text"] = _text
    with SessionManager(f"memory://?max_message_bytes={LIMIT}") as reference:
        mirror = reference.create(id=session.id)
        for name, write in writes.items():
            kind, got = _outcome(hostile, session, write, value)
            same_kind, same_got = _outcome(reference, mirror, write, value)
            assert kind == same_kind, f"{name}: {got} here, {same_got} in memory"
            assert (kind == "ok") == acceptable(value), f"{name}: {kind}"
            if kind == "refused":
                assert got is same_got, (
                    f"{name}: {got.__name__} here, {same_got.__name__} in memory"
                )
            else:
                expected = got if isinstance(got, tuple) else (got, value)
                assert _same(*expected), name
