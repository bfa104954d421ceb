"""The cost of encryption at rest: append and read through `Encryption` against the plain store.

Each backend is measured in one run, plain and encrypted side by side: blocks of appends
(and of history reads) alternate between the two so that drift in machine load falls on
both alike, and the report gives the median block's rate and the ratio. Run it through
``scripts/bench-crypto``; it writes BENCHMARKS-crypto.md.

    python bench/crypto.py --out BENCHMARKS-crypto.md [--quick] [--backends sqlite,redis]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import sessionary
from sessionary import Encryption, Keyring, Message, SessionManager, ToolCallPart
from sessionary.crypto import generate_key

POSTGRES = os.environ.get("SESSIONARY_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
MYSQL = os.environ.get("SESSIONARY_TEST_MYSQL", "mysql://root@127.0.0.1:3306/test")
REDIS = os.environ.get("SESSIONARY_TEST_REDIS", "redis://127.0.0.1:6379/0")
TEXT = (
    "Could you check why the nightly export failed? The log says the connection to the "
    "warehouse was reset after 40 minutes, and the retry gave up at step 3 of 5. "
) * 2
READ_LIMIT = 50


@dataclass
class Plan:
    """How much work each block does."""

    blocks: int
    appends: int
    reads: int
    history: int


FULL = Plan(blocks=7, appends=100, reads=100, history=200)
QUICK = Plan(blocks=2, appends=20, reads=10, history=60)


@dataclass
class Row:
    """One backend's rates, plain and encrypted (per block)."""

    backend: str
    append: dict[str, list[float]] = field(default_factory=lambda: {"plain": [], "sealed": []})
    read: dict[str, list[float]] = field(default_factory=lambda: {"plain": [], "sealed": []})
    error: str | None = None


def _message(i: int) -> Message:
    if i % 3 == 1:
        call = ToolCallPart(id=f"c{i}", name="search_logs", arguments={"query": TEXT[:80]})
        return Message.assistant("Let me look at the logs.", tool_calls=[call])
    if i % 3 == 2:
        return Message.tool(f"c{i - 1}", {"lines": [TEXT[:120], TEXT[40:160]]})
    return Message.user(TEXT)


# ---------------------------------------------------------------- scratch stores


@contextmanager
def _sqlite() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as where:
        yield f"sqlite:///{where}/bench.db"


@contextmanager
def _postgres() -> Iterator[str]:
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:12]}"
    try:
        yield f"{POSTGRES}{'&' if '?' in POSTGRES else '?'}schema={schema}"
    finally:
        with psycopg.connect(POSTGRES, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@contextmanager
def _mysql() -> Iterator[str]:
    import pymysql

    parts = urlsplit(MYSQL)
    database = f"bench_{uuid.uuid4().hex[:12]}"
    admin = dict(host=parts.hostname, port=parts.port or 3306, user=parts.username or "root")
    conn = pymysql.connect(**admin, password=parts.password or "", autocommit=True)
    try:
        conn.cursor().execute(f"CREATE DATABASE `{database}` CHARACTER SET utf8mb4")
        yield urlunsplit(parts._replace(path=f"/{database}"))
    finally:
        conn.cursor().execute(f"DROP DATABASE IF EXISTS `{database}`")
        conn.close()


@contextmanager
def _redis() -> Iterator[str]:
    import redis

    namespace = f"bench-{uuid.uuid4().hex[:12]}"
    try:
        yield f"{REDIS}{'&' if '?' in REDIS else '?'}namespace={namespace}"
    finally:
        client = redis.Redis.from_url(REDIS)
        keys = list(client.scan_iter(match=f"{namespace}:*", count=1000))
        for start in range(0, len(keys), 500):
            client.unlink(*keys[start : start + 500])
        client.close()


SCRATCH: dict[str, Callable[[], Any]] = {
    "sqlite": _sqlite,
    "postgres": _postgres,
    "mysql": _mysql,
    "redis": _redis,
}


# ---------------------------------------------------------------- measuring


def _append_block(manager: SessionManager, count: int) -> float:
    chat = manager.create()
    start = time.perf_counter()
    for i in range(count):
        chat.append(_message(i))
    return count / (time.perf_counter() - start)


def _read_block(manager: SessionManager, session_id: str, count: int) -> float:
    chat = manager.session(session_id)
    start = time.perf_counter()
    for _ in range(count):
        for message in chat.history(limit=READ_LIMIT):
            message.parts  # noqa: B018 - a caller uses what it reads: decode it
    return count * READ_LIMIT / (time.perf_counter() - start)


def measure(backend: str, plan: Plan) -> Row:
    """Measure one backend, plain and encrypted, alternating blocks."""
    row = Row(backend)
    keys = Encryption(Keyring.from_text(f"k1={generate_key()}"))
    with SCRATCH[backend]() as url:
        store = sessionary.open_store(url)
        try:
            managers = {
                "plain": SessionManager(store),
                "sealed": SessionManager(store, encryption=keys),
            }
            long = {}
            for kind, manager in managers.items():
                chat = manager.create()
                chat.append_all([_message(i) for i in range(plan.history)])
                long[kind] = chat.id
            for block in range(plan.blocks):
                order = ("plain", "sealed") if block % 2 == 0 else ("sealed", "plain")
                for kind in order:
                    row.append[kind].append(_append_block(managers[kind], plan.appends))
                    row.read[kind].append(_read_block(managers[kind], long[kind], plan.reads))
        except Exception as exc:  # a report row says what failed; the others still run
            row.error = f"{type(exc).__name__}: {exc}"
        finally:
            store.close()
    return row


def seal_cost(count: int = 2000) -> tuple[float, float]:
    """Microseconds to seal and to open one typical message body, without a store."""
    keyring = Keyring.from_text(f"k1={generate_key()}")
    body = sessionary.model.encode_body(_message(0))
    binding = ("message", "t", "u", "s", "m", "user")
    start = time.perf_counter()
    sealed = [keyring.seal(body, binding) for _ in range(count)]
    middle = time.perf_counter()
    for value in sealed:
        keyring.open(value, binding)
    end = time.perf_counter()
    return 1e6 * (middle - start) / count, 1e6 * (end - middle) / count


# ---------------------------------------------------------------- the report


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def _spread(values: list[float]) -> str:
    return f"{min(values):,.0f}-{max(values):,.0f}" if values else "-"


def report(rows: list[Row], plan: Plan, seconds: float, command: str) -> str:
    """Return the Markdown report."""
    seal_us, open_us = seal_cost()
    lines = [
        "# sessionary encryption-at-rest benchmark",
        "",
        "Generated by `bench/crypto.py` from a single run; do not edit by hand, re-run instead.",
        "",
        "| | |",
        "|---|---|",
        f"| command | `{command}` |",
        f"| date | {datetime.now(UTC):%Y-%m-%d %H:%M UTC} |",
        f"| duration | {seconds:.0f} s |",
        f"| CPU | {platform.processor() or platform.machine()}, {os.cpu_count()} cores |",
        f"| Python | {platform.python_implementation()} {platform.python_version()} |",
        f"| load average before | {' / '.join(f'{x:.2f}' for x in os.getloadavg())} |",
        f"| work per block | {plan.appends} appends to a new session; {plan.reads} reads of "
        f"the last {READ_LIMIT} messages of a {plan.history}-message session |",
        f"| blocks | {plan.blocks} per side, plain and encrypted alternating |",
        "",
        "Messages cycle through a user text (~330 characters), an assistant tool call and its",
        "tool result, as in an agent loop. *Encrypted* is `SessionManager(store,",
        "encryption=Encryption(keyring))` over the same store object, nothing indexed in",
        "clear. Reads touch every message's parts, so both sides decode what they read. Rates",
        "are the median block; the range is the slowest and fastest block.",
        "",
        "| backend | append plain /s | append encrypted /s | encrypted % of plain "
        "| read plain msg/s | read encrypted msg/s | encrypted % of plain |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        if row.error:
            lines.append(f"| {row.backend} | failed: {row.error[:100]} | | | | | |")
            continue
        ap, ae = _median(row.append["plain"]), _median(row.append["sealed"])
        rp, re_ = _median(row.read["plain"]), _median(row.read["sealed"])
        lines.append(
            f"| {row.backend} | {ap:,.0f} ({_spread(row.append['plain'])}) "
            f"| {ae:,.0f} ({_spread(row.append['sealed'])}) | {100 * ae / ap:.0f}% "
            f"| {rp:,.0f} ({_spread(row.read['plain'])}) "
            f"| {re_:,.0f} ({_spread(row.read['sealed'])}) | {100 * re_ / rp:.0f}% |"
        )
    lines += [
        "",
        f"Without a store, sealing one user message body takes {seal_us:.1f} µs and opening it "
        f"{open_us:.1f} µs (AES-256-GCM via `cryptography`, JSON and base64 included).",
        "",
        "The machine is shared (2 cores, other jobs running): compare the two columns of a row,",
        "which ran interleaved in the same minutes, rather than rates across reports.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and write the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("BENCHMARKS-crypto.md"))
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument("--backends", default=",".join(SCRATCH), help="comma-separated")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    started = time.perf_counter()
    rows = []
    for backend in args.backends.split(","):
        print(f"[bench-crypto] {backend}", file=sys.stderr)
        rows.append(measure(backend, plan))
    command = os.environ.get("SESSIONARY_BENCH_COMMAND", "python bench/crypto.py")
    args.out.write_text(report(rows, plan, time.perf_counter() - started, command))
    print(f"[bench-crypto] wrote {args.out}", file=sys.stderr)
    return 1 if any(row.error for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
