"""Property: the manager's history matches a plain list model, whatever the operations."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sessionary import Message
from sessionary.kv import IncrementalSessionManager, MemoryDriver

ids = st.sampled_from([f"m{i}" for i in range(30)])
operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(ids, max_size=5, unique=True)),
        st.tuples(st.just("snapshot"), st.none()),
        st.tuples(st.just("read"), st.one_of(st.none(), st.integers(1, 12))),
    ),
    max_size=40,
)


class Model:
    """The layout's meaning, in lists: a snapshot, loose messages, a roll-up every N."""

    def __init__(self, frequency: int, max_messages: int | None) -> None:
        self.frequency, self.max_messages = frequency, max_messages
        self.snapshot: list[str] = []
        self.loose: list[str] = []
        self.stored: set[str] = set()
        self.since = 0

    def append(self, batch: list[str]) -> int:
        new = [i for i in batch if i not in self.stored]
        self.stored.update(new)
        self.loose += new
        self.since += len(new)
        if new and self.since >= self.frequency:
            self.roll_up()
        return len(new)

    def roll_up(self) -> None:
        if self.loose:
            kept = self.snapshot + self.loose
            self.snapshot = kept if self.max_messages is None else kept[-self.max_messages :]
            self.loose, self.since = [], 0

    def history(self, limit: int | None) -> list[str]:
        everything = self.snapshot + self.loose
        return everything if limit is None else everything[-limit:]


@settings(max_examples=150, deadline=None)
@given(operations, st.integers(1, 6), st.one_of(st.none(), st.integers(1, 8)))
def test_history_matches_the_list_model(
    ops: list[tuple[str, Any]], frequency: int, max_messages: int | None
) -> None:
    manager = IncrementalSessionManager(MemoryDriver(), frequency, max_messages)
    model = Model(frequency, max_messages)
    for op, arg in ops:
        if op == "append":
            added = manager.append_messages("s", [Message.user(i, id=i) for i in arg])
            assert added == model.append(arg)
        elif op == "snapshot":
            manager.snapshot_now("s")
            model.roll_up()
        else:
            assert [m.id for m in manager.get_history("s", arg)] == model.history(arg)
    assert [m.id for m in manager.get_history("s")] == model.history(None)
