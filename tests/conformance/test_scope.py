"""Scope is a wall: no call reads or writes across tenants or users."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import sessionary
from sessionary import InvalidId, Message, MessageNotFound, SessionNotFound, State
from sessionary.stores.base import SEARCH

OpenScope = Callable[..., sessionary.SessionManager]

SCOPES = [("acme", "u1"), ("acme", "u2"), ("globex", "u1")]


@pytest.fixture
def scoped(open_scope: OpenScope) -> dict[tuple[str, str], sessionary.SessionManager]:
    """Managers for three scopes over one store, each with a session "shared" and one of its own."""
    managers = {scope: open_scope(tenant=scope[0], user=scope[1]) for scope in SCOPES}
    for (tenant, user), mgr in managers.items():
        tag = f"{tenant}{user}"
        chat = mgr.create(id="shared", name=f"shared of {tag}", metadata={"owner": tag})
        chat.append_all(
            [
                Message.user(f"secret {tag} pelican", id="m1"),
                Message.assistant(f"reply for {tag}", id="m2"),
            ]
        )
        chat.update_state({"owner": tag})
        own = mgr.create(id=f"own-{tenant}-{user}")
        own.append(Message.user(f"private {tag} flamingo"))
    return managers


def export_of(mgr: sessionary.SessionManager) -> list[dict[str, Any]]:
    return list(mgr.export())


def test_the_same_session_id_lives_independently_in_each_scope(
    scoped: dict[tuple[str, str], sessionary.SessionManager],
) -> None:
    for (tenant, user), mgr in scoped.items():
        tag = f"{tenant}{user}"
        chat = mgr.session("shared")
        assert chat.info().name == f"shared of {tag}"
        assert chat.info().metadata == {"owner": tag}
        assert [m.text for m in chat.history()] == [f"secret {tag} pelican", f"reply for {tag}"]
        assert chat.get_state().data == {"owner": tag}
        assert chat.message_count() == 2
        assert {i.id for i in mgr.list()} == {"shared", f"own-{tenant}-{user}"}


def test_reads_never_see_another_scope(
    scoped: dict[tuple[str, str], sessionary.SessionManager],
) -> None:
    for (tenant, user), mgr in scoped.items():
        tag = f"{tenant}{user}"
        for other_tenant, other_user in SCOPES:
            if (other_tenant, other_user) == (tenant, user):
                continue
            assert mgr.get(f"own-{other_tenant}-{other_user}") is None
            with pytest.raises(SessionNotFound):
                mgr.session(f"own-{other_tenant}-{other_user}").history()
        if SEARCH in mgr.store.capabilities:
            hits = mgr.search("pelican")
            assert [(h.session_id, h.message_id) for h in hits] == [("shared", "m1")]
            assert tag in hits[0].snippet
            flamingos = mgr.search("flamingo")
            assert [h.session_id for h in flamingos] == [f"own-{tenant}-{user}"]
            assert mgr.search("secret", session_id="shared")[0].snippet.count(tag) == 1
        records = export_of(mgr)
        sessions = {r["session"]["id"] for r in records if r["type"] == "session"}
        assert sessions == {"shared", f"own-{tenant}-{user}"}
        texts = [str(r["message"]["parts"]) for r in records if r["type"] == "message"]
        assert all(tag in t for t in texts), texts


def test_a_handle_on_another_scopes_session_raises_and_writes_nothing(
    scoped: dict[tuple[str, str], sessionary.SessionManager],
) -> None:
    owner = scoped[("acme", "u1")]
    before = export_of(owner)
    for scope in SCOPES[1:]:
        mgr = scoped[scope]
        for call in intrusions(mgr, "own-acme-u1"):
            with pytest.raises(SessionNotFound):
                call()
        assert mgr.delete("own-acme-u1") is False
    assert export_of(owner) == before


def intrusions(mgr: sessionary.SessionManager, session_id: str) -> list[Callable[[], object]]:
    """Every call on a session id that must raise SessionNotFound when it is not in scope."""
    ghost = mgr.session(session_id)
    return [
        ghost.info,
        lambda: ghost.append(Message.user("intruder")),
        lambda: ghost.append_all([Message.user("intruder")]),
        lambda: ghost.update(Message.user("intruder", id="m1")),
        lambda: ghost.delete("m1"),
        ghost.clear,
        lambda: ghost.checkout(None),
        lambda: ghost.get_message("m1"),
        ghost.head,
        ghost.history,
        lambda: ghost.history(limit=1),
        lambda: ghost.branches("m1"),
        ghost.path_length,
        ghost.message_count,
        ghost.get_state,
        lambda: ghost.update_state({"owner": "intruder"}),
        lambda: ghost.search("flamingo"),
        lambda: mgr.search("flamingo", session_id=session_id),
        lambda: mgr.rename(session_id, "intruder"),
        lambda: mgr.set_metadata(session_id, {"owner": "intruder"}),
        lambda: mgr.end(session_id),
        lambda: mgr.add_usage(session_id, 1, 1, 1.0),
        lambda: mgr.fork(session_id),
        lambda: list(mgr.export(session_id)),
    ]


def test_writes_in_one_scope_leave_the_others_alone(
    scoped: dict[tuple[str, str], sessionary.SessionManager],
) -> None:
    others = {scope: export_of(mgr) for scope, mgr in scoped.items() if scope != ("acme", "u1")}
    mgr = scoped[("acme", "u1")]
    chat = mgr.session("shared")
    chat.append(Message.user("more pelican talk"))
    chat.update(Message.user("rewritten", id="m1"))
    chat.delete("m2")
    chat.checkout(None)
    chat.update_state({"owner": None})
    mgr.rename("shared", "renamed")
    mgr.set_metadata("shared", {})
    mgr.add_usage("shared", 5, 5, 5.0)
    mgr.end("shared")
    mgr.fork("shared", id="forked")
    mgr.session("shared").clear()
    assert mgr.delete("shared") is True
    mgr.create(id="shared")
    mgr.import_records(
        [{"type": "session", "session": {"id": "imported"}, "state": {"data": {}, "version": 0}}]
    )
    for scope, records in others.items():
        assert export_of(scoped[scope]) == records, scope


def test_a_parent_from_another_scope_is_not_found(
    scoped: dict[tuple[str, str], sessionary.SessionManager],
) -> None:
    mine = scoped[("acme", "u2")].create(id="fresh")
    before = export_of(scoped[("acme", "u2")])
    with pytest.raises(MessageNotFound):
        mine.append(Message.user("x"), parent="m1")  # "m1" lives in "shared" of every scope
    with pytest.raises(MessageNotFound):
        mine.checkout("m1")
    assert export_of(scoped[("acme", "u2")]) == before


def test_user_and_app_state_follow_scope(
    scoped: dict[tuple[str, str], sessionary.SessionManager],
) -> None:
    scoped[("acme", "u1")].update_state({"who": "acme u1"})
    scoped[("acme", "u1")].update_state({"app": "acme"}, level="app")
    assert scoped[("acme", "u2")].get_state() == State({}, 0)
    assert scoped[("globex", "u1")].get_state() == State({}, 0)
    assert scoped[("acme", "u2")].get_state("app") == State({"app": "acme"}, 1)
    assert scoped[("globex", "u1")].get_state("app") == State({}, 0)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (("a", "b-c"), ("a-b", "c")),
        (("a", "b.c"), ("a.b", "c")),
        (("a", "b_c"), ("a_b", "c")),
        (("ab", "c"), ("a", "bc")),
        (("t", "default"), ("t-default", "default")),
    ],
)
def test_scopes_whose_names_run_together_stay_apart(
    open_scope: OpenScope, first: tuple[str, str], second: tuple[str, str]
) -> None:
    one = open_scope(tenant=first[0], user=first[1])
    two = open_scope(tenant=second[0], user=second[1])
    one.create(id="s").append(Message.user("only in the first scope: ibex"))
    one.update_state({"first": 1})
    one.update_state({"first": 1}, level="app")
    assert two.get("s") is None
    assert two.list().items == []
    if SEARCH in two.store.capabilities:
        assert two.search("ibex") == []
    assert two.get_state() == State({}, 0)
    assert two.get_state("app") == State({}, 0)
    two.create(id="s")
    assert one.session("s").message_count() == 1


@pytest.mark.parametrize(
    "bad", ["a:b", "a/b", "a b", "", "x" * 200, "-x", "a\nb", "a*", "t%", "\u00e9"]
)
def test_scope_ids_with_separators_are_refused(
    manager: sessionary.SessionManager, store_url: str, bad: str
) -> None:
    with pytest.raises(InvalidId):
        sessionary.SessionManager(store_url, tenant=bad)
    with pytest.raises(InvalidId):
        sessionary.SessionManager(store_url, user=bad)
    with pytest.raises(InvalidId):
        manager.for_user(bad)
    with pytest.raises(InvalidId):
        manager.for_user("fine", tenant=bad)
    with pytest.raises(InvalidId):
        sessionary.Scope(tenant=bad)


def test_for_user_with_an_empty_tenant_is_refused(manager: sessionary.SessionManager) -> None:
    with pytest.raises(InvalidId):
        manager.for_user("fine", tenant="")


def test_for_user_shares_the_store(manager: sessionary.SessionManager) -> None:
    bob = manager.for_user("bob")
    assert bob.scope == sessionary.Scope("default", "bob")
    bob.create(id="s").append(Message.user("hello"))
    assert manager.get("s") is None
    assert manager.for_user("bob").session("s").message_count() == 1
    carol = manager.for_user("carol", tenant="other")
    assert carol.scope == sessionary.Scope("other", "carol")
    assert carol.get("s") is None
