"""One incremental manager shared by threads: an append cut in at any line loses nothing.

The manager remembers each session's meta entry and loose entries, and a thread reads
that memory while another replaces it. Here a writer thread is stopped at each line of
the manager's code in turn (a trace function, no timing) while the main thread makes one
whole append through the same manager; then more appends roll the loose entries up, and
every message must be in the history once, with counters that agree.
"""

from __future__ import annotations

import queue
import sys
import threading
from types import FrameType
from typing import Any

from sessionary import Message
from sessionary.kv import IncrementalSessionManager
from sessionary.kv._layout import Meta, SessionKeys

_MANAGER_CODE = "kv/incremental.py"


def _append_stopping_at(
    manager: IncrementalSessionManager, session: str, text: str, stop: int | None
) -> tuple[queue.Queue[str], threading.Thread]:
    """Start a thread appending `text`; it waits at line `stop` of the manager's code.

    The queue gets "stopped" (then the thread waits for a `go.put`) and "done".
    """
    events: queue.Queue[str] = queue.Queue()
    go: queue.Queue[None] = queue.Queue()
    lines = 0

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal lines
        if not frame.f_code.co_filename.endswith(_MANAGER_CODE):
            return None
        if event == "line":
            if lines == stop:
                events.put("stopped")
                go.get()
            lines += 1
        return trace

    def run() -> None:
        sys.settrace(trace)
        try:
            manager.append_message(session, Message.user(text, id=text))
        finally:
            sys.settrace(None)
            events.put(f"done {lines}")

    thread = threading.Thread(target=run)
    thread.start()
    thread.go = go  # type: ignore[attr-defined]
    return events, thread


def _lines_of_an_append(manager: IncrementalSessionManager) -> int:
    manager.append_message("count", Message.user("0", id="0"))
    events, thread = _append_stopping_at(manager, "count", "1", None)
    thread.join()
    return int(events.get().split()[1])


def test_an_append_cut_in_at_any_line_of_another_loses_nothing(driver: Any) -> None:
    manager = IncrementalSessionManager(driver, snapshot_frequency=2)
    for stop in range(_lines_of_an_append(manager)):
        session = f"s{stop}"
        manager.append_message(session, Message.user("0", id="0"))
        events, thread = _append_stopping_at(manager, session, "a", stop)
        event = events.get()
        if event == "stopped":
            manager.append_message(session, Message.user("b", id="b"))
            thread.go.put(None)  # type: ignore[attr-defined]
            event = events.get()
        thread.join()
        assert event.startswith("done")
        for text in "cde":
            manager.append_message(session, Message.user(text, id=text))
        ids = [m.id for m in manager.get_history(session)]
        assert ids in (list("0abcde"), list("0bacde")), f"stopped at line {stop}"
        keys = SessionKeys(session)
        meta = Meta.decode(driver.get(keys.meta))
        assert meta is not None and meta.count == 6
        assert meta.since_snapshot == len(driver.list_prefix(keys.loose)), f"line {stop}"
