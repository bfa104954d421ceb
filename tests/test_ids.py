"""Generated ids: UUIDv7 strings, in order within a process, unique across its threads."""

from __future__ import annotations

import threading
import time
import uuid

from sessionary.ids import check_id, new_id


def test_an_id_is_a_uuid7_of_the_time_now() -> None:
    before = time.time_ns() // 1_000_000
    made = new_id()
    after = time.time_ns() // 1_000_000
    value = uuid.UUID(made)
    assert str(value) == made and check_id(made) == made
    assert (value.version, value.variant) == (7, uuid.RFC_4122)
    assert before <= value.int >> 80 <= after + 1  # +1: a millisecond borrowed by a burst


def test_ids_are_in_order_and_unique_also_in_a_burst() -> None:
    made = [new_id() for _ in range(20_000)]  # thousands within one millisecond
    assert made == sorted(made) and len(set(made)) == len(made)
    # Their random bits differ: no two ids share them.
    assert len({uuid.UUID(m).int & ((1 << 62) - 1) for m in made}) == len(made)


def test_threads_never_make_the_same_id() -> None:
    made: list[list[str]] = [[] for _ in range(4)]

    def make(into: list[str]) -> None:
        into.extend(new_id() for _ in range(5_000))

    threads = [threading.Thread(target=make, args=(into,)) for into in made]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [m for into in made for m in into]
    assert len(set(every)) == len(every)
    assert all(into == sorted(into) for into in made)
