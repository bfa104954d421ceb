"""Helpers for the conformance suite; the backends themselves come from tests/conftest.py.

Nothing here names a backend except `xfail_backend`, which marks a known bug that only
some backends have (the test body itself stays backend-neutral). Capabilities (the
`requires` marker, the `capabilities` fixture) come from tests/conftest.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import sessionary

Snapshot = Callable[[str], list[dict[str, Any]]]
OpenScope = Callable[..., sessionary.SessionManager]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "xfail_backend(*backends, reason): a known bug on the named backends only; "
        "strict xfail there, a normal test everywhere else",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    del config
    for item in items:
        callspec = getattr(item, "callspec", None)
        backend = callspec.params.get("store_url") if callspec is not None else None
        for mark in item.iter_markers("xfail_backend"):
            if backend in mark.args:
                item.add_marker(pytest.mark.xfail(strict=True, reason=mark.kwargs["reason"]))


def with_option(url: str, option: str) -> str:
    """Return `url` with one more query-string option."""
    return f"{url}{'&' if '?' in url else '?'}{option}"


@pytest.fixture
def snapshot(manager: sessionary.SessionManager) -> Snapshot:
    """Everything stored about one session: its row, state and every message (on all branches)."""

    def take(session_id: str) -> list[dict[str, Any]]:
        return list(manager.export(session_id))

    return take


@pytest.fixture
def open_scope(manager: sessionary.SessionManager, store_url: str) -> Iterator[OpenScope]:
    """Open another manager on the same store as `manager`, for any tenant and user.

    A private `memory://` store can only be shared through its store object; every other
    URL is opened again, so the second manager has a connection of its own.
    """
    opened: list[sessionary.SessionManager] = []

    def open_(tenant: str = "default", user: str = "default") -> sessionary.SessionManager:
        if store_url == "memory://":
            return sessionary.SessionManager(manager.store, tenant=tenant, user=user)
        other = sessionary.SessionManager(store_url, tenant=tenant, user=user)
        opened.append(other)
        return other

    yield open_
    for other in opened:
        other.close()


@pytest.fixture
def small_store_url(store_url: str) -> str:
    """A fresh store of the same backend whose size limit is 1000 bytes."""
    return with_option(store_url, "max_message_bytes=1000")
