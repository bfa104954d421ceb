"""Fixtures for the block tests: stores of every backend that keeps documents."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import sessionary
from sessionary.stores.base import DOCUMENTS

# Lets the test modules import the shared custom providers as `custom_providers`.
sys.path.insert(0, str(Path(__file__).parent))

from _open_scope import OpenScope


@pytest.fixture
def docs_url(store_url: str) -> str:
    """A fresh store of each backend that keeps documents (the others are skipped)."""
    with sessionary.SessionManager(store_url) as probe:
        if DOCUMENTS not in probe.store.capabilities:
            pytest.skip("this backend has no documents yet")
    return store_url


@pytest.fixture
def docs_manager(docs_url: str) -> Iterator[sessionary.SessionManager]:
    with sessionary.SessionManager(docs_url) as manager:
        yield manager


@pytest.fixture
def reopen(docs_manager: sessionary.SessionManager, docs_url: str) -> Iterator[OpenScope]:
    """Open another manager on the same store (a new connection unless it is memory://)."""
    opened: list[sessionary.SessionManager] = []

    def open_(config: sessionary.SessionConfig | None = None, tenant: str = "default",
              user: str = "default") -> sessionary.SessionManager:  # fmt: skip
        if docs_url == "memory://":
            return sessionary.SessionManager(docs_manager.store, tenant=tenant, user=user,
                                             config=config)  # fmt: skip
        other = sessionary.SessionManager(docs_url, tenant=tenant, user=user, config=config)
        opened.append(other)
        return other

    yield open_
    for other in opened:
        other.close()
