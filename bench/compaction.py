"""Reading a compacted 100,000-message session vs reading a 50-message one (SQLite).

Builds, in one SQLite file, a session of 100,000 messages compacted down to about 50
visible messages (3 protected, the summary, a 46-message tail) and a plain 50-message
session, then times `history()` on both in interleaved rounds (the machine is shared and
noisy: the two are measured side by side) and prints the medians and their ratio. The
target is a ratio of at most 2.

    .venv/bin/python bench/compaction.py [--messages 100000] [--reads 300]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import sessionary
from sessionary import Message
from sessionary.compaction.policy import CompactionPolicy
from sessionary.tokens import HeuristicCounter

VISIBLE = 50
HEAD = 3


class Flat(HeuristicCounter):
    """Every message costs 10 tokens, so the tail budget reads as a message count."""

    def count_message(self, message: Message) -> int:
        return 10


def _chunk(prefix: str, start: int, size: int) -> list[Message]:
    return [
        (Message.user if i % 2 == 0 else Message.assistant)(
            f"message {i} of the benchmark conversation, about item {i % 997}", id=f"{prefix}{i}"
        )
        for i in range(start, start + size)
    ]


def _build(manager: sessionary.SessionManager, count: int, prefix: str) -> sessionary.Session:
    session = manager.create(id=prefix)
    batch = 1000
    for start in range(0, count, batch):
        session.append_all(_chunk(prefix, start, min(batch, count - start)))
    return session


def _time(call: Callable[[], object], times: int) -> list[float]:
    samples = []
    for _ in range(times):
        began = time.perf_counter()
        call()
        samples.append(time.perf_counter() - began)
    return samples


def run(messages: int, reads: int, workdir: Path) -> dict[str, float]:
    """Build both sessions, time their reads, and return the medians in microseconds."""
    tail = VISIBLE - HEAD - 1
    policy = CompactionPolicy(protect_head=HEAD, tail_tokens=tail * 10, min_tail=2, counter=Flat())
    with sessionary.SessionManager(f"sqlite:///{workdir}/bench.db", compaction=policy) as manager:
        began = time.perf_counter()
        big = _build(manager, messages, "big")
        built = time.perf_counter() - began
        began = time.perf_counter()
        overlay = big.compact()
        compacted = time.perf_counter() - began
        assert overlay is not None, "nothing was compacted"
        small = _build(manager, VISIBLE, "small")
        assert len(big.history()) == VISIBLE == len(small.history())
        samples: dict[str, list[float]] = {
            "compacted": [],
            "plain": [],
            "plain raw": [],
            "raw window": [],
        }
        rounds = 10
        for _ in range(rounds):
            samples["compacted"] += _time(big.history, reads // rounds)
            samples["plain"] += _time(small.history, reads // rounds)
            samples["plain raw"] += _time(lambda: small.history(raw=True), reads // rounds)
            samples["raw window"] += _time(
                lambda: big.history(limit=VISIBLE, raw=True), reads // rounds
            )
    medians = {name: statistics.median(values) * 1e6 for name, values in samples.items()}
    medians["build_s"] = built
    medians["compact_s"] = compacted
    return medians


def report(messages: int, reads: int, medians: dict[str, float]) -> str:
    """Return the result as a Markdown table."""
    ratio = medians["compacted"] / medians["plain"]
    lines = [
        f"Reading {VISIBLE} visible messages, median of {reads} `history()` calls each "
        f"(SQLite, interleaved rounds; build {medians['build_s']:.1f} s, "
        f"one compaction {medians['compact_s']:.1f} s).",
        "",
        "| read | median µs | vs 50-message session |",
        "|---|---:|---:|",
        f"| {messages:,}-message session, compacted to {VISIBLE} | {medians['compacted']:.0f} "
        f"| {ratio:.2f}x |",
        f"| {VISIBLE}-message session | {medians['plain']:.0f} | 1.00x |",
        f"| {VISIBLE}-message session, `history(raw=True)` (no overlay lookup) "
        f"| {medians['plain raw']:.0f} | {medians['plain raw'] / medians['plain']:.2f}x |",
        f"| {messages:,}-message session, raw `history(limit={VISIBLE})` "
        f"| {medians['raw window']:.0f} | {medians['raw window'] / medians['plain']:.2f}x |",
        "",
        f"Target: compacted / plain ≤ 2.00 — {'met' if ratio <= 2 else 'NOT met'} ({ratio:.2f}).",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table; exit 1 if the ratio misses the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--reads", type=int, default=300)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        medians = run(args.messages, args.reads, Path(tmp))
    print(report(args.messages, args.reads, medians))
    return 0 if medians["compacted"] / medians["plain"] <= 2 else 1


if __name__ == "__main__":
    sys.exit(main())
