"""Erasure: everything of one user, or one tenant, goes in one call; nothing else moves.

Every piece of data written here carries its tenant's and user's ids in its text, so the
raw dump of the store (every row of every table, every Redis key with its value) shows
whether anything of an erased scope is left.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from _raw_dump import raw_dump

import sessionary

OpenScope = Callable[..., sessionary.SessionManager]

SCOPES = [("acme", "erin"), ("acme", "otto"), ("acme", "default"), ("zeta", "erin")]


def _fill(open_scope: OpenScope, capabilities: frozenset[str]) -> None:
    """Give every scope sessions, messages, state, documents and overlays, all marked."""
    for tenant, user in SCOPES:
        mgr = open_scope(tenant, user)
        mark = f"{tenant}x{user}x"
        for n in range(2):
            session = mgr.create(id=f"s{n}", name=mark, metadata={"m": mark})
            first = session.append({"role": "user", "content": f"hello {mark}"})
            last = session.append({"role": "assistant", "content": f"reply {mark}"})
            session.update_state({"note": mark})
            if "documents" in capabilities:
                session.add_compaction(f"summary {mark}", first.id, last.id)
        mgr.update_state({"user": mark})
        mgr.update_state({"app": mark}, level="app")
        if "documents" in capabilities:
            mgr.store.put_document(
                mgr.scope, "user", None, "notes", "k", {"v": mark}, mark, "test", None
            )


def _export(open_scope: OpenScope, tenant: str, user: str) -> list[dict[str, Any]]:
    return list(open_scope(tenant, user).export())


def _hits(rows: list[str], marker: str) -> list[str]:
    return [row for row in rows if marker in row]


@pytest.fixture
def filled(
    manager: sessionary.SessionManager, open_scope: OpenScope, capabilities: frozenset[str]
) -> None:
    _fill(open_scope, capabilities)


@pytest.mark.usefixtures("filled")
def test_erase_user_leaves_nothing_of_the_user_and_everything_else(
    manager: sessionary.SessionManager, open_scope: OpenScope, store_url: str
) -> None:
    others = [(t, u) for t, u in SCOPES if (t, u) != ("acme", "erin")]
    before = {scope: _export(open_scope, *scope) for scope in others}
    assert _hits(raw_dump(store_url, manager), "acmexerinx")

    assert open_scope("acme", "erin").erase_user() == 2

    assert _hits(raw_dump(store_url, manager), "acmexerinx") == []
    gone = open_scope("acme", "erin")
    assert gone.list().items == []
    assert gone.get_state().version == 0
    assert {scope: _export(open_scope, *scope) for scope in others} == before
    assert sessionary.Scope("acme", "erin") not in manager.store.list_scopes()


@pytest.mark.usefixtures("filled")
def test_erase_tenant_leaves_nothing_of_the_tenant_and_every_other_tenant(
    manager: sessionary.SessionManager, open_scope: OpenScope, store_url: str
) -> None:
    before = _export(open_scope, "zeta", "erin")

    assert open_scope("acme", "otto").erase_tenant() == 6

    assert _hits(raw_dump(store_url, manager), "acmex") == []
    assert _export(open_scope, "zeta", "erin") == before
    assert {s.tenant for s in manager.store.list_scopes()} == {"zeta"}
    assert open_scope("acme", "default").get_state("app").version == 0


def test_erase_user_keeps_the_apps_data_under_the_default_user(
    manager: sessionary.SessionManager, open_scope: OpenScope
) -> None:
    mgr = open_scope("acme", "default")
    mgr.create(id="s")
    mgr.update_state({"app": 1}, level="app")
    assert mgr.erase_user() == 1
    assert mgr.get_state("app").data == {"app": 1}
    assert sessionary.Scope("acme", "default") in manager.store.list_scopes()


def test_erase_of_an_empty_scope_erases_nothing(manager: sessionary.SessionManager) -> None:
    manager.create(id="kept")
    assert manager.for_user("nobody").erase_user() == 0
    assert manager.for_user("x", tenant="nobody").erase_tenant() == 0
    assert manager.get("kept") is not None


async def test_erase_async(amanager: sessionary.AsyncSessionManager) -> None:
    other = amanager.for_user("other")
    await amanager.create(id="a")
    await other.create(id="b")
    assert await amanager.erase_user() == 1
    assert await amanager.get("a") is None
    assert await other.get("b") is not None
    assert await amanager.erase_tenant() == 1
    assert await other.get("b") is None
