"""Build every subject to its depth, then time them in interleaved rounds.

The machine is shared and noisy, so no phase runs one library after another: each round gives
every subject one short block of calls, in a fresh random order, and the ratios in the report
compare numbers taken side by side. Each subject has a time budget per phase; a library that
cannot build a depth within its budget is reported as "not reached" rather than waited for.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import random
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter

from bench.subject import AsyncSubject, Subject
from bench.workload import conversation

__all__ = ["PHASES", "Budget", "Plan", "Result", "run"]

PHASES = ("append", "recent", "full")


@dataclass(frozen=True)
class Budget:
    """Seconds one subject may spend in each phase (building counts separately)."""

    build: float = 40.0
    append: float = 25.0
    recent: float = 10.0
    full: float = 15.0

    def of(self, phase: str) -> float:
        return float(getattr(self, phase))


@dataclass(frozen=True)
class Plan:
    depths: tuple[int, ...]
    appends: int  # single-message appends timed per subject
    recent_reads: int  # history(limit=20) reads timed per subject
    budget: Budget
    batch: int = 1000  # messages per transaction while building depth
    blocks: tuple[int, int, int] = (20, 50, 5)  # calls per subject per round, by phase

    def block(self, phase: str) -> int:
        return self.blocks[PHASES.index(phase)]

    def wanted(self, phase: str, depth: int) -> int:
        if phase == "append":
            return self.appends
        if phase == "recent":
            return self.recent_reads
        return 50 if depth <= 1_000 else 20 if depth <= 10_000 else 5


@dataclass
class Result:
    """Everything measured for one library at one depth."""

    key: str
    label: str
    api: str
    baseline: str
    depth: int
    status: str = "pending"  # ok | not reached | unavailable | failed
    reason: str = ""
    reached: int = 0
    build_seconds: float = 0.0
    durability: dict[str, str] = field(default_factory=dict)
    size_bytes: int = 0
    samples: dict[str, list[float]] = field(default_factory=lambda: {p: [] for p in PHASES})
    spent: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PHASES, 0.0))
    cut_short: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(PHASES, False))
    settled: bool = False  # WAL truncated before timing (see Subject.settle)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


Log = Callable[[str], None]


def run(
    plan: Plan,
    libraries: Sequence[type[Subject]],
    unavailable: dict[str, str],
    workdir: Path,
    log: Log,
) -> list[Result]:
    """Measure every library at every depth of ``plan``; return one result per pair."""
    loop = asyncio.new_event_loop()
    try:
        built = _build_all(plan, libraries, unavailable, workdir, loop, log)
        live = [(subject, result) for subject, result in built if result.ok]
        gc.collect()
        gc.freeze()  # what building left alive must not slow every later collection
        for phase in PHASES:
            log(f"timing {phase} ...")
            _interleave(plan, phase, live, log)
        for subject, result in live:
            _close(subject, result, log)
        return [result for _, result in built]
    finally:
        gc.unfreeze()
        loop.close()


def _build_all(
    plan: Plan,
    libraries: Sequence[type[Subject]],
    unavailable: dict[str, str],
    workdir: Path,
    loop: asyncio.AbstractEventLoop,
    log: Log,
) -> list[tuple[Subject | None, Result]]:
    built: list[tuple[Subject | None, Result]] = []
    missed: dict[str, str] = dict(unavailable)
    for depth in plan.depths:
        for cls in libraries:
            result = Result(cls.key, cls.label, cls.api, cls.baseline, depth)
            if cls.key in missed:
                result.status, result.reason = _skip_status(cls.key, unavailable, missed)
                built.append((None, result))
                continue
            subject = _make(cls, workdir / f"{cls.key}-{depth}", depth, loop)
            _build(plan, subject, result, log)
            if not result.ok:
                missed[cls.key] = f"did not reach {depth:,}"
            built.append((subject, result))
    return built


def _skip_status(key: str, unavailable: dict[str, str], missed: dict[str, str]) -> tuple[str, str]:
    if key in unavailable:
        return "unavailable", unavailable[key]
    return "not reached", missed[key]


def _make(
    cls: type[Subject], directory: Path, depth: int, loop: asyncio.AbstractEventLoop
) -> Subject:
    if issubclass(cls, AsyncSubject):
        return cls(directory, depth, loop)
    return cls(directory, depth)


def _build(plan: Plan, subject: Subject, result: Result, log: Log) -> None:
    start = perf_counter()
    try:
        subject.open()
        result.durability = subject.durability()
        while subject.stored < subject.depth:
            count = min(plan.batch, subject.depth - subject.stored)
            subject.fill(conversation(subject.stored, count))
            subject.stored += count
            if perf_counter() - start > plan.budget.build and subject.stored < subject.depth:
                break
        if subject.stored == subject.depth:
            subject.fill_done()
    except Exception as exc:
        _fail(result, "building", exc, log)
        with contextlib.suppress(Exception):
            subject.close()
        return
    result.build_seconds = perf_counter() - start
    result.reached = subject.stored
    if subject.stored < subject.depth:
        result.status = "not reached"
        result.reason = (
            f"build stopped at {subject.stored:,} messages after {result.build_seconds:.0f} s"
        )
        _close(subject, result, log)
    else:
        result.status = "ok"
        result.settled = subject.settle()
    log(f"built {result.label} at {subject.depth:,} in {result.build_seconds:.1f} s")


def _interleave(plan: Plan, phase: str, live: list[tuple[Subject, Result]], log: Log) -> None:
    # A fresh order every round: no subject always follows the one with the heaviest writes.
    order = random.Random(f"{phase}-{plan.depths}")
    pending = [pair for pair in live if pair[1].ok]
    while pending:
        for subject, result in order.sample(pending, len(pending)):
            _block(plan, phase, subject, result, log)
        pending = [pair for pair in pending if not _phase_done(plan, phase, *pair)]


def _block(plan: Plan, phase: str, subject: Subject, result: Result, log: Log) -> None:
    # Start every block from the same place: no garbage or dirty pages left by the last one.
    gc.collect()
    os.sync()
    samples = result.samples[phase]
    count = min(plan.block(phase), plan.wanted(phase, subject.depth) - len(samples))
    start = perf_counter()
    deadline = start + plan.budget.of(phase) - result.spent[phase]
    try:
        samples.extend(_timed(phase, subject, count, deadline))
    except Exception as exc:
        _fail(result, phase, exc, log)
    result.spent[phase] += perf_counter() - start


def _timed(phase: str, subject: Subject, count: int, deadline: float) -> list[float]:
    if phase == "append":
        return subject.time_appends(conversation(subject.stored, count), deadline)
    if phase == "recent":
        return subject.time_recent(count, deadline)
    return subject.time_full(count, deadline)


def _phase_done(plan: Plan, phase: str, subject: Subject, result: Result) -> bool:
    if not result.ok:
        return True
    if len(result.samples[phase]) >= plan.wanted(phase, subject.depth):
        return True
    if result.spent[phase] >= plan.budget.of(phase):
        result.cut_short[phase] = True
        return True
    return False


def _close(subject: Subject, result: Result, log: Log) -> None:
    try:
        subject.close()
        result.size_bytes = subject.size_bytes()
    except Exception as exc:
        _fail(result, "closing", exc, log)


def _fail(result: Result, stage: str, exc: Exception, log: Log) -> None:
    result.status = "failed"
    result.reason = f"{stage}: {type(exc).__name__}: {exc}"
    log(f"FAILED {result.label} at {result.depth:,} while {result.reason}")
    traceback.print_exc(file=sys.stderr)
