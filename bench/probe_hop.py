"""What the async runner's thread hop costs, and how many times each thread sleeps for it.

    python bench/probe_hop.py [sleep µs] [rounds] [python µs before,after]

Awaits a synthetic call through `sessionary.stores._runner.AsyncRunner` (the async SQLite
store's worker thread) in interleaved blocks: the call runs some Python (holding the GIL),
sleeps (letting it go, as a sync does) and runs a little more Python, like an append. Next
to the runner, the same call through a worker fed by a `queue.SimpleQueue` (the runner's
design before its bell; its `put` wakes the worker while the loop still holds the GIL), and
the call run inline, for the call's own time; and the runner again with the loop and its
worker pinned to one CPU for their block ("one cpu": a wake-up is then a switch on that
CPU, not a halted vCPU woken by another). Per variant, medians over blocks of:

  hop       the awaited call's time minus the inline call's,
  loop cpu  the event loop thread's CPU time per call,
  sleeps    voluntary context switches per call of the loop and of the worker (the
            worker's least is its wait for the call and the sleep itself),
  preempted involuntary ones (a thread woken onto its waker's CPU preempts it).

Absolute times on a shared machine mean little; compare the variants of one run.
"""

from __future__ import annotations

import asyncio
import os
import queue
import random
import statistics
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sessionary.stores import _runner
from sessionary.stores._runner import AsyncRunner

_PER_ITERATION_US = 0.16  # a rough guess; the inline row gives the call's real time


class _QueueJobs(queue.SimpleQueue):  # type: ignore[type-arg]
    """The runner's queue before its bell: a `SimpleQueue` (nothing to close)."""

    def close(self) -> None:
        pass


def _spin(iterations: int) -> int:
    total = 0
    for i in range(iterations):
        total += i
    return total


def _call_like_an_append(before: int, sleep_us: int, after: int) -> None:
    _spin(before)
    time.sleep(sleep_us / 1e6)
    _spin(after)


def _switches(tid: int) -> tuple[int, int]:
    """A thread's voluntary and involuntary context switches so far (Linux)."""
    found = {}
    with open(f"/proc/self/task/{tid}/status") as status:
        for line in status:
            if "ctxt_switches" in line:
                key, value = line.split(":")
                found[key.strip()] = int(value)
    return found["voluntary_ctxt_switches"], found["nonvoluntary_ctxt_switches"]


def _runner_with(jobs: Any) -> AsyncRunner:
    saved = _runner._Jobs
    _runner._Jobs = jobs  # type: ignore[misc]
    try:
        return AsyncRunner(blocking=True)
    finally:
        _runner._Jobs = saved  # type: ignore[misc]


async def _block(
    call: Callable[..., Awaitable[None]] | None, job: Callable[[], None], count: int
) -> list[float]:
    times = []
    for _ in range(count):
        start = time.perf_counter_ns()
        if call is None:
            job()
        else:
            await call()
        times.append((time.perf_counter_ns() - start) / 1e3)
    return times


async def main() -> None:
    sleep_us = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    spans = sys.argv[3] if len(sys.argv) > 3 else "20,10"
    before, after = (int(int(us) / _PER_ITERATION_US) for us in spans.split(","))

    def job() -> None:
        _call_like_an_append(before, sleep_us, after)

    runners = {
        "runner": AsyncRunner(blocking=True),
        "queue": _runner_with(_QueueJobs),
        "one cpu": AsyncRunner(blocking=True),
    }
    calls: dict[str, Callable[..., Awaitable[None]] | None] = {"inline": None}
    workers = {}
    for name, runner in runners.items():
        calls[name] = runner.bind(job)
        workers[name] = await runner.run(threading.get_native_id)
    loop_tid = threading.get_native_id()
    every_cpu = os.sched_getaffinity(0)
    one_cpu = {min(every_cpu)}
    count = 200
    seen: dict[str, dict[str, list[float]]] = {name: {} for name in calls}
    order = random.Random(sleep_us)
    for _ in range(rounds):
        for name in order.sample(list(calls), len(calls)):
            worker = workers.get(name)
            loop0, worker0 = _switches(loop_tid), _switches(worker) if worker else (0, 0)
            pinned = one_cpu if name == "one cpu" else every_cpu
            os.sched_setaffinity(0, pinned)
            if worker:
                os.sched_setaffinity(worker, pinned)
            cpu0 = time.thread_time_ns()
            times = await _block(calls[name], job, count)
            cpu = (time.thread_time_ns() - cpu0) / 1e3 / count
            os.sched_setaffinity(0, every_cpu)
            loop1, worker1 = _switches(loop_tid), _switches(worker) if worker else (0, 0)
            row = seen[name]
            row.setdefault("time", []).append(statistics.median(times))
            row.setdefault("loop cpu", []).append(cpu)
            for key, a, b in (("loop", loop0, loop1), ("worker", worker0, worker1)):
                row.setdefault(f"{key} sleeps", []).append((b[0] - a[0]) / count)
                row.setdefault(f"{key} preempted", []).append((b[1] - a[1]) / count)
    inline = statistics.median(seen["inline"]["time"])
    print(
        f"a call of ~{spans.replace(',', '+')} µs of Python around a {sleep_us} µs sleep; "
        f"{rounds} rounds of {count}; load {os.getloadavg()[0]:.2f}"
    )
    print(f"  inline   call {inline:7.1f} µs")
    for name in runners:
        mid = {key: statistics.median(values) for key, values in seen[name].items()}
        print(
            f"  {name:8} hop {mid['time'] - inline:6.1f} µs  loop cpu {mid['loop cpu']:5.1f} µs"
            f"  sleeps loop {mid['loop sleeps']:.2f} worker {mid['worker sleeps']:.2f}"
            f"  preempted loop {mid['loop preempted']:.2f} worker {mid['worker preempted']:.2f}"
        )
    for runner in runners.values():
        await runner.close(lambda: None)


if __name__ == "__main__":
    asyncio.run(main())
