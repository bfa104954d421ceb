"""Property: the manager's history matches a plain list model, whatever the operations."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionary import Message
from sessionary.errors import InvalidMessage
from sessionary.kv import IncrementalSessionManager, MemoryDriver
from sessionary.kv._layout import Meta, encode_messages, message_json
from sessionary.model import TextPart

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


@given(
    st.text(),
    st.one_of(st.none(), st.text()),
    st.sampled_from(["user", "assistant", "system"]),
)
def test_a_plain_message_is_written_as_its_dict(text: str, parent: str | None, role: str) -> None:
    message = Message(role, [TextPart(text)], parent_id=parent)  # type: ignore[arg-type]
    assert message_json(message) == json.dumps(
        message.to_dict(), ensure_ascii=False, separators=(",", ":"), allow_nan=False
    )


_times = st.floats(min_value=0, max_value=4e9, allow_nan=False)


@given(
    st.builds(
        Meta,
        _times,
        _times,
        st.one_of(st.none(), st.text()),
        st.dictionaries(st.text(max_size=4), st.integers(), max_size=3),
        *[st.integers(0, 10**12)] * 4,
        st.one_of(st.none(), _times),
        *[st.integers(0, 10**6)] * 4,
    )
)
def test_a_meta_entry_is_written_as_its_fields(meta: Meta) -> None:
    assert json.loads(meta.encode()) == dataclasses.asdict(meta)
    assert Meta.decode(meta.encode()) in (meta, None)  # None: it has expired
    assert dataclasses.replace(meta, version=meta.version + 1, updated_at=1.0) != meta
    grown = meta.appended(2, None)
    assert (grown.next_seq, grown.count, grown.version) == (
        meta.next_seq + 2,
        meta.count + 2,
        meta.version + 1,
    )


class _CountedId(str):
    """A message id that counts how often it is compared."""

    __slots__ = ()
    comparisons = 0

    def __eq__(self, other: object) -> bool:
        _CountedId.comparisons += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def test_a_batch_is_checked_for_repeated_ids_in_linear_time() -> None:
    # Each message was compared with every one before it: 20,000 messages took 23 s.
    batch = [Message.user("x", id=_CountedId(f"m{n}")) for n in range(2000)]
    _CountedId.comparisons = 0
    assert len(encode_messages(batch)) == 2000
    assert _CountedId.comparisons < 4 * len(batch)
    with pytest.raises(InvalidMessage, match="appears twice"):
        encode_messages([*batch, Message.user("y", id="m7")])
