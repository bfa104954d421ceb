"""State documents at session, user and app level: merge patches and optimistic versions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import sessionary
from sessionary import Conflict, SessionNotFound, State, VersionConflict

Snapshot = Callable[[str], list[dict[str, Any]]]
OpenScope = Callable[..., sessionary.SessionManager]


def test_a_new_state_is_empty_at_version_zero(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    for level in ("session", "user", "app"):
        assert chat.get_state(level) == State({}, 0)  # type: ignore[arg-type]
    assert manager.get_state() == State({}, 0)
    assert manager.get_state("app") == State({}, 0)


def test_merge_patch_semantics(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    s1 = chat.update_state({"a": 1, "b": {"x": 1, "y": 2}, "list": [1, 2], "s": "text"})
    assert s1 == State({"a": 1, "b": {"x": 1, "y": 2}, "list": [1, 2], "s": "text"}, 1)
    # nested objects merge; null deletes; arrays and scalars replace
    s2 = chat.update_state({"b": {"y": None, "z": {"deep": True}}, "list": [3], "a": None})
    assert s2 == State({"b": {"x": 1, "z": {"deep": True}}, "list": [3], "s": "text"}, 2)
    # an object replaces a scalar and a scalar replaces an object
    s3 = chat.update_state({"s": {"now": "object"}, "b": 7})
    assert s3 == State({"b": 7, "list": [3], "s": {"now": "object"}}, 3)
    # deleting a missing key is harmless but still a write
    s4 = chat.update_state({"missing": None})
    assert s4 == State({"b": 7, "list": [3], "s": {"now": "object"}}, 4)
    # an empty patch changes no data, but is a write too
    s5 = chat.update_state({})
    assert s5.data == s4.data and s5.version == 5
    # nulls inside a new object are dropped, not stored
    s6 = chat.update_state({"fresh": {"keep": 1, "drop": None}})
    assert s6.data["fresh"] == {"keep": 1}
    assert chat.get_state() == s6
    # values of every JSON type survive
    values = {
        "str": "é ✓ 😀",
        "int": -3,
        "float": 2.5,
        "true": True,
        "false": False,
        "empty_list": [],
        "empty_obj_in_list": [{}],
        "big": 2**53,
    }
    chat.update_state(values)
    assert {k: chat.get_state().data[k] for k in values} == values


def test_versions_increment_per_document(manager: sessionary.SessionManager) -> None:
    one, two = manager.create(), manager.create()
    assert [one.update_state({"n": i}).version for i in range(3)] == [1, 2, 3]
    assert two.update_state({"n": 0}).version == 1
    assert one.update_state({"n": 9}, level="user").version == 1
    assert manager.update_state({"n": 9}, level="app").version == 1
    assert one.get_state().version == 3


def test_expected_version(manager: sessionary.SessionManager, snapshot: Snapshot) -> None:
    chat = manager.create()
    assert chat.update_state({"a": 1}, expected_version=0) == State({"a": 1}, 1)
    assert chat.update_state({"b": 2}, expected_version=1) == State({"a": 1, "b": 2}, 2)
    before = snapshot(chat.id)
    for stale in (0, 1, 3, 99):  # a negative version is InvalidInput (test_validation)
        with pytest.raises(VersionConflict):
            chat.update_state({"c": 3}, expected_version=stale)
    assert snapshot(chat.id) == before
    assert issubclass(VersionConflict, Conflict)


@pytest.mark.parametrize("level", ["user", "app"])
def test_expected_version_on_shared_levels(manager: sessionary.SessionManager, level: str) -> None:
    chat = manager.create()
    assert manager.update_state({"a": 1}, expected_version=0, level=level).version == 1  # type: ignore[arg-type]
    with pytest.raises(VersionConflict):
        chat.update_state({"a": 2}, expected_version=0, level=level)  # type: ignore[arg-type]
    with pytest.raises(VersionConflict):
        manager.update_state({"a": 2}, expected_version=5, level=level)  # type: ignore[arg-type]
    assert manager.get_state(level) == State({"a": 1}, 1)  # type: ignore[arg-type]
    assert chat.update_state({"a": 2}, expected_version=1, level=level).version == 2  # type: ignore[arg-type]


def test_returned_state_is_a_copy(manager: sessionary.SessionManager) -> None:
    chat = manager.create()
    patch: dict[str, Any] = {"list": [1], "obj": {"k": "v"}}
    got = chat.update_state(patch)
    patch["list"].append("patch")
    got.data["list"].append("result")
    read = chat.get_state()
    read.data["obj"]["k"] = "changed"
    assert chat.get_state() == State({"list": [1], "obj": {"k": "v"}}, 1)


def test_session_state_is_per_session(manager: sessionary.SessionManager) -> None:
    one, two = manager.create(), manager.create()
    one.update_state({"mine": 1})
    assert two.get_state() == State({}, 0)
    two.update_state({"mine": 2})
    assert one.get_state() == State({"mine": 1}, 1)


def test_session_state_of_a_missing_session(manager: sessionary.SessionManager) -> None:
    ghost = manager.session("no-such-session")
    with pytest.raises(SessionNotFound):
        ghost.get_state()
    with pytest.raises(SessionNotFound):
        ghost.update_state({"x": 1})


def test_user_state_is_shared_by_the_users_sessions_only(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    one, two = manager.create(), manager.create()
    one.update_state({"theme": "dark"}, level="user")
    assert two.get_state("user") == State({"theme": "dark"}, 1)
    assert manager.get_state() == State({"theme": "dark"}, 1)
    two.update_state({"lang": "fr"}, level="user")
    assert one.get_state("user") == State({"theme": "dark", "lang": "fr"}, 2)
    # session state is unaffected
    assert one.get_state() == State({}, 0)
    # another user of the same tenant has a user state of their own
    bob = open_scope(user="bob")
    assert bob.get_state() == State({}, 0)
    bob_chat = bob.create()
    assert bob_chat.get_state("user") == State({}, 0)
    bob.update_state({"theme": "light"})
    assert manager.get_state() == State({"theme": "dark", "lang": "fr"}, 2)
    assert bob.get_state() == State({"theme": "light"}, 1)
    # and so does the same user name in another tenant
    other_tenant = open_scope(tenant="other")
    assert other_tenant.get_state() == State({}, 0)


def test_app_state_is_shared_by_a_tenants_users_only(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    chat = manager.create()
    chat.update_state({"motd": "hello"}, level="app")
    bob = open_scope(user="bob")
    assert bob.get_state("app") == State({"motd": "hello"}, 1)
    bob.update_state({"limit": 5}, level="app")
    assert manager.get_state("app") == State({"motd": "hello", "limit": 5}, 2)
    assert chat.get_state("app") == State({"motd": "hello", "limit": 5}, 2)
    # user and session state are untouched by app writes
    assert manager.get_state() == State({}, 0)
    assert chat.get_state() == State({}, 0)
    # another tenant, even with the same user name, has its own app state
    other = open_scope(tenant="other")
    assert other.get_state("app") == State({}, 0)
    other.update_state({"motd": "bonjour"}, level="app")
    assert manager.get_state("app") == State({"motd": "hello", "limit": 5}, 2)


def test_state_is_persisted_for_every_handle(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    chat = manager.create(id="s1")
    chat.update_state({"k": [1, {"x": None}]})
    manager.update_state({"u": True})
    manager.update_state({"a": 1.5}, level="app")
    again = open_scope()
    assert again.session("s1").get_state() == State({"k": [1, {"x": None}]}, 1)
    assert again.get_state() == State({"u": True}, 1)
    assert again.get_state("app") == State({"a": 1.5}, 1)
    again.session("s1").update_state({"k": None}, expected_version=1)
    assert chat.get_state() == State({}, 2)
