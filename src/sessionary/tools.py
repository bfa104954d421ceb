"""The tools a model uses to manage its own memory, and their dispatcher.

| tool | offered when | does |
| --- | --- | --- |
| `set_context` | a block takes writes | replace or append a block; keyed write to skills/search |
| `load_context` | a skill block exists | load an entry into the conversation |
| `unload_context` | a skill block exists | drop a loaded entry from the context; its record stays |
| `search_context` | a searchable block exists | full-text search one block |
| `session_search` | history tools are on | search the messages of the user's sessions |
| `session_list` | history tools are on | list the user's sessions |
| `session_history` | history tools are on | read the last messages of one session |
| `read_tool_result` | tool-result eviction is on | read a range of a large tool result |

Descriptions are built when asked for and name what each tool can act on right now
(block labels, entry keys, loaded entries). `AsyncToolBox.call` never raises: bad
arguments, unknown tools and failures come back as a short `ToolResult` with
``is_error`` set, for the model to read and correct.
"""

from __future__ import annotations

from typing import Any, Protocol

from sessionary.blocks import ContextBlock, EntryHit
from sessionary.context import AsyncContext, append_line
from sessionary.errors import SessionaryError, SessionNotFound
from sessionary.ids import check_id
from sessionary.model import Message
from sessionary.query import parse_query
from sessionary.records import Scope, SessionFilter, mark_spans
from sessionary.stores.base import AsyncStore
from sessionary.toolspec import (
    ToolFormat,
    ToolResult,
    ToolSpec,
    check_arguments,
    export_tools,
    parse_arguments,
)

__all__ = ["CONTEXT_TOOLS", "HISTORY_TOOLS", "MAX_READ_CHARS", "AsyncReader", "AsyncToolBox"]

CONTEXT_TOOLS = ("set_context", "load_context", "unload_context", "search_context")
HISTORY_TOOLS = ("session_search", "session_list", "session_history")
MAX_READ_CHARS = 20_000
"""The most characters one `read_tool_result` call returns, so a read cannot flood the context."""


class AsyncReader(Protocol):
    """Reads characters `start`..`end` of a stored tool result (`read_tool_result`)."""

    async def __call__(
        self, message_id: str, call_id: str | None, start: int, end: int | None
    ) -> str:
        """Return the characters, or raise a `SessionaryError` saying what is wrong."""
        ...


_MAX_KEYS_LISTED = 50
_MAX_TEXT = 100_000
_MAX_DESCRIPTION = 500  # listed in the system prompt for every entry: kept short
_NO_RESULTS = "No results found."
_NOT_OFFERED = "tool {name!r} is not available here; available tools: {names}"


def _string(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def _integer(description: str, default: int, maximum: int) -> dict[str, Any]:
    return {
        "type": "integer",
        "description": f"{description} (default {default})",
        "minimum": 1,
        "maximum": maximum,
    }


def _schema(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def _usage(block: ContextBlock) -> str:
    if block.limit:
        percent = round(block.tokens * 100 / block.limit)
        return f"Usage: {percent}% ({block.tokens}/{block.limit} tokens)"
    return f"Usage: {block.tokens} tokens"


_MATCHES = (
    "Whole words match, never word stems (deploy* finds deployment); "
    "matched words are marked «like this»."
)


def _hits(hits: list[EntryHit]) -> str:
    return (
        "\n\n".join(f"[{hit.key}]\n{mark_spans(hit.snippet, hit.spans)}" for hit in hits)
        or _NO_RESULTS
    )


def _quoted(labels: list[str]) -> str:
    return ", ".join(f'"{label}"' for label in labels)


class AsyncToolBox:
    """The memory tools of one session (or, without a context, a manager's history tools).

    Args:
        store: The store the session lives in.
        scope: The tenant and user whose data the tools see; nothing outside it.
        context: The session's blocks, or None for the history tools alone.
        history: Whether to offer `session_search`, `session_list` and `session_history`.
        reader: Reads back evicted tool results; offers `read_tool_result` when given.
    """

    def __init__(
        self,
        store: AsyncStore,
        scope: Scope,
        context: AsyncContext | None = None,
        *,
        history: bool = False,
        reader: AsyncReader | None = None,
    ) -> None:
        self.store, self.scope, self.context, self.history = store, scope, context, history
        self.reader = reader

    # ------------------------------------------------------------------ specs

    def names(self) -> list[str]:
        """Return the names of the tools offered now."""
        names = []
        if self.context is not None:
            ctx = self.context
            if ctx.labels("writable") or ctx.keyed_writable():
                names.append("set_context")
            if ctx.labels("skill"):
                names.extend(("load_context", "unload_context"))
            if ctx.labels("searchable"):
                names.append("search_context")
        if self.history:
            names.extend(HISTORY_TOOLS)
        if self.reader is not None:
            names.append("read_tool_result")
        return names

    async def specs(self) -> list[ToolSpec]:
        """Return the tools offered now, with descriptions naming what they act on."""
        return [await self.spec(name) for name in self.names()]

    async def export(self, format: ToolFormat) -> list[dict[str, Any]]:
        """Return the tools offered now in a provider's format (see `ToolSpec.export`)."""
        return export_tools(await self.specs(), format)

    async def spec(self, name: str) -> ToolSpec:
        """Return one tool's definition as of now."""
        build = getattr(self, f"_spec_{name}")
        spec: ToolSpec = await build()
        return spec

    def _ctx(self) -> AsyncContext:
        if self.context is None:
            raise SessionaryError("this tool needs a session's context blocks")
        return self.context

    async def _spec_set_context(self) -> ToolSpec:
        ctx = self._ctx()
        plain, keyed = ctx.labels("writable"), ctx.keyed_writable()
        lines = ["Write to a context block that is part of your system prompt. Blocks:"]
        for label in plain + keyed:
            kind = "writable" if label in plain else f"{ctx.slot_kind(label)}, keyed entries"
            lines.append(f'- "{label}" ({kind}): {ctx.description(label) or "no description"}')
        lines.append("Writes are durable and persist across sessions.")
        properties = {
            "label": _string("The block to write.", enum=plain + keyed),
            "content": _string("The text to write.", maxLength=_MAX_TEXT),
        }
        if plain:
            properties["action"] = _string(
                "replace (default) rewrites the whole block; append adds a line.",
                enum=["replace", "append"],
            )
        if keyed:
            lines.append(
                "For keyed blocks give a short title: the entry's key comes from it, so the "
                "same title updates the same entry. `action` does not apply to them."
            )
            properties["title"] = _string("Keyed blocks: the entry's title.", maxLength=200)
            properties["description"] = _string(
                "Skill blocks: a one-line summary.", maxLength=_MAX_DESCRIPTION
            )
            properties["key"] = _string("Keyed blocks: overwrite the entry with this key.")
        return ToolSpec("set_context", "\n".join(lines), _schema(properties, "label", "content"))

    async def _spec_load_context(self) -> ToolSpec:
        ctx = self._ctx()
        labels = ctx.labels("skill")
        lines = ["Load a document from a skill block into the conversation, by key."]
        for label in labels:
            keys = (await ctx.read(label)).keys
            shown = ", ".join(keys[:_MAX_KEYS_LISTED]) or "(none yet)"
            more = (
                f" and {len(keys) - _MAX_KEYS_LISTED} more" if len(keys) > _MAX_KEYS_LISTED else ""
            )
            lines.append(f'- "{label}" keys: {shown}{more}')
        properties = {
            "label": _string("The skill block.", enum=labels),
            "key": _string("The document's key.", minLength=1),
        }
        return ToolSpec("load_context", "\n".join(lines), _schema(properties, "label", "key"))

    async def _spec_unload_context(self) -> ToolSpec:
        ctx = self._ctx()
        loaded = await ctx.loaded()
        now = ", ".join(f"{label}:{key}" for label, keys in loaded.items() for key in keys)
        text = (
            "Unload a document you loaded with load_context, to free context space; it can "
            f"be loaded again. Currently loaded: {now or 'nothing'}."
        )
        properties = {
            "label": _string("The skill block.", enum=ctx.labels("skill")),
            "key": _string("The loaded document's key.", minLength=1),
        }
        return ToolSpec("unload_context", text, _schema(properties, "label", "key"))

    async def _spec_search_context(self) -> ToolSpec:
        labels = self._ctx().labels("searchable")
        text = (
            f"Full-text search one context block. Only these blocks are searchable: "
            f'{_quoted(labels)}. Words must all match; use OR for alternatives, "..." for '
            "a phrase, a trailing * for a prefix. " + _MATCHES
        )
        properties = {
            "label": _string("The block to search.", enum=labels),
            "query": _string("What to look for.", minLength=1, maxLength=1000),
            "limit": _integer("The most results", 10, 50),
        }
        return ToolSpec("search_context", text, _schema(properties, "label", "query"))

    async def _spec_session_search(self) -> ToolSpec:
        text = "Search the messages of all your past sessions with this user. " + _MATCHES
        properties = {
            "query": _string("What to look for.", minLength=1, maxLength=1000),
            "limit": _integer("The most results", 10, 50),
        }
        return ToolSpec("session_search", text, _schema(properties, "query"))

    async def _spec_session_list(self) -> ToolSpec:
        text = "List your sessions with this user, most recently active first."
        properties = {
            "limit": _integer("The most sessions", 20, 100),
            "cursor": _string("The cursor a previous call returned, for the next page."),
        }
        return ToolSpec("session_list", text, _schema(properties))

    async def _spec_session_history(self) -> ToolSpec:
        text = "Read the last messages of one of your sessions (ids from session_list)."
        properties = {
            "session_id": _string("The session's id.", minLength=1),
            "limit": _integer("The most messages", 20, 200),
        }
        return ToolSpec("session_history", text, _schema(properties, "session_id"))

    async def _spec_read_tool_result(self) -> ToolSpec:
        text = (
            "Read part of a large tool result that the conversation shows only as a preview."
            " Pass the message_id and call_id the preview names and a character range; at"
            f" most {MAX_READ_CHARS} characters come back per call."
        )
        properties = {
            "message_id": _string("The message id the preview names.", minLength=1),
            "call_id": _string("The call id the preview names."),
            "start": {"type": "integer", "minimum": 0, "description": "First character."},
            "end": {"type": "integer", "minimum": 0, "description": "One past the last."},
        }
        return ToolSpec("read_tool_result", text, _schema(properties, "message_id", "start"))

    # ------------------------------------------------------------------ dispatch

    async def call(self, name: str, arguments: object = None) -> ToolResult:
        """Run a tool and return its result; never raises (errors come back as results).

        Args:
            name: The tool's name.
            arguments: A dict, or the JSON object string a model sent.
        """
        try:
            offered = self.names()
            if name not in offered:
                names = ", ".join(offered) or "none"
                return ToolResult(f"Error: {_NOT_OFFERED.format(name=name, names=names)}", True)
            args = parse_arguments(arguments)
            check_arguments((await self.spec(name)).parameters, args)
            handler = getattr(self, f"_{name}")
            text: str = await handler(args)
            return ToolResult(text)
        except SessionaryError as exc:
            return ToolResult(f"Error: {exc}", True)
        except Exception as exc:  # the agent loop must go on whatever a provider does
            return ToolResult(f"Error: {name} failed ({type(exc).__name__}: {exc})", True)

    async def _read_tool_result(self, args: dict[str, Any]) -> str:
        assert self.reader is not None  # offered only with a reader
        start, end = args["start"], args.get("end")
        end = start + MAX_READ_CHARS if end is None else min(end, start + MAX_READ_CHARS)
        return await self.reader(args["message_id"], args.get("call_id"), start, end)

    async def _set_context(self, args: dict[str, Any]) -> str:
        ctx, label, content = self._ctx(), args["label"], args["content"]
        if ctx.slot_kind(label) in ("skill", "searchable"):
            key = await ctx.put_entry(
                label,
                content,
                title=args.get("title"),
                description=args.get("description"),
                key=args.get("key"),
                author="model",
            )
            return f'Saved entry "{key}" in {label}.'
        if args.get("action", "replace") == "append":
            change = append_line(content)
        else:
            change = lambda _old: content  # noqa: E731
        block = await ctx.write(label, change, "model")
        return f"Written to {label}. {_usage(block)}"

    async def _load_context(self, args: dict[str, Any]) -> str:
        label, key = args["label"], args["key"]
        content = await self._ctx().load_entry(label, key)
        if content is None:
            return f'Not found: no document "{key}" in {label}.'
        return content

    async def _unload_context(self, args: dict[str, Any]) -> str:
        label, key = args["label"], args["key"]
        if await self._ctx().unload_entry(label, key):
            return f'Unloaded "{key}" from {label}. Context reclaimed; load it again if needed.'
        return f'"{key}" is not loaded in {label}.'

    async def _search_context(self, args: dict[str, Any]) -> str:
        hits = await self._ctx().search(args["label"], args["query"], args.get("limit", 10))
        return _hits(hits)

    async def _session_search(self, args: dict[str, Any]) -> str:
        query = parse_query(args["query"])
        hits = await self.store.search(self.scope, query, args.get("limit", 10), None, None)
        lines = [
            f"[session {h.session_id} · {h.role} · {h.created_at:%Y-%m-%d %H:%M}] "
            + mark_spans(h.snippet, h.spans)
            for h in hits
        ]
        return "\n---\n".join(lines) or _NO_RESULTS

    async def _session_list(self, args: dict[str, Any]) -> str:
        page = await self.store.list_sessions(
            self.scope, SessionFilter(), args.get("limit", 20), args.get("cursor")
        )
        lines = [
            f"{info.id} · {info.name or '(unnamed)'} · {info.message_count} messages"
            + (f" · updated {info.updated_at:%Y-%m-%d %H:%M}" if info.updated_at else "")
            for info in page.items
        ]
        if page.next_cursor:
            lines.append(f"More sessions: call again with cursor={page.next_cursor}")
        return "\n".join(lines) or "No sessions yet."

    async def _session_history(self, args: dict[str, Any]) -> str:
        session_id = check_id(args["session_id"], "session id")
        if await self.store.get_session(self.scope, session_id) is None:
            raise SessionNotFound(f"no session {session_id!r}; see session_list")
        path = await self.store.get_path(self.scope, session_id, None, args.get("limit", 20))
        return "\n\n".join(_line(message) for message in path) or "The session is empty."


def _line(message: Message) -> str:
    text = message.text
    results = [part.output for part in message.tool_results]
    if results:
        text = "\n".join(str(output) for output in results)
    calls = ", ".join(call.name for call in message.tool_calls)
    return f"[{message.role}] {text}" + (f" (called: {calls})" if calls else "")
