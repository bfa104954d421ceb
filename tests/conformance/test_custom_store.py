"""A store written outside the library plugs in, and the conformance suite holds on it.

`ForwardingStore` is what a third party might write to add auditing, quotas or
encryption: a class of its own that holds another store and answers exactly the
protocol's methods, no more (any call the library made past the protocol would fail
here). `CoreStore` declares no capability and takes `NoSearch` and `NoDocuments` for the
rest, as a store that implements only the core does. Both are handed to the managers as
objects (``SessionManager(store)``), and the suite's behaviours that need nothing but a
manager run against each: the tree, sessions, state, idempotency, export and import,
concurrent writers, bad input, the manager's message operations, and a random-operation
model of the tree.
"""

from __future__ import annotations

import importlib
import inspect
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

import sessionary
from sessionary import CompactionPolicy, Message, SessionConfig, Unsupported
from sessionary.stores.base import DOCUMENTS, SEARCH
from sessionary.stores.minimal import NoDocuments, NoSearch

PROTOCOL = sorted(
    name
    for name, _ in inspect.getmembers(sessionary.Store, inspect.isfunction)
    if not name.startswith("_")
)
"""The protocol's methods, from the protocol class itself."""


def _forward(name: str) -> Callable[..., Any]:
    def method(self: ForwardingStore, *args: Any, **kwargs: Any) -> Any:
        self.calls[name] += 1
        return getattr(self.inner, name)(*args, **kwargs)

    method.__name__ = name
    return method


def _forward_async(name: str) -> Callable[..., Any]:
    async def method(self: AsyncForwardingStore, *args: Any, **kwargs: Any) -> Any:
        self.calls[name] += 1
        return await getattr(self.inner, name)(*args, **kwargs)

    method.__name__ = name
    return method


class ForwardingStore:
    """A synchronous store of its own over any other: it knows the protocol only."""

    def __init__(self, inner: sessionary.Store) -> None:
        self.inner = inner
        self.capabilities: frozenset[str] = inner.capabilities
        self.max_message_bytes: int = inner.max_message_bytes
        self.calls: Counter[str] = Counter()


class AsyncForwardingStore:
    """The same for the async protocol."""

    def __init__(self, inner: sessionary.AsyncStore) -> None:
        self.inner = inner
        self.capabilities: frozenset[str] = inner.capabilities
        self.max_message_bytes: int = inner.max_message_bytes
        self.calls: Counter[str] = Counter()


for _name in PROTOCOL:
    setattr(ForwardingStore, _name, _forward(_name))
    setattr(AsyncForwardingStore, _name, _forward_async(_name))


class CoreStore(NoSearch, NoDocuments, ForwardingStore):
    """A store with the core only: no search, no documents."""

    def __init__(self, inner: sessionary.Store) -> None:
        super().__init__(inner)
        self.capabilities = frozenset()


class AsyncCoreStore(NoSearch, NoDocuments, AsyncForwardingStore):
    def __init__(self, inner: sessionary.AsyncStore) -> None:
        super().__init__(inner)
        self.capabilities = frozenset()


VARIANTS = {
    "forwarding": (ForwardingStore, AsyncForwardingStore),
    "core": (CoreStore, AsyncCoreStore),
}


# ---------------------------------------------------------------- fixtures


@pytest.fixture(params=sorted(VARIANTS))
def variant(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def custom_store(variant: str) -> Iterator[ForwardingStore]:
    inner = sessionary.open_store("memory://")
    store = VARIANTS[variant][0](inner)
    yield store
    inner.close()


@pytest.fixture
def store_url(custom_store: ForwardingStore) -> str:
    # The suite's `open_scope` shares the manager's own store object for this URL, so a
    # second manager (another scope) works on the same custom store.
    return "memory://"


@pytest.fixture
def capabilities(custom_store: ForwardingStore) -> frozenset[str]:
    return custom_store.capabilities


@pytest.fixture
def manager(custom_store: ForwardingStore, store_url: str) -> Iterator[sessionary.SessionManager]:
    with sessionary.SessionManager(custom_store) as mgr:  # type: ignore[arg-type]
        yield mgr


@pytest.fixture
async def amanager(variant: str, store_url: str) -> AsyncIterator[sessionary.AsyncSessionManager]:
    inner = sessionary.open_async_store("memory://")
    store = VARIANTS[variant][1](inner)
    async with sessionary.AsyncSessionManager(store) as mgr:  # type: ignore[arg-type]
        yield mgr
    await inner.close()


# ---------------------------------------------------------------- the borrowed suite

_SUITES = (
    "test_tree",
    "test_tree_model",
    "test_sessions",
    "test_state",
    "test_idempotency",
    "test_export",
    "test_concurrent_writers",
    "test_validation",
    "test_async",
    "test_manager_messages",
)
_FIXTURES = {"manager", "amanager", "snapshot", "open_scope", "capabilities"}


def _parameters(test: Callable[..., Any]) -> set[str]:
    names: set[str] = set()
    for mark in getattr(test, "pytestmark", []):
        if mark.name == "parametrize":
            names |= {n.strip() for n in str(mark.args[0]).split(",")}
    return names


def _borrow(module_name: str) -> int:
    """Bring a suite's tests that need only a manager here, renamed by their suite."""
    module = importlib.import_module(module_name)
    borrowed = 0
    for name, test in vars(module).items():
        if not name.startswith("test_") or not inspect.isfunction(test):
            continue
        wanted = set(inspect.signature(test).parameters) - _parameters(test)
        if wanted <= _FIXTURES:
            globals()[f"test_{module_name.removeprefix('test_')}__{name.removeprefix('test_')}"] = (
                test
            )
            borrowed += 1
    return borrowed


BORROWED = {suite: _borrow(suite) for suite in _SUITES}


def test_most_of_each_suite_is_borrowed() -> None:
    assert all(count > 0 for count in BORROWED.values()), BORROWED
    assert sum(BORROWED.values()) > 120


# ---------------------------------------------------------------- the store's own


def test_the_library_calls_only_the_protocol(manager: sessionary.SessionManager) -> None:
    store = manager.store
    assert isinstance(store, ForwardingStore)
    chat = manager.create(name="plugged in")
    chat.append_all([Message.user("hi", id="m1"), Message.assistant("hello", id="m2")])
    assert [m.id for m in manager.history(chat.id)] == ["m1", "m2"]
    manager.fork(chat.id, "m1")
    assert list(manager.export(chat.id))
    assert set(store.calls) <= set(PROTOCOL)
    assert {"create_session", "append", "get_path", "import_session"} <= set(store.calls)


def test_a_core_store_says_what_it_lacks(
    manager: sessionary.SessionManager, capabilities: frozenset[str]
) -> None:
    chat = manager.create()
    chat.append_all([Message.user(f"m{i}", id=f"m{i}") for i in range(6)])
    if SEARCH in capabilities:
        assert [hit.message_id for hit in chat.search("m3")] == ["m3"]
    else:
        with pytest.raises(Unsupported):
            chat.search("m3")
    if DOCUMENTS in capabilities:
        overlay = manager.add_compaction(chat.id, "The first four.", "m0", "m3")
        assert manager.compactions(chat.id) == [overlay]
    else:
        with pytest.raises(Unsupported):
            manager.add_compaction(chat.id, "The first four.", "m0", "m3")
        assert manager.compactions(chat.id) == []


def test_a_core_store_still_serves_turns_and_automatic_compaction_stays_quiet(
    custom_store: ForwardingStore,
) -> None:
    failures: list[BaseException] = []
    policy = CompactionPolicy(
        trigger_messages=4, tail_messages=2, protect_head=0, on_error=failures.append
    )
    config = SessionConfig().with_block("rules", "Be brief.")
    with sessionary.SessionManager(custom_store, config=config, compaction=policy) as manager:  # type: ignore[arg-type]
        chat = manager.create()
        for i in range(6):
            chat.append(Message.user(f"turn {i}"))
        with chat.turn() as turn:
            assert "Be brief." in turn.system
            turn.add(Message.assistant("ok"))
        assert chat.message_count() == 7
    if DOCUMENTS in custom_store.capabilities:
        assert failures == []
    else:  # reported once, never raised into the append
        assert [type(f).__name__ for f in failures] == ["Unsupported"]
