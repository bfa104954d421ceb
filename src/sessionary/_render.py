"""How the command line draws sessions: plain functions that return lines of text.

`render_message`, `render_tree`, `render_session`, `render_session_table` and `render_hit`
take a `Style` (ANSI colors, or plain text) and return lines without newlines, so the
commands and the demo draw sessions the same way and tests can read them as strings.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TextIO, get_args

from sessionary.model import (
    FilePart,
    Message,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from sessionary.records import SearchHit, SessionInfo, State

__all__ = [
    "Style",
    "plural",
    "render_hit",
    "render_message",
    "render_session",
    "render_session_table",
    "render_tree",
    "short_id",
    "summarize",
]

_ROLE_COLORS = {"system": "35", "user": "32", "assistant": "36", "tool": "33"}
_ROLE_WIDTH = max(map(len, get_args(Role)))
_MARKED = re.compile(r"\*\*(.+?)\*\*", re.DOTALL)
_UNLIMITED = sys.maxsize


@dataclass(frozen=True)
class Style:
    """How output is decorated: ANSI colors, or plain text when `color` is false."""

    color: bool = False

    @classmethod
    def for_stream(cls, stream: TextIO) -> Style:
        """Return the style for `stream`: colors only on a terminal, never with NO_COLOR set."""
        try:
            tty = stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        return cls(color=tty and not os.environ.get("NO_COLOR"))

    def paint(self, text: str, code: str) -> str:
        """Return `text` wrapped in the ANSI SGR `code`, or unchanged without colors."""
        return f"\x1b[{code}m{text}\x1b[0m" if self.color and text else text

    def bold(self, text: str) -> str:
        """Return `text` in bold."""
        return self.paint(text, "1")

    def dim(self, text: str) -> str:
        """Return `text` dimmed."""
        return self.paint(text, "2")

    def role(self, role: str, width: int = 0) -> str:
        """Return a role name, padded to `width`, in the role's color."""
        return self.paint(role.ljust(width), "1;" + _ROLE_COLORS.get(role, "39"))

    def highlight(self, snippet: str) -> str:
        """Return a search snippet with its `**match**` marks in bold (as-is without colors)."""
        if not self.color:
            return snippet
        return _MARKED.sub(lambda found: self.bold(found.group(1)), snippet)


def short_id(value: str) -> str:
    """Return a short form of an id for display: its random tail if it is long.

    Generated ids are UUIDv7, whose leading characters are a timestamp shared by
    messages written together, so the tail is the part that tells them apart.
    """
    return value if len(value) <= 12 else value[-8:]


def _shorten(text: str, width: int) -> str:
    """Return `text` on one line, whitespace collapsed, cut to `width` with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: max(width - 1, 0)] + "…"


def _clip_lines(text: str, max_lines: int, line_chars: int) -> list[str]:
    """Return the lines of `text`, each cut to `line_chars`, at most `max_lines` of them.

    A long text keeps its first and last lines, since the end of a tool's output (the
    error, the summary) matters as much as its start.
    """
    lines = [
        line if len(line) <= line_chars else line[: line_chars - 1] + "…"
        for line in text.splitlines() or [""]
    ]
    if len(lines) <= max_lines:
        return lines
    head = (max_lines + 1) // 2
    tail = max_lines - head
    hidden = plural(len(lines) - head - tail, "more line")
    return [*lines[:head], f"… {hidden} …", *lines[len(lines) - tail :]]


def _json_text(value: Any) -> str:
    """Return a JSON value as text: a string as itself, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _format_call(call: ToolCallPart) -> str:
    """Return a tool call as `name(key=value, ...)`, the values in JSON."""
    arguments = call.arguments
    if isinstance(arguments, dict):
        inner = ", ".join(f"{key}={_json_value(v)}" for key, v in arguments.items())
    elif arguments in (None, ""):
        inner = ""
    else:
        inner = _json_text(arguments)
    return f"{call.name}({inner})"


def _json_value(value: Any) -> str:
    """Return a JSON value as JSON text (strings quoted)."""
    return json.dumps(value, ensure_ascii=False, default=str)


def plural(count: int, noun: str) -> str:
    """Return `count` and `noun`, the noun plural unless the count is one (`2 sessions`)."""
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def _when(moment: datetime | None) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S") if moment else "-"


def _part_lines(part: Part, style: Style, full: bool) -> list[str]:
    """Return the lines showing one part of a message (long ones clipped unless `full`)."""
    if isinstance(part, TextPart):
        return _clip_lines(part.text, *((_UNLIMITED,) * 2 if full else (40, 2000)))
    if isinstance(part, ReasoningPart):
        text = part.text if full else _shorten(part.text, 100)
        return [style.dim(f"✻ {line}") for line in text.splitlines() or [""]]
    if isinstance(part, ToolCallPart):
        call = _format_call(part)
        return [style.paint("→ ", "36") + (call if full else _shorten(call, 200))]
    if isinstance(part, ToolResultPart):
        lines = _clip_lines(_json_text(part.output), *((_UNLIMITED,) * 2 if full else (10, 300)))
        arrow = style.paint("← error: ", "31") if part.is_error else style.paint("← ", "33")
        return [arrow + lines[0], *(f"  {line}" for line in lines[1:])]
    if isinstance(part, FilePart):
        where = part.filename or part.url or "inline data"
        return [style.dim(f"[file {where} ({part.mime_type})]")]
    label = f"[data {part.name}]" if part.name else "[data]"
    return [style.dim(f"{label} {_shorten(_json_text(part.data), 100)}")]


def render_message(message: Message, style: Style, *, full: bool = False) -> list[str]:
    """Return the lines showing one message: role, short id and time, then its parts.

    Text is shown whole (up to 40 lines); tool calls as `→ name(args)`; tool results as
    `← output`, clipped to a few lines; reasoning dimmed and cut to one line.

    Args:
        message: The message to show.
        style: Colors or plain text.
        full: Show long text, outputs and reasoning whole instead of clipped.
    """
    stamp = style.dim(f"{short_id(message.id)}  {_when(message.created_at)}")
    body = [line for part in message.parts for line in _part_lines(part, style, full)]
    return [f"{style.role(message.role)}  {stamp}", *(f"  {line}".rstrip() for line in body)]


def _summary_piece(part: Part) -> str:
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ToolCallPart):
        return "→ " + _format_call(part)
    if isinstance(part, ToolResultPart):
        return ("← error: " if part.is_error else "← ") + _json_text(part.output)
    if isinstance(part, FilePart):
        return f"[file {part.filename or part.mime_type}]"
    return ""  # reasoning and data parts stay out of a one-line summary


def summarize(message: Message, width: int) -> str:
    """Return a message as one line of at most `width` characters, for trees and lists."""
    pieces = [piece for piece in map(_summary_piece, message.parts) if piece.strip()]
    if not pieces:
        pieces = ["(reasoning only)" if message.parts else "(empty)"]
    return _shorten("  ".join(pieces), width)


_Entry = tuple[Message, str, str]  # a message, the prefix of its line, the prefix below it


def _branch_entries(kids: Sequence[Message], indent: str) -> list[_Entry]:
    last = len(kids) - 1
    return [
        (kid, indent + ("└─ " if i == last else "├─ "), indent + ("   " if i == last else "│  "))
        for i, kid in enumerate(kids)
    ]


def _children(messages: Sequence[Message]) -> tuple[list[Message], dict[str, list[Message]]]:
    ids = {message.id for message in messages}
    roots: list[Message] = []
    children: dict[str, list[Message]] = {}
    for message in messages:
        if message.parent_id is None or message.parent_id not in ids:
            roots.append(message)
        else:
            children.setdefault(message.parent_id, []).append(message)
    return roots, children


def _path_ids(messages: Sequence[Message], head_id: str | None) -> set[str]:
    parents = {message.id: message.parent_id for message in messages}
    path: set[str] = set()
    current = head_id
    while current is not None and current in parents and current not in path:
        path.add(current)
        current = parents[current]
    return path


def _tree_line(entry: _Entry, head_id: str | None, active: bool, style: Style, width: int) -> str:
    message, lead, _ = entry
    sid = short_id(message.id)
    mark = "  ◀ head" if message.id == head_id else ""
    room = width - len(lead) - _ROLE_WIDTH - len(sid) - len(mark) - 3
    summary = summarize(message, max(room, 24))
    role = style.role(message.role, _ROLE_WIDTH)
    text = summary if active else style.dim(summary)
    return f"{style.dim(lead)}{role} {style.dim(sid)}  {text}{style.bold(mark)}"


def render_tree(
    messages: Sequence[Message], head_id: str | None, style: Style, width: int = 100
) -> list[str]:
    """Return the lines drawing a session's whole message tree, with the head marked.

    A message's only child is drawn below it at the same depth; where a message has
    several children, each starts a branch (`├─`, `└─`) one step further in. Messages
    off the active path (root to head) are dimmed when colors are on.

    Args:
        messages: Every message of the session, each with its `parent_id`, parents
            before children (the order `SessionManager.export` yields them in).
        head_id: The id of the session's head, marked `◀ head`.
        style: Colors or plain text.
        width: The longest a line may be; summaries are cut to fit.
    """
    roots, children = _children(messages)
    active = _path_ids(messages, head_id)
    stack: list[_Entry] = (
        [(roots[0], "", "")] if len(roots) == 1 else _branch_entries(roots, "")[::-1]
    )
    lines: list[str] = []
    while stack:  # iterative, so a chain of any length cannot overflow the call stack
        entry = stack.pop()
        message, _, indent = entry
        lines.append(_tree_line(entry, head_id, message.id in active, style, width))
        kids = children.get(message.id, [])
        if len(kids) == 1:
            stack.append((kids[0], indent, indent))
        else:
            stack.extend(_branch_entries(kids, indent)[::-1])
    return lines


def _usage(info: SessionInfo) -> str:
    if not (info.input_tokens or info.output_tokens or info.cost):
        return ""
    tokens = f"{info.input_tokens:,} in / {info.output_tokens:,} out tokens"
    return f"{tokens}, ${info.cost:.4f}" if info.cost else tokens


def _ended(info: SessionInfo) -> str:
    if info.ended_at is None and info.end_reason is None:
        return ""
    return f"{info.end_reason or 'ended'} ({_when(info.ended_at)})"


def render_session(info: SessionInfo, state: State | None, style: Style) -> list[str]:
    """Return the lines showing a session's registry row and, if given, its state.

    Args:
        info: The session's row.
        state: The session's state, or None to leave it out.
        style: Colors or plain text.
    """
    fields = [
        ("name", info.name or ""),
        ("model", info.model or ""),
        ("source", info.source or ""),
        ("parent", info.parent_session_id or ""),
        ("created", _when(info.created_at)),
        ("updated", _when(info.updated_at)),
        ("messages", f"{info.message_count:,}"),
        ("head", info.head_id or ""),
        ("usage", _usage(info)),
        ("ended", _ended(info)),
        ("metadata", _json_text(info.metadata) if info.metadata else ""),
    ]
    if state is not None and state.data:
        fields.append(("state", f"v{state.version} {_shorten(_json_text(state.data), 200)}"))
    rows = [f"  {style.dim(key.ljust(9))} {value}" for key, value in fields if value]
    return [style.bold(f"session {info.id}"), *rows]


def render_session_table(infos: Sequence[SessionInfo], style: Style) -> list[str]:
    """Return a table of sessions: id, name, messages, updated, model, and end reason."""
    header = ("ID", "NAME", "MSGS", "UPDATED", "MODEL", "ENDED")
    rows = [
        (
            info.id,
            _shorten(info.name or "-", 32),
            f"{info.message_count:,}",
            _when(info.updated_at),
            info.model or "-",
            info.end_reason or ("ended" if info.ended_at else "-"),
        )
        for info in infos
    ]
    widths = [max(len(row[column]) for row in (header, *rows)) for column in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        padded = [
            cell.rjust(width) if column == 2 else cell.ljust(width)
            for column, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(padded).rstrip()

    return [style.bold(line(header)), *map(line, rows)]


def render_hit(hit: SearchHit, style: Style) -> list[str]:
    """Return the lines showing a search hit: where it is, its rank, then its snippet."""
    where = f"session {hit.session_id}  message {hit.message_id}"
    head = f"{style.role(hit.role, _ROLE_WIDTH)} {where}  {style.dim(f'rank {hit.rank:.3g}')}"
    return [head, "  " + style.highlight(" ".join(hit.snippet.split()))]
