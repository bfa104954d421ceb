"""Documents: keyed, versioned JSON at session, user and app level, on every backend.

The store methods are called directly (blocks and compactions build on them); every
test runs once per backend through the `manager` fixture.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import sessionary
from sessionary import (
    Document,
    DocumentHit,
    InvalidDocument,
    InvalidInput,
    InvalidQuery,
    Message,
    PayloadTooLarge,
    Scope,
    SessionNotFound,
    Unsupported,
    VersionConflict,
)
from sessionary.query import parse_query
from sessionary.stores.base import DOCUMENT_SEARCH, DOCUMENTS

OpenScope = Callable[..., sessionary.SessionManager]


class Docs:
    """The document methods of one store, bound to one owner."""

    def __init__(
        self,
        store: sessionary.Store,
        scope: Scope,
        level: str = "user",
        session_id: str | None = None,
    ) -> None:
        self.store, self.scope, self.level, self.session_id = store, scope, level, session_id

    def _owner(self) -> tuple[Any, ...]:
        return (self.scope, self.level, self.session_id)

    def put(
        self,
        key: str,
        body: Any = None,
        *,
        namespace: str = "block",
        text: str = "",
        author: str = "user",
        expected: int | None = None,
    ) -> Document:
        body = {"content": text} if body is None else body
        return self.store.put_document(*self._owner(), namespace, key, body, text, author, expected)

    def get(self, key: str, version: int | None = None, namespace: str = "block") -> Any:
        return self.store.get_document(*self._owner(), namespace, key, version)

    def versions(self, key: str, namespace: str = "block") -> list[Document]:
        return self.store.document_versions(*self._owner(), namespace, key)

    def list(
        self, namespace: str | None = None, limit: int = 100, cursor: str | None = None
    ) -> sessionary.Page[Document]:
        return self.store.list_documents(*self._owner(), namespace, limit, cursor)

    def all(self, namespace: str | None = None, limit: int = 3) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        cursor = None
        while True:
            page = self.list(namespace, limit, cursor)
            out.extend((d.namespace, d.key) for d in page.items)
            cursor = page.next_cursor
            if cursor is None:
                return out

    def delete(self, key: str, namespace: str = "block") -> bool:
        return self.store.delete_document(*self._owner(), namespace, key)

    def search(self, query: str, namespace: str | None = None, limit: int = 20) -> Any:
        return self.store.search_documents(*self._owner(), namespace, parse_query(query), limit)

    def restore(self, versions: list[Document]) -> None:
        self.store.restore_document(*self._owner(), versions)

    @property
    def searchable(self) -> bool:
        """Whether the store has full-text search over documents."""
        return DOCUMENT_SEARCH in self.store.capabilities


@pytest.fixture
def docs(manager: sessionary.SessionManager) -> Docs:
    """User-level documents of the manager's scope."""
    return Docs(manager.store, manager.scope)


def everything(manager: sessionary.SessionManager, session_ids: tuple[str, ...] = ()) -> Any:
    """Every document version of the manager's scope at every level (a change detector)."""
    owners: list[tuple[str, str | None]] = [("user", None), ("app", None)]
    owners += [("session", sid) for sid in session_ids]
    out = []
    for level, sid in owners:
        d = Docs(manager.store, manager.scope, level, sid)
        for doc in d.list().items:
            out.append((level, sid, d.versions(doc.key, doc.namespace)))
    return out


# ---------------------------------------------------------------------- versions


def test_the_backend_has_documents_and_their_search(manager: sessionary.SessionManager) -> None:
    assert DOCUMENTS in manager.store.capabilities
    if DOCUMENT_SEARCH not in manager.store.capabilities:
        docs = Docs(manager.store, manager.scope)
        docs.put("k", text="pelican")
        with pytest.raises(Unsupported, match="search"):
            docs.search("pelican")


def test_every_write_adds_a_version_and_keeps_the_old_ones(docs: Docs) -> None:
    assert docs.get("persona") is None
    assert docs.versions("persona") == []
    before = datetime.now(UTC) - timedelta(seconds=5)
    one = docs.put("persona", text="likes tea", author="user")
    two = docs.put("persona", {"content": "likes coffee", "n": [1, {"x": None}]}, author="model")
    three = docs.put("persona", text="likes water é ✓ 😀", author="compaction")
    assert [one.version, two.version, three.version] == [1, 2, 3]
    assert one.body == {"content": "likes tea"} and one.text == "likes tea"
    assert two.body == {"content": "likes coffee", "n": [1, {"x": None}]} and two.text == ""
    assert docs.get("persona") == three
    assert docs.get("persona", version=1) == one
    assert docs.get("persona", version=2) == two
    assert docs.get("persona", version=4) is None
    assert docs.versions("persona") == [one, two, three]
    assert [d.author for d in docs.versions("persona")] == ["user", "model", "compaction"]
    times = [d.updated_at for d in docs.versions("persona")]
    assert times == sorted(times) and times[0] >= before
    assert all(t.tzinfo is not None for t in times)


def test_a_returned_body_is_a_copy(docs: Docs) -> None:
    body: dict[str, Any] = {"content": "x", "list": [1]}
    written = docs.put("k", body)
    body["list"].append(2)
    written.body["list"].append(3)
    assert docs.get("k").body == {"content": "x", "list": [1]}


def test_expected_version(docs: Docs) -> None:
    assert docs.put("k", text="first", expected=0).version == 1
    assert docs.put("k", text="second", expected=1).version == 2
    before = docs.versions("k")
    for stale in (0, 1, 3, 99):
        with pytest.raises(VersionConflict):
            docs.put("k", text="lost", expected=stale)
    with pytest.raises(VersionConflict):
        docs.put("missing", text="lost", expected=1)
    assert docs.versions("k") == before
    assert docs.get("missing") is None
    assert docs.all() == [("block", "k")]
    assert docs.put("k", text="third", expected=None).version == 3


def test_a_deleted_document_starts_again_at_version_one(docs: Docs) -> None:
    docs.put("k", text="one")
    docs.put("k", text="two")
    docs.put("other", text="stays")
    assert docs.delete("k") is True
    assert docs.delete("k") is False
    assert docs.get("k") is None and docs.versions("k") == []
    if docs.searchable:
        assert docs.search("two") == []
    assert docs.put("k", text="again", expected=0).version == 1
    assert [d.text for d in docs.versions("k")] == ["again"]
    assert docs.get("other").text == "stays"


# ---------------------------------------------------------------------- owners


def test_levels_are_separate_documents(manager: sessionary.SessionManager) -> None:
    chat = manager.create(id="s")
    other = manager.create(id="t")
    store, scope = manager.store, manager.scope
    by_level = {
        "session": Docs(store, scope, "session", chat.id),
        "other session": Docs(store, scope, "session", other.id),
        "user": Docs(store, scope, "user"),
        "app": Docs(store, scope, "app"),
    }
    for name, d in by_level.items():
        d.put("k", text=f"{name} text")
    for name, d in by_level.items():
        assert d.get("k").text == f"{name} text"
        assert d.get("k").version == 1
        assert d.all() == [("block", "k")]


def test_app_documents_are_shared_by_the_tenants_users(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    alice = open_scope(tenant="acme", user="alice")
    bob = open_scope(tenant="acme", user="bob")
    stranger = open_scope(tenant="globex", user="alice")
    Docs(alice.store, alice.scope, "app").put("policy", text="be kind")
    Docs(alice.store, alice.scope, "user").put("persona", text="alice")
    assert Docs(bob.store, bob.scope, "app").get("policy").text == "be kind"
    assert Docs(bob.store, bob.scope, "user").get("persona") is None
    assert Docs(stranger.store, stranger.scope, "app").get("policy") is None
    assert Docs(stranger.store, stranger.scope, "user").get("persona") is None


def test_a_session_document_needs_its_session(manager: sessionary.SessionManager) -> None:
    missing = Docs(manager.store, manager.scope, "session", "nope")
    calls: list[Callable[[], Any]] = [
        lambda: missing.put("k", text="x"),
        lambda: missing.get("k"),
        lambda: missing.versions("k"),
        lambda: missing.list(),
        lambda: missing.delete("k"),
        lambda: missing.search("x"),
        lambda: missing.restore([]),
    ]
    for call in calls:
        with pytest.raises(SessionNotFound):
            call()
    with pytest.raises(InvalidInput):
        Docs(manager.store, manager.scope, "session", None).put("k", text="x")
    with pytest.raises(InvalidInput):
        Docs(manager.store, manager.scope, "tenant").put("k", text="x")
    assert manager.store.list_scopes() == []


def test_deleting_a_session_deletes_its_documents(manager: sessionary.SessionManager) -> None:
    chat = manager.create(id="s")
    keep = manager.create(id="keep")
    in_chat = Docs(manager.store, manager.scope, "session", chat.id)
    in_keep = Docs(manager.store, manager.scope, "session", keep.id)
    user = Docs(manager.store, manager.scope, "user")
    for d in (in_chat, in_keep, user):
        d.put("k", text="pelican one")
        d.put("k", text="pelican two")
        d.put("j", namespace="compaction", text="pelican summary")
    assert manager.delete(chat.id) is True
    manager.create(id="s")  # the same id again: a new session, no documents
    assert in_chat.list().items == [] and in_chat.versions("k") == []
    if in_chat.searchable:
        assert in_chat.search("pelican") == []
    assert in_chat.put("k", text="fresh").version == 1
    assert [d.version for d in in_keep.versions("k")] == [1, 2]
    if in_keep.searchable:
        assert len(in_keep.search("pelican")) == 2
    assert user.all() == [("block", "k"), ("compaction", "j")]


# ---------------------------------------------------------------------- listing


KEYS = ["a", "a ", "a b", "B", "b", "é", "名前", "x/y:z", "k" * 512, "with 'quote\" %s ?"]


def test_list_orders_by_namespace_and_key_across_pages(docs: Docs) -> None:
    for key in KEYS:
        docs.put(key, text=key)
        docs.put(key, namespace="block.skills", text=key)
    docs.put("only", namespace="agent", text="x")
    expected = [("agent", "only")]
    expected += [("block", k) for k in sorted(KEYS)]
    expected += [("block.skills", k) for k in sorted(KEYS)]
    for limit in (1, 3, 7, 100):
        assert docs.all(limit=limit) == expected
    assert docs.all("block.skills", limit=4) == [("block.skills", k) for k in sorted(KEYS)]
    assert docs.all("nothing-here") == []
    for key in KEYS:  # keys differing only by trailing spaces or case stay distinct
        assert docs.get(key).text == key
        assert docs.get(key, namespace="block.skills").version == 1


def test_list_returns_latest_versions_and_a_cursor_only_when_full(docs: Docs) -> None:
    docs.put("a", text="old")
    docs.put("a", text="new")
    docs.put("b", text="only")
    page = docs.list(limit=2)
    assert [(d.key, d.text, d.version) for d in page.items] == [("a", "new", 2), ("b", "only", 1)]
    assert page.next_cursor is not None
    assert docs.list(limit=2, cursor=page.next_cursor).items == []
    assert docs.list(limit=3).next_cursor is None


@pytest.mark.parametrize("cursor", ["", "x", "bm90IGpzb24", "WzEsMl0", "WyJhIl0"])
def test_a_malformed_cursor_is_invalid(docs: Docs, cursor: str) -> None:
    docs.put("a")
    with pytest.raises(InvalidInput):
        docs.list(cursor=cursor)


# ---------------------------------------------------------------------- search


@pytest.fixture
def library(docs: Docs) -> Docs:
    docs.put("cats", text="The pelican sleeps near the harbour")
    docs.put("cats", text="The flamingo dances near the harbour")  # pelican is gone now
    docs.put("dogs", text="A heron waits by the harbour", namespace="block.notes")
    docs.put("birds", text="pelican pelican heron", namespace="block.notes")
    docs.put("empty", {"content": "pelican in the body only"}, text="")
    return docs


@pytest.mark.requires(DOCUMENT_SEARCH)
def test_search_matches_latest_versions_only(library: Docs) -> None:
    hits = library.search("pelican")
    assert [(h.namespace, h.key) for h in hits] == [("block.notes", "birds")]
    flamingo = library.search("flamingo")
    assert [(h.key, h.version) for h in flamingo] == [("cats", 2)]
    assert flamingo[0].snippet == "The flamingo dances near the harbour"
    assert flamingo[0].spans == ((4, 12),)
    assert {h.key for h in library.search("harbour")} == {"cats", "dogs"}
    assert {h.key for h in library.search("harbour -heron")} == {"cats"}
    assert {h.key for h in library.search("flamingo OR heron")} == {"cats", "dogs", "birds"}
    assert {h.key for h in library.search('"heron waits"')} == {"dogs"}
    assert {h.key for h in library.search("flam*")} == {"cats"}


@pytest.mark.requires(DOCUMENT_SEARCH)
def test_search_ranks_and_filters_by_namespace(library: Docs) -> None:
    notes = library.search("heron", namespace="block.notes")
    assert {h.key for h in notes} == {"dogs", "birds"}
    assert all(h.namespace == "block.notes" for h in notes)
    assert library.search("heron", namespace="block") == []
    assert library.search("flamingo", namespace="block.notes") == []
    ranks = [h.rank for h in library.search("harbour OR heron")]
    assert ranks == sorted(ranks, reverse=True)
    assert len(library.search("harbour OR heron", limit=1)) == 1


HOSTILE = [
    "NEAR(", '"unbalanced', '"', "col:x", "text:apple", "documents_fts:apple", "*", "apple**",
    "'); DROP TABLE documents; --", "apple' OR '1'='1", "AND", "OR", "NOT", "apple NOT banana",
    "-", "-apple", "(apple", "()", "%", "_", "\\", "apple\x00banana", "\x00", "\ud800",
    "名前", "a" * 1001, "", "   ", "$1 ? :name @x", "app*le", "NEAR",
]  # fmt: skip


@pytest.mark.requires(DOCUMENT_SEARCH)
@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_raise_invalid_query_or_return_hits(library: Docs, query: str) -> None:
    try:
        hits = library.search(query)
    except InvalidQuery:
        hits = []
    assert all(isinstance(h, DocumentHit) for h in hits)
    assert {h.key for h in library.search("harbour")} == {"cats", "dogs"}
    assert len(library.all()) == 4


# ---------------------------------------------------------------------- scope


def test_scope_is_a_wall_for_documents(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    scopes = [("acme", "u1"), ("acme", "u2"), ("globex", "u1")]
    managers = {s: open_scope(tenant=s[0], user=s[1]) for s in scopes}
    for (tenant, user), mgr in managers.items():
        mgr.create(id="shared")
        tag = f"{tenant}{user}"
        for level, sid in (("user", None), ("session", "shared")):
            Docs(mgr.store, mgr.scope, level, sid).put("k", text=f"secret {tag} pelican")
    for (tenant, user), mgr in managers.items():
        tag = f"{tenant}{user}"
        for level, sid in (("user", None), ("session", "shared")):
            d = Docs(mgr.store, mgr.scope, level, sid)
            assert [v.text for v in d.versions("k")] == [f"secret {tag} pelican"]
            assert d.all() == [("block", "k")]
            if d.searchable:
                hits = d.search("pelican")
                assert len(hits) == 1 and tag in hits[0].snippet
                assert d.search("secret -" + tag) == []
    Docs(managers[("acme", "u1")].store, Scope("acme", "u1")).delete("k")
    assert Docs(managers[("acme", "u2")].store, Scope("acme", "u2")).get("k") is not None
    assert manager.store.list_scopes() == [Scope(*s) for s in sorted(scopes)]


def test_list_scopes_includes_scopes_with_only_documents(
    manager: sessionary.SessionManager,
) -> None:
    store = manager.store
    Docs(store, Scope("acme", "alice"), "user").put("k")
    Docs(store, Scope("globex", "bob"), "app").put("k")
    assert store.list_scopes() == [Scope("acme", "alice"), Scope("globex", "default")]


# ---------------------------------------------------------------------- restore


def test_restore_writes_versions_exactly_and_is_idempotent(
    manager: sessionary.SessionManager,
) -> None:
    manager.create(id="src")
    manager.create(id="dst")
    source = Docs(manager.store, manager.scope, "session", "src")
    target = Docs(manager.store, manager.scope, "session", "dst")
    for i, author in enumerate(["user", "model", "compaction"]):
        source.put("k", {"n": i}, text=f"version {i}", author=author)
    versions = source.versions("k")
    target.restore(versions[:2])
    assert target.versions("k") == versions[:2]
    target.restore(versions)  # the first two are skipped, the third added
    target.restore(versions)
    assert target.versions("k") == versions
    assert target.get("k") == versions[-1]
    if target.searchable:
        assert target.search("version")[0].version == 3
    assert target.put("k", {"n": 9}, expected=3).version == 4
    changed = Document("block", "k", {"n": "other"}, 2, "user", versions[1].updated_at, "x")
    before = target.versions("k")
    with pytest.raises(VersionConflict):
        target.restore([changed])
    later = Document("block", "k", {"n": 2}, 2, "model", versions[1].updated_at, "version 1")
    with pytest.raises(VersionConflict):
        target.restore([versions[0], later])
    assert target.versions("k") == before


def test_restore_refuses_mixed_or_malformed_versions(docs: Docs) -> None:
    when = datetime.now(UTC)
    one = Document("block", "a", {}, 1, "user", when, "")
    bad = [
        [one, Document("block", "b", {}, 2, "user", when, "")],
        [one, one],
        [Document("block", "a", {}, 0, "user", when, "")],
        [Document("bad ns", "a", {}, 1, "user", when, "")],
        [Document("block", "a", {}, 1, "user", "yesterday", "")],  # type: ignore[arg-type]
        [{"namespace": "block"}],
    ]
    for versions in bad:
        with pytest.raises(InvalidDocument):
            docs.restore(versions)  # type: ignore[arg-type]
    assert docs.all() == []


# ---------------------------------------------------------------------- bad input


BAD_WRITES: list[dict[str, Any]] = [
    {"namespace": ""},
    {"namespace": ".block"},
    {"namespace": "block/label"},
    {"namespace": "has space"},
    {"namespace": "n" * 129},
    {"namespace": 5},
    {"key": ""},
    {"key": "k" * 513},
    {"key": "tab\there"},
    {"key": "nul\x00"},
    {"key": "\ud800"},
    {"key": None},
    {"body": "not an object"},
    {"body": [1, 2]},
    {"body": {"set": {1, 2}}},
    {"body": {"nan": float("nan")}},
    {"body": {1: "int key"}},
    {"text": None},
    {"text": b"bytes"},
    {"text": "\ud800"},
    {"text": "nul\x00"},
    {"author": None},
    {"author": "a" * 129},
    {"author": "line\nbreak"},
    {"expected_version": -1},
    {"expected_version": "1"},
    {"expected_version": True},
]


@pytest.mark.parametrize("change", BAD_WRITES, ids=repr)
def test_bad_input_is_refused_and_changes_nothing(
    manager: sessionary.SessionManager, change: dict[str, Any]
) -> None:
    manager.create(id="s")
    good = Docs(manager.store, manager.scope, "session", "s")
    good.put("k", text="kept")
    before = everything(manager, ("s",))
    args: dict[str, Any] = {
        "namespace": "block", "key": "k", "body": {"content": "new"}, "text": "new",
        "author": "user", "expected_version": None,
    }  # fmt: skip
    args.update(change)
    with pytest.raises(InvalidDocument):
        manager.store.put_document(manager.scope, "session", "s", **args)
    assert everything(manager, ("s",)) == before


def test_bad_reads_are_refused(docs: Docs) -> None:
    docs.put("k")
    for call in (
        lambda: docs.get("k", version=0),
        lambda: docs.get("k", namespace="bad ns"),
        lambda: docs.get(""),
        lambda: docs.versions("k", namespace=""),
        lambda: docs.delete("\x00"),
        lambda: docs.list(namespace="no/slash"),
        lambda: docs.search("k", namespace="no/slash"),
    ):
        with pytest.raises(InvalidDocument):
            call()
    with pytest.raises(InvalidInput):
        docs.list(limit=0)
    assert docs.all() == [("block", "k")]


def test_an_oversized_document_is_refused(small_store_url: str) -> None:
    with sessionary.SessionManager(small_store_url) as small:
        d = Docs(small.store, small.scope)
        d.put("k", text="fits")
        with pytest.raises(PayloadTooLarge):
            d.put("k", {"content": "x" * 1000})
        with pytest.raises(PayloadTooLarge):
            d.put("k", {}, text="é" * 600)
        assert [v.text for v in d.versions("k")] == ["fits"]


# ---------------------------------------------------------------------- concurrency

WRITERS = 4
EACH = 10


def test_concurrent_writers_never_lose_a_version(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    handles = [Docs(open_scope().store, manager.scope) for _ in range(WRITERS)]
    start = threading.Barrier(WRITERS)

    def write(n: int) -> list[int]:
        start.wait()
        return [handles[n].put("k", text=f"w{n} #{i}", author=f"w{n}").version for i in range(EACH)]

    with ThreadPoolExecutor(WRITERS) as pool:
        returned = [v for versions in pool.map(write, range(WRITERS)) for v in versions]
    assert sorted(returned) == list(range(1, WRITERS * EACH + 1))
    stored = Docs(manager.store, manager.scope).versions("k")
    assert [d.version for d in stored] == list(range(1, WRITERS * EACH + 1))
    for n in range(WRITERS):  # each writer's versions keep its order
        mine = [d.text for d in stored if d.author == f"w{n}"]
        assert mine == [f"w{n} #{i}" for i in range(EACH)]


def _race(handles: list[Docs], expected: int) -> list[str]:
    """Every handle writes "k" at once expecting `expected`; return who won."""
    start = threading.Barrier(len(handles))

    def write(n: int) -> str:
        start.wait()
        try:
            handles[n].put("k", text=f"w{n}", expected=expected)
        except VersionConflict:
            return "conflict"
        return "won"

    with ThreadPoolExecutor(len(handles)) as pool:
        return list(pool.map(write, range(len(handles))))


def test_only_one_writer_wins_an_expected_version(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    manager.create(id="s")
    handles = [Docs(open_scope().store, manager.scope, "session", "s") for _ in range(WRITERS)]
    for expected in (0, 1):
        outcomes = _race(handles, expected)
        assert sorted(outcomes) == ["conflict"] * (WRITERS - 1) + ["won"]
    versions = Docs(manager.store, manager.scope, "session", "s").versions("k")
    assert [d.version for d in versions] == [1, 2]


# ---------------------------------------------------------------------- export and import


def test_export_and_import_carry_session_documents(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    manager.create(id="s").append(Message.user("hello"))
    docs = Docs(manager.store, manager.scope, "session", "s")
    docs.put("k", text="one", author="user")
    docs.put("k", {"content": "two", "deep": [1, {"x": True}]}, text="two", author="model")
    docs.put("system", {"text": "be brief"}, namespace="prompt", author="system")
    Docs(manager.store, manager.scope, "user").put("u", text="user level: not a session's")
    records = json.loads(json.dumps(list(manager.export("s"))))
    kinds = [r["type"] for r in records]
    assert kinds == ["session", "message", "document", "document", "document"]
    target = open_scope(tenant="elsewhere")
    target.import_records(records)
    copied = Docs(target.store, target.scope, "session", "s")
    assert copied.versions("k") == docs.versions("k")
    assert copied.versions("system", namespace="prompt") == docs.versions("system", "prompt")
    if copied.searchable:
        assert copied.search("two")[0].key == "k"
    assert Docs(target.store, target.scope, "user").list().items == []
    assert list(target.export("s"))[2:] == records[2:]


def test_an_export_without_documents_still_imports(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    manager.create(id="s").append(Message.user("hello"))
    Docs(manager.store, manager.scope, "session", "s").put("k", text="one")
    old = [r for r in manager.export("s") if r["type"] != "document"]
    target = open_scope(tenant="elsewhere")
    target.import_records(old)
    assert [m.text for m in target.session("s").history()] == ["hello"]
    assert Docs(target.store, target.scope, "session", "s").list().items == []


def test_a_bad_document_record_imports_nothing(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    manager.create(id="s").append(Message.user("hello"))
    Docs(manager.store, manager.scope, "session", "s").put("k", text="one")
    records = list(manager.export("s"))
    document = records[-1]["document"]
    target = open_scope(tenant="elsewhere")
    bad_records: list[list[dict[str, Any]]] = [
        [*records, {"type": "document", "session_id": "s", "document": {**document, "key": ""}}],
        [*records, records[-1]],  # the same version twice
        [*records, {"type": "document", "session_id": "s", "document": {"key": "k"}}],
        [records[-1], *records],  # before its session
    ]
    for bad in bad_records:
        with pytest.raises(InvalidInput):
            target.import_records(bad)
        assert target.get("s") is None
    assert target.store.list_scopes() == [manager.scope]
