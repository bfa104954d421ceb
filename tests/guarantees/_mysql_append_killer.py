"""A child for `test_mysql_append_atomicity`: `python _mysql_append_killer.py URL SESSION N SEED`.

For each of N trials it forks a client that opens its own manager on URL, appends 0 to
2 single messages (ids `t{trial}-{n}`, each printed once its call returned, i.e.
acknowledged), prints `unit t{trial} SIZE`, appends that unit with `append_all` (ids
`t{trial}-u{k}`, 1 or 3 messages) and dies by SIGKILL a random 0-2 ms after the
append's script has left it. The server then runs the script with its client gone: the
moment that once committed a head move without its messages. A client's first append
takes the locking script (`append_sql`), a later one the script after the head it saw
(`append_after_sql`), so the trials cover both; on MariaDB a unit of 1 message is the
CALL of the script's stored procedure, one of 3 the script itself.

A kill timed by the parent hits that moment about once in a hundred kills; a kill timed
from the send hits it whenever the delay is shorter than the script, so a few dozen
trials (a fork each, no interpreter start-up) test it in seconds.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import time
import traceback
from typing import Any

import pymysql

import sessionary
from sessionary import Message

_send = pymysql.connections.Connection._execute_command
_SCRIPTS = ("SET @sx_pk", "START TRANSACTION", "BEGIN NOT ATOMIC", "CALL sessionary_append")
"""How an append script begins (on MariaDB, as one compound statement: `_one_statement`, or
for one message as the CALL of its stored procedure: `routine_call`)."""
_delay: float | None = None
"""Seconds from sending an append script to the kill; None while no kill is armed."""


def _send_then_die(self: Any, command: int, sql: str | bytes) -> None:
    """Send a command as PyMySQL does; after an armed append script, die by SIGKILL."""
    _send(self, command, sql)
    text = sql.decode("utf-8", "replace") if isinstance(sql, bytes) else sql
    if _delay is not None and text.startswith(_SCRIPTS):
        deadline = time.perf_counter() + _delay
        while time.perf_counter() < deadline:  # spin: a sleep would round up to ~50 us
            pass
        os.kill(os.getpid(), signal.SIGKILL)


def client(url: str, session_id: str, trial: int, rng: random.Random) -> None:
    """Append a few acknowledged messages, then one unit that the kill interrupts."""
    global _delay
    with sessionary.SessionManager(url) as manager:
        session = manager.session(session_id)
        for n in range(rng.randrange(3)):
            msg_id = f"t{trial}-{n}"
            session.append(Message.user(f"acked {msg_id}", id=msg_id))
            print(msg_id, flush=True)
        size = rng.choice([1, 3])
        print(f"unit t{trial} {size}", flush=True)
        _delay = rng.uniform(0, 0.002)
        session.append_all(
            Message.user(f"unit t{trial} {k}", id=f"t{trial}-u{k}") for k in range(size)
        )
    raise AssertionError("the append returned: the kill was never armed")


def main() -> None:
    url, session_id, trials, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    pymysql.connections.Connection._execute_command = _send_then_die
    rng = random.Random(seed)
    for trial in range(trials):
        own = random.Random(rng.random())
        pid = os.fork()
        if pid == 0:
            try:
                client(url, session_id, trial, own)
            except BaseException:
                traceback.print_exc()
                sys.stderr.flush()
            os._exit(1)
        _, status = os.waitpid(pid, 0)
        if not os.WIFSIGNALED(status) or os.WTERMSIG(status) != signal.SIGKILL:
            raise SystemExit(f"trial {trial}: the client ended with status {status}, not SIGKILL")


if __name__ == "__main__":
    main()
