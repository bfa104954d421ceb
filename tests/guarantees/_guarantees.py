"""Helpers shared by the guarantee tests: child processes and chain checks.

Not a test module: pytest imports it from the test files next to it.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from sessionary import Message

WORKER = Path(__file__).with_name("_worker.py")
"""The script child processes run (`python _worker.py MODE URL SESSION ...`)."""

LINE_TIMEOUT = 120.0
"""How long to wait for one line from a child: generous, for a loaded machine."""


def worker_command(*args: object) -> list[str]:
    """Return the command line that runs the worker script with `args`."""
    return [sys.executable, str(WORKER), *(str(a) for a in args)]


class Child:
    """A worker process talked to by lines: commands on stdin, replies on stdout."""

    def __init__(self, cwd: Path, *args: object) -> None:
        self._stderr: IO[str] = open(  # noqa: SIM115 - closed in close()
            cwd / f"stderr-{id(self)}.txt", "w+", encoding="utf-8"
        )
        self.proc = subprocess.Popen(
            worker_command(*args),
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            encoding="utf-8",
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._pump = threading.Thread(target=self._read, daemon=True)
        self._pump.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def stderr(self) -> str:
        """Return what the child wrote to stderr so far."""
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read()

    def expect(self, timeout: float = LINE_TIMEOUT) -> str:
        """Return the child's next line; fail if it exits or stays silent too long."""
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(
                f"child silent for {timeout} s; stderr:\n{self.stderr()}"
            ) from None
        if line is None:
            self.proc.wait(LINE_TIMEOUT)
            raise AssertionError(
                f"child exited ({self.proc.returncode}) early; stderr:\n{self.stderr()}"
            )
        return line

    def send(self, line: str) -> None:
        """Write one line to the child's stdin."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def call(self, **command: Any) -> dict[str, Any]:
        """Send a JSON command (serve mode) and return its JSON reply."""
        self.send(json.dumps(command))
        reply: dict[str, Any] = json.loads(self.expect())
        return reply

    def finish(self, timeout: float = LINE_TIMEOUT) -> None:
        """Close stdin, wait for a clean exit, and fail on a non-zero exit code."""
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()
        code = self.proc.wait(timeout)
        assert code == 0, f"child exited with {code}; stderr:\n{self.stderr()}"

    def close(self) -> None:
        """Kill the child if it still runs, and release its pipes and files."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(LINE_TIMEOUT)
        self._pump.join(LINE_TIMEOUT)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(BrokenPipeError, OSError):
                    stream.close()
        self._stderr.close()


@contextlib.contextmanager
def children(cwd: Path, commands: Iterable[Sequence[object]]) -> Any:
    """Start one child per command; every one is killed and reaped on the way out."""
    started: list[Child] = []
    try:
        for command in commands:
            started.append(Child(cwd, *command))
        yield started
    finally:
        for child in started:
            child.close()


def start_together(workers: Sequence[Child]) -> None:
    """Wait until every worker is ready (store open), then release them all at once."""
    for worker in workers:
        assert worker.expect() == "ready"
    for worker in workers:
        worker.send("go")


# ---------------------------------------------------------------- invariant checks


def check_chain(path: Sequence[Message], message_count: int, expected: int) -> None:
    """Assert that `path` (root to head) is one chain holding every one of `expected` messages.

    One chain: each message's parent is the one before it. With the session's message
    count equal to the path's length, no message was lost and none forked off the path.
    """
    assert message_count == expected, f"message_count {message_count} != {expected}"
    assert len(path) == expected, f"the path holds {len(path)} messages, not {expected}"
    ids = [m.id for m in path]
    assert len(set(ids)) == len(ids), "duplicate ids on the path"
    if path:
        assert path[0].parent_id is None, "the path does not start at a root"
    for before, after in itertools.pairwise(path):
        assert after.parent_id == before.id, f"{after.id} does not answer {before.id}"


def writer_sequences(path: Iterable[Message], writer: str, key: str) -> dict[Any, list[Any]]:
    """Return, per writer (metadata[writer]), its metadata[key] values in path order."""
    sequences: dict[Any, list[Any]] = defaultdict(list)
    for message in path:
        sequences[message.metadata[writer]].append(message.metadata[key])
    return dict(sequences)


def check_batches(path: Sequence[Message], writers: int, batches: int, size: int) -> None:
    """Assert each (writer, batch) is `size` consecutive messages, in order, and all present.

    Metadata on each message: `worker`, `batch`, `k` (position within the batch).
    """
    positions: dict[tuple[int, int], list[int]] = defaultdict(list)
    for index, message in enumerate(path):
        meta = message.metadata
        positions[meta["worker"], meta["batch"]].append(index)
        assert meta["k"] == len(positions[meta["worker"], meta["batch"]]) - 1, (
            f"batch {meta['worker']}/{meta['batch']} out of order at {index}"
        )
    assert set(positions) == {(w, b) for w in range(writers) for b in range(batches)}
    for key, where in positions.items():
        assert where == list(range(where[0], where[0] + size)), f"batch {key} interleaved: {where}"
    for w in range(writers):
        starts = [positions[w, b][0] for b in range(batches)]
        assert starts == sorted(starts), f"writer {w}'s batches out of order"


def sqlite_file(url: str) -> str | None:
    """Return the file path of a `sqlite:///` URL, or None for any other store."""
    prefix = "sqlite:///"
    if not url.startswith(prefix):
        return None
    return url[len(prefix) :].partition("?")[0]


def wait_for_child(pid: int, hang: float) -> int:
    """The exit code of a forked child, which is killed if it runs over `hang` seconds."""
    deadline = time.monotonic() + hang
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    raise AssertionError("the forked child hung")
