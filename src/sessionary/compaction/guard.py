"""When automatic compaction runs, and when it holds off (pure: no I/O).

Automatic compaction is considered after every append. It runs when the context is
**over budget** — its estimate is over `trigger_tokens`, or it holds at least
`trigger_messages` messages — and the guard does not hold. A compaction can only help if
it brings the context back under budget, so:

1. **Feasibility.** Before any summarizer call, the planned compaction is checked: if
   the context would still be over budget with an empty summary (the protected head, the
   kept tail, the system prompt, tools and reserve are too big on their own), or there is
   nothing to compact, it is not attempted.
2. **Progress.** After a compaction, the context is measured again. Under budget: done,
   and any guard is lifted. Still over budget (the summary itself was too big): no
   progress.
3. **The guard.** When a compaction was not attempted (1), made no progress (2) or failed
   (an exception, which also reaches the error hook), automatic compaction is *disarmed*:
   a small session document records the head and the measures at that moment (`Guard`).
   While it holds, appends compact nothing. It holds while the head it recorded is still
   on the branch and the context has neither shrunk below what it recorded nor grown by
   `rearm_growth` of a trigger since: tokens by ``ceil(rearm_growth * trigger_tokens)``,
   messages by ``ceil(rearm_growth * trigger_messages)``. Growing by that much re-arms it
   (one more attempt, which may disarm it again, warning no more); shrinking (a manual
   compaction, a checkout, a deletion) or moving to another branch lifts it.
4. **Warning once.** Entering the disarmed state for (1) or (2) reports one
   `CompactionStalled` warning through the policy's `on_error` hook (or the log), naming
   the numbers; re-disarming after a re-arm does not warn again until a compaction has
   succeeded or the guard was lifted.

So a session whose settings cannot fit its trigger calls the summarizer at most once per
`rearm_growth` of growth instead of at every append, and a healthy one is never held back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sessionary.compaction.planner import CompactionPlan
from sessionary.compaction.policy import CompactionPolicy

__all__ = [
    "GUARD_KEY",
    "GUARD_NAMESPACE",
    "Guard",
    "Measure",
    "cannot_text",
    "describe",
    "floor",
    "growth",
    "over_budget",
    "stalled_text",
]

GUARD_NAMESPACE = "compaction.guard"
GUARD_KEY = "auto"


@dataclass(frozen=True, slots=True)
class Measure:
    """How big a context is: its estimated tokens and how many messages it shows."""

    tokens: int
    messages: int


def over_budget(policy: CompactionPolicy, measure: Measure) -> bool:
    """Whether `measure` passes one of the policy's triggers."""
    tokens, messages = policy.trigger_tokens, policy.trigger_messages
    return (tokens is not None and measure.tokens > tokens) or (
        messages is not None and measure.messages >= messages
    )


def growth(policy: CompactionPolicy) -> Measure:
    """Return how much the context must grow to re-arm a guard (0 for an unset trigger)."""

    def share(trigger: int | None) -> int:
        return 0 if trigger is None else max(1, math.ceil(policy.rearm_growth * trigger))

    return Measure(share(policy.trigger_tokens), share(policy.trigger_messages))


def floor(plan: CompactionPlan, now: Measure, summary_tokens: int) -> Measure:
    """The least a compaction following `plan` can leave of `now`.

    `summary_tokens` is what the summary message costs with an empty summary.
    """
    tokens = now.tokens - plan.tokens_compacted + summary_tokens
    return Measure(tokens, now.messages - (plan.end - plan.start) + 1)


def describe(measure: Measure) -> str:
    """Return `measure` in words."""
    return f"{measure.tokens} tokens in {measure.messages} messages"


def cannot_text(least: Measure | None) -> str:
    """Say why a compaction is not attempted: nothing to compact, or `least` is too big."""
    if least is None:
        return "nothing can be compacted (the protected head and the kept tail are all there is)"
    return (
        f"even with an empty summary a compaction would leave {describe(least)} (the "
        "protected head, the kept tail and the prompt are too big on their own)"
    )


def stalled_text(policy: CompactionPolicy, session_id: str, now: Measure, reason: str) -> str:
    """Return the `CompactionStalled` warning's text: what happened and what to change."""
    step = growth(policy)
    again = " or ".join(
        text
        for text, wanted in (
            (f"{step.tokens} tokens", policy.trigger_tokens),
            (f"{step.messages} messages", policy.trigger_messages),
        )
        if wanted is not None
    )
    return (
        f"automatic compaction of session {session_id!r} cannot get under budget "
        f"({describe(now)} now): {reason}. It tries again once the context grows by "
        f"{again}. Lower tail_tokens, tail_messages, protect_head or reserve_tokens, "
        "raise the trigger, or shorten the system prompt"
    )


@dataclass(frozen=True, slots=True)
class Guard:
    """Automatic compaction held off at `head`, when the context measured `at`."""

    head: str | None
    at: Measure
    reason: str
    warned: bool = False

    def to_body(self) -> dict[str, Any]:
        """Return the guard as a document body."""
        return {
            "head": self.head,
            "tokens": self.at.tokens,
            "messages": self.at.messages,
            "reason": self.reason,
            "warned": self.warned,
        }

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Guard | None:
        """Return the guard a document body holds (None if it is malformed)."""
        try:
            at = Measure(int(body["tokens"]), int(body["messages"]))
        except (KeyError, TypeError, ValueError):
            return None
        head = body.get("head")
        return cls(
            head if isinstance(head, str) else None,
            at,
            str(body.get("reason", "")),
            bool(body.get("warned")),
        )

    def speaks_for(self, policy: CompactionPolicy, now: Measure, ids: Sequence[str]) -> bool:
        """Whether the guard is about this context: same branch, and it has not shrunk."""
        on_branch = self.head is None or self.head in ids
        shrunk = (policy.trigger_tokens is not None and now.tokens < self.at.tokens) or (
            policy.trigger_messages is not None and now.messages < self.at.messages
        )
        return on_branch and not shrunk

    def holds(self, policy: CompactionPolicy, now: Measure, ids: Sequence[str]) -> bool:
        """Whether automatic compaction still holds off for the context measured `now`."""
        if not self.speaks_for(policy, now, ids):
            return False
        step = growth(policy)
        tokens = policy.trigger_tokens is not None and now.tokens >= self.at.tokens + step.tokens
        messages = (
            policy.trigger_messages is not None and now.messages >= self.at.messages + step.messages
        )
        return not (tokens or messages)
