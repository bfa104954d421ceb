"""How a SQLite connection crosses a fork: the child opens the file again.

SQLite forbids using a connection in a child process that inherited it: the locks the
parent holds on the file are not the child's, yet the child's copy of SQLite believes
it holds them, so a write in the child could land in a log the parent then deletes. So
an object holding a connection (`Carried`) carries into a forked child by a connection
of its own:

- Before a fork, the forking thread takes each object's lock, waiting up to `FORK_WAIT`
  seconds for a call in flight, so that no statement or transaction is open across it.
- In the parent, after the fork, it lets the locks go.
- In the child, each object closes its inherited connection, idle then (which drops the
  lock records SQLite keeps per process, as it must before the file is opened again in
  the same process), and opens the file anew. An in-memory database, which is the
  child's own copy, keeps its connection.

An object whose call was still running after `FORK_WAIT`, or whose file cannot be opened
in the child, raises `StoreUnavailable` there and leaves the parent's connection alone.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import weakref
from typing import Any

from sessionary.errors import SessionaryError, StoreUnavailable

__all__ = ["FORK_WAIT", "Carried"]

FORK_WAIT = 10.0
"""Seconds a fork waits for each open connection's call in flight (see the module)."""


class Carried:
    """A mixin for an object whose `_db` connection is used only under its `_lock`.

    Its subclass calls `_carry` once the connection is open, and says how to open it
    again (`_reconnect`) and what to reset when it is replaced (`_reconnected`).
    """

    path: str
    _db: sqlite3.Connection
    _lock: threading.RLock
    _held_for_fork: bool = False

    def _carry(self) -> None:
        """From now on, carry the connection into forked children."""
        _carried.add(self)

    def _uncarry(self) -> None:
        """The connection is closed: nothing to carry."""
        _carried.discard(self)

    def _reconnect(self) -> sqlite3.Connection:
        """A new connection to the same file, configured as the first one was."""
        raise NotImplementedError

    def _reconnected(self) -> None:
        """Called in the child once `_db` is replaced: reset what was built on the old one."""

    def _hold_for_fork(self) -> None:
        self._held_for_fork = self._lock.acquire(timeout=FORK_WAIT)

    def _let_go_after_fork(self) -> None:
        if self._held_for_fork:
            self._held_for_fork = False
            self._lock.release()

    def _reopen_after_fork(self) -> None:
        inherited, held = self._db, self._held_for_fork
        self._held_for_fork = False
        if held:
            self._lock.release()  # taken by this very thread before the fork
        else:  # held by a thread the child lacks
            self._lock = threading.RLock()
        if not held or inherited.in_transaction:
            # Busy in the parent: never used, closed or collected here.
            _inherited.append(inherited)
            self._db = _Lost(self.path)  # type: ignore[assignment]
        elif _in_memory(self.path):
            return  # the child's own copy of the database
        else:
            try:
                inherited.close()
                self._db = self._reconnect()
            except (sqlite3.Error, SessionaryError):
                self._db = _Lost(self.path)  # type: ignore[assignment]
        self._reconnected()


def _in_memory(path: str) -> bool:
    return path == ":memory:" or path.startswith("file::memory:") or "mode=memory" in path


class _Lost:
    """In a forked child, the connection of an object that could not be carried over."""

    in_transaction = False

    def __init__(self, path: str) -> None:
        self._path = path

    def __getattr__(self, name: str) -> Any:
        raise StoreUnavailable(
            f"{self._path}: opened in the parent process, which was using it when it "
            "forked (or the file could not be opened again here); open it again in this "
            "process"
        )

    def cursor(self) -> _Lost:
        return self

    def close(self) -> None:
        """Nothing to close: the parent's connection is never touched here."""


_carried: weakref.WeakSet[Carried] = weakref.WeakSet()
"""Every object whose connection is open."""

_inherited: list[object] = []
"""Connections a forked child inherited and must neither use nor close."""


def _before_fork() -> None:
    for each in list(_carried):
        each._hold_for_fork()


def _after_fork_in_parent() -> None:
    for each in list(_carried):
        each._let_go_after_fork()


def _after_fork_in_child() -> None:
    for each in list(_carried):
        each._reopen_after_fork()


os.register_at_fork(
    before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child
)
