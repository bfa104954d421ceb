# This file was generated from src/sessionary/context.py by tools/async_to_sync.py.
# Do not edit it: edit the source and run `python tools/async_to_sync.py`.
"""A session's context blocks at run time: reads, limited writes, the frozen prompt.

`Context` serves one session handle: it makes each block's provider (a store-backed
one for a block configured without a provider), calls `init(label)` once before a
block's first read, enforces token limits and readonly blocks, tracks the skill entries
the model has loaded, and renders, freezes and refreshes the system prompt.
`sessionary._sync._context_api` gives `Session` the public methods over it.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, cast

from sessionary._sync.compaction.runtime import delete_namespace
from sessionary._sync.providers import (
    SessionHistory,
    StoredBlock,
    StoredSearch,
    StoredSkills,
)
from sessionary._sync.stores.base import DOCUMENTS, Store
from sessionary.blocks import (
    BlockKind,
    BlockSpec,
    BlockVersion,
    ContextBlock,
    Entry,
    EntryHit,
    MaybeAwaitable,
    SessionConfig,
    check_key,
    entry_key,
    kind_of,
    takes_keyed_writes,
)
from sessionary.errors import (
    BlockLimitExceeded,
    BlockNotFound,
    InvalidInput,
    ReadOnlyBlock,
    Unsupported,
    VersionConflict,
)
from sessionary.prompt import render_listing, render_prompt
from sessionary.records import Scope

__all__ = ["Context", "append_line", "resolve"]

T = TypeVar("T")
PROMPT_NAMESPACE, PROMPT_KEY, LOADED_NAMESPACE = "prompt", "system", "loaded"
HISTORY_DESCRIPTION = "Your past conversations with this user"


def resolve(value: MaybeAwaitable[T]) -> T:
    """Return `value`, awaiting it first if a provider returned an awaitable.

    Raises:
        Unsupported: If an async provider is used from synchronous code.
    """
    result: object = value
    if inspect.isawaitable(result):
        result = result
    if inspect.isawaitable(result):
        # Only reachable from the generated sync twin, which cannot await.
        if inspect.iscoroutine(result):
            result.close()
        raise Unsupported(
            "an async block provider cannot serve synchronous code; use a sync provider"
        )
    return cast(T, result)


def _text(value: object, label: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidInput(f"block {label!r}: the provider returned {type(value).__name__}")
    return value


@dataclasses.dataclass(slots=True)
class _Slot:
    spec: BlockSpec
    provider: Any
    kind: BlockKind
    ready: bool = False


class Context:
    """The blocks of one session handle.

    Args:
        store: The session's store.
        scope: The session's tenant and user.
        session_id: The session.
        config: Its blocks and settings.
    """

    def __init__(self, store: Store, scope: Scope, session_id: str, config: SessionConfig) -> None:
        self.store, self.scope, self.session_id, self.config = store, scope, session_id, config
        self.count: Callable[[str], int] = config.text_counter()
        self._slots: dict[str, _Slot] = {}
        self._loaded: dict[str, list[str]] = {}
        self._frozen: str | None = None
        for spec in config.blocks:
            self.add(spec)
        if config.searchable_history is not None:
            history = SessionHistory(store, scope)
            spec = BlockSpec(config.searchable_history, history, HISTORY_DESCRIPTION)
            self._slots[spec.label] = _Slot(spec, history, "searchable")

    # ------------------------------------------------------------------ configuration

    def add(self, spec: BlockSpec) -> None:
        """Add a block after the others.

        Raises:
            InvalidInput: If the label is taken.
            Unsupported: If a stored block needs a capability the store lacks.
        """
        if spec.label in self._slots:
            raise InvalidInput(f"block {spec.label!r} already exists")
        provider = spec.provider()
        if provider is None:
            kinds = {"skill": StoredSkills, "searchable": StoredSearch}
            made = kinds.get(spec.kind or "writable", StoredBlock)
            provider = made(self.store, self.scope, spec.level, self.session_id, spec.label)
        self._slots[spec.label] = _Slot(spec, provider, kind_of(provider))

    def remove(self, label: str) -> bool:
        """Remove a block from this handle (its stored content stays); False if absent."""
        self._loaded.pop(label, None)
        return self._slots.pop(label, None) is not None

    def labels(self, *kinds: str) -> list[str]:
        """Return the labels of the blocks of the given kinds (all kinds if none given)."""
        return [label for label, s in self._slots.items() if not kinds or s.kind in kinds]

    def keyed_writable(self) -> list[str]:
        """Return the labels of skill and searchable blocks that take keyed writes."""
        return [
            label
            for label, s in self._slots.items()
            if s.kind in ("skill", "searchable") and takes_keyed_writes(s.provider)
        ]

    def slot_kind(self, label: str) -> str:
        """Return a block's kind.

        Raises:
            BlockNotFound: If there is no such block.
        """
        return self._slot(label).kind

    def description(self, label: str) -> str | None:
        """Return a block's description."""
        return self._slot(label).spec.description

    def _slot(self, label: str) -> _Slot:
        slot = self._slots.get(label)
        if slot is None:
            known = ", ".join(self._slots) or "none"
            raise BlockNotFound(f"no block {label!r} on this session (blocks: {known})")
        return slot

    def _ready(self, label: str) -> _Slot:
        slot = self._slot(label)
        if not slot.ready:
            init = getattr(slot.provider, "init", None)
            if callable(init):
                resolve(init(label))
            slot.ready = True
        return slot

    # ------------------------------------------------------------------ reads

    def read(self, label: str, version: int | None = None) -> ContextBlock:
        """Return a block as it is now, or a writable block as of `version`.

        Raises:
            BlockNotFound: If there is no such block, or no such version.
            Unsupported: If the block's provider keeps no versions.
        """
        slot = self._ready(label)
        keys: tuple[str, ...] = ()
        if version is not None:
            content = self._version(slot, label, version)
        elif slot.kind == "skill":
            entries = resolve(slot.provider.entries())
            keys = tuple(entry.key for entry in entries)
            content = render_listing(entries)
        elif callable(getattr(slot.provider, "get", None)):
            content = _text(resolve(slot.provider.get()), label)
        else:
            content = ""
        spec = slot.spec
        return ContextBlock(
            label,
            slot.kind,
            content,
            self.count(content),
            spec.description,
            spec.limit,
            version,
            keys,
        )

    def _version(self, slot: _Slot, label: str, version: int) -> str:
        getter = getattr(slot.provider, "get_version", None)
        if not callable(getter):
            raise Unsupported(f"block {label!r} keeps no versions")
        content = resolve(getter(version))
        if content is None:
            raise BlockNotFound(f"block {label!r} has no version {version}")
        return _text(content, label)

    def read_all(self) -> list[ContextBlock]:
        """Return every block, in order."""
        return [self.read(label) for label in list(self._slots)]

    def versions(self, label: str) -> list[BlockVersion]:
        """Return every stored version of a writable block, oldest first.

        Raises:
            Unsupported: If the block's provider keeps no versions.
        """
        slot = self._ready(label)
        lister = getattr(slot.provider, "versions", None)
        if not callable(lister):
            raise Unsupported(f"block {label!r} keeps no versions")
        return list(resolve(lister()))

    # ------------------------------------------------------------------ writes

    def _check_limit(self, slot: _Slot, content: str) -> str:
        limit, tokens = slot.spec.limit, self.count(content)
        if limit is not None and tokens > limit:
            raise BlockLimitExceeded(
                f"block {slot.spec.label!r} would hold {tokens} tokens, over its limit of "
                f"{limit}; nothing was written"
            )
        return content

    def _writable(self, label: str) -> _Slot:
        slot = self._ready(label)
        if slot.kind in ("skill", "searchable"):
            raise ReadOnlyBlock(
                f"block {label!r} holds keyed entries: write one entry (with a title) instead"
            )
        if slot.kind != "writable":
            raise ReadOnlyBlock(f"block {label!r} is readonly")
        return slot

    def write(self, label: str, change: Callable[[str], str], author: str) -> ContextBlock:
        """Write `change(current content)` to a writable block, within its limit.

        Raises:
            BlockNotFound: If there is no such block.
            ReadOnlyBlock: If the block cannot be written as a whole.
            BlockLimitExceeded: If the result is over the block's limit (nothing is written).
        """
        slot = self._writable(label)

        def checked(current: str) -> str:
            return self._check_limit(slot, change(current))

        updater = getattr(slot.provider, "update", None)
        if callable(updater):
            content = resolve(updater(checked, author))
        else:
            content = checked(_text(resolve(slot.provider.get()), label))
            resolve(slot.provider.set(content, author))
        spec = slot.spec
        return ContextBlock(
            label, "writable", content, self.count(content), spec.description, spec.limit
        )

    def put_entry(
        self,
        label: str,
        content: str,
        *,
        title: str | None = None,
        description: str | None = None,
        key: str | None = None,
        author: str = "user",
    ) -> str:
        """Write one entry of a skill or searchable block; return its key.

        Without `key`, the key comes from the title (or the content): see `entry_key`.

        Raises:
            ReadOnlyBlock: If the block takes no keyed writes.
        """
        slot = self._ready(label)
        if slot.kind not in ("skill", "searchable") or not takes_keyed_writes(slot.provider):
            raise ReadOnlyBlock(f"block {label!r} takes no keyed entries")
        if not isinstance(content, str) or not content.strip():
            raise InvalidInput("an entry needs non-empty content")
        key = check_key(key) if key is not None else entry_key(title, content)
        entry = Entry(key, title or "", description or title or "", content)
        resolve(slot.provider.put(entry, author))
        return key

    # ------------------------------------------------------------------ skills and search

    def load_entry(self, label: str, key: str) -> str | None:
        """Return a skill entry's content and mark it loaded; None if there is no such key.

        Raises:
            InvalidInput: If the block is not a skill block.
        """
        slot = self._ready(label)
        if slot.kind != "skill":
            raise InvalidInput(f"block {label!r} is not a skill block")
        content = resolve(slot.provider.load(check_key(key)))
        if content is None:
            return None
        keys = self._loaded_keys(label)
        if key not in keys:
            self._save_loaded(label, [*keys, key])
        return _text(content, label)

    def unload_entry(self, label: str, key: str) -> bool:
        """Mark a skill entry unloaded (its record stays); False if it was not loaded."""
        self._slot(label)
        keys = self._loaded_keys(label)
        if key not in keys:
            return False
        self._save_loaded(label, [k for k in keys if k != key])
        return True

    def clear_loaded(self) -> None:
        """Unload every loaded skill entry of the session (the entries themselves stay)."""
        self._loaded.clear()
        if self._persists():
            delete_namespace(self.store, self.scope, self.session_id, LOADED_NAMESPACE)

    def loaded(self) -> dict[str, list[str]]:
        """Return the loaded keys of every skill block that has some."""
        found = {label: self._loaded_keys(label) for label in self.labels("skill")}
        return {label: keys for label, keys in found.items() if keys}

    def _persists(self) -> bool:
        return DOCUMENTS in self.store.capabilities

    def _loaded_keys(self, label: str) -> list[str]:
        if not self._persists():
            return list(self._loaded.get(label, []))
        doc = self.store.get_document(
            self.scope, "session", self.session_id, LOADED_NAMESPACE, label, None
        )
        return [] if doc is None else [str(k) for k in doc.body.get("keys", [])]

    def _save_loaded(self, label: str, keys: list[str]) -> None:
        if not self._persists():
            self._loaded[label] = keys
            return
        self.store.put_document(
            self.scope, "session", self.session_id, LOADED_NAMESPACE, label,
            {"keys": keys}, "", "model", None,
        )  # fmt: skip

    def search(self, label: str, query: str, limit: int = 10) -> list[EntryHit]:
        """Return the entries of a searchable block best matching `query`.

        Raises:
            InvalidInput: If the block is not searchable.
            InvalidQuery: If the query has nothing to match.
        """
        slot = self._ready(label)
        if slot.kind != "searchable":
            raise InvalidInput(f"block {label!r} is not searchable")
        return list(resolve(slot.provider.search(query, limit)))

    # ------------------------------------------------------------------ the system prompt

    def render(self) -> str:
        """Return the system prompt rendered from the blocks now (nothing is stored)."""
        return render_prompt(self.read_all())

    def estimate_prompt(self, blocks: list[ContextBlock]) -> str:
        """Return the prompt a request would carry now, freezing and storing nothing.

        That is the frozen prompt (this handle's, or the stored one with a cached
        prompt), else `blocks` (as just read) rendered.
        """
        if self._frozen is not None:
            return self._frozen
        if self.config.cached_prompt and self._persists():
            stored = self._stored_prompt()
            if stored is not None:
                return stored
        return render_prompt(blocks)

    def freeze(self) -> str:
        """Return the frozen prompt, rendering and storing it on the first call.

        With a cached prompt the store's copy wins, so every process and every restart
        gets the identical text; two processes freezing at once agree on the first one
        stored.
        """
        if not self.config.cached_prompt:
            if self._frozen is None:
                self._frozen = self.render()
            return self._frozen
        stored = self._stored_prompt()
        if stored is not None:
            return stored
        text = self.render()
        try:
            self._store_prompt(text, 0)
        except VersionConflict:
            stored = self._stored_prompt()
            return text if stored is None else stored
        return text

    def refresh_if_frozen(self) -> None:
        """Render a frozen prompt again (stored or in memory); an unfrozen one stays so."""
        if self.config.cached_prompt:
            if self._persists() and self._stored_prompt() is not None:
                self.refresh()
        elif self._frozen is not None:
            self.refresh()

    def refresh(self) -> str:
        """Render the prompt again from the blocks, store it and return it."""
        text = self.render()
        self._frozen = text
        if self.config.cached_prompt:
            self._store_prompt(text, None)
        return text

    def _require_documents(self) -> None:
        if not self._persists():
            raise Unsupported("a cached prompt needs a store with the 'documents' capability")

    def _stored_prompt(self) -> str | None:
        self._require_documents()
        doc = self.store.get_document(
            self.scope, "session", self.session_id, PROMPT_NAMESPACE, PROMPT_KEY, None
        )
        return None if doc is None else str(doc.body.get("text", ""))

    def _store_prompt(self, text: str, expected: int | None) -> None:
        self._require_documents()
        self.store.put_document(
            self.scope, "session", self.session_id, PROMPT_NAMESPACE, PROMPT_KEY,
            {"text": text}, "", "system", expected,
        )  # fmt: skip


def append_line(addition: str) -> Callable[[str], str]:
    """Return the change that appends `addition` on a new line (unless it starts with one)."""

    def append(current: str) -> str:
        if current and not addition.startswith("\n"):
            return f"{current}\n{addition}"
        return current + addition

    return append
