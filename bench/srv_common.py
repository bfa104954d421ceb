"""The server benchmark's shared parts: settings, measurement cells, writers, the backend API."""

from __future__ import annotations

import gc
import ipaddress
import json
import os
import sys
import threading
import time
import traceback
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from bench.workload import Turn, conversation

POSTGRES_URL = os.environ.get(
    "SESSIONARY_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test"
)
MYSQL_URL = os.environ.get("SESSIONARY_TEST_MYSQL", "mysql://root@127.0.0.1:3306/test")
REDIS_URL = os.environ.get("SESSIONARY_TEST_REDIS", "redis://127.0.0.1:6379/0")

RECENT = 20
WRITERS = 8
NO_ROLLUPS = 10**9  # a snapshot_frequency no run reaches: roll-ups effectively disabled
# The append targets per writer shape (% of the raw driver's rate with the same shape) and the
# read target (% of raw's speed for `history(limit=20)`): the rows issue 18 asks for.
SHAPE_TARGETS = {"single": 50.0, "distinct": 60.0, "shared": 50.0}
READ_TARGET = 60.0
# (writers, mode): one writer has one session; eight share one or have one each.
SHAPES = ((1, "single"), (WRITERS, "distinct"), (WRITERS, "shared"))
SHAPE_NAMES = {
    "single": "1 writer",
    "distinct": f"{WRITERS} writers, distinct sessions",
    "shared": f"{WRITERS} writers, one shared session",
}


@dataclass(frozen=True)
class Plan:
    depth: int  # messages in the session history(limit=20) reads
    rounds: int  # append rounds; each gives every cell one block
    block_seconds: float  # wall time of one append block
    read_rounds: int
    read_block: int  # reads per cell per round
    read_budget: float  # seconds one read cell may spend in all
    piece_appends: int = 100  # appends per connection in one block of a piece (MariaDB)


FULL = Plan(depth=10_000, rounds=4, block_seconds=1.5, read_rounds=10, read_block=50, read_budget=8)
QUICK = Plan(
    depth=500,
    rounds=1,
    block_seconds=0.3,
    read_rounds=2,
    read_block=10,
    read_budget=1,
    piece_appends=20,
)


# --------------------------------------------------------------------------- measurements


@dataclass
class Cell:
    """One library, one writer shape: its writers and what their blocks measured."""

    backend: str
    lib: str
    label: str
    writers: int
    mode: str
    is_raw: bool
    handles: list[Writer] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    error: str = ""
    events: dict[str, int] = field(default_factory=dict)
    server_ns: int = 0  # the server's CPU over the cell's blocks: see `server_cpu`
    background_ns: int = 0  # of which its background tasks'

    @property
    def rate(self) -> float | None:
        wall = sum(self.walls)
        return sum(self.counts) / wall if wall and not self.error else None

    def spread(self) -> str:
        rates = sorted(c / w for c, w in zip(self.counts, self.walls, strict=True) if w)
        return f"{rates[0]:,.0f}-{rates[-1]:,.0f}" if rates else "-"

    def cpu_share(self) -> str:
        wall = sum(self.walls)
        return f"{100 * sum(self.cpus) / wall:.0f}%" if wall else "-"

    def client_us(self) -> float | None:
        """This process's CPU per append over the cell's blocks, in µs."""
        count = sum(self.counts)
        return 1e6 * sum(self.cpus) / count if count and not self.error else None

    def server_us(self) -> tuple[float, float] | None:
        """The server's CPU per append and its background tasks' part of it, in µs."""
        count = sum(self.counts)
        if not count or self.error:
            return None
        return self.server_ns / count / 1e3, self.background_ns / count / 1e3


@dataclass
class ReadCell:
    backend: str
    lib: str
    label: str
    is_raw: bool
    read: Callable[[], int]
    samples: list[float] = field(default_factory=list)
    spent: float = 0.0
    error: str = ""

    @property
    def median_us(self) -> float | None:
        return median(self.samples) * 1e6 if self.samples and not self.error else None


class Writer(ABC):
    """One thread's connection; ``append`` stores one message in one call/transaction."""

    def __init__(self) -> None:
        self.index = 0  # position in the benchmark conversation

    def next_turn(self) -> Turn:
        turn = conversation(self.index, 1)[0]
        self.index += 1
        return turn

    @abstractmethod
    def append(self) -> None: ...

    @abstractmethod
    def close(self) -> None: ...


def run_block(cell: Cell, seconds: float) -> None:
    """Every writer of the cell appends in its own thread until the block's deadline."""
    counts = [0] * len(cell.handles)
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(cell.handles) + 1)
    deadline = [0.0]

    def work(slot: int, writer: Writer) -> None:
        barrier.wait()
        try:
            while time.perf_counter() < deadline[0]:
                writer.append()
                counts[slot] += 1
        except BaseException as exc:  # reported in the cell, not lost in the thread
            errors.append(exc)

    threads = [
        threading.Thread(target=work, args=(i, w), daemon=True) for i, w in enumerate(cell.handles)
    ]
    for thread in threads:
        thread.start()
    gc.collect()
    cpu0 = time.process_time()
    start = time.perf_counter()
    deadline[0] = start + seconds
    barrier.wait()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    cell.cpus.append(time.process_time() - cpu0)
    cell.counts.append(sum(counts))
    cell.walls.append(wall)
    if errors:
        exc = errors[0]
        cell.error = f"{type(exc).__name__}: {exc}"
        traceback.print_exception(exc, file=sys.stderr)


def run_reads(cell: ReadCell, count: int, budget: float) -> None:
    expected = RECENT
    start = time.perf_counter()
    try:
        for _ in range(count):
            t0 = time.perf_counter()
            got = cell.read()
            cell.samples.append(time.perf_counter() - t0)
            if got != expected:
                raise AssertionError(f"{cell.label}: read {got} messages, expected {expected}")
            if cell.spent + time.perf_counter() - start > budget:
                break
    except Exception as exc:
        cell.error = f"{type(exc).__name__}: {exc}"
        traceback.print_exc(file=sys.stderr)
    cell.spent += time.perf_counter() - start


# --------------------------------------------------------------------------- server CPU

# A server task's role in a block: serving this run's connections, serving no client at all
# (PostgreSQL's WAL writer, checkpointer..., InnoDB's threads), or another client's connection.
OWN, BACKGROUND, OTHER = "own", "background", "other"


def task_ns(tid: int) -> int | None:
    """Nanoseconds a process or thread has run on a CPU (the kernel's `schedstat`)."""
    try:
        with open(f"/proc/{tid}/schedstat") as stat:
            return int(stat.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def task_name(tid: int) -> str:
    try:
        with open(f"/proc/{tid}/comm") as comm:
            return comm.read().strip()
    except OSError:
        return ""


def is_loopback(host: str | None) -> bool:
    """Whether a URL's host names this machine (a Unix socket path does too)."""
    if not host or host.startswith("/") or host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name other than localhost
        return False


def server_cpu(backend: Backend) -> dict[int, tuple[str, int]]:
    """Each server task's role and CPU nanoseconds now; empty when the server is not local."""
    if backend.cpu_problem is not None:
        return {}
    found = {}
    for tid, role in backend.server_tasks().items():
        spent = task_ns(tid)
        if spent is not None:
            found[tid] = (role, spent)
    return found


def add_server_cpu(
    cell: Cell, before: dict[int, tuple[str, int]], after: dict[int, tuple[str, int]]
) -> None:
    """Add the CPU the server's tasks spent between two `server_cpu` readings to the cell.

    A task serving this run at either reading counts whole; a background task only if it
    served no client at both (or began within the block); one that ended within it is lost.
    """
    for tid, (role, spent) in after.items():
        role_before, spent_before = before.get(tid, (role, 0))
        if spent < spent_before:  # the id went to a new task
            continue
        if OWN in (role, role_before):
            cell.server_ns += spent - spent_before
        elif role == role_before == BACKGROUND:
            cell.server_ns += spent - spent_before
            cell.background_ns += spent - spent_before


# --------------------------------------------------------------------------- backends


def message(turn: Turn) -> Any:
    from sessionary import Message

    return Message.user(turn.text) if turn.role == "user" else Message.assistant(turn.text)


def body(turn: Turn) -> str:
    return json.dumps({"role": turn.role, "content": turn.text})


def new_id() -> str:
    """Time-ordered, like sessionary's UUIDv7 ids: nanoseconds then 64 random bits."""
    return f"{time.time_ns():016x}{os.urandom(8).hex()}"


class SessionaryWriter(Writer):
    """A sync `SessionManager` of its own, appending with `session.append(message)`."""

    def __init__(self, url: str, session_id: str) -> None:
        super().__init__()
        from sessionary import SessionManager

        self.manager = SessionManager(url)
        self.session = self.manager.session(session_id)

    def append(self) -> None:
        self.session.append(message(self.next_turn()))

    def close(self) -> None:
        self.manager.close()


class Backend(ABC):
    name: str
    title: str
    libs: tuple[tuple[str, str, bool], ...]  # (key, label, is_raw)

    def __init__(self) -> None:
        self.tag = f"bench_{uuid.uuid4().hex[:12]}"
        self.closers: list[Callable[[], None]] = []
        # Why the server's CPU cannot be read from this machine's /proc, or None once
        # `locate_server` has found its processes.
        self.cpu_problem: str | None = "not looked for"

    @abstractmethod
    def problem(self) -> str | None:
        """Why the server cannot be used, or None."""

    @abstractmethod
    def setup(self) -> None: ...

    @abstractmethod
    def teardown(self) -> None:
        """Drop everything the run created."""

    @abstractmethod
    def settings(self) -> dict[str, str]: ...

    @abstractmethod
    def new_session(self, lib: str) -> Any:
        """Create a session for ``lib``; return what its writers need to reach it."""

    @abstractmethod
    def writer(self, lib: str, session: Any) -> Writer: ...

    @abstractmethod
    def reader(self, lib: str, depth: int) -> Callable[[], int]:
        """Build a session of ``depth`` messages; return a history(limit=20) read of it."""

    def counters(self) -> dict[str, int]:
        """Server-wide lock counters, read around each append block (outside its timing)."""
        return {}

    def pieces(self, plan: Plan) -> list[Piece]:
        """The server's CPU per append of an append's pieces (none where not measured)."""
        del plan
        return []

    @abstractmethod
    def locate_server(self) -> None:
        """Find the server's processes on this machine, or set `cpu_problem` to why not."""

    @abstractmethod
    def server_tasks(self) -> dict[int, str]:
        """Every process or thread id of the (local) server, by its role (`OWN`, ...)."""

    def close_all(self) -> None:
        for close in reversed(self.closers):
            try:
                close()
            except Exception:
                traceback.print_exc(file=sys.stderr)
        self.closers.clear()


@dataclass
class Piece:
    """One variant of an append, run by 8 connections at once: the server's CPU it costs."""

    key: str
    label: str
    server_us: float
    """The server's CPU per append, median of the variant's blocks (µs)."""


@dataclass
class Outcome:
    backend: Backend
    status: str = "ok"  # ok | unavailable | failed
    reason: str = ""
    settings: dict[str, str] = field(default_factory=dict)
    cells: list[Cell] = field(default_factory=list)
    reads: list[ReadCell] = field(default_factory=list)
    pieces: list[Piece] = field(default_factory=list)
    cleaned: str = ""


def versions(names: tuple[str, ...]) -> str:
    """The installed versions of these distributions, as `name x.y, ...`."""
    from importlib import metadata

    found = []
    for name in names:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return ", ".join(found) or "none"
