"""What appends and reads cost, counted at the driver: O(1) per append, O(1 + loose) per read."""

from __future__ import annotations

from typing import Any

import pytest
from _kv_helpers import CountingDriver

from sessionary import Message
from sessionary.kv import IncrementalSessionManager, MemoryDriver


@pytest.mark.parametrize("frequency", [5, 25])
def test_an_append_costs_one_commit_plus_one_roll_up_per_n(frequency: int) -> None:
    """A single writer: one commit per append, the due roll-ups inside them, no reads."""
    driver = CountingDriver(MemoryDriver())
    manager = IncrementalSessionManager(driver, snapshot_frequency=frequency)
    appends = 40 * frequency
    for i in range(appends):
        manager.append_message("s", Message.user(f"m{i}"))
    assert driver.write_calls == driver.calls["commit"] == appends
    # The manager remembers the meta entry and loose entries it wrote: only the first
    # append reads (the meta entry, which is not there yet).
    assert driver.read_calls == 1
    # Entries: a loose entry, an id record and the meta entry per append, except that an
    # append making a roll-up due writes its message into the new chunk instead, and
    # deletes the other loose entries. Never the whole history.
    assert driver.entries_written / appends == pytest.approx(4 - 1 / frequency)
    assert len(manager.get_history("s")) == appends


def test_a_roll_up_is_its_own_commit_when_the_loose_entries_are_unknown() -> None:
    driver = CountingDriver(MemoryDriver())
    for i in range(5):  # a new manager each time: none remembers the loose entries
        IncrementalSessionManager(driver, snapshot_frequency=5).append_message(
            "s", Message.user(f"m{i}")
        )
    assert driver.calls["commit"] == 6  # five appends, then the roll-up the last made due
    assert driver.calls["list"] == 1
    assert len(driver.list_prefix("sessions:s:msg:")) == 0


def test_a_batch_is_one_commit() -> None:
    driver = CountingDriver(MemoryDriver())
    manager = IncrementalSessionManager(driver, snapshot_frequency=1000)
    manager.append_messages("s", [Message.user(f"m{i}") for i in range(10)])
    assert (driver.calls["commit"], driver.read_calls) == (1, 1)


def _history_cost(driver: CountingDriver, manager: Any, limit: int | None) -> tuple[int, int]:
    driver.reset()
    manager.get_history("s", limit)
    return driver.read_calls, driver.entries_read


def test_a_read_lists_meta_and_loose_entries_then_gets_only_the_chunks_it_needs() -> None:
    driver = CountingDriver(MemoryDriver())
    manager = IncrementalSessionManager(driver, snapshot_frequency=25)
    for i in range(1000 + 7):  # 40 roll-ups (40 chunks of 25), then 7 loose entries
        manager.append_message("s", Message.user(f"m{i}"))
    # One listing (meta + 7 loose), then the newest chunk for the 13 still missing.
    assert _history_cost(driver, manager, 20) == (2, 1 + 7 + 1)
    assert _history_cost(driver, manager, 7) == (1, 1 + 7)
    assert _history_cost(driver, manager, 33) == (3, 1 + 7 + 2)
    # A full read is one listing of the whole session: meta, 40 chunks, 7 loose entries.
    assert _history_cost(driver, manager, None) == (1, 1 + 40 + 7)
    manager.snapshot_now("s")  # a 41st chunk, of 7 messages
    assert _history_cost(driver, manager, 20) == (3, 1 + 2)
    assert len(manager.get_history("s")) == 1007


def test_a_short_read_costs_the_same_at_any_depth() -> None:
    driver = CountingDriver(MemoryDriver())
    manager = IncrementalSessionManager(driver, snapshot_frequency=25)
    costs = []
    for depth in (100, 5000):
        while (count := len(manager.get_history("s"))) < depth:
            manager.append_messages("s", [Message.user(f"m{count + i}") for i in range(25)])
        costs.append(_history_cost(driver, manager, 20))
    assert costs[0] == costs[1] == (2, 2)
