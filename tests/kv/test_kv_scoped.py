"""Scope is a wall: a tenant's view reads and writes only its own keys."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionary import Message
from sessionary.errors import InvalidInput
from sessionary.kv import AsyncScopedDriver, IncrementalSessionManager, MemoryDriver, ScopedDriver
from sessionary.kv.keys import tenant_prefix

HOSTILE = ["a", "a:b", "a:", "b", ":", "a:b:c", "1", "1:a", "tenant", "tenant:1:a", "é", "a b"]


def test_hostile_tenant_ids_never_see_each_other(driver: Any) -> None:
    views = {t: ScopedDriver(driver, t) for t in HOSTILE}
    for tenant, view in views.items():
        view.put("b:c", tenant)
        view.put("x", tenant)
        view.commit({"meta": None}, {"meta": tenant})
    for tenant, view in views.items():
        assert view.get("b:c") == view.get("x") == view.get("meta") == tenant
        assert view.list_prefix("") == [("b:c", tenant), ("meta", tenant), ("x", tenant)]
        assert view.list_prefix("b") == [("b:c", tenant)]
    assert len(driver.list_prefix("")) == 3 * len(HOSTILE)
    views["a"].delete("x")
    assert views["a:b"].get("x") == "a:b"
    assert views["a"].get("x") is None


@given(st.text(min_size=1, max_size=8), st.text(min_size=1, max_size=8))
def test_tenant_prefixes_are_never_prefixes_of_each_other(one: str, two: str) -> None:
    try:
        p1, p2 = tenant_prefix(one), tenant_prefix(two)
    except InvalidInput:
        return  # lone surrogates are refused
    if one != two:
        assert not p1.startswith(p2)
        assert not p2.startswith(p1)


def test_tenants_with_separators_keep_separate_sessions(driver: Any) -> None:
    managers = {t: IncrementalSessionManager(ScopedDriver(driver, t), 2) for t in HOSTILE}
    for (tenant, manager), i in itertools.product(managers.items(), range(3)):
        manager.append_message("chat", Message.user(f"{tenant}-{i}", id=f"m{i}"))
    for tenant, manager in managers.items():
        assert [m.text for m in manager.get_history("chat")] == [f"{tenant}-{i}" for i in range(3)]
    assert managers["a"].delete_session("chat") is True
    assert managers["a"].get_history("chat") == []
    assert len(managers["a:b"].get_history("chat")) == 3


@pytest.mark.parametrize("tenant", ["", None, 5, "x\ud800"])
def test_bad_tenant_ids_are_refused(tenant: Any) -> None:
    with pytest.raises(InvalidInput):
        ScopedDriver(MemoryDriver(), tenant)


async def test_async_scoped_driver(adriver: Any) -> None:
    one, two = AsyncScopedDriver(adriver, "a"), AsyncScopedDriver(adriver, "a:b")
    await one.put("b:k", "one")
    await two.put("k", "two")
    assert await one.list_prefix("") == [("b:k", "one")]
    assert await two.list_prefix("") == [("k", "two")]
    assert await one.commit({"b:k": "one"}, {"b:k": None}) is True
    assert await one.get("b:k") is None
    assert await two.delete("k") is True
    await one.close()  # leaves the shared driver open
    assert await adriver.list_prefix("") == []
