"""Work run in threads that start together, each free to run its own event loop."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

THREADS = 5
HANG_BOUND = 120  # seconds: a bound on a hang on a loaded machine, never a timing


def in_threads(work: Callable[[int], Any], count: int = THREADS) -> list[Any]:
    """Run `work(i)` in `count` threads started together; return each result or error.

    A thread still running after HANG_BOUND fails the calling test (it is a daemon, so it
    cannot keep the test run from ending).
    """
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = work(i)
        except BaseException as exc:  # reported by the test, not lost in the thread
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(HANG_BOUND)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    return results
