"""How a session compacts: one dataclass of settings.

Pass it as `compaction=` to a session or a manager.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from sessionary.compaction.summary import StructuredSummarizer
from sessionary.errors import InvalidInput
from sessionary.records import StateLevel
from sessionary.tokens import TokenCounter, default_counter

__all__ = ["DEFAULT_EVICTION_CHARS", "CompactionPolicy", "Eviction", "MemoryFlush"]

DEFAULT_EVICTION_CHARS = 80_000


@dataclass(frozen=True, slots=True)
class Eviction:
    """Tool-result eviction in the context view.

    A tool result whose output is longer than `threshold` characters stays whole in the
    store; the context shows its first and last `preview` characters and a reference that
    the `read_tool_result` tool reads back by character range. Results of the tools named
    in `exclude` are never evicted (for example the tool that reads evicted results).
    """

    threshold: int = DEFAULT_EVICTION_CHARS
    preview: int = 2000
    exclude: frozenset[str] = frozenset({"read_tool_result"})


@dataclass(frozen=True, slots=True)
class MemoryFlush:
    """Where durable facts go before a range is compacted: appended to a memory block.

    The block is the document ``block``/`label` at `level` (see the storage conventions);
    each flush appends a version written by ``compaction``.
    """

    label: str = "memory"
    level: StateLevel = "session"


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    """Compaction settings for a session (every field has a working default).

    Args:
        protect_head: How many first messages are never compacted.
        tail_tokens: The token budget of the recent messages kept as they are.
        min_tail: The fewest recent messages kept, whatever the budget.
        trigger_tokens: Compact automatically after an append once the estimated prompt
            exceeds this many tokens (None: only when `compact()` is called).
        reserve_tokens: Tokens the rest of the prompt takes (system text, blocks, tool
            schemas), added to the history's estimate before comparing with the trigger.
        summarizer: A `Summarizer` (or, for async sessions, an `AsyncSummarizer`);
            default: the offline `StructuredSummarizer`.
        counter: The token counter (default: the heuristic).
        summary_ratio: The summary's budget as a share of the tokens it replaces...
        summary_floor: ...never below this many tokens...
        summary_ceiling: ...and never above this many.
        summary_role: The role the summary message has in the context view.
        on_error: Called with every exception automatic compaction meets (summarizer
            failures included); the append that triggered it still succeeds.
        eviction: Tool-result eviction in the context view (None: off).
        max_argument_chars: Clip tool-call arguments longer than this in the context view
            (None: off). The store keeps them whole.
        memory_flush: Append durable facts of each compacted range to a memory block
            (None: off).
    """

    protect_head: int = 3
    tail_tokens: int = 20_000
    min_tail: int = 2
    trigger_tokens: int | None = None
    reserve_tokens: int = 0
    summarizer: Any = field(default_factory=StructuredSummarizer)
    counter: TokenCounter = field(default_factory=default_counter)
    summary_ratio: float = 0.2
    summary_floor: int = 200
    summary_ceiling: int = 4000
    summary_role: Literal["user", "assistant", "system"] = "user"
    on_error: Callable[[BaseException], Any] | None = None
    eviction: Eviction | None = None
    max_argument_chars: int | None = None
    memory_flush: MemoryFlush | None = None

    def __post_init__(self) -> None:
        counts = {
            "protect_head": self.protect_head,
            "tail_tokens": self.tail_tokens,
            "reserve_tokens": self.reserve_tokens,
        }
        for name, value in counts.items():
            _check_count(name, value, 0)
        _check_count("min_tail", self.min_tail, 1)
        if self.trigger_tokens is not None:
            _check_count("trigger_tokens", self.trigger_tokens, 1)
        if self.max_argument_chars is not None:
            _check_count("max_argument_chars", self.max_argument_chars, 16)
        if not hasattr(self.summarizer, "summarize"):
            raise InvalidInput("summarizer must have a summarize(request) method")
        if self.summary_role not in ("user", "assistant", "system"):
            raise InvalidInput("summary_role must be 'user', 'assistant' or 'system'")
        if not (0 < self.summary_ratio <= 1 and 1 <= self.summary_floor <= self.summary_ceiling):
            raise InvalidInput("need 0 < summary_ratio <= 1 and 1 <= summary_floor <= ceiling")


def _check_count(name: str, value: object, least: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise InvalidInput(f"{name} must be an integer >= {least}, not {value!r}")
