"""Crash and cancellation trials, shared by the guarantee tests and `bench/reliability.py`.

Not a test module: the tests next to it import it, and the long-run script puts this
folder on `sys.path` to run the same trials many more times.

A **crash trial** forks a writer from a launcher process (`_worker.py launcher`, which
has sessionary imported but never opens a store, so a fork costs no interpreter start),
lets it append single messages and `append_all` batches in a tight loop, and SIGKILLs it
at a random moment: either a random delay after its first acknowledged append, or a
random delay after the fork, before any ack (then the kill lands while the store opens
or migrates, or the session is created, or the first append runs). The writer prints
`? ids...` before each call and `! ids...` once it has returned, so the parent knows
every acknowledged unit and the one in flight at the kill.

A **cancellation run** makes async appends and batches under `asyncio.wait_for` with a
random small timeout, or cancels their task at a random moment, then closes the manager.

After either, `check_session` opens the store afresh and checks every invariant.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from _guarantees import LINE_TIMEOUT, check_chain, sqlite_file, worker_command

import sessionary
from sessionary import Message
from sessionary.stores.base import SEARCH

UNIT_SIZES = (1, 1, 2, 3, 5)
"""Sizes the writer draws its units from: 1 is `append`, more is one `append_all`."""

LATE_KILL = 0.4
"""A kill after the first ack lands up to this many seconds later."""

FIRST_ACK_GUESS = 0.02
"""Seconds from fork to first ack assumed until a trial has measured it: short, so that
the first kill on a fresh store lands while it opens and migrates, before any ack."""


# ------------------------------------------------------------------- tallies


@dataclass
class Tally:
    """What a series of trials on one backend did and found."""

    trials: int = 0
    early_kills: int = 0  # crash trials killed before their first ack
    cancelled: int = 0  # cancellation: calls interrupted by a timeout or task.cancel()
    acked_messages: int = 0
    acked_batches: int = 0  # acknowledged `append_all` calls of 2 or more messages
    interrupted_committed: int = 0  # killed or cancelled units found stored (whole)
    interrupted_absent: int = 0  # killed or cancelled units found absent (whole)
    failures: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        """Add another tally's counts (and failures) to this one."""
        for name in (
            "trials",
            "early_kills",
            "cancelled",
            "acked_messages",
            "acked_batches",
            "interrupted_committed",
            "interrupted_absent",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.failures += other.failures

    def count_acked(self, unit: list[str]) -> None:
        self.acked_messages += len(unit)
        self.acked_batches += len(unit) > 1


# ---------------------------------------------------------------- invariants


def stored_ids(manager: sessionary.SessionManager, session_id: str) -> set[str]:
    """Every message id the session's rows hold, whatever the head and the tree say."""
    ids: set[str] = set()
    cursor = None
    while True:
        page, cursor = manager.store.page_messages(manager.scope, session_id, cursor, 500)
        ids.update(m.id for m in page)
        if cursor is None:
            return ids


def check_sqlite_file(url: str) -> None:
    """Assert `PRAGMA integrity_check` is ok, for a `sqlite:///` URL (else do nothing)."""
    path = sqlite_file(url)
    if path is None or not Path(path).exists():
        return
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)], "integrity_check"
    finally:
        db.close()


def check_session(
    url: str, session_id: str, acked: list[str], units: list[list[str]], after: str
) -> tuple[list[str], int]:
    """Check a session after interrupted writes, in a store opened afresh; append `after`.

    Args:
        url: The store.
        session_id: The session (it may not exist if nothing was ever acknowledged).
        acked: Ids whose append returned: every one stored, in this order on the path.
        units: Per interrupted append, its message ids: stored all or none, as one run.
        after: Id of one more message appended at the end: it must link to the head.

    Returns:
        The ids on the path, `after` included, and how many `units` were stored.
    """
    check_sqlite_file(url)
    with sessionary.SessionManager(url) as manager:
        if manager.get(session_id) is None:
            assert not acked, f"session {session_id} lost with {len(acked)} acknowledged ids"
            manager.create(id=session_id)
        session = manager.session(session_id)
        path = session.history()
        ids = [m.id for m in path]
        head = session.head()
        if ids:
            assert head is not None, "the head names no stored message"
            assert head.id == ids[-1], f"head {head.id} is not the path's end {ids[-1]}"
            assert head == session.get_message(head.id), "the head differs from its row"
        else:
            assert head is None, f"an empty path under head {head}"
        check_chain(path, session.message_count(), session.path_length())
        assert set(ids) == stored_ids(manager, session_id), "stored messages off the path"
        known = set(acked).union(*units)
        assert set(ids) <= known, f"unknown messages on the path: {set(ids) - known}"
        on_path = set(ids)
        assert [i for i in ids if i in set(acked)] == acked, "an acknowledged id lost or moved"
        stored = 0
        for unit in units:
            present = [i for i in unit if i in on_path]
            assert present in ([], unit), f"half an append was committed: {present} of {unit}"
            if present:
                start = ids.index(unit[0])
                assert ids[start : start + len(unit)] == unit, f"{unit} is not one run"
                stored += 1
        _check_search(manager, session, acked)
        session.append(message(after))
        again = [m.id for m in session.history()]
        assert again == [*ids, after], "the next append did not link to the head"
        assert session.path_length() == len(ids) + 1
        return again, stored


def _check_search(
    manager: sessionary.SessionManager, session: sessionary.Session, acked: list[str]
) -> None:
    """The last acknowledged message is found by the one word only its text holds."""
    if not acked or SEARCH not in manager.store.capabilities:
        return
    word = search_word(acked[-1])
    last = session.get_message(acked[-1])
    if last is None or not last.text.startswith(word):  # not written by `message`
        return
    hits = [hit.message_id for hit in session.search(word)]
    assert hits == [acked[-1]], f"search {word!r} found {hits}, not {acked[-1]}"


def search_word(msg_id: str) -> str:
    """The one word only message `msg_id`'s text holds (ids are `{prefix}-{n}-{k}`)."""
    return "probe" + msg_id.replace("-", "x")


def message(msg_id: str) -> Message:
    return Message.user(f"{search_word(msg_id)} payload", id=msg_id)


# ---------------------------------------------------------------- crash trials


def writer(url: str, session_id: str, prefix: str, seed: int) -> None:
    """Append units forever, printing `? ids` before each call and `! ids` after it."""
    rng = random.Random(seed)
    with sessionary.SessionManager(url) as manager:
        session = manager.get_or_create(session_id)
        n = 0
        while True:
            ids = [f"{prefix}-{n}-{k}" for k in range(rng.choice(UNIT_SIZES))]
            print("?", *ids, flush=True)
            if len(ids) == 1:
                session.append(message(ids[0]))
            else:
                session.append_all(message(i) for i in ids)
            print("!", *ids, flush=True)
            n += 1


def launcher() -> None:
    """Serve kill jobs (one JSON line each on stdin), answering each with one JSON line.

    A job: `url`, `session`, `prefix`, `seed`, `out`, `err`, `early` and `delay`. The
    launcher forks a `writer`, kills it `delay` seconds after the fork (`early`) or after
    its first ack, reaps it and answers `{"signal", "code", "first_ack"}`.
    """
    # Import the drivers now, so a forked writer does not spend its time importing them.
    for name in ("psycopg", "psycopg_pool", "pymysql", "aiomysql", "redis"):
        with contextlib.suppress(ImportError):
            __import__(name)
    for line in sys.stdin:
        job = json.loads(line)
        print(json.dumps(_kill_job(job)), flush=True)


def _kill_job(job: dict[str, Any]) -> dict[str, Any]:
    out = Path(job["out"])
    with out.open("w") as stdout, open(job["err"], "w") as stderr:
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:  # the writer
            _become_writer(stdout, stderr, job)
    first_ack = None
    if job["early"]:
        time.sleep(job["delay"])
    else:
        deadline = started + LINE_TIMEOUT
        while "\n!" not in "\n" + out.read_text(encoding="utf-8"):
            if time.monotonic() > deadline or os.waitpid(pid, os.WNOHANG) != (0, 0):
                break
            time.sleep(0.002)
        first_ack = time.monotonic() - started
        time.sleep(job["delay"])
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:  # reaped by the WNOHANG poll above: it exited by itself
        status = 1 << 8
    killed = os.WIFSIGNALED(status)
    return {
        "signal": os.WTERMSIG(status) if killed else None,
        "code": None if killed else os.WEXITSTATUS(status),
        "first_ack": first_ack,
    }


def _become_writer(stdout: IO[str], stderr: IO[str], job: dict[str, Any]) -> None:
    """In the forked child: write to the job's files, run the writer, never return."""
    os.dup2(stdout.fileno(), 1)
    os.dup2(stderr.fileno(), 2)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    try:
        writer(job["url"], job["session"], job["prefix"], job["seed"])
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)


class Launcher:
    """The parent's side of one `_worker.py launcher` process."""

    def __init__(self, cwd: Path) -> None:
        self.tag = f"sessionary-crash-{os.getpid()}-{time.monotonic_ns()}"
        """The PostgreSQL `application_name` of its writers' connections (see `settle`)."""
        self.proc = subprocess.Popen(
            worker_command("launcher", "-", "-"),
            cwd=cwd,
            env={**os.environ, "PGAPPNAME": self.tag},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def run(self, **job: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        assert reply, f"the launcher died ({self.proc.wait(LINE_TIMEOUT)})"
        answer: dict[str, Any] = json.loads(reply)
        return answer

    def close(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        try:
            self.proc.wait(LINE_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(LINE_TIMEOUT)


SETTLE = 20.0
"""Seconds a server may take to finish what a killed writer had sent it."""


def settle(url: str, tag: str) -> None:
    """Wait until the server has finished every statement a killed writer had sent it.

    A server runs a statement to its end after its client is gone (that is what makes an
    append script whole), so right after a kill the writer's last append may still
    commit. The checks read the session in several statements, so they wait for that
    first: on MariaDB until no other connection to the test's own database is running
    one, on PostgreSQL until no connection named `tag` (the writers' `application_name`)
    is. Other stores have no such work in flight once the writer is dead.
    """
    deadline = time.monotonic() + SETTLE
    if url.startswith(("mysql://", "mariadb://")):
        from urllib.parse import unquote, urlsplit

        import pymysql

        parts = urlsplit(url)
        conn = pymysql.connect(
            host=parts.hostname or "localhost",
            port=parts.port or 3306,
            user=unquote(parts.username or "root"),
            password=unquote(parts.password or ""),
            database=unquote(parts.path.lstrip("/")),
            autocommit=True,
        )
        busy = (
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() "
            "AND ID <> CONNECTION_ID() AND COMMAND NOT IN ('Sleep', 'Daemon')"
        )
    elif url.startswith(("postgresql://", "postgres://")):
        import psycopg

        conn = psycopg.connect(url.split("?")[0], autocommit=True)
        busy = (
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND state <> 'idle'"
        )
    else:
        return
    try:
        while True:
            with conn.cursor() as cursor:
                cursor.execute(busy, (tag,) if "%s" in busy else None)
                row = cursor.fetchone()
            if not row or not row[0]:
                return
            assert time.monotonic() < deadline, f"a killed writer's statement ran {SETTLE} s on"
            time.sleep(0.01)
    finally:
        conn.close()


@contextlib.contextmanager
def launched(cwd: Path) -> Iterator[Launcher]:
    """A launcher for the duration of the block."""
    launcher_ = Launcher(cwd)
    try:
        yield launcher_
    finally:
        launcher_.close()


def parse_writer_output(text: str) -> tuple[list[list[str]], list[str] | None]:
    """Return the writer's acknowledged units, in order, and the unit in flight (or None)."""
    acked: list[list[str]] = []
    in_flight: list[str] | None = None
    for line in text.split("\n")[:-1]:  # a torn last line was never acknowledged
        mark, *ids = line.split()
        if mark == "?":
            assert in_flight is None, f"a call began before {in_flight} returned"
            in_flight = ids
        else:
            assert mark == "!" and ids == in_flight, f"ack {ids} for call {in_flight}"
            acked.append(ids)
            in_flight = None
    return acked, in_flight


class CrashLoop:
    """Crash trials on one store: sessions continue across trials, as a user's would."""

    def __init__(
        self, url: str, workdir: Path, launcher_: Launcher, rng: random.Random, *, fresh: bool
    ) -> None:
        self.url = url
        self.workdir = workdir
        self.launcher = launcher_
        self.rng = rng
        self.fresh = fresh  # the store was never opened: the first trial kills early
        self.paths: dict[str, list[str]] = {}  # per session, the ids on its path
        self.first_ack = FIRST_ACK_GUESS
        self.count = 0

    def trial(self, tally: Tally) -> None:
        """Run one kill and check the store; a violated invariant raises AssertionError."""
        n = self.count
        self.count += 1
        session_id = f"s{n // 4}"  # four writers in turn continue each session
        early = (n == 0 and self.fresh) or self.rng.random() < 0.25
        # An early kill aims inside the first ack's usual time, less a margin: that time
        # varies from run to run, and a kill after the ack is a late one in all but name.
        delay = self.rng.uniform(0, 0.8 * self.first_ack if early else LATE_KILL)
        context = f"trial {n} on {self.url}, {'early' if early else 'late'} kill at {delay:.3f} s"
        out = self.workdir / "writer.out"
        answer = self.launcher.run(
            url=self.url,
            session=session_id,
            prefix=f"t{n}",
            seed=self.rng.randrange(1 << 32),
            out=str(out),
            err=str(self.workdir / "writer.err"),
            early=early,
            delay=delay,
        )
        err = (self.workdir / "writer.err").read_text(encoding="utf-8")
        assert answer["signal"] == signal.SIGKILL, f"{context}: the writer ended: {answer}\n{err}"
        if answer["first_ack"] is not None:  # a running mean of the time to the first ack
            self.first_ack = 0.8 * self.first_ack + 0.2 * answer["first_ack"]
        units, in_flight = parse_writer_output(out.read_text(encoding="utf-8"))
        tally.trials += 1
        tally.early_kills += not units
        if not early:
            assert units, f"{context}: no ack before a late kill"
        before = self.paths.get(session_id, [])
        acked = [i for unit in units for i in unit]
        settle(self.url, self.launcher.tag)
        try:
            ids, stored = check_session(
                self.url,
                session_id,
                before + acked,
                [in_flight] if in_flight else [],
                f"t{n}-after",
            )
            # One writer: its acks follow the session's earlier path, then the call in
            # flight if it was stored, then the check's own append.
            committed = before + acked + (in_flight if stored else [])
            assert ids == [*committed, f"t{n}-after"], f"path {ids[-8:]} != {committed[-8:]}"
        except AssertionError as exc:
            raise AssertionError(f"{context}: {exc}") from exc
        if in_flight:
            tally.interrupted_committed += stored
            tally.interrupted_absent += 1 - stored
        for unit in units:
            tally.count_acked(unit)
        self.paths[session_id] = ids


def crash_trials(url: str, workdir: Path, trials: int, seed: int, *, fresh: bool) -> Tally:
    """Run `trials` crash trials on one store; raise AssertionError at the first violation."""
    tally = Tally()
    with launched(workdir) as launcher_:
        loop = CrashLoop(url, workdir, launcher_, random.Random(seed), fresh=fresh)
        for _ in range(trials):
            loop.trial(tally)
    return tally


# ---------------------------------------------------------- cancellation runs

HANG = 120.0
"""Seconds after which a close counts as hung: generous, for a loaded machine."""


async def append_time(session: sessionary.AsyncSession) -> float:
    """The median seconds a two-message append after a known head takes here."""
    return (await append_pace(session))[0]


async def append_pace(session: sessionary.AsyncSession) -> tuple[float, int]:
    """The median seconds and event-loop turns a two-message append takes here."""
    times, turns = [], []
    for n in range(7):
        start = time.perf_counter()
        pair = [Message.user(f"warm {n} a"), Message.user(f"warm {n} b")]
        turns.append(await _turns_while(session.append_all(pair)))
        times.append(time.perf_counter() - start)
    return statistics.median(times), int(statistics.median(turns))


async def _turns_while(call: Any) -> int:
    """Await `call`; return how many times the event loop went round meanwhile."""
    turns = 0

    async def spin() -> None:
        nonlocal turns
        while True:
            await asyncio.sleep(0)
            turns += 1

    spinner = asyncio.ensure_future(spin())
    try:
        await call
    finally:
        spinner.cancel()
    return turns


async def interrupted(call: Any, rng: random.Random, span: float, turns: int) -> float | None:
    """Run an append under a random small timeout, or cancel its task after a few turns.

    A timeout is a timer, which the loop fires no sooner than its clock's resolution (a
    millisecond with epoll), so on a fast store it rarely cuts; the cancellation counts
    loop turns instead (up to twice an append's), so it cuts at any point of the call.
    Returns None if the call was cut short, else the seconds it took.
    """
    start = time.perf_counter()
    if rng.random() < 0.5:
        try:
            await asyncio.wait_for(call, timeout=rng.uniform(0, span))
        except TimeoutError:
            return None
        return time.perf_counter() - start
    task = asyncio.ensure_future(call)
    for _ in range(rng.randrange(2 * turns + 1)):
        await asyncio.sleep(0)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        return None
    return time.perf_counter() - start


async def cancellation_run(url: str, session_id: str, calls: int, seed: int) -> Tally:
    """Interrupt `calls` async appends at random points, close, and check the session."""
    rng = random.Random(seed)
    tally = Tally()
    acked: list[str] = []
    units: list[list[str]] = []
    manager = sessionary.AsyncSessionManager(url)
    try:
        session = await manager.get_or_create(session_id)
        # Timeouts up to three times a recent append's time: they follow the load.
        pace, turns = await append_pace(session)
        taken = [pace]
        acked += [m.id for m in await session.history()]
        for n in range(calls):
            ids = [f"{session_id}x{seed}x{n}-{k}" for k in range(rng.choice(UNIT_SIZES))]
            if len(ids) == 1:
                call = session.append(message(ids[0]))
            else:
                call = session.append_all([message(i) for i in ids])
            tally.trials += 1
            took = await interrupted(call, rng, 3 * statistics.median(taken[-7:]), turns)
            if took is None:
                tally.cancelled += 1
                units.append(ids)
            else:
                taken.append(took)
                acked += ids
                tally.count_acked(ids)
    finally:
        await asyncio.wait_for(manager.close(), HANG)
    stray = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert not stray, f"tasks left running after close: {stray}"
    _, stored = await asyncio.to_thread(
        check_session, url, session_id, acked, units, f"{session_id}x{seed}-after"
    )
    tally.interrupted_committed += stored
    tally.interrupted_absent += len(units) - stored
    return tally
