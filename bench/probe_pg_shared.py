"""Where 8 writers on one PostgreSQL session wait: append rate and server wait events.

    python bench/probe_pg_shared.py [seconds] [writers]

Eight threads (by default), each with its own sync `SessionManager` as the server
benchmark's writers have, append to one session in a scratch schema for `seconds`
(default 4), while another connection samples `pg_stat_activity` every 2 ms. Prints the
rate, how many appends took the early-unlock path (see `sessionary.stores.postgres`),
and the commonest wait events of the run's active backends (this process's only: its
connections carry the application name `probe_pg_shared`) by the statement they run
(`CALL`: the early-unlock append, its flush included; `WITH`: the locking append and
`SELECT`: a flush after a failed one). `Lock:*` under `CALL` is writers queued on the
session's row; `LWLock:WALWrite` and `IO:WALSync`, writers waiting for the WAL flush.

Server: `$SESSIONARY_TEST_POSTGRES` (default `postgresql://postgres@127.0.0.1:5432/test`).
"""

from __future__ import annotations

import collections
import os
import sys
import threading
import time
import uuid
from typing import Any

import psycopg

import sessionary
from sessionary import Message
from sessionary.stores import postgres

SERVER = os.environ.get("SESSIONARY_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
SAMPLE = (
    "SELECT coalesce(wait_event_type, 'CPU') || ':' || coalesce(wait_event, ''), "
    "split_part(ltrim(query), ' ', 1) FROM pg_stat_activity "
    "WHERE state = 'active' AND application_name = 'probe_pg_shared' "
    "AND pid <> pg_backend_pid()"
)


def _sample(stop: float, events: collections.Counter[tuple[str, str]]) -> None:
    """Count the active backends' wait events by statement until `stop`."""
    with psycopg.connect(SERVER, autocommit=True) as conn:
        while time.monotonic() < stop:
            for event, statement in conn.execute(SAMPLE):
                events[event, statement] += 1
            events["(samples taken)", ""] += 1
            time.sleep(0.002)


def main(seconds: float, writers: int) -> None:
    os.environ["PGAPPNAME"] = "probe_pg_shared"  # libpq names every connection so
    paths: collections.Counter[bool] = collections.Counter()
    run_alone = postgres.PostgresDriver.run_alone

    def counted(self: Any, sql: str, params: Any, unlock_early: bool = False) -> Any:
        paths[unlock_early] += 1
        return run_alone(self, sql, params, unlock_early)

    postgres.PostgresDriver.run_alone = counted  # type: ignore[method-assign]
    schema = f"probe_{uuid.uuid4().hex[:12]}"
    url = f"{SERVER}?schema={schema}"
    managers = [sessionary.SessionManager(url) for _ in range(writers)]
    managers[0].create(id="shared")
    stop = time.monotonic() + seconds
    done = [0] * writers
    events: collections.Counter[tuple[str, str]] = collections.Counter()

    def write(n: int) -> None:
        session = managers[n].session("shared")
        while time.monotonic() < stop:
            session.append(Message.user(f"writer {n} message {done[n]} " + "x" * 300))
            done[n] += 1

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    threads.append(threading.Thread(target=_sample, args=(stop, events)))
    start = time.monotonic()
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - start
    finally:
        for manager in managers:
            manager.close()
        with psycopg.connect(SERVER, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    print(f"{sum(done) / elapsed:,.0f} appends/s with {writers} writers on one session")
    print(f"early unlock: {paths[True]:,} statements, plain: {paths[False]:,}")
    rounds = events.pop(("(samples taken)", ""), 0)
    print(f"samples  wait event  statement  (of {rounds:,} samples of every backend)")
    for (event, statement), count in events.most_common(12):
        print(f"{count:7,}  {event}  {statement}")


if __name__ == "__main__":
    main(
        float(sys.argv[1]) if len(sys.argv) > 1 else 4.0,
        int(sys.argv[2]) if len(sys.argv) > 2 else 8,
    )
