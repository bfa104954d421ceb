# This file was generated from src/sessionary/compaction/recovery.py by tools/async_to_sync.py.
# Do not edit it: edit the source and run `python tools/async_to_sync.py`.
"""Overflow recovery: call a model, and on a context-length error compact and retry once.

`call` gets the session's context messages (overlays applied, large results previewed)
and returns whatever the caller wants (usually the model's reply). When it raises an error
that `is_context_overflow` recognises, the session is compacted hard (no protected head,
a tail of at most a quarter of the current estimate) and `call` runs once more with the
smaller context. Any other error, a second overflow, or nothing left to compact is raised
as it is.

The async function is the source; the sync one is generated.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from sessionary._sync.session import Session
from sessionary.compaction.overflow import is_context_overflow
from sessionary.model import Message

__all__ = ["ModelCall", "call_with_recovery"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class ModelCall(Protocol[T_co]):
    """Sends context messages to a model and returns its result."""

    def __call__(self, messages: list[Message], /) -> T_co:
        """Return the model's result for `messages`."""
        ...


def call_with_recovery(
    session: Session,
    call: ModelCall[T],
    *,
    leaf: str | None = None,
) -> T:
    """Return `call(context)`, compacting and retrying once if the context overflowed.

    Args:
        session: The session whose context is sent.
        call: Sends the messages to a model and returns its result.
        leaf: The branch to use (default: the head).

    Raises:
        Exception: Whatever `call` raises, when it is not an overflow or the retry fails.
    """
    try:
        return call(session.context_history(leaf))
    except Exception as exc:
        if not is_context_overflow(exc):
            raise
        estimate = session.estimate_tokens(leaf)
        overlay = session.compact(leaf, protect_head=0, tail_tokens=estimate // 4)
        if overlay is None:
            raise
    return call(session.context_history(leaf))
