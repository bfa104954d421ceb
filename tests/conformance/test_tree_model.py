"""Property test: random tree operations on a session agree with a pure-Python model."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import sessionary
from sessionary import HEAD, Message


class TreeModel:
    """A message tree with a head, as plain dicts: the behaviour a session must have."""

    def __init__(self) -> None:
        self.parent: dict[str, str | None] = {}  # insertion-ordered
        self.children: dict[str, list[str]] = {}
        self.head: str | None = None

    def append(self, message_id: str, parent: str | None) -> None:
        self.parent[message_id] = parent
        self.children[message_id] = []
        if parent is not None:
            self.children[parent].append(message_id)
        self.head = message_id

    def path(self, leaf: str | None) -> list[str]:
        out: list[str] = []
        while leaf is not None:
            out.append(leaf)
            leaf = self.parent[leaf]
        return out[::-1]

    def subtree(self, root: str) -> Iterator[str]:
        yield root
        for child in self.children[root]:
            yield from self.subtree(child)

    def delete(self, message_id: str) -> set[str]:
        doomed = set(self.subtree(message_id))
        parent = self.parent[message_id]
        if parent is not None:
            self.children[parent].remove(message_id)
        if self.head in doomed:
            self.head = parent
        for mid in doomed:
            del self.parent[mid]
            del self.children[mid]
        return doomed

    def clear(self) -> int:
        count = len(self.parent)
        self.parent.clear()
        self.children.clear()
        self.head = None
        return count


PLACES = st.sampled_from(["head", "root", "existing"])
INDEX = st.integers(min_value=0, max_value=10_000)


class TreeMachine(RuleBasedStateMachine):
    """Applies random operations to a fresh session and to a `TreeModel`, and compares."""

    manager: sessionary.SessionManager  # set on a subclass per test
    numbers = itertools.count()

    def __init__(self) -> None:
        super().__init__()
        self.chat = self.manager.create()
        self.model = TreeModel()

    def pick(self, index: int) -> str:
        ids = list(self.model.parent)
        return ids[index % len(ids)]

    def new_message(self) -> Message:
        n = next(self.numbers)
        make = Message.user if n % 2 else Message.assistant
        return make(f"message {n}", id=f"m{n}")

    @rule(place=PLACES, index=INDEX, size=st.integers(min_value=1, max_value=3))
    def append(self, place: str, index: int, size: int) -> None:
        parent: Any
        if place == "existing" and self.model.parent:
            parent = self.pick(index)
            at: str | None = parent
        elif place == "root":
            parent, at = None, None
        else:
            parent, at = HEAD, self.model.head
        batch = [self.new_message() for _ in range(size)]
        if size == 1:
            stored = [self.chat.append(batch[0], parent=parent)]
        else:
            stored = self.chat.append_all(batch, parent=parent)
        expected_parents = []
        for message in batch:
            expected_parents.append(at)
            self.model.append(message.id, at)
            at = message.id
        assert [m.id for m in stored] == [m.id for m in batch]
        assert [m.parent_id for m in stored] == expected_parents

    @precondition(lambda self: self.model.parent)
    @rule(index=INDEX)
    def reappend(self, index: int) -> None:
        target = self.pick(index)
        stored = self.chat.append(Message.user("a retry", id=target), parent=None)
        assert stored.id == target
        assert stored.parent_id == self.model.parent[target]
        assert stored.text != "a retry"

    @precondition(lambda self: self.model.parent)
    @rule(index=INDEX)
    def checkout(self, index: int) -> None:
        target = self.pick(index)
        self.chat.checkout(target)
        self.model.head = target

    @rule()
    def checkout_nothing(self) -> None:
        self.chat.checkout(None)
        self.model.head = None

    @precondition(lambda self: self.model.parent)
    @rule(index=INDEX)
    def delete(self, index: int) -> None:
        target = self.pick(index)
        deleted = self.chat.delete(target)
        assert len(deleted) == len(set(deleted))
        assert set(deleted) == self.model.delete(target)

    @rule()
    def clear(self) -> None:
        assert self.chat.clear() == self.model.clear()

    @precondition(lambda self: self.model.parent)
    @rule(index=INDEX, limit=st.integers(min_value=1, max_value=12))
    def look_at(self, index: int, limit: int) -> None:
        target = self.pick(index)
        path = self.model.path(target)
        assert [m.id for m in self.chat.branches(target)] == self.model.children[target]
        assert [m.id for m in self.chat.history(leaf=target)] == path
        assert [m.id for m in self.chat.history(leaf=target, limit=limit)] == path[-limit:]
        assert self.chat.path_length(target) == len(path)
        got = self.chat.get_message(target)
        assert got is not None and got.parent_id == self.model.parent[target]

    @invariant()
    def agrees_with_the_model(self) -> None:
        path = self.model.path(self.model.head)
        history = self.chat.history()
        assert [m.id for m in history] == path
        assert [m.parent_id for m in history] == [None, *path[:-1]][: len(path)]
        for k in (1, 2, 5):
            assert [m.id for m in self.chat.history(limit=k)] == path[-k:]
        assert self.chat.path_length() == len(path)
        assert self.chat.message_count() == len(self.model.parent)
        head = self.chat.head()
        assert (head.id if head else None) == self.model.head
        stored = {
            r["message"]["id"]: r["message"].get("parent_id")
            for r in self.manager.export(self.chat.id)
            if r["type"] == "message"
        }
        assert stored == self.model.parent


def test_random_tree_operations_agree_with_the_model(
    manager: sessionary.SessionManager,
) -> None:
    machine = type("BoundTreeMachine", (TreeMachine,), {"manager": manager})
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=40,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture],
        ),
    )
