"""A probe of the Redis store's `history(limit=20)`: predicted read, script, raw LRANGE.

    python bench/probe_redis_read.py [rounds] [snapshot frequencies, e.g. 25,0]

Builds a 10,000-message session per frequency (and a raw list), then times blocks of 100
reads of each, interleaved in a new random order per round in one process, so the three
share the machine's noise: the store's predicted read (`stores/_redis_recent`), the same
store made to run the `read_path_document` script every time (its layouts never found),
and raw redis-py `LRANGE key -20 -1` + `json.loads`. Prints each one's median and best
block (wall µs per read), its client CPU per read, its share of raw's speed, and the
server's time per read from `INFO commandstats` (server-wide: every client's). No report is written.
"""

from __future__ import annotations

import gc
import json
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.srv_common import RECENT, REDIS_URL, body, message
from bench.workload import conversation, read_texts

DEPTH = 10_000


def _server_us(client: Any) -> int:
    return sum(int(v["usec"]) for v in client.info("commandstats").values())


def _readers(client: Any, tag: str, frequencies: list[int]) -> dict[str, Callable[[], int]]:
    """The raw reader and, per frequency, a predicting and a scripted store's reader."""
    from sessionary import SessionManager
    from sessionary.stores._redis_recent import Layouts

    key = f"{tag}_raw"
    for start in range(0, DEPTH, 1000):
        client.rpush(key, *[body(turn) for turn in conversation(start, 1000)])
    reads: dict[str, Callable[[], int]] = {
        "raw": lambda: len([json.loads(v) for v in client.lrange(key, -RECENT, -1)])
    }
    joiner = "&" if "?" in REDIS_URL else "?"
    for frequency in frequencies:
        url = f"{REDIS_URL}{joiner}namespace={tag}_{frequency}&snapshot_frequency={frequency}"
        predicted, scripted = SessionManager(url), SessionManager(url)
        chat = predicted.create(name="probe")
        for start in range(0, DEPTH, 1000):
            chat.append_all([message(turn) for turn in conversation(start, 1000)])
        chat.history(limit=RECENT)  # the predicting store learns the layout
        other = scripted.session(chat.id)
        reads[f"predicted {frequency}"] = lambda chat=chat: read_texts(chat.history(limit=RECENT))
        reads[f"script {frequency}"] = lambda other=other: read_texts(other.history(limit=RECENT))
    # The stores that have read nothing yet are the scripted ones: they never find a layout.
    for found in gc.get_objects():
        if isinstance(found, Layouts) and not found._known:
            found.get = lambda meta: None  # type: ignore[method-assign]
    return reads


def probe(rounds: int, frequencies: list[int]) -> None:
    import redis

    tag = f"probe_read_{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(REDIS_URL)
    reads = _readers(client, tag, frequencies)
    for read in reads.values():
        read()
    wall: dict[str, list[float]] = {name: [] for name in reads}
    cpu: dict[str, list[float]] = {name: [] for name in reads}
    server: dict[str, list[float]] = {name: [] for name in reads}
    for _ in range(rounds):
        for name in random.sample(list(reads), len(reads)):
            read, before = reads[name], _server_us(client)
            started, used = time.perf_counter(), time.process_time()
            for _ in range(100):
                read()
            wall[name].append((time.perf_counter() - started) * 1e4)
            cpu[name].append((time.process_time() - used) * 1e4)
            server[name].append((_server_us(client) - before) / 100)
    raw_median, raw_best = statistics.median(wall["raw"]), min(wall["raw"])
    for name in reads:
        median, best = statistics.median(wall[name]), min(wall[name])
        used, spent = statistics.median(cpu[name]), statistics.median(server[name])
        print(
            f"{name:13s} median {median:6.0f} µs ({raw_median / median:4.0%} of raw's speed), "
            f"best block {best:5.0f} µs ({raw_best / best:4.0%}), "
            f"client CPU {used:4.0f} µs, server {spent:5.1f} µs"
        )
    stale = list(client.scan_iter(match=f"{tag}*", count=1000))
    if stale:
        client.delete(*stale)
    client.close()


if __name__ == "__main__":
    probe(
        int(sys.argv[1]) if len(sys.argv) > 1 else 30,
        [int(f) for f in (sys.argv[2] if len(sys.argv) > 2 else "25,0").split(",")],
    )
