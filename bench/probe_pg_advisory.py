"""Would an advisory lock queue 8 writers on one PostgreSQL session more cheaply than its row?

    python bench/probe_pg_advisory.py [seconds per block] [rounds]

Two scratch schemas, each with one session that 8 threads (each with its own sync
`SessionManager`, as the server benchmark's writers have) append to for `seconds`
(default 3), alternating between the schemas for `rounds` rounds (default 4). Schema A
keeps the store's `sessionary_append` procedure (the early-unlock append, see
`stores.postgres`), whose writers queue on the session's row (`SELECT ... FOR UPDATE`);
schema B's copy first finds the session unlocked, then queues on
`pg_advisory_xact_lock(pk)`, and only then locks the row, which is free by then. Prints
each block's rate and the client's CPU per append, the median rate per schema, and per
schema the messages stored and that they form one chain. Measured 2026-11-28: A 5,111/s,
B 5,066/s (no gain; not adopted). The schemas are dropped at the end.

Server: `$SESSIONARY_TEST_POSTGRES` (default `postgresql://postgres@127.0.0.1:5432/test`).
"""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time
import uuid

import psycopg

import sessionary
from sessionary import Message
from sessionary.stores._postgres_sql import _UNLOCKED, _V6

SERVER = os.environ.get("SESSIONARY_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
WRITERS = 8
_LOCKING = f"""    SELECT pk, head_id, head_depth INTO o_pk, o_parent, o_depth FROM sessions
    WHERE tenant = p_tenant AND user_id = p_user AND id = p_id AND ttl_us IS NULL
        AND {_UNLOCKED} IS NOT NULL
    FOR UPDATE;"""
"""The store's procedure's locking read, which the variant replaces."""
_QUEUED = f"""    SELECT pk INTO o_pk FROM sessions
    WHERE tenant = p_tenant AND user_id = p_user AND id = p_id AND ttl_us IS NULL
        AND {_UNLOCKED} IS NOT NULL;
    IF FOUND THEN
        PERFORM pg_advisory_xact_lock(o_pk);
        SELECT head_id, head_depth INTO o_parent, o_depth FROM sessions
        WHERE pk = o_pk AND ttl_us IS NULL FOR UPDATE;
    END IF;"""
"""The variant's: find the session, queue on an advisory lock, then lock its row."""


def _advisory() -> str:
    """The store's `sessionary_append` (migration 6), its locking read replaced."""
    (procedure,) = [sql for sql in _V6 if sql.startswith("CREATE PROCEDURE sessionary_append(")]
    if _LOCKING not in procedure:
        raise SystemExit("the store's procedure changed: this probe's variant needs updating")
    return procedure.replace(_LOCKING, _QUEUED).replace("CREATE ", "CREATE OR REPLACE ", 1)


def _schema(variant: str) -> tuple[str, str]:
    """A scratch schema with one session, for `variant` A (as is) or B (advisory lock)."""
    schema = f"bench_adv_{variant.lower()}_{uuid.uuid4().hex[:8]}"
    url = f"{SERVER}?schema={schema}"
    with sessionary.SessionManager(url) as manager:
        manager.create(id="s").append(Message.user("first"))
    if variant == "B":
        with psycopg.connect(SERVER, autocommit=True) as admin:
            admin.execute(f'SET search_path = "{schema}"')
            admin.execute(_advisory())
    return schema, url


def _block(url: str, seconds: float) -> tuple[float, float]:
    """8 writers on the session for `seconds`: the rate, and the client's CPU per append."""
    managers = [sessionary.SessionManager(url) for _ in range(WRITERS)]
    sessions = [manager.session("s") for manager in managers]
    for session in sessions:  # each store's start, outside the timed block
        session.append(Message.user("warm-up"))
    counts = [0] * WRITERS
    stop = time.monotonic() + seconds

    def write(n: int) -> None:
        while time.monotonic() < stop:
            sessions[n].append(Message.user("hello there, a message of some words"))
            counts[n] += 1

    started, cpu = time.monotonic(), time.process_time()
    threads = [threading.Thread(target=write, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed, cpu = time.monotonic() - started, time.process_time() - cpu
    for manager in managers:
        manager.close()
    return sum(counts) / elapsed, cpu / sum(counts) * 1e6


def main(seconds: float, rounds: int) -> None:
    cells = {variant: _schema(variant) for variant in "AB"}
    rates: dict[str, list[float]] = {variant: [] for variant in "AB"}
    try:
        for n in range(rounds):
            for variant in "AB" if n % 2 == 0 else "BA":
                rate, cpu = _block(cells[variant][1], seconds)
                rates[variant].append(rate)
                print(f"round {n} {variant}: {rate:,.0f}/s, client {cpu:.0f} us per append")
        with psycopg.connect(SERVER, autocommit=True) as admin:
            for variant in "AB":
                admin.execute(f'SET search_path = "{cells[variant][0]}"')
                stored, parents = admin.execute(
                    "SELECT count(*), count(DISTINCT parent_id) FROM messages"
                ).fetchone() or (0, 0)
                chain = "one chain" if parents == stored - 1 else "NOT one chain"
                median = statistics.median(rates[variant])
                print(f"{variant}: median {median:,.0f}/s; {stored:,} messages, {chain}")
    finally:
        with psycopg.connect(SERVER, autocommit=True) as admin:
            for schema, _ in cells.values():
                admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


if __name__ == "__main__":
    main(
        float(sys.argv[1]) if len(sys.argv) > 1 else 3.0,
        int(sys.argv[2]) if len(sys.argv) > 2 else 4,
    )
