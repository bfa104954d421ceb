"""History windows that never separate a tool call from its result (pure functions)."""

from __future__ import annotations

from collections.abc import Sequence

from sessionary.model import Message

__all__ = ["orphan_results", "pair_safe_start", "splits_tool_turn"]


def orphan_results(messages: Sequence[Message]) -> set[str]:
    """Return the call ids of tool results in `messages` whose call is not among them."""
    calls: set[str] = set()
    orphans: set[str] = set()
    for message in messages:
        if message.role == "user" or message.role == "system":
            continue  # neither role may carry calls or results: no need to look at parts
        for call in message.tool_calls:
            calls.add(call.id)
        for result in message.tool_results:
            if result.call_id not in calls:
                orphans.add(result.call_id)
    return orphans


def pair_safe_start(messages: Sequence[Message], start: int) -> int:
    """Move a window's `start` back until no result in `messages[start:]` lacks its call.

    Returns the new start; if a call is missing from `messages` altogether, the window
    grows no further than the start of `messages` (index 0).
    """
    start = max(0, min(start, len(messages)))
    wanted = orphan_results(messages[start:])
    while wanted and start > 0:
        start -= 1
        message = messages[start]
        wanted -= {call.id for call in message.tool_calls}
        wanted |= {r.call_id for r in message.tool_results} - {c.id for c in message.tool_calls}
    return start


def splits_tool_turn(path: Sequence[Message]) -> bool:
    """Whether `path` ends partway through a tool turn: some calls answered, others not.

    A path ending on the assistant message that made every unanswered call is a pending
    turn, not a split one.
    """
    answered = {r.call_id for m in path for r in m.tool_results}
    pending = {c.id for m in path for c in m.tool_calls} - answered
    if not pending:
        return False
    last = path[-1]
    return not pending <= {c.id for c in last.tool_calls}
