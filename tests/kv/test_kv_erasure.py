"""Erasure in the KV layer: a tenant's keys, or a user's sessions, go; nothing else does."""

from __future__ import annotations

from typing import Any

import pytest

from sessionary import Message
from sessionary.errors import InvalidId
from sessionary.kv import (
    AsyncIncrementalSessionManager,
    AsyncScopedDriver,
    IncrementalSessionManager,
    ScopedDriver,
)


def _fill(driver: Any) -> dict[str, IncrementalSessionManager]:
    managers = {t: IncrementalSessionManager(ScopedDriver(driver, t), 2) for t in ("acme", "zeta")}
    for tenant, manager in managers.items():
        for user in ("erin", "otto"):
            for n in range(3):  # past a roll-up: loose entries, chunks and id records
                session_id = f"{user}-{n}"
                manager.get_or_create(session_id, user)
                for i in range(3):
                    manager.append_message(session_id, Message.user(f"{tenant}x{user}x {i}"))
                manager.update_state(session_id, {"m": f"{tenant}x{user}x"})
        manager.get_or_create("nobody-0")
    return managers


def _raw(driver: Any) -> list[tuple[str, str]]:
    return driver.list_prefix("")


def test_erase_user_deletes_only_that_users_sessions(driver: Any) -> None:
    managers = _fill(driver)
    erins = ("tenant:4:acme:sessions:erin-", "tenant:4:acme:session-ids:erin-")
    kept = [entry for entry in _raw(driver) if not entry[0].startswith(erins)]
    assert len(kept) < len(_raw(driver))

    assert managers["acme"].erase_user("erin") == 3

    assert [entry for entry in _raw(driver) if "acmexerinx" in entry[1]] == []
    assert _raw(driver) == kept
    assert managers["acme"].get_history("otto-0") != []
    assert managers["zeta"].get_history("erin-0") != []


def test_erase_tenant_deletes_every_key_of_the_tenant_only(driver: Any) -> None:
    _fill(driver)
    zeta = [entry for entry in _raw(driver) if entry[0].startswith("tenant:4:zeta:")]
    acme = len(_raw(driver)) - len(zeta)

    assert ScopedDriver(driver, "acme").erase() == acme

    assert _raw(driver) == zeta
    assert ScopedDriver(driver, "acme").list_prefix("") == []


def test_erase_user_checks_the_id(driver: Any) -> None:
    with pytest.raises(InvalidId):
        IncrementalSessionManager(driver).erase_user("no:colons")


async def test_erase_async(adriver: Any) -> None:
    manager = AsyncIncrementalSessionManager(AsyncScopedDriver(adriver, "acme"))
    await manager.get_or_create("a", "erin")
    await manager.append_message("a", Message.user("hi"))
    await manager.get_or_create("b", "otto")
    assert await manager.erase_user("erin") == 1
    assert await manager.get_history("a") == []
    assert await AsyncScopedDriver(adriver, "acme").erase() > 0
    assert await adriver.list_prefix("") == []
