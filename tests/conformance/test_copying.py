"""What copying a store needs from every backend: `list_scopes` and `restore_state`."""

from __future__ import annotations

import pytest

import sessionary
from sessionary import InvalidInput, Scope, SessionNotFound, State, VersionConflict
from sessionary.records import StateLevel


def test_list_scopes_names_every_owner_of_data(manager: sessionary.SessionManager) -> None:
    store = manager.store
    assert store.list_scopes() == []
    manager.for_user("bob", tenant="t2").create()
    manager.for_user("alice", tenant="t2").create()
    manager.for_user("alice", tenant="t2").create()  # listed once
    manager.for_user("carol", tenant="t1").update_state({"user": "only"})
    manager.for_user("dave", tenant="t3").update_state({"app": "only"}, level="app")
    assert store.list_scopes() == [
        Scope("t1", "carol"),
        Scope("t2", "alice"),
        Scope("t2", "bob"),
        Scope("t3", "default"),
    ]


def test_restore_state_writes_a_document_exactly(manager: sessionary.SessionManager) -> None:
    store, scope = manager.store, manager.scope
    wanted = State({"a": {"b": [1, None, 2.5]}, "é": "✓"}, 7)
    levels: tuple[StateLevel, ...] = ("user", "app")
    for level in levels:
        assert store.restore_state(scope, level, None, wanted) == wanted
        assert store.get_state(scope, level, None) == wanted
    chat = manager.create()
    assert store.restore_state(scope, "session", chat.id, wanted) == wanted
    assert chat.get_state() == wanted
    assert chat.update_state({"next": 1}).version == 8  # later writes carry on from it


def test_restore_state_is_idempotent_but_never_overwrites(
    manager: sessionary.SessionManager,
) -> None:
    store, scope = manager.store, manager.scope
    manager.update_state({"theme": "dark"})
    current = manager.get_state()
    assert store.restore_state(scope, "user", None, current) == current  # the same: a no-op
    assert manager.get_state() == current
    for other in (State({"theme": "light"}, 1), State({"theme": "dark"}, 2)):
        with pytest.raises(VersionConflict):
            store.restore_state(scope, "user", None, other)
    assert manager.get_state() == current


def test_restore_state_checks_its_input(manager: sessionary.SessionManager) -> None:
    store, scope = manager.store, manager.scope
    for bad in (State({}, 0), State({"a": {1, 2}}, 1)):
        with pytest.raises(InvalidInput):
            store.restore_state(scope, "user", None, bad)
    with pytest.raises(SessionNotFound):
        store.restore_state(scope, "session", "missing", State({"a": 1}, 1))
    assert manager.get_state() == State({}, 0)
