"""Save an agent's state when its process is told to stop.

`save_on_exit` (synchronous agents) saves at interpreter exit and on SIGTERM;
`save_on_sigterm` (asyncio agents) saves on SIGTERM from inside the running loop, since
a coroutine cannot run once the interpreter is exiting. Both then let the signal end
the process as it would have without them: the default action, exit status 143.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType

from sessionary._sync.keeper import AgentStateKeeper
from sessionary.agent_state import AgentState
from sessionary.keeper import AsyncAgentStateKeeper

__all__ = ["save_on_exit", "save_on_sigterm"]

_log = logging.getLogger("sessionary")
Current = Callable[[], AgentState | None]


def _die_by_sigterm() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def save_on_exit(keeper: AgentStateKeeper, current: Current) -> Callable[[], None]:
    """Save `current()` through `keeper` at interpreter exit and on SIGTERM.

    On SIGTERM the main thread is interrupted by `SystemExit` (as Ctrl-C interrupts it
    by `KeyboardInterrupt`), so that a store call under way there unwinds and gives back
    its locks; the state is saved as the interpreter exits, and the process then ends
    by SIGTERM. (Saving from inside the signal handler waited forever for a lock the
    interrupted call held.) A second SIGTERM, or one during the save, ends it at once.
    A failed save is logged, never raised: the process is ending either way. The SIGTERM
    handler can only be installed from the main thread; elsewhere only the exit hook is.

    Args:
        keeper: The synchronous keeper of the agent's state.
        current: Returns the state to save, or None for nothing.

    Returns:
        A function that removes both hooks again.
    """
    done = threading.Event()
    terminated = threading.Event()

    def save() -> None:
        if not done.is_set():
            done.set()
            try:
                keeper.save_latest(current)
            except Exception:
                _log.exception("sessionary: could not save the agent state at exit")
        if terminated.is_set():
            _die_by_sigterm()

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        if done.is_set() or terminated.is_set():
            _die_by_sigterm()
        terminated.set()
        raise SystemExit(128 + signal.SIGTERM)

    atexit.register(save)
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, on_sigterm)

    def remove() -> None:
        atexit.unregister(save)
        if previous is not None and signal.getsignal(signal.SIGTERM) is on_sigterm:
            signal.signal(signal.SIGTERM, previous)

    return remove


def save_on_sigterm(
    keeper: AsyncAgentStateKeeper,
    current: Current,
    loop: asyncio.AbstractEventLoop | None = None,
) -> Callable[[], None]:
    """Save `current()` through `keeper` when the running loop's process gets SIGTERM.

    Call it from inside the loop (or pass `loop`). Unix only, like
    `loop.add_signal_handler`.

    Returns:
        A function that removes the handler again.
    """
    target = loop or asyncio.get_running_loop()
    tasks: set[asyncio.Task[None]] = set()

    async def save_then_die() -> None:
        try:
            await keeper.save_latest(current)
        except Exception:
            _log.exception("sessionary: could not save the agent state on SIGTERM")
        _die_by_sigterm()

    def on_sigterm() -> None:
        tasks.add(target.create_task(save_then_die()))

    target.add_signal_handler(signal.SIGTERM, on_sigterm)

    def remove() -> None:
        if not target.is_closed():
            target.remove_signal_handler(signal.SIGTERM)

    return remove
