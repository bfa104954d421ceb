"""Context blocks: labelled pieces of context rendered into an agent's system prompt.

A block's kind follows from its provider, which is duck-typed:

| provider has | kind | the model can |
| --- | --- | --- |
| `get()` | readonly | read it in the prompt |
| `get()` and `set(content, author)` | writable | rewrite it (`set_context`) |
| `entries()` and `load(key)` | skill | list keys, load one (`load_context`) |
| `search(query, limit)` | searchable | search it (`search_context`) |

Skill and searchable providers with `put(entry, author)` also take keyed writes. Any
provider may have `init(label)`, called once before its first read, and
`versions()`/`get_version(n)` to read older contents. Every method may be sync or async.
A readonly block can also be a plain string or a zero-argument callable.

`SessionConfig` lists the blocks of a session (or of every session a manager opens). A
block without a provider is stored in the session's store as documents, at session,
user or app level (see `sessionary.providers`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol, TypeAlias, TypeVar, cast, runtime_checkable

from sessionary.errors import InvalidInput
from sessionary.records import StateLevel
from sessionary.tokens import TokenCounter, default_counter

__all__ = [
    "BLOCK_KINDS",
    "LEVELS",
    "BlockKind",
    "BlockSpec",
    "BlockVersion",
    "ContextBlock",
    "ContextProvider",
    "Entry",
    "EntryHit",
    "MaybeAwaitable",
    "SearchProvider",
    "SessionConfig",
    "SkillProvider",
    "TextCounter",
    "ValueProvider",
    "WritableContextProvider",
    "check_label",
    "entry_key",
    "kind_of",
]

T = TypeVar("T")
MaybeAwaitable: TypeAlias = T | Awaitable[T]
TextCounter: TypeAlias = Callable[[str], int]
BlockKind = Literal["readonly", "writable", "skill", "searchable"]
BLOCK_KINDS: tuple[str, ...] = ("readonly", "writable", "skill", "searchable")
StoredKind = Literal["writable", "skill", "searchable"]
LEVELS: tuple[str, ...] = ("session", "user", "app")

_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}\Z")
_MAX_KEY = 512
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class Entry:
    """One keyed document of a skill or searchable block."""

    key: str
    title: str = ""
    description: str = ""
    content: str = ""


@dataclass(frozen=True, slots=True)
class EntryHit:
    """One entry matching a search of a searchable block; higher rank is better.

    `spans` are the matched words as ``(start, end)`` offsets into `snippet` (see
    `SearchHit`); a provider that cannot tell leaves them empty.
    """

    key: str
    snippet: str
    title: str = ""
    rank: float = 0.0
    spans: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class BlockVersion:
    """One stored version of a writable block: who wrote it, when, and what."""

    version: int
    author: str
    updated_at: datetime
    content: str


@dataclass(frozen=True, slots=True)
class ContextBlock:
    """A block as read now (or as of `version`): what the prompt shows and how full it is."""

    label: str
    kind: BlockKind
    content: str
    tokens: int
    description: str | None = None
    limit: int | None = None
    version: int | None = None
    keys: tuple[str, ...] = ()

    @property
    def writable(self) -> bool:
        """Whether `set_context` and `replace_context_block` can write the block."""
        return self.kind == "writable"

    @property
    def usage(self) -> float | None:
        """The share of the token limit in use (0.0 to 1.0 and beyond), or None."""
        return None if not self.limit else self.tokens / self.limit


@runtime_checkable
class ContextProvider(Protocol):
    """A readonly block: `get` returns its content (None for empty)."""

    def get(self) -> MaybeAwaitable[str | None]:
        """Return the block's content, or None."""
        ...


@runtime_checkable
class WritableContextProvider(ContextProvider, Protocol):
    """A writable block: `set` replaces its content; `author` says who wrote it."""

    def set(self, content: str, author: str) -> MaybeAwaitable[None]:
        """Replace the block's content."""
        ...


@runtime_checkable
class SkillProvider(Protocol):
    """Keyed documents listed in the prompt by key and description, loaded on demand."""

    def entries(self) -> MaybeAwaitable[Sequence[Entry]]:
        """Return every entry (its content may be left empty)."""
        ...

    def load(self, key: str) -> MaybeAwaitable[str | None]:
        """Return the full content of one entry, or None if there is none."""
        ...


@runtime_checkable
class SearchProvider(Protocol):
    """Keyed entries the model finds by full-text search."""

    def search(self, query: str, limit: int) -> MaybeAwaitable[Sequence[EntryHit]]:
        """Return the best matches, best first."""
        ...


class ValueProvider:
    """A readonly block whose content is a string, or what a callable returns.

    Args:
        value: The content, or a zero-argument callable (sync or async) returning it.
    """

    def __init__(self, value: str | Callable[[], MaybeAwaitable[str | None]]) -> None:
        if not isinstance(value, str) and not callable(value):
            raise InvalidInput(f"a readonly block needs a string or a callable, not {value!r}")
        self._value = value

    def get(self) -> MaybeAwaitable[str | None]:
        """Return the value, or call the callable."""
        return self._value if isinstance(self._value, str) else self._value()


def kind_of(provider: object) -> BlockKind:
    """Return the kind of block `provider` makes.

    Raises:
        InvalidInput: If `provider` has none of the methods of a provider.
    """
    if _has(provider, "search"):
        return "searchable"
    if _has(provider, "load") and _has(provider, "entries"):
        return "skill"
    if _has(provider, "set") and _has(provider, "get"):
        return "writable"
    if _has(provider, "get"):
        return "readonly"
    raise InvalidInput(
        f"{type(provider).__name__} is not a block provider: it needs get(), get()+set(), "
        "entries()+load(), or search()"
    )


def _has(obj: object, name: str) -> bool:
    return callable(getattr(obj, name, None))


def takes_keyed_writes(provider: object) -> bool:
    """Whether a skill or searchable provider accepts `put(entry, author)`."""
    return _has(provider, "put")


def check_label(label: object) -> str:
    """Return `label` if it is a usable block label.

    A label is 1 to 64 letters, digits, `_` and `-`, starting with a letter or digit.

    Raises:
        InvalidInput: If it is not.
    """
    if not isinstance(label, str) or not _LABEL.match(label):
        raise InvalidInput(
            f"a block label is 1 to 64 letters, digits, '_' and '-' starting with a letter "
            f"or digit; got {label!r}"
        )
    return label


def check_key(key: object) -> str:
    """Return `key` if it is a usable entry key (1 to 512 characters, no control characters).

    Raises:
        InvalidInput: If it is not.
    """
    if not isinstance(key, str) or not key or len(key) > _MAX_KEY or _CONTROL.search(key):
        raise InvalidInput(
            f"an entry key is 1 to {_MAX_KEY} characters without control characters; got {key!r}"
        )
    return key


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text[:60].lower()).strip("-")


def _fnv1a(text: str) -> str:
    value = 0x811C9DC5
    for byte in text.encode("utf-8"):
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, rest = divmod(value, 36)
        out = digits[rest] + out
        if not value:
            return out


def entry_key(title: str | None, content: str) -> str:
    """Return the key a keyed write gets: derived from the title, else from the content.

    A title gives its slug (lowercase, runs of other characters as `-`), or
    `entry-<hash>` when it has no ASCII letters or digits; without a title the key is
    the content's slug plus a hash of the whole content, so different notes never share
    a key. The same title always gives the same key, so rewriting a titled entry
    replaces it.
    """
    if title and title.strip():
        return _slug(title) or f"entry-{_fnv1a(title)}"
    return f"{_slug(content) or 'entry'}-{_fnv1a(content)}"


def _check_limit(limit: object) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInput(f"a block's token limit must be a positive integer, not {limit!r}")
    return limit


@dataclass(frozen=True, slots=True)
class BlockSpec:
    """How one block of a session is made.

    Args:
        label: The block's name (see `check_label`).
        source: A provider object; a string or callable for a readonly block; or None
            for a block stored in the session's store, of kind `kind` at `level`.
        description: What the block is for, shown in the prompt and the tools.
        limit: The most tokens the block's content may hold.
        kind: For a stored block: "writable" (default), "skill" or "searchable".
        level: For a stored block: "session" (default; each session its own), "user"
            (shared by all the user's sessions) or "app" (by all of the tenant's).
    """

    label: str
    source: Any = None
    description: str | None = None
    limit: int | None = None
    kind: StoredKind | None = None
    level: StateLevel = "session"

    def __post_init__(self) -> None:
        check_label(self.label)
        _check_limit(self.limit)
        if self.description is not None and not isinstance(self.description, str):
            raise InvalidInput("a block description must be a string")
        if self.level not in LEVELS:
            raise InvalidInput(f"a block level is one of {LEVELS}, not {self.level!r}")
        if self.kind is not None and self.source is not None:
            raise InvalidInput("`kind` applies only to stored blocks (no source given)")
        if self.kind not in (None, "writable", "skill", "searchable"):
            raise InvalidInput(f"a stored block is writable, skill or searchable, not {self.kind}")
        if (
            self.source is not None
            and not isinstance(self.source, str)
            and not callable(self.source)
        ):
            kind_of(self.source)

    def provider(self) -> object | None:
        """Return the provider the source gives (None for a stored block)."""
        if self.source is None:
            return None
        if isinstance(self.source, str) or (
            callable(self.source) and not _is_provider(self.source)
        ):
            return ValueProvider(self.source)
        provider: object = self.source
        return provider


def _is_provider(obj: object) -> bool:
    return any(_has(obj, name) for name in ("get", "load", "search"))


@dataclass(frozen=True, slots=True)
class SessionConfig:
    """What a session's context holds: its blocks, prompt caching, counter and tools.

    Build it with the constructor or the chainable `with_*` methods, which return a new
    config (a config given to a manager applies to every session it opens, so it never
    changes under them).

    Args:
        blocks: The blocks, in prompt order.
        cached_prompt: Persist the frozen system prompt in the store, so every process
            (and every restart) gets the identical prompt.
        token_counter: A `sessionary.tokens.TokenCounter`, or a callable counting the
            tokens of a string (default: `sessionary.tokens.default_counter()`).
        history_tools: Offer `session_search`, `session_list` and `session_history`.
        searchable_history: The label of a searchable block over the messages of all the
            user's sessions, or None.
    """

    blocks: tuple[BlockSpec, ...] = ()
    cached_prompt: bool = False
    token_counter: TokenCounter | TextCounter | None = None
    history_tools: bool = False
    searchable_history: str | None = None

    def __post_init__(self) -> None:
        labels = [spec.label for spec in self.blocks]
        if self.searchable_history is not None:
            labels.append(check_label(self.searchable_history))
        duplicates = sorted({label for label in labels if labels.count(label) > 1})
        if duplicates:
            raise InvalidInput(f"block labels must be unique; repeated: {duplicates}")
        if self.token_counter is not None:
            self.text_counter()

    def text_counter(self) -> TextCounter:
        """Return the function that counts a string's tokens for block limits.

        Raises:
            InvalidInput: If `token_counter` is neither a TokenCounter nor a callable.
        """
        counter = self.token_counter
        if counter is None:
            return default_counter().count_text
        count_text = getattr(counter, "count_text", None)
        if callable(count_text):
            return cast(TextCounter, count_text)
        if callable(counter):
            return counter
        raise InvalidInput("token_counter must be a TokenCounter or a callable taking a string")

    def with_block(
        self,
        label: str,
        source: Any = None,
        *,
        description: str | None = None,
        limit: int | None = None,
        kind: StoredKind | None = None,
        level: StateLevel = "session",
    ) -> SessionConfig:
        """Return this config with one more block; the arguments are `BlockSpec`'s."""
        spec = BlockSpec(label, source, description, limit, kind, level)
        return dataclasses.replace(self, blocks=(*self.blocks, spec))

    def with_cached_prompt(self, enabled: bool = True) -> SessionConfig:
        """Return this config with the frozen prompt persisted (or not)."""
        return dataclasses.replace(self, cached_prompt=enabled)

    def with_token_counter(self, counter: TokenCounter | TextCounter | None) -> SessionConfig:
        """Return this config counting tokens with `counter`."""
        return dataclasses.replace(self, token_counter=counter)

    def with_history_tools(self, enabled: bool = True) -> SessionConfig:
        """Return this config offering the session_search/list/history tools (or not)."""
        return dataclasses.replace(self, history_tools=enabled)

    def with_searchable_history(self, label: str = "history") -> SessionConfig:
        """Return this config with a searchable block over the user's past sessions."""
        return dataclasses.replace(self, searchable_history=label)
