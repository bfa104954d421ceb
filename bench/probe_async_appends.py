"""What the async server stores pay for a loop of their own (one hop per store call).

    python bench/probe_async_appends.py [postgres,mysql,redis] [seconds per block] [rounds]

An async store on a server runs its asyncio driver on a loop of its own
(`sessionary.stores._home_loop`), so that any event loop in any thread may use it. This
probe measures the price, in one run and interleaved in rounds: the same store class
called on the caller's loop (`direct`, as before, bound to that loop) and behind its
own loop (`own loop`, what `AsyncSessionManager(url)` uses now), appending one message
per call, and reading a session's row (`get_session`, no disk write: the hop's share of
a cheap call), by 1 task and by 8 tasks at once (on 8 sessions). Each cell's figure is
the median of its rounds. Nothing is written to a report; schemas, databases and keys it
creates are removed at the end.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.servers import BACKENDS
from sessionary import ANY, Message
from sessionary.records import HEAD, Scope, SessionInfo
from sessionary.stores.registry import open_async_store

SCOPE = Scope("bench", "probe")


def _url(backend: Any) -> str:
    return str(backend._url("store25") if backend.name == "redis" else backend.url)


async def _calls(store: Any, work: str, sessions: list[str], seconds: float) -> int:
    """Call `work` on each session at once, for `seconds`; return how many calls ended."""
    stop = time.perf_counter() + seconds
    counts = [0] * len(sessions)

    async def caller(k: int) -> None:
        while time.perf_counter() < stop:
            if work == "append":
                await store.append(SCOPE, sessions[k], [Message.user("x" * 200)], HEAD, ANY)
            else:
                await store.get_session(SCOPE, sessions[k])
            counts[k] += 1

    await asyncio.gather(*(caller(k) for k in range(len(sessions))))
    return sum(counts)


async def _probe(url: str, seconds: float, rounds: int) -> None:
    wrapped, other = open_async_store(url), open_async_store(url)
    direct = other._home.resident  # type: ignore[attr-defined]  # the store itself, unhopped
    stores = {"direct": direct, "own loop": wrapped}
    sessions: dict[str, dict[int, list[str]]] = {}
    for name, store in stores.items():
        sessions[name] = {}
        for writers in (1, 8):
            made = []
            for _ in range(writers):
                info = await store.create_session(SCOPE, SessionInfo(id=f"s{random.random()}"))
                made.append(info.id)
            sessions[name][writers] = made
    rates: dict[tuple[str, str, int], list[float]] = {}
    order = random.Random(url)
    cells = [(w, n, k) for w in ("append", "get_session") for n in stores for k in (1, 8)]
    for _ in range(rounds):
        for work, name, tasks in order.sample(cells, len(cells)):
            done = await _calls(stores[name], work, sessions[name][tasks], seconds)
            rates.setdefault((work, name, tasks), []).append(done / seconds)
    for work in ("append", "get_session"):
        for tasks in (1, 8):
            base = statistics.median(rates[work, "direct", tasks])
            for name in stores:
                rate = statistics.median(rates[work, name, tasks])
                print(
                    f"  {work:11} {tasks} task(s)  {name:9} {rate:9,.0f} calls/s"
                    f"  {100 * rate / base:5.0f}%"
                )
    await direct.close()
    await wrapped.close()


def main() -> None:
    names = sys.argv[1].split(",") if len(sys.argv) > 1 else list(BACKENDS)
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    for name in names:
        backend = BACKENDS[name]()
        if (problem := backend.problem()) is not None:
            print(f"{name}: {problem}")
            continue
        backend.setup()
        try:
            print(f"{name}:")
            asyncio.run(_probe(_url(backend), seconds, rounds))
        finally:
            backend.close_all()
            backend.teardown()


if __name__ == "__main__":
    main()
