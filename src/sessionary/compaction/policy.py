"""How a session compacts: one dataclass of settings.

Pass it as `compaction=` to a session or a manager.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Literal

from sessionary.blocks import LEVELS, check_label
from sessionary.compaction.flush import HeuristicExtractor
from sessionary.compaction.summary import StructuredSummarizer
from sessionary.errors import InvalidInput
from sessionary.records import StateLevel
from sessionary.tokens import TokenCounter, default_counter

__all__ = [
    "DEFAULT_EVICTION_CHARS",
    "DEFAULT_EVICTION_EXCLUDE",
    "DEFAULT_TAIL_TOKENS",
    "DEFAULT_TRUNCATION_MARKER",
    "READ_TOOL",
    "CompactionPolicy",
    "Eviction",
    "MemoryFlush",
    "check_marker",
]

DEFAULT_EVICTION_CHARS = 80_000
DEFAULT_TAIL_TOKENS = 20_000
DEFAULT_TRUNCATION_MARKER = "… [{omitted} characters clipped]"

READ_TOOL = "read_tool_result"
"""The tool that reads evicted results back; its own results are never evicted."""

DEFAULT_EVICTION_EXCLUDE = frozenset(
    {
        # Tools that page through files themselves or return little (as in seed 002)...
        "read_file",
        "write_file",
        "edit_file",
        "grep_files",
        "glob_files",
        "list_files",
        "memory_*",
        "session_search",
        # ...and sessionary's own memory tools, whose output is the point of calling them.
        "set_context",
        "load_context",
        "unload_context",
        "search_context",
        "session_list",
        "session_history",
    }
)
"""Tools whose results are never evicted by default; a shell is deliberately not here."""


@dataclass(frozen=True, slots=True)
class Eviction:
    """Tool-result eviction in the context view.

    A tool result whose output is longer than `threshold` characters stays whole in the
    store; the context shows its first and last `preview` characters and a reference that
    the `read_tool_result` tool reads back by character range. Results of the tools that
    `exclude` names are never evicted: each entry is a tool name or a shell-style pattern
    (``memory_*``). The default set is `DEFAULT_EVICTION_EXCLUDE` (file reads, writes and
    edits, grep, glob and list, memory tools and history search); a shell's output is
    evicted, since it can be of any size. `read_tool_result` itself is always excluded.
    """

    threshold: int = DEFAULT_EVICTION_CHARS
    preview: int = 2000
    exclude: frozenset[str] = DEFAULT_EVICTION_EXCLUDE

    def __post_init__(self) -> None:
        _check_count("threshold", self.threshold, 1)
        _check_count("preview", self.preview, 0)
        if isinstance(self.exclude, str) or not isinstance(self.exclude, Iterable):
            raise InvalidInput("exclude must be a set of tool names or patterns")
        names = frozenset(self.exclude)
        if not all(isinstance(name, str) and name for name in names):
            raise InvalidInput("exclude must hold non-empty tool names or patterns")
        object.__setattr__(self, "exclude", names)

    def excludes(self, tool: str | None) -> bool:
        """Whether the results of `tool` are never evicted."""
        if tool is None:
            return False
        return tool == READ_TOOL or any(fnmatchcase(tool, rule) for rule in self.exclude)


@dataclass(frozen=True, slots=True)
class MemoryFlush:
    """Durable facts of each range about to be compacted, appended to a memory block.

    The facts are the user's statements and preferences, decisions, errors and artefacts
    (files, commands, URLs) of the range's *original* messages (see
    `sessionary.compaction.flush`), appended as ``- `` lines the block does not hold yet.

    Args:
        label: The block. When the session has a block with this label, the facts go
            through it: it must be writable, and its token limit holds (facts that do not
            fit are left out and reported). Otherwise they go to the stored block
            ``block/<label>`` at `level`.
        level: "session", "user" or "app", for a label the session has no block for.
        extractor: A `MemoryExtractor` (or, for async sessions, an
            `AsyncMemoryExtractor`); default: the offline `HeuristicExtractor`.
            `OpenAIExtractor` and `AnthropicExtractor` ask a model.

    A flush that fails (the extractor, a readonly block) is reported to the policy's
    `on_error` and does not stop the compaction: the originals stay stored and searchable.
    """

    label: str = "memory"
    level: StateLevel = "session"
    extractor: Any = field(default_factory=HeuristicExtractor)

    def __post_init__(self) -> None:
        check_label(self.label)
        if self.level not in LEVELS:
            raise InvalidInput(f"level must be one of {LEVELS}, not {self.level!r}")
        if not hasattr(self.extractor, "extract"):
            raise InvalidInput("extractor must have an extract(request) method")


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    """Compaction settings for a session (every field has a working default).

    Automatic compaction runs after an append when the context is over budget: its
    estimate (see `AsyncSession.estimate_tokens`) is over `trigger_tokens`, or it holds
    at least `trigger_messages` messages (the summary counts as one). A compaction that
    cannot bring the context back under budget is not attempted, and one that did not
    is not repeated at every append: see `sessionary.compaction.guard` for the rule.

    Args:
        protect_head: How many first messages are never compacted.
        tail_tokens: The token budget of the recent messages kept as they are (None:
            half of what `trigger_tokens` leaves for the history once the system prompt,
            tools and reserve are counted; 20,000 without a token trigger).
        min_tail: The fewest recent messages kept, whatever the budgets.
        trigger_tokens: Compact automatically after an append once the estimate exceeds
            this many tokens (None: no token trigger).
        reserve_tokens: Tokens a request holds that the session does not manage (your
            own tool schemas and instructions), added to the estimate. The system prompt,
            the blocks and the session's memory tools are counted already.
        summarizer: A `Summarizer` (or, for async sessions, an `AsyncSummarizer`);
            default: the offline `StructuredSummarizer`.
        counter: The token counter (default: the heuristic). A counter with a
            `count_context` method also receives the blocks (`sessionary.tokens`).
        summary_ratio: The summary's budget as a share of the tokens it replaces...
        summary_floor: ...never below this many tokens...
        summary_ceiling: ...and never above this many.
        summary_role: The role the summary message has in the context view.
        on_error: Called with every exception automatic compaction meets (summarizer
            failures included) and with a `CompactionStalled` warning when it cannot
            bring the context under budget; the append that triggered it still succeeds.
        eviction: Tool-result eviction in the context view (None: off).
        max_argument_chars: Clip tool-call arguments longer than this in the context view
            (None: off). The store keeps them whole.
        memory_flush: Append durable facts of each compacted range to a memory block
            first (None: off).
        trigger_messages: Compact automatically after an append once the context holds
            at least this many messages (None: no message trigger).
        tail_messages: The most recent messages kept as they are (None: no bound, or,
            with `trigger_messages`, half of what it leaves after the head and summary).
        rearm_growth: After automatic compaction held off (or failed), it tries again
            once the context grew by this share of the trigger (tokens of
            `trigger_tokens`, messages of `trigger_messages`).
        truncation_marker: What replaces the clipped end of a tool-call argument; a
            ``{omitted}`` in it is replaced by the number of characters clipped.
    """

    protect_head: int = 3
    tail_tokens: int | None = None
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
    trigger_messages: int | None = None
    tail_messages: int | None = None
    rearm_growth: float = 0.25
    truncation_marker: str = DEFAULT_TRUNCATION_MARKER

    def __post_init__(self) -> None:
        counts = {"protect_head": self.protect_head, "reserve_tokens": self.reserve_tokens}
        for name, value in counts.items():
            _check_count(name, value, 0)
        _check_count("min_tail", self.min_tail, 1)
        optional: dict[str, tuple[int | None, int]] = {
            "tail_tokens": (self.tail_tokens, 0),
            "trigger_tokens": (self.trigger_tokens, 1),
            "trigger_messages": (self.trigger_messages, 1),
            "tail_messages": (self.tail_messages, self.min_tail),
            "max_argument_chars": (self.max_argument_chars, 16),
        }
        for name, (setting, least) in optional.items():
            if setting is not None:
                _check_count(name, setting, least)
        self._check_budgets()
        check_marker(self.truncation_marker)
        if not hasattr(self.summarizer, "summarize"):
            raise InvalidInput("summarizer must have a summarize(request) method")
        if self.summary_role not in ("user", "assistant", "system"):
            raise InvalidInput("summary_role must be 'user', 'assistant' or 'system'")
        if not (0 < self.summary_ratio <= 1 and 1 <= self.summary_floor <= self.summary_ceiling):
            raise InvalidInput("need 0 < summary_ratio <= 1 and 1 <= summary_floor <= ceiling")
        if not (isinstance(self.rearm_growth, int | float) and 0 < self.rearm_growth <= 1):
            raise InvalidInput(f"rearm_growth must be in (0, 1], not {self.rearm_growth!r}")

    def _check_budgets(self) -> None:
        # Settings under which no compaction can ever get back under budget.
        trigger, tail = self.trigger_tokens, self.tail_tokens
        if trigger is not None and tail is not None and self.reserve_tokens + tail >= trigger:
            raise InvalidInput(
                f"reserve_tokens + tail_tokens ({self.reserve_tokens} + {tail}) must be below "
                f"trigger_tokens ({trigger}), leaving room for the summary; or leave "
                "tail_tokens unset to keep half of what the trigger leaves"
            )
        most = self.trigger_messages
        if most is None:
            return
        kept = self.protect_head + 1 + (self.tail_messages or self.min_tail)
        if kept >= most:
            raise InvalidInput(
                f"trigger_messages ({most}) must be above the messages a compaction keeps: "
                f"protect_head ({self.protect_head}) + the summary (1) + the tail "
                f"({self.tail_messages or self.min_tail})"
            )

    def tail_budget(self, beside: int = 0) -> int:
        """Return the tail's token budget; `beside` is what the request holds besides history.

        That is `tail_tokens` when set; else half of what `trigger_tokens` leaves once
        `beside` (system prompt, tools, reserve) is taken; else `DEFAULT_TAIL_TOKENS`.
        """
        if self.tail_tokens is not None:
            return self.tail_tokens
        if self.trigger_tokens is None:
            return DEFAULT_TAIL_TOKENS
        return max(0, (self.trigger_tokens - beside) // 2)

    def tail_count(self) -> int | None:
        """Return the most messages the tail keeps (None: no bound; see `tail_messages`)."""
        if self.tail_messages is not None or self.trigger_messages is None:
            return self.tail_messages
        room = self.trigger_messages - self.protect_head - 1
        return max(self.min_tail, room // 2)


def check_marker(marker: object) -> str:
    """Return `marker` if it is a usable truncation marker.

    Raises:
        InvalidInput: If it is not a string, or has a placeholder other than ``{omitted}``.
    """
    if not isinstance(marker, str):
        raise InvalidInput(f"truncation_marker must be a string, not {marker!r}")
    try:
        marker.format(omitted=0)
    except (KeyError, IndexError, ValueError) as exc:
        raise InvalidInput(
            f"truncation_marker may hold only the placeholder {{omitted}}: {marker!r}"
        ) from exc
    return marker


def _check_count(name: str, value: object, least: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise InvalidInput(f"{name} must be an integer >= {least}, not {value!r}")
