"""Where a compaction starts and ends on a branch (pure functions, no I/O).

The planner gets the *visible* history of a branch (earlier overlays already applied, so a
previous summary appears as one synthetic message) and returns the range to summarize:

- the first `protect_head` messages are kept as they are;
- the tail is the longest suffix that fits `tail_tokens` (and holds at most `max_tail`
  messages, when given), but never fewer than `min_tail` messages (the message count wins
  over the budgets when they cannot all hold);
- neither boundary separates a tool call from its result: a cut is only placed where no
  call sits before it with its result after it;
- a pending call is never compacted: an unanswered call after which no assistant message
  follows is still waiting for its result, so the range ends before it. An unanswered call
  that the conversation has moved past (a later assistant message exists) is abandoned and
  may be compacted; otherwise a single stray call would block compaction forever;
- a previous summary inside the range is handed to the summarizer as the summary to update,
  never as conversation, and the new overlay widens to cover the old one's whole range.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sessionary.errors import InvalidInput, InvalidMessage
from sessionary.model import Message
from sessionary.tokens import TokenCounter, default_counter

__all__ = [
    "COMPACTION_PREFIX",
    "EVICTED_KEY",
    "SUMMARY_KEY",
    "CompactionPlan",
    "check_not_synthetic",
    "drop_synthetic",
    "is_synthetic",
    "pending_calls",
    "plan_compaction",
    "safe_cuts",
    "summary_budget",
]

COMPACTION_PREFIX = "compaction_"
"""Message ids with this prefix are synthetic summaries; append refuses them."""

SUMMARY_KEY = "sessionary.compaction"
"""Metadata key marking a synthetic summary message; append refuses it too."""

EVICTED_KEY = "evicted"
"""Key in a previewed tool result's `extra` holding where the whole output is."""


def is_synthetic(message: Message) -> bool:
    """Whether `message` is a summary made by compaction (not conversation)."""
    return message.id.startswith(COMPACTION_PREFIX) or SUMMARY_KEY in message.metadata


def check_not_synthetic(message: Message) -> Message:
    """Return `message` unless it is a synthetic summary a client echoed back.

    Raises:
        InvalidMessage: If the id starts with ``compaction_`` or the metadata holds the
            summary marker: summaries live in overlays, never as stored messages.
    """
    if message.id.startswith(COMPACTION_PREFIX):
        raise InvalidMessage(
            f"message id {message.id!r}: ids starting with {COMPACTION_PREFIX!r} are reserved "
            "for compaction summaries, which are never stored as messages (drop it before "
            "appending, e.g. with sessionary.compaction.drop_synthetic)"
        )
    if SUMMARY_KEY in message.metadata:
        raise InvalidMessage(
            f"metadata.{SUMMARY_KEY}: marks a compaction summary, which is never stored as "
            "a message"
        )
    return message


def drop_synthetic(messages: Sequence[Message]) -> list[Message]:
    """Return `messages` without synthetic summaries (for clients that echo them back)."""
    return [m for m in messages if not is_synthetic(m)]


def summary_info(message: Message) -> Mapping[str, Any]:
    """Return the overlay record a synthetic summary carries in its metadata ({} if none)."""
    info = message.metadata.get(SUMMARY_KEY)
    return info if isinstance(info, Mapping) else {}


def summary_budget(
    tokens: int, *, ratio: float = 0.2, floor: int = 200, ceiling: int = 4000
) -> int:
    """Return the tokens a summary of `tokens` compacted tokens may use.

    The budget scales with what is compacted (`ratio`), never below `floor` (a summary
    needs room for its sections) nor above `ceiling` (summaries must not bloat).
    """
    if tokens < 0 or not 0 < ratio <= 1 or floor < 1 or ceiling < floor:
        raise InvalidInput(
            "summary_budget needs tokens >= 0, 0 < ratio <= 1, 1 <= floor <= ceiling"
        )
    return max(floor, min(ceiling, int(tokens * ratio)))


def pending_calls(path: Sequence[Message]) -> dict[str, int]:
    """Return the pending calls of `path`: call id -> index of the message that made it.

    A call is pending when no result answers it in `path` and no assistant message
    follows the message that made it.
    """
    answered = {r.call_id for m in path for r in m.tool_results}
    last_assistant = max((i for i, m in enumerate(path) if m.role == "assistant"), default=-1)
    pending: dict[str, int] = {}
    for index, message in enumerate(path):
        if index < last_assistant:
            continue
        for call in message.tool_calls:
            if call.id not in answered:
                pending[call.id] = index
    return pending


def safe_cuts(path: Sequence[Message]) -> list[bool]:
    """Return, for every cut `c` in 0..len(path), whether `path[:c] | path[c:]` is safe.

    A cut is safe when no tool call sits before it with a result after it, and no pending
    call sits before it.
    """
    size = len(path)
    # crossing[c] counts pairs (call at i, result at j) with i < c <= j.
    delta = [0] * (size + 2)
    called: dict[str, int] = {}
    for index, message in enumerate(path):
        for call in message.tool_calls:
            called.setdefault(call.id, index)
        for result in message.tool_results:
            start = called.get(result.call_id)
            if start is not None and start < index:
                delta[start + 1] += 1
                delta[index + 1] -= 1
    limit = min(pending_calls(path).values(), default=size)
    cuts: list[bool] = []
    crossing = 0
    for cut in range(size + 1):
        crossing += delta[cut]
        cuts.append(crossing == 0 and cut <= limit)
    return cuts


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """What to compact on a branch's visible history.

    `start` and `end` index the visible history (`end` exclusive). `messages` are the real
    messages of the range, to summarize; `previous` is the synthetic summary inside the
    range (usually one), whose text the new summary updates. `first_id` and `last_id` name the
    stored range the new overlay covers (widened to the previous overlay's first message).
    """

    start: int
    end: int
    messages: tuple[Message, ...]
    previous: tuple[Message, ...]
    first_id: str
    last_id: str
    tokens_before: int
    tokens_compacted: int
    tokens_kept: int


def _head_end(cuts: Sequence[bool], protect_head: int, path: Sequence[Message]) -> int:
    start = min(protect_head, len(path))
    while start < len(path) and not cuts[start]:
        start += 1
    synthetic = [i for i, m in enumerate(path) if is_synthetic(m)]
    # A summary is never protected as head: it widens the range instead.
    return min([start, *synthetic])


def _tail_start(
    cuts: Sequence[bool],
    sizes: Sequence[int],
    start: int,
    tail_tokens: int,
    min_tail: int,
    max_tail: int | None,
) -> int:
    size = len(sizes)
    suffix = [0] * (size + 1)
    for index in range(size - 1, -1, -1):
        suffix[index] = suffix[index + 1] + sizes[index]
    candidates = [c for c in range(start + 1, size - min_tail + 1) if cuts[c]]
    most = size if max_tail is None else max_tail
    fitting = [c for c in candidates if suffix[c] <= tail_tokens and size - c <= most]
    if fitting:
        return fitting[0]  # the longest tail within the budget
    return candidates[-1] if candidates else start  # the shortest tail with min_tail messages


def _stored_id(message: Message, end: str) -> str:
    """Return the stored message id at this end of `message` (a summary: of its range)."""
    if is_synthetic(message):
        stored = summary_info(message).get(end)
        if isinstance(stored, str) and stored:
            return stored
    return message.id


def _check_settings(
    protect_head: int, tail_tokens: int, min_tail: int, max_tail: int | None
) -> None:
    for name, value in (("protect_head", protect_head), ("tail_tokens", tail_tokens)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InvalidInput(f"{name} must be a non-negative integer")
    if not isinstance(min_tail, int) or isinstance(min_tail, bool) or min_tail < 1:
        raise InvalidInput("min_tail must be a positive integer")
    if max_tail is not None and (
        not isinstance(max_tail, int) or isinstance(max_tail, bool) or max_tail < 1
    ):
        raise InvalidInput("max_tail must be a positive integer or None")


def plan_compaction(
    path: Sequence[Message],
    *,
    protect_head: int = 3,
    tail_tokens: int = 20_000,
    min_tail: int = 2,
    counter: TokenCounter | None = None,
    max_tail: int | None = None,
) -> CompactionPlan | None:
    """Return what to compact on a visible history, or None when nothing can be.

    Args:
        path: The branch's visible history, oldest first (overlays applied).
        protect_head: How many first messages are never compacted.
        tail_tokens: The token budget of the kept tail.
        min_tail: The fewest messages the tail keeps, whatever the budgets.
        counter: Counts each message's tokens (default: the heuristic).
        max_tail: The most messages the kept tail holds (None: no bound).

    Raises:
        InvalidInput: If a setting is out of range.
    """
    _check_settings(protect_head, tail_tokens, min_tail, max_tail)
    counter = counter if counter is not None else default_counter()
    sizes = [counter.count_message(m) for m in path]
    cuts = safe_cuts(path)
    start = _head_end(cuts, protect_head, path)
    end = _tail_start(cuts, sizes, start, tail_tokens, min_tail, max_tail)
    if end <= start:
        return None
    chosen = path[start:end]
    real = tuple(m for m in chosen if not is_synthetic(m))
    if not real:
        return None
    return CompactionPlan(
        start=start,
        end=end,
        messages=real,
        previous=tuple(m for m in chosen if is_synthetic(m)),
        first_id=_stored_id(chosen[0], "first_id"),
        last_id=_stored_id(chosen[-1], "last_id"),
        tokens_before=sum(sizes),
        tokens_compacted=sum(sizes[start:end]),
        tokens_kept=sum(sizes) - sum(sizes[start:end]),
    )
