"""A child process for the guarantee tests: `python _worker.py MODE URL SESSION [ARGS]`.

Modes (every one opens its own manager on URL and works on session SESSION):

- `append W M`: print `ready`, wait for a `go` line, append M messages `w{W}-{i}` after
  the head (metadata {"worker": W, "i": i}), print `done`.
- `batches W B SIZE`: likewise, B `append_all` batches of SIZE messages with ids
  `w{W}-b{b}-{k}` (metadata {"worker": W, "batch": b, "k": k}).
- `retry W M`: likewise, with ids `w{W}-{i}`; every message is sent twice, and the one
  before it is re-sent late, as a client retrying after a timeout would.
- `serve`: answer JSON commands, one a line, until stdin closes (see `serve`).
- `launcher - -`: fork crash-trial writers and kill them, on request (see
  `_reliability.launcher`); it opens no store itself.
"""

from __future__ import annotations

import json
import random
import sys
import time
from typing import Any

from _reliability import launcher

import sessionary
from sessionary import Message


def _wait_for_go() -> None:
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        raise SystemExit("expected go")


def _pause() -> None:
    """Think for up to 2 ms between writes, as an agent does, so that writers interleave.

    Without it, SQLite's busy handler lets one writer re-take the lock many times in a
    row while the others sleep, and the writers barely interleave.
    """
    time.sleep(random.random() * 0.002)


def append(session: sessionary.Session, worker: int, count: int) -> None:
    _wait_for_go()
    for i in range(count):
        session.append(Message.user(f"w{worker}-{i}", metadata={"worker": worker, "i": i}))
        _pause()
    print("done", flush=True)


def batches(session: sessionary.Session, worker: int, count: int, size: int) -> None:
    _wait_for_go()
    for b in range(count):
        session.append_all(
            Message.user(
                f"w{worker}-b{b}-{k}",
                id=f"w{worker}-b{b}-{k}",
                metadata={"worker": worker, "batch": b, "k": k},
            )
            for k in range(size)
        )
        _pause()
    print("done", flush=True)


def retry(session: sessionary.Session, worker: int, count: int) -> None:
    _wait_for_go()
    sent: list[Message] = []
    for i in range(count):
        message = Message.user(
            f"w{worker}-{i}", id=f"w{worker}-{i}", metadata={"worker": worker, "i": i}
        )
        first = session.append(message)
        if sent:  # a late retry of the previous message must not move the head back
            again = session.append(sent[-1])
            assert again.id == sent[-1].id, again
        second = session.append(message)
        assert first.id == second.id == message.id, (first, second)
        assert second.text == message.text, second
        sent.append(message)
        _pause()
    print("done", flush=True)


def serve(session: sessionary.Session) -> None:
    """Answer commands: each a JSON object with `op`, each reply one JSON line.

    - `{"op": "append", "id", "text", "expected_head"}` -> `{"ok": true}` or `{"error": name}`
    - `{"op": "update_state", "patch", "expected_version"}` -> `{"ok": true, "version"}` or
      `{"error": name}`
    """
    print("ready", flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        reply: dict[str, Any]
        try:
            if command["op"] == "append":
                session.append(
                    Message.user(command["text"], id=command["id"]),
                    expected_head=command["expected_head"],
                )
                reply = {"ok": True}
            elif command["op"] == "update_state":
                state = session.update_state(
                    command["patch"], expected_version=command["expected_version"]
                )
                reply = {"ok": True, "version": state.version}
            else:
                raise SystemExit(f"unknown op {command['op']!r}")
        except sessionary.Conflict as exc:
            reply = {"error": type(exc).__name__}
        print(json.dumps(reply), flush=True)


def main() -> None:
    mode, url, session_id, *args = sys.argv[1:]
    if mode == "launcher":
        launcher()
        return
    with sessionary.SessionManager(url) as manager:
        session = manager.session(session_id)
        if mode == "append":
            append(session, int(args[0]), int(args[1]))
        elif mode == "batches":
            batches(session, int(args[0]), int(args[1]), int(args[2]))
        elif mode == "retry":
            retry(session, int(args[0]), int(args[1]))
        elif mode == "serve":
            serve(session)
        else:
            raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main()
