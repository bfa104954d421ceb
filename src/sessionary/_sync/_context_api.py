# This file was generated from src/sessionary/_context_api.py by tools/async_to_sync.py.
# Do not edit it: edit the source and run `python tools/async_to_sync.py`.
"""The context-block and tool methods of `Session` and `SessionManager`.

They live here, as mixins, so that session.py and manager.py stay about sessions; the
work is done by `sessionary._sync.context` (blocks, prompt) and `sessionary._sync.tools` (tools).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from sessionary._sync.context import Context, append_line
from sessionary._sync.stores.base import Store
from sessionary._sync.tools import Reader, ToolBox
from sessionary.blocks import BlockSpec, BlockVersion, ContextBlock, EntryHit, SessionConfig
from sessionary.errors import InvalidInput
from sessionary.model import Message
from sessionary.records import Scope
from sessionary.stores._common import check_limit
from sessionary.tokens import PromptParts
from sessionary.toolspec import ToolFormat, ToolResult, ToolSpec, reclaim_unloaded
from sessionary.window import pair_safe_start

__all__ = ["ContextMixin", "HistoryToolsMixin"]


def _check_content(content: object) -> str:
    if not isinstance(content, str):
        raise InvalidInput(f"block content must be a string, not {type(content).__name__}")
    return content


class ContextMixin:
    """Context blocks, the system prompt and the memory tools of one session handle.

    Blocks come from the handle's `SessionConfig`; `add_context` and `remove_context`
    change this handle only. Stored block content, the frozen prompt (with
    `cached_prompt`) and the loaded skill entries live in the store and are shared by
    every handle on the session.
    """

    _store: Store
    _scope: Scope
    _id: str
    _config: SessionConfig
    _context_state: Context | None

    if TYPE_CHECKING:  # Session defines it

        def _context_view(self, leaf: str | None) -> list[Message]: ...

    @property
    def config(self) -> SessionConfig:
        """The handle's context configuration (blocks added at run time included)."""
        return self._config

    def _context(self) -> Context:
        if self._context_state is None:
            self._context_state = Context(self._store, self._scope, self._id, self._config)
        return self._context_state

    def add_context(self, label: str, source: object = None, **options: Any) -> ContextBlock:
        """Add a block after the others and return it as read now.

        The arguments are those of `SessionConfig.with_block`. A frozen prompt does not
        change until `refresh_system_prompt`.

        Raises:
            InvalidInput: If the label is taken or an argument is malformed.
            Unsupported: If a stored block needs a capability the store lacks.
        """
        spec = BlockSpec(label, source, **options)
        context = self._context()
        context.add(spec)
        self._config = dataclasses.replace(self._config, blocks=(*self._config.blocks, spec))
        return context.read(spec.label)

    def remove_context(self, label: str) -> bool:
        """Remove a block from this handle (stored content stays); False if there was none."""
        removed = self._context().remove(label)
        blocks = tuple(spec for spec in self._config.blocks if spec.label != label)
        self._config = dataclasses.replace(self._config, blocks=blocks)
        return removed

    def get_context_block(self, label: str, *, version: int | None = None) -> ContextBlock:
        """Return one block as it is now, or a writable block as of a stored `version`.

        Raises:
            BlockNotFound: If there is no such block (or version).
            Unsupported: If `version` is given and the block keeps no versions.
        """
        return self._context().read(label, version)

    def get_context_blocks(self) -> list[ContextBlock]:
        """Return every block as it is now, in prompt order."""
        return self._context().read_all()

    def context_block_versions(self, label: str) -> list[BlockVersion]:
        """Return every stored version of a writable block (with author), oldest first.

        Raises:
            Unsupported: If the block keeps no versions.
        """
        return self._context().versions(label)

    def replace_context_block(
        self, label: str, content: str, *, author: str = "user"
    ) -> ContextBlock:
        """Replace a writable block's content; `author` is kept with the new version.

        Raises:
            BlockNotFound: If there is no such block.
            ReadOnlyBlock: If the block is readonly or keyed.
            BlockLimitExceeded: If the content is over the block's limit (nothing changes).
        """
        new = _check_content(content)
        return self._context().write(label, lambda _old: new, author)

    def append_context_block(
        self, label: str, content: str, *, author: str = "user"
    ) -> ContextBlock:
        """Append to a writable block, on a new line unless `content` starts with one.

        Raises:
            BlockNotFound: If there is no such block.
            ReadOnlyBlock: If the block is readonly or keyed.
            BlockLimitExceeded: If the result is over the block's limit (nothing changes).
        """
        change = append_line(_check_content(content))
        return self._context().write(label, change, author)

    def put_context_entry(
        self,
        label: str,
        content: str,
        *,
        title: str | None = None,
        description: str | None = None,
        key: str | None = None,
        author: str = "user",
    ) -> str:
        """Write one entry of a skill or searchable block and return its key.

        Without `key` the key is derived from the title (else the content), so writing
        the same title again updates the same entry.

        Raises:
            ReadOnlyBlock: If the block takes no keyed writes.
        """
        return self._context().put_entry(
            label, content, title=title, description=description, key=key, author=author
        )

    def load_context_entry(self, label: str, key: str) -> str | None:
        """Return a skill entry's content and mark it loaded; None if there is no such key."""
        return self._context().load_entry(label, key)

    def unload_context_entry(self, label: str, key: str) -> bool:
        """Mark a loaded skill entry unloaded (the entry itself stays); False if not loaded."""
        return self._context().unload_entry(label, key)

    def loaded_context(self) -> dict[str, list[str]]:
        """Return the keys of the skill entries loaded in this session, by block label."""
        return self._context().loaded()

    def context_history(self, leaf: str | None = None, limit: int | None = None) -> list[Message]:
        """Return the history up to `leaf` (default: the head) as a model should see it.

        Compaction overlays show as their summaries, large tool results as previews (with
        tool-result eviction on), over-long tool arguments clipped, and the output of
        `load_context` calls for entries since unloaded (or loaded again later) as a
        short note. Nothing stored changes: the originals stay readable and searchable.
        With `limit`, only the most recent `limit` messages, widened so that no tool
        result is shown without its call.
        """
        check_limit(limit)
        shown = reclaim_unloaded(self._context_view(leaf), self.loaded_context())
        if limit is None or limit >= len(shown):
            return shown
        return shown[pair_safe_start(shown, len(shown) - limit) :]

    def search_context(self, label: str, query: str, *, limit: int = 10) -> list[EntryHit]:
        """Search one searchable block; see `sessionary.query` for the query language.

        Raises:
            InvalidInput: If `limit` is not from 1 to `MAX_LIMIT`, or the block is not
                searchable.
            InvalidQuery: If the query has nothing to match.
        """
        check_limit(limit)
        return self._context().search(label, query, limit)

    def system_prompt(self) -> str:
        """Return the prompt rendered from the blocks now, freezing nothing."""
        return self._context().render()

    def freeze_system_prompt(self) -> str:
        """Return the frozen system prompt, rendering it on the first call.

        With `cached_prompt` it is stored, so other processes and restarts get the
        identical text. Block edits show only after `refresh_system_prompt`.
        """
        return self._context().freeze()

    def refresh_system_prompt(self) -> str:
        """Render the system prompt from the blocks again, store it and return it."""
        return self._context().refresh()

    def _prompt_parts(self) -> PromptParts:
        """What a request holds beside the messages, for the token estimate (no writes)."""
        context = self._context()
        blocks = context.read_all()
        system = context.estimate_prompt(blocks)
        tools = tuple(spec.to_openai_chat() for spec in self._toolbox().specs())
        return PromptParts(system, tuple(blocks), tools)

    def _tool_reader(self) -> Reader | None:
        """What reads back evicted tool results, when the session evicts them."""
        return None

    def _toolbox(self) -> ToolBox:
        return ToolBox(
            self._store,
            self._scope,
            self._context(),
            history=self._config.history_tools,
            reader=self._tool_reader(),
        )

    def tools(self) -> list[ToolSpec]:
        """Return the memory tools offered now, described with what they can act on."""
        return self._toolbox().specs()

    def export_tools(self, format: ToolFormat = "openai-chat") -> list[dict[str, Any]]:
        """Return the memory tools in a provider's form (one of `toolspec.TOOL_FORMATS`)."""
        return self._toolbox().export(format)

    def call_tool(self, name: str, arguments: object = None) -> ToolResult:
        """Run a memory tool the model called; never raises (errors are results).

        Args:
            name: The tool's name.
            arguments: A dict, or the JSON object string the model sent.
        """
        return self._toolbox().call(name, arguments)


class HistoryToolsMixin:
    """`session_search`, `session_list` and `session_history` over a manager's scope."""

    store: Store
    scope: Scope

    def _history_toolbox(self) -> ToolBox:
        return ToolBox(self.store, self.scope, None, history=True)

    def tools(self) -> list[ToolSpec]:
        """Return the session history tools."""
        return self._history_toolbox().specs()

    def export_tools(self, format: ToolFormat = "openai-chat") -> list[dict[str, Any]]:
        """Return the history tools in a provider's form (one of `toolspec.TOOL_FORMATS`)."""
        return self._history_toolbox().export(format)

    def call_tool(self, name: str, arguments: object = None) -> ToolResult:
        """Run a history tool; never raises (errors are results)."""
        return self._history_toolbox().call(name, arguments)
