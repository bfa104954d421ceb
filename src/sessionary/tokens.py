"""Token counting: a heuristic that needs nothing installed, and an optional exact tokenizer.

Everything that budgets a context (compaction triggers, tail windows, block limits) counts
through a `TokenCounter`. The default, `HeuristicCounter`, estimates a string as

    tokens(text) = ceil(max(narrow_chars / 4, words * 1.3) + wide_chars)

where `wide_chars` are the characters of CJK and other scripts a tokenizer splits into about
one token each (code points from U+2E80 up, outside the surrogate and private ranges),
`narrow_chars` are all the others, and `words` are runs of non-space characters. For English
prose and code the first term is the usual "four characters a token"; the word term keeps
short-word text and numbers from being under-counted; the wide term keeps Chinese or Japanese
text from being under-counted by a factor of four.

A message costs `MESSAGE_OVERHEAD` tokens plus its parts: text and reasoning by their text;
a tool call by its name and its JSON arguments; a tool result by its output (a string as is,
anything else as compact JSON) and its tool name; an image `image_tokens` (default 1,000); any
other file its name or URL plus its inline data at three bytes per four base64 characters and
four bytes a token; data parts are not shown to a model and cost nothing. A whole prompt adds
the system text and, per tool schema, `TOOL_OVERHEAD` plus its JSON.

A session's estimate (`count_context`) hands a counter everything the session puts in a
request: the messages as the model sees them, the system prompt (the frozen one, else the
one the blocks render now), the context blocks it was rendered from, and the schemas of
the session's own tools. A counter with a `count_context` method gets all four; the
heuristic counts the prompt text once and does not add the blocks again, since their
content is already in it. A counter without `count_context` (one written against the
three-method `TokenCounter` protocol) keeps working: it is asked for `count_prompt` of the
messages, the system prompt and the tool schemas.

`TiktokenCounter` counts text exactly with `tiktoken` when it is installed **and** its encoding
file is already on disk: tiktoken downloads encoding files at run time, which sessionary never
does, so `default_counter()` falls back to the heuristic when the file is not cached.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from sessionary._optional import require
from sessionary.errors import BackendNotInstalled, InvalidInput
from sessionary.model import (
    FilePart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

if TYPE_CHECKING:
    from sessionary.blocks import ContextBlock

__all__ = [
    "MESSAGE_OVERHEAD",
    "TOOL_OVERHEAD",
    "ContextCounter",
    "HeuristicCounter",
    "PartCounts",
    "PromptParts",
    "TiktokenCounter",
    "TokenCounter",
    "count_context",
    "count_parts",
    "default_counter",
    "estimate_text_tokens",
    "json_text",
    "tiktoken_cache_path",
]

MESSAGE_OVERHEAD = 4
"""Tokens every message costs beyond its parts (role and separators)."""

TOOL_OVERHEAD = 8
"""Tokens every tool schema costs beyond its JSON."""

_WORD = re.compile(r"\S+")


def _is_wide(code: int) -> bool:
    # CJK radicals onward, minus surrogates and the private-use area; emoji included.
    return code >= 0x2E80 and not 0xD800 <= code <= 0xF8FF


def estimate_text_tokens(text: str) -> int:
    """Return the heuristic token estimate of `text` (see the module docstring).

    Args:
        text: Any string; the empty string costs 0.
    """
    if not text:
        return 0
    wide = 0 if text.isascii() else sum(1 for ch in text if _is_wide(ord(ch)))
    narrow = len(text) - wide
    words = len(_WORD.findall(text))
    return math.ceil(max(narrow / 4, words * 1.3) + wide)


def json_text(value: Any) -> str:
    """Return `value` as the text a model sees: a string as is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


@dataclass(frozen=True, slots=True)
class PartCounts:
    """A message's tokens by kind of part; `total` includes the per-message overhead."""

    text: int = 0
    reasoning: int = 0
    tool_arguments: int = 0
    tool_outputs: int = 0
    files: int = 0
    overhead: int = MESSAGE_OVERHEAD

    @property
    def total(self) -> int:
        """All tokens of the message."""
        return (
            self.text
            + self.reasoning
            + self.tool_arguments
            + self.tool_outputs
            + self.files
            + self.overhead
        )


@runtime_checkable
class TokenCounter(Protocol):
    """What counts tokens: one string, one message, or a whole prompt.

    Implement `count_text` and inherit the rest from `HeuristicCounter` to plug in a
    tokenizer, or implement all three to count messages some other way (for example with
    a provider's token-counting endpoint).
    """

    def count_text(self, text: str) -> int:
        """Return the tokens of one string."""
        ...

    def count_message(self, message: Message) -> int:
        """Return the tokens of one message, overhead included."""
        ...

    def count_prompt(
        self,
        messages: Sequence[Message],
        system: str = "",
        tools: Sequence[Mapping[str, Any]] = (),
    ) -> int:
        """Return the tokens of a whole prompt: system text, tool schemas and messages."""
        ...


class PromptParts(NamedTuple):
    """What a request holds beside its messages: the system prompt, its blocks, tools."""

    system: str = ""
    blocks: tuple[ContextBlock, ...] = ()
    tools: tuple[Mapping[str, Any], ...] = ()


@runtime_checkable
class ContextCounter(TokenCounter, Protocol):
    """A `TokenCounter` that also weighs a session's whole context in one call."""

    def count_context(
        self,
        messages: Sequence[Message],
        *,
        system: str = "",
        blocks: Sequence[ContextBlock] = (),
        tools: Sequence[Mapping[str, Any]] = (),
    ) -> int:
        """Return the tokens of a request: messages, system prompt, blocks and tools.

        `system` is the prompt as sent (rendered from `blocks`, perhaps frozen before
        their latest edits), so a counter that adds both counts the blocks twice.
        """
        ...


def count_context(
    counter: TokenCounter,
    messages: Sequence[Message],
    *,
    system: str = "",
    blocks: Sequence[ContextBlock] = (),
    tools: Sequence[Mapping[str, Any]] = (),
) -> int:
    """Return `counter`'s count of a whole context (see the module docstring).

    Calls `counter.count_context` when it has one, else `counter.count_prompt` (the
    blocks are then left out: their content is in `system`). A finite number is rounded
    up and floored at 0.

    Raises:
        InvalidInput: If the counter returns something that is not a finite number.
    """
    method = getattr(counter, "count_context", None)
    if callable(method):
        found = method(messages, system=system, blocks=blocks, tools=tools)
    else:
        found = counter.count_prompt(messages, system, tools)
    if isinstance(found, bool) or not isinstance(found, int | float) or not math.isfinite(found):
        raise InvalidInput(f"the token counter returned {found!r}, not a finite number")
    return max(0, math.ceil(found))


def _file_tokens(part: FilePart, counter: TokenCounter, image_tokens: int) -> int:
    if part.is_image:
        return image_tokens
    label = counter.count_text(part.filename or part.url or "")
    if part.data is None:
        return label
    # base64: 4 characters carry 3 bytes; about 4 bytes make a token.
    return label + math.ceil(len(part.data) * 3 / 16)


def _part_kind(part: Part) -> str:
    if isinstance(part, TextPart):
        return "text"
    if isinstance(part, ReasoningPart):
        return "reasoning"
    if isinstance(part, ToolCallPart):
        return "tool_arguments"
    if isinstance(part, ToolResultPart):
        return "tool_outputs"
    if isinstance(part, FilePart):
        return "files"
    return "data"


def _part_tokens(part: Part, counter: TokenCounter, image_tokens: int) -> int:
    if isinstance(part, TextPart | ReasoningPart):
        return counter.count_text(part.text)
    if isinstance(part, ToolCallPart):
        return counter.count_text(part.name) + counter.count_text(json_text(part.arguments))
    if isinstance(part, ToolResultPart):
        return counter.count_text(part.name or "") + counter.count_text(json_text(part.output))
    if isinstance(part, FilePart):
        return _file_tokens(part, counter, image_tokens)
    return 0  # DataPart: application data a model never sees.


def count_parts(
    message: Message, counter: TokenCounter | None = None, *, image_tokens: int = 1000
) -> PartCounts:
    """Return `message`'s tokens by kind of part, counting text with `counter`.

    Args:
        message: The message to count.
        counter: Counts each string (default: the heuristic).
        image_tokens: What one image costs.
    """
    counter = counter if counter is not None else _HEURISTIC
    sums = {"text": 0, "reasoning": 0, "tool_arguments": 0, "tool_outputs": 0, "files": 0}
    for part in message.parts:
        kind = _part_kind(part)
        if kind in sums:
            sums[kind] += _part_tokens(part, counter, image_tokens)
    return PartCounts(**sums)


class HeuristicCounter:
    """The default counter: `estimate_text_tokens` per string, nothing to install.

    Subclasses that override `count_text` (a tokenizer) get message and prompt counting
    for free.

    Args:
        image_tokens: What one image costs (default 1,000).
    """

    def __init__(self, *, image_tokens: int = 1000) -> None:
        if not isinstance(image_tokens, int) or image_tokens < 0:
            raise InvalidInput("image_tokens must be a non-negative integer")
        self.image_tokens = image_tokens

    def count_text(self, text: str) -> int:
        """Return the tokens of one string."""
        return estimate_text_tokens(text)

    def count_message(self, message: Message) -> int:
        """Return the tokens of one message, overhead included."""
        return count_parts(message, self, image_tokens=self.image_tokens).total

    def count_messages(self, messages: Iterable[Message]) -> int:
        """Return the tokens of several messages."""
        return sum(self.count_message(m) for m in messages)

    def count_tools(self, tools: Sequence[Mapping[str, Any]]) -> int:
        """Return the tokens of tool schemas (JSON objects, as sent to a model)."""
        return sum(TOOL_OVERHEAD + self.count_text(json_text(dict(t))) for t in tools)

    def count_prompt(
        self,
        messages: Sequence[Message],
        system: str = "",
        tools: Sequence[Mapping[str, Any]] = (),
    ) -> int:
        """Return the tokens of a whole prompt: system text, tool schemas and messages."""
        head = self.count_text(system) + MESSAGE_OVERHEAD if system else 0
        return head + self.count_tools(tools) + self.count_messages(messages)

    def count_context(
        self,
        messages: Sequence[Message],
        *,
        system: str = "",
        blocks: Sequence[ContextBlock] = (),
        tools: Sequence[Mapping[str, Any]] = (),
    ) -> int:
        """Return the tokens of a request: `count_prompt`; the blocks are in `system`."""
        return self.count_prompt(messages, system, tools)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


_HEURISTIC = HeuristicCounter()

_ENCODING_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"


def tiktoken_cache_path(encoding: str) -> str | None:
    """Return where tiktoken caches `encoding`'s file, or None if caching is disabled.

    This follows tiktoken's documented cache rule (`TIKTOKEN_CACHE_DIR`, then
    `DATA_GYM_CACHE_DIR`, then `<tmp>/data-gym-cache`, keyed by the SHA-1 of the URL).
    """
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        cache_dir = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        cache_dir = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not cache_dir:
        return None
    url = _ENCODING_URL.format(name=encoding)
    return os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest())


class TiktokenCounter(HeuristicCounter):
    """Counts text exactly with a tiktoken encoding (needs `sessionary[tiktoken]`).

    Args:
        encoding: A tiktoken `Encoding` object, or the name of one (``o200k_base``...). A
            name is loaded only from tiktoken's local cache: if its file is not on disk,
            `BackendNotInstalled` is raised instead of downloading it.
        image_tokens: What one image costs.

    Raises:
        BackendNotInstalled: If tiktoken is not installed or the encoding is not cached.
    """

    def __init__(self, encoding: Any = "o200k_base", *, image_tokens: int = 1000) -> None:
        super().__init__(image_tokens=image_tokens)
        self.encoding = _load_encoding(encoding) if isinstance(encoding, str) else encoding

    def count_text(self, text: str) -> int:
        """Return the exact tokens of one string."""
        if not text:
            return 0
        return len(self.encoding.encode(text, disallowed_special=()))

    def __repr__(self) -> str:
        return f"TiktokenCounter({getattr(self.encoding, 'name', '?')!r})"


def _load_encoding(name: str) -> Any:
    tiktoken = require("tiktoken", extra="tiktoken", what="exact token counting")
    path = tiktoken_cache_path(name)
    if path is None or not os.path.exists(path):
        raise BackendNotInstalled(
            f"tiktoken's {name!r} file is not cached locally and sessionary never downloads "
            "at run time; fetch it once (tiktoken.get_encoding) or set TIKTOKEN_CACHE_DIR"
        )
    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # a corrupt cache or an unknown name: fall back, loudly
        raise BackendNotInstalled(f"tiktoken could not load {name!r}: {exc}") from exc


def default_counter(encoding: str | None = None) -> TokenCounter:
    """Return the exact counter when it works offline, else the heuristic.

    Args:
        encoding: A tiktoken encoding name to try (None: use the heuristic directly).
    """
    if encoding is None:
        return _HEURISTIC
    try:
        return TiktokenCounter(encoding)
    except BackendNotInstalled:
        return _HEURISTIC
