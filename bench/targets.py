"""The issue's targets, judged from one run's numbers.

Each target yields one line: PASS, FAIL, or SKIP when the run lacks what it needs (for example
``--no-peers``). "Ahead of a peer" compares like with like: the async API against
``SQLiteSession`` (whose API is async only) and the sync API against ``SqliteSaver`` (sync).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from statistics import median

from bench.raw import WORKER
from bench.runner import PHASES, Result

__all__ = ["Outcome", "Table", "evaluate", "shown"]

UNITS = {"append": ("µs", 1e6), "recent": ("µs", 1e6), "full": ("ms", 1e3)}


def shown(phase: str, seconds: float) -> str:
    """Format a duration in the unit the report uses for ``phase``."""
    unit, scale = UNITS[phase]
    value = seconds * scale
    return f"{value:,.0f} {unit}" if value >= 100 else f"{value:.1f} {unit}"


_PEER_NAMES = {"agents": "openai-agents SQLiteSession", "langgraph": "LangGraph SqliteSaver"}
_PHASE_NAMES = {"append": "append", "recent": "history(limit=20)", "full": "full history"}


class Table:
    """Results indexed by library key and depth."""

    def __init__(self, results: list[Result]) -> None:
        self.results = results
        self.by_key = {(r.key, r.depth): r for r in results}
        self.depths = sorted({r.depth for r in results})
        self.keys = list(dict.fromkeys(r.key for r in results))

    def get(self, key: str, depth: int) -> Result | None:
        return self.by_key.get((key, depth))

    def median(self, key: str, depth: int, phase: str) -> float | None:
        result = self.get(key, depth)
        if result is None or not result.ok or not result.samples[phase]:
            return None
        return median(result.samples[phase])

    def ratio(self, key: str, depth: int, phase: str) -> float | None:
        """Return this depth's median over the smallest depth's median, same library."""
        value = self.median(key, depth, phase)
        base = self.median(key, self.depths[0], phase)
        if value is None or base is None:
            return None
        return value / base

    def percent_of_raw(self, key: str, depth: int) -> float | None:
        """Return the append rate as a percentage of raw sqlite3's, same depth and durability."""
        result = self.get(key, depth)
        value = self.median(key, depth, "append")
        raw = self.median(result.baseline, depth, "append") if result else None
        if value is None or raw is None:
            return None
        return 100.0 * raw / value


@dataclass(frozen=True)
class Outcome:
    verdict: str  # PASS | FAIL | SKIP
    text: str

    def line(self) -> str:
        return f"- **{self.verdict}** {self.text}"


def evaluate(table: Table) -> list[Outcome]:
    return [
        *_growth(table, "append", 1.2),
        *_rate(table, "sync", 80.0),
        *_rate(table, "async", 60.0),
        *_growth(table, "recent", 1.5),
        *_full_read(table),
        _ahead(table, "agents", "async"),
        _ahead(table, "langgraph", "sync"),
    ]


def _verdict(passed: bool) -> str:
    return "PASS" if passed else "FAIL"


def _growth(table: Table, phase: str, limit: float) -> Iterator[Outcome]:
    low, high = table.depths[0], table.depths[-1]
    for key in ("sync", "async"):
        label = f"sessionary ({key})"
        goal = f"{label}: {_PHASE_NAMES[phase]} at depth {high:,} within {limit}x of depth {low:,}"
        ratio = table.ratio(key, high, phase)
        if ratio is None or low == high:
            yield Outcome("SKIP", f"{goal}: not measured")
            continue
        yield Outcome(_verdict(ratio <= limit), f"{goal}: {ratio:.2f}x")


def _rate(table: Table, key: str, floor: float) -> Iterator[Outcome]:
    goal = f"sessionary ({key}): append rate ≥ {floor:.0f}% of raw sqlite3 at every depth"
    rates = {d: table.percent_of_raw(key, d) for d in table.depths}
    known = {d: r for d, r in rates.items() if r is not None}
    if len(known) < len(rates):
        yield Outcome("SKIP", f"{goal}: not measured at every depth")
        return
    worst = min(known, key=lambda d: known[d])
    detail = ", ".join(f"{known[d]:.0f}% at {d:,}" for d in table.depths)
    if key == "async":
        detail += _ceiling(table)
    yield Outcome(_verdict(known[worst] >= floor), f"{goal}: {detail}")


def _ceiling(table: Table) -> str:
    """What raw sqlite3 itself reaches through the same worker-thread hand-off, same run."""
    rates = {d: table.percent_of_raw(WORKER, d) for d in table.depths}
    if any(rate is None for rate in rates.values()):
        return ""
    reach = ", ".join(f"{rate:.0f}% at {d:,}" for d, rate in rates.items())
    return (
        f" (raw sqlite3's own append awaited through the same worker thread, the ceiling of a "
        f"thread-based async API in this run: {reach})"
    )


def _full_read(table: Table) -> Iterator[Outcome]:
    """The whole history at the deepest depth, read faster than raw sqlite3 reads it."""
    deepest = table.depths[-1]
    for key in ("sync", "async"):
        goal = f"sessionary ({key}): full history at depth {deepest:,} faster than raw sqlite3"
        mine, raw = table.median(key, deepest, "full"), table.median("raw", deepest, "full")
        if mine is None or raw is None:
            yield Outcome("SKIP", f"{goal}: not measured")
            continue
        detail = f"{shown('full', mine)} vs {shown('full', raw)}"
        yield Outcome(_verdict(mine < raw), f"{goal}: {detail}")


def _ahead(table: Table, peer: str, ours: str) -> Outcome:
    peer_results = [r for r in table.results if r.key == peer]
    goal = f"sessionary ({ours}) ahead of {_PEER_NAMES[peer]} on every row"
    if not peer_results or all(r.status == "unavailable" for r in peer_results):
        return Outcome("SKIP", f"{goal}: peer not run")
    if all(r.status == "unavailable" for r in table.results if r.key == ours):
        return Outcome("SKIP", f"{goal}: sessionary ({ours}) not run")
    behind, unreached = [], []
    for depth in table.depths:
        for phase in PHASES:
            mine = table.median(ours, depth, phase)
            theirs = table.median(peer, depth, phase)
            row = f"{_PHASE_NAMES[phase]} at {depth:,}"
            if mine is None:
                behind.append(f"{row} (sessionary not measured)")
            elif theirs is None:
                unreached.append(row)
            elif mine >= theirs:
                behind.append(f"{row} ({shown(phase, mine)} vs {shown(phase, theirs)})")
    text = goal
    if behind:
        text += ": behind on " + "; ".join(behind)
    if unreached:
        text += " (peer has no number, counted as ahead: " + ", ".join(unreached) + ")"
    return Outcome(_verdict(not behind), text)
