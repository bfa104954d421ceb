"""Benchmark the HTTP API under concurrent clients beside the library called directly.

    python bench/http_api.py --out BENCHMARKS-http.md   # the full run (~1 minute)
    python bench/http_api.py --quick                    # smoke run, report to stdout

Per backend (SQLite file, and PostgreSQL when reachable), in one run:

- **HTTP API**: `sessionary.server.create_app` with API keys, served by one uvicorn worker
  in its own process; `--clients` concurrent httpx clients (one event loop) each pick a
  random session of `--sessions` and alternate an append (``POST .../messages``) with a
  read of the last 20 messages (``GET .../messages?limit=20``).
- **library**: the same workload, the same number of concurrent tasks, calling
  `AsyncSessionManager` in this process (``append`` and ``history(limit=20)``).

Requests (or calls) per second over the timed window, and p50/p99 latency per operation.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` importable from the repo root
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from bench import facts
from sessionary import AsyncSessionManager, Message
from sessionary.server.commands import create_key

POSTGRES_URL = os.environ.get(
    "SESSIONARY_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test"
)
TEXT = "The build fails on main because setup.py lacks libfoo; " * 3


@dataclass
class Cell:
    backend: str
    mode: str
    seconds: float = 0.0
    latencies: dict[str, list[float]] = field(default_factory=lambda: {"append": [], "read": []})
    errors: int = 0

    @property
    def rate(self) -> float:
        done = sum(len(v) for v in self.latencies.values())
        return done / self.seconds if self.seconds else 0.0


def _ms(samples: list[float], q: float) -> str:
    if not samples:
        return "-"
    ordered = sorted(samples)
    return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000:.1f}"


async def _drive(
    cell: Cell, clients: int, seconds: float, op: Callable[[str], Awaitable[None]], sids: list[str]
) -> None:
    stop = time.perf_counter() + seconds

    async def client(n: int) -> None:
        rng = random.Random(n)
        kind = "append"
        while time.perf_counter() < stop:
            sid = rng.choice(sids)
            began = time.perf_counter()
            try:
                await op(f"{kind}:{sid}")
            except Exception:
                cell.errors += 1
            else:
                cell.latencies[kind].append(time.perf_counter() - began)
            kind = "read" if kind == "append" else "append"

    began = time.perf_counter()
    await asyncio.gather(*(client(n) for n in range(clients)))
    cell.seconds = time.perf_counter() - began


async def _seed(url: str, sessions: int) -> list[str]:
    async with AsyncSessionManager(url, tenant="bench", user="u") as mgr:
        sids = []
        for n in range(sessions):
            chat = await mgr.create(id=f"s{n:04d}")
            await chat.append_all([Message.user(TEXT), Message.assistant(TEXT)])
            sids.append(chat.id)
        return sids


async def library(url: str, backend: str, clients: int, seconds: float, sids: list[str]) -> Cell:
    cell = Cell(backend, "library (AsyncSessionManager, in-process)")
    async with AsyncSessionManager(url, tenant="bench", user="u") as mgr:

        async def op(what: str) -> None:
            kind, sid = what.split(":", 1)
            if kind == "append":
                await mgr.session(sid).append(Message.user(TEXT))
            else:
                await mgr.session(sid).history(limit=20)

        await _drive(cell, clients, seconds, op, sids)
    return cell


def _start_server(url: str, port: int) -> subprocess.Popen[bytes]:
    code = (
        "import uvicorn, sys; from sessionary.server import create_app; "
        "uvicorn.run(create_app(sys.argv[1]), host='127.0.0.1', port=int(sys.argv[2]), "
        "log_level='warning', access_log=False)"
    )
    return subprocess.Popen([sys.executable, "-c", code, url, str(port)])


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _wait_up(client: httpx.AsyncClient) -> None:
    for _ in range(200):
        try:
            if (await client.get("/healthz")).status_code == 200:
                return
        except httpx.TransportError:
            await asyncio.sleep(0.05)
    raise RuntimeError("the server did not start")


async def http(url: str, backend: str, clients: int, seconds: float, sids: list[str]) -> Cell:
    cell = Cell(backend, "HTTP API (uvicorn, 1 worker, API key)")
    _, token = await asyncio.to_thread(create_key, url, "bench", "u", "bench")
    port = _free_port()
    server = _start_server(url, port)
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    try:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {token}"},
            limits=limits,
            timeout=60,
        ) as client:
            await _wait_up(client)
            body = {"messages": [{"role": "user", "content": TEXT}]}

            async def op(what: str) -> None:
                kind, sid = what.split(":", 1)
                if kind == "append":
                    r = await client.post(f"/v1/sessions/{sid}/messages", json=body)
                else:
                    r = await client.get(f"/v1/sessions/{sid}/messages", params={"limit": 20})
                r.raise_for_status()

            await _drive(cell, clients, seconds, op, sids)
    finally:
        server.terminate()
        server.wait(30)
    return cell


def _postgres() -> tuple[str, Callable[[], None]] | None:
    try:
        import psycopg

        psycopg.connect(POSTGRES_URL, connect_timeout=5).close()
    except Exception as exc:
        print(f"[http] PostgreSQL skipped: {exc}", file=sys.stderr)
        return None
    schema = f"bench_{uuid.uuid4().hex[:12]}"

    def drop() -> None:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')

    return f"{POSTGRES_URL}{'&' if '?' in POSTGRES_URL else '?'}schema={schema}", drop


async def run(args: argparse.Namespace, workdir: Path) -> list[Cell]:
    stores: list[tuple[str, str, Callable[[], None]]] = [
        ("SQLite", f"sqlite:///{workdir / 'http.db'}", lambda: None)
    ]
    pg = _postgres()
    if pg is not None:
        stores.append(("PostgreSQL", *pg))
    cells = []
    for name, url, cleanup in stores:
        try:
            sids = await _seed(url, args.sessions)
            for measure in (http, library):
                print(f"[http] {name}: {measure.__name__}", file=sys.stderr)
                cells.append(await measure(url, name, args.clients, args.seconds, sids))
        finally:
            cleanup()
    return cells


def render(cells: list[Cell], args: argparse.Namespace, fact_table: dict[str, str]) -> str:
    lines = [
        "# sessionary HTTP API benchmark",
        "",
        "Generated by `bench/http_api.py` from a single run; do not edit by hand, re-run instead.",
        "",
        "| | |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in fact_table.items()),
        "",
        f"{args.clients} concurrent clients, {args.sessions} sessions, {args.seconds:g} s per "
        "cell; each client alternates an append of one message and a read of the last 20. The "
        "server runs in its own process; client and server share the machine's cores.",
        "",
        "| backend | caller | operations/s | append p50 ms | append p99 ms "
        "| read p50 ms | read p99 ms | errors | HTTP's rate over the library's |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for cell in cells:
        lib = next(c for c in cells if c.backend == cell.backend and c.mode.startswith("library"))
        share = "—" if cell is lib else f"{100 * cell.rate / lib.rate:.0f}%" if lib.rate else "-"
        a, r = cell.latencies["append"], cell.latencies["read"]
        lines.append(
            f"| {cell.backend} | {cell.mode} | {cell.rate:,.0f} | {_ms(a, 0.5)} | {_ms(a, 0.99)} "
            f"| {_ms(r, 0.5)} | {_ms(r, 0.99)} | {cell.errors} | {share} |"
        )
    total = sum(len(v) for c in cells for v in c.latencies.values())
    lines += ["", f"{total:,} operations timed in all."]
    return "\n".join(lines) + "\n"


def _packages() -> str:
    from importlib import metadata

    names = ("sessionary", "fastapi", "starlette", "uvicorn", "httpx", "psycopg")
    return ", ".join(f"{name} {metadata.version(name)}" for name in names)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--out", type=Path, help="write the report here (default: stdout)")
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.sessions, args.clients = 1.0, 8, 4
    started, load_before = datetime.now(UTC), facts.load()
    workdir = Path(tempfile.mkdtemp(prefix="sessionary-http-bench-"))
    try:
        cells = asyncio.run(run(args, workdir))
        table = facts.collect("python bench/http_api.py", started, load_before, workdir)
        table["packages"] = _packages()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report = render(cells, args, table)
    if args.out:
        args.out.write_text(report)
    else:
        print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
