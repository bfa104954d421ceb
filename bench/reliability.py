"""Run the crash and cancellation trials by the thousand, per backend; write RELIABILITY.md.

    python bench/reliability.py --out RELIABILITY.md     # the long run (~25 minutes on 2 cores)
    python bench/reliability.py --quick                  # smoke run, report to stdout

The trials are those of `tests/guarantees/test_crash.py` and `test_cancellation.py`: the
code is shared (`tests/guarantees/_reliability.py`), only the counts differ. A crash
trial SIGKILLs a writer of single messages and `append_all` batches at a random moment
(a quarter of them before its first ack, while the store opens, migrates or creates the
session; every fresh store's first trial is one of those), then reopens the store and
checks every invariant. A cancellation call is one async append or batch cut short by
`asyncio.wait_for` with a random small timeout, or by `task.cancel()`. A violated
invariant is counted as a failure and the run goes on; any failure fails the command.

Stores: SQLite at `durability=full` and `durability=normal` (the trials split between
them), PostgreSQL, MariaDB/MySQL and Redis (their client is what is killed). Each server
store is a schema, database or key namespace of its own, renewed every
`--store-trials` trials and removed at the end. Server URLs: SESSIONARY_TEST_POSTGRES,
SESSIONARY_TEST_MYSQL, SESSIONARY_TEST_REDIS (the defaults are the local test servers).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # run as a script: make `bench` importable from the repo root
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "guarantees"))

from _reliability import CrashLoop, Tally, cancellation_run, launched  # noqa: E402

from bench import facts  # noqa: E402
from bench.srv_common import MYSQL_URL, POSTGRES_URL, REDIS_URL, versions  # noqa: E402
from bench.srv_sql import _mysql_connect  # noqa: E402

BACKENDS = ("sqlite-full", "sqlite-normal", "postgres", "mysql", "redis")
CALLS_PER_SESSION = 25
"""Cancelled-or-not calls per cancellation run (one session, checked after)."""


# --------------------------------------------------------------------- stores


@contextmanager
def fresh_store(backend: str, workdir: Path) -> Iterator[str]:
    """A URL for a store no process has opened yet; removed on the way out."""
    name = uuid.uuid4().hex[:12]
    if backend.startswith("sqlite-"):
        durability = backend.removeprefix("sqlite-")
        yield f"sqlite:///{workdir / f'{name}.db'}?durability={durability}"
        for path in workdir.glob(f"{name}.db*"):
            path.unlink()
    elif backend == "postgres":
        yield from _postgres_store(f"reliability_{name}")
    elif backend == "mysql":
        yield from _mysql_store(f"reliability_{name}")
    else:
        yield from _redis_store(f"reliability-{name}")


def _postgres_store(schema: str) -> Iterator[str]:
    import psycopg

    sep = "&" if "?" in POSTGRES_URL else "?"
    try:
        yield f"{POSTGRES_URL}{sep}schema={schema}"
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _mysql_store(database: str) -> Iterator[str]:
    from urllib.parse import urlsplit, urlunsplit

    conn = _mysql_connect(None, autocommit=True)
    try:
        with conn.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE `{database}` CHARACTER SET utf8mb4")
        yield urlunsplit(urlsplit(MYSQL_URL)._replace(path=f"/{database}"))
    finally:
        with conn.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS `{database}`")
        conn.close()


def _redis_store(namespace: str) -> Iterator[str]:
    import redis

    sep = "&" if "?" in REDIS_URL else "?"
    try:
        yield f"{REDIS_URL}{sep}namespace={namespace}"
    finally:
        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(match=f"{namespace}:*", count=1000))
        for start in range(0, len(keys), 500):
            client.unlink(*keys[start : start + 500])
        client.close()


# --------------------------------------------------------------------- trials


def _record(tally: Tally, what: str, run: Callable[[], None]) -> None:
    """Run one trial; a violated invariant or an error becomes a recorded failure."""
    try:
        run()
    except Exception as exc:
        kind = "" if isinstance(exc, AssertionError) else f"{type(exc).__name__}: "
        tally.failures.append(f"{what}: {kind}{exc}".splitlines()[0][:300])
        _log(f"FAILURE {tally.failures[-1]}")
        traceback.print_exc()


def crash(backend: str, trials: int, per_store: int, rng: random.Random, work: Path) -> Tally:
    """Run `trials` crash trials, a fresh store every `per_store` of them."""
    tally = Tally()
    with launched(work) as launcher:
        done = 0
        while done < trials:
            with fresh_store(backend, work) as url:
                loop = CrashLoop(url, work, launcher, random.Random(rng.random()), fresh=True)
                for _ in range(min(per_store, trials - done)):
                    _record(tally, f"{backend} crash trial {done}", partial(loop.trial, tally))
                    done += 1
            _log(f"{backend}: {done}/{trials} crash trials, {len(tally.failures)} failures")
    return tally


def cancellation(backend: str, calls: int, rng: random.Random, work: Path) -> Tally:
    """Interrupt `calls` async appends, `CALLS_PER_SESSION` per session, in one store."""
    tally = Tally()
    with fresh_store(backend, work) as url:
        for run in range(0, calls, CALLS_PER_SESSION):
            count = min(CALLS_PER_SESSION, calls - run)
            seed = rng.randrange(1 << 32)

            def one(run: int = run, count: int = count, seed: int = seed) -> None:
                tally.add(asyncio.run(cancellation_run(url, f"c{run}", count, seed)))

            _record(tally, f"{backend} cancellation run {run} (seed {seed})", one)
    _log(f"{backend}: {calls} cancellation calls, {len(tally.failures)} failures")
    return tally


# --------------------------------------------------------------------- report


def render(crashes: dict[str, Tally], cancels: dict[str, Tally], machine: dict[str, str]) -> str:
    """The report, in Markdown."""
    lines = [
        "# sessionary reliability",
        "",
        "Generated by `bench/reliability.py` from a single run; do not edit by hand, re-run "
        "instead. The same trials run in CI, fewer of them: `tests/guarantees/test_crash.py` "
        "and `tests/guarantees/test_cancellation.py` (shared code: "
        "`tests/guarantees/_reliability.py`).",
        "",
        "| | |",
        "|---|---|",
        *(f"| {name} | {value} |" for name, value in machine.items()),
        "",
        "## Crash trials (SIGKILL of the writing process)",
        "",
        "A writer appends single messages and `append_all` batches (2, 3 or 5 messages) in a "
        "tight loop and is killed with SIGKILL at a random moment: a random 0-0.4 s after its "
        "first acknowledged append, or (a quarter of the trials, and the first on every fresh "
        "store) a random delay after it started, before any ack, so the kill lands while the "
        "store opens, migrates or creates the session. For a server it is the client that is "
        "killed. After each kill the store is reopened and checked: every acknowledged id "
        "stored, in order; the call in flight stored whole or not at all; the head is the "
        "path's last message and equals its row; `history()` is one chain equal to every "
        "stored message, `message_count()` and `path_length()` agree with it; search finds "
        "the last ack; SQLite `PRAGMA integrity_check` is ok; one more append links to the "
        "head.",
        "",
        "| store | trials | killed before the first ack | acknowledged messages "
        "| acknowledged batches | call in flight: stored / absent | failures |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {name} | {t.trials:,} | {t.early_kills:,} | {t.acked_messages:,} "
            f"| {t.acked_batches:,} | {t.interrupted_committed:,} / {t.interrupted_absent:,} "
            f"| **{len(t.failures)}** |"
            for name, t in crashes.items()
        ),
        "",
        "## Cancellation (asyncio)",
        "",
        "Async `append` and `append_all` calls, each under `asyncio.wait_for` with a random "
        "timeout of up to 3 times a two-message append's median time here, or cancelled by "
        "`task.cancel()` after such a delay; then the manager is closed (it must return, and "
        "leave no task running) and the session is checked as above: every call that returned "
        "stored, in order, every cancelled one stored whole or not at all.",
        "",
        "| store | calls | cancelled | acknowledged messages | acknowledged batches "
        "| cancelled call: stored / absent | failures |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *(
            f"| {name} | {t.trials:,} | {t.cancelled:,} | {t.acked_messages:,} "
            f"| {t.acked_batches:,} | {t.interrupted_committed:,} / {t.interrupted_absent:,} "
            f"| **{len(t.failures)}** |"
            for name, t in cancels.items()
        ),
        "",
        "## Failures",
        "",
    ]
    failures = [f for t in (*crashes.values(), *cancels.values()) for f in t.failures]
    lines += [f"- {failure}" for failure in failures] or ["None: no acknowledged write lost."]
    return "\n".join([*lines, ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few trials per backend")
    parser.add_argument("--only", help="comma-separated stores: " + ", ".join(BACKENDS))
    parser.add_argument("--sqlite-trials", type=int, default=1000, help="split across both")
    parser.add_argument("--server-trials", type=int, default=150, help="per server")
    parser.add_argument("--cancel-calls", type=int, default=250, help="per store")
    parser.add_argument("--store-trials", type=int, default=25, help="trials per fresh store")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--out", help="write the Markdown report here (default: stdout)")
    args = parser.parse_args(argv)
    if args.quick:
        args.sqlite_trials, args.server_trials, args.cancel_calls = 12, 4, 25
    seed = random.randrange(1 << 32) if args.seed is None else args.seed
    rng = random.Random(seed)
    names = args.only.split(",") if args.only else list(BACKENDS)
    started = datetime.now(UTC)
    load_before = facts.load()
    crashes: dict[str, Tally] = {}
    cancels: dict[str, Tally] = {}
    with tempfile.TemporaryDirectory(prefix="reliability-") as tmp:
        work = Path(tmp)
        for name in names:
            trials = args.sqlite_trials // 2 if name.startswith("sqlite") else args.server_trials
            crashes[name] = crash(name, trials, args.store_trials, rng, work)
        for name in names:
            if name != "sqlite-normal":  # cancellation never reaches the disk's sync
                cancels[name.removesuffix("-full")] = cancellation(
                    name, args.cancel_calls, rng, work
                )
    machine = facts.collect(_command(argv), started, load_before, Path.cwd())
    machine.pop("database files", None)
    machine["seed"] = str(seed)
    machine["packages"] = versions(("sessionary", "psycopg", "PyMySQL", "aiomysql", "redis"))
    report = render(crashes, cancels, machine)
    if args.out:
        Path(args.out).write_text(report, encoding="utf-8")
        _log(f"wrote {args.out}")
    else:
        sys.stdout.write(report)
    return 1 if any(t.failures for t in (*crashes.values(), *cancels.values())) else 0


def _command(argv: list[str] | None) -> str:
    words = sys.argv[1:] if argv is None else argv
    return " ".join(["python bench/reliability.py", *words])


def _log(message: str) -> None:
    print(f"[reliability {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
