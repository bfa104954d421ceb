"""The `sessionary` command line: thin commands over the synchronous `SessionManager`.

```
sessionary [--db URL] [--tenant T] [--user U] COMMAND ...

ls       sessions, most recently active first
show     a session's row and history, or with --tree its whole message tree
search   full-text search over the messages of every session
export   sessions as JSON lines, one record per line
import   sessions from an export
rm       delete sessions
demo     build a realistic agent conversation and show it off
```

`--db` defaults to the `SESSIONARY_URL` environment variable, else `./sessionary.db` (a
plain path is a SQLite file). Every error prints one line, `sessionary: error: ...`, and
exits with status 1; usage errors exit with 2 and an interrupt with 130. Colors are used
only when standard output is a terminal and `NO_COLOR` is unset.

The renderers (`render_message`, `render_tree`, `render_session`, ...) are plain functions
returning lines, so the demo and the commands draw sessions the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TextIO
from urllib.parse import urlsplit

from sessionary import __version__
from sessionary._sync.manager import SessionManager
from sessionary._sync.session import Session
from sessionary.errors import SessionaryError, SessionNotFound
from sessionary.model import (
    FilePart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from sessionary.records import SearchHit, SessionInfo, State, info_to_dict

__all__ = [
    "DEFAULT_DB",
    "ENV_URL",
    "CLIError",
    "Context",
    "Demo",
    "Style",
    "build_demo",
    "build_parser",
    "main",
    "render_hit",
    "render_message",
    "render_session",
    "render_session_table",
    "render_tree",
    "short_id",
    "show_lines",
    "summarize",
]

ENV_URL = "SESSIONARY_URL"
DEFAULT_DB = "./sessionary.db"

_ROLES = ("system", "user", "assistant", "tool")
_ROLE_COLORS = {"system": "35", "user": "32", "assistant": "36", "tool": "33"}
_ROLE_WIDTH = max(map(len, _ROLES))
_MARKED = re.compile(r"\*\*(.+?)\*\*", re.DOTALL)
_UNLIMITED = sys.maxsize
_LIST_PAGE = 200


class CLIError(Exception):
    """A command-line mistake the library does not know about (a bad file, a bad line)."""


# ---------------------------------------------------------------------------- rendering


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
    hidden = _plural(len(lines) - head - tail, "more line")
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


def _plural(count: int, noun: str) -> str:
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


# ---------------------------------------------------------------------------- commands


@dataclass
class Context:
    """What every command works with: the manager, the output stream and its style."""

    manager: SessionManager
    out: TextIO
    style: Style
    width: int
    command: str
    """How to invoke sessionary on this store again (`sessionary --db ...`), for hints."""

    def echo(self, line: str = "") -> None:
        """Print one line to the output."""
        self.out.write(line + "\n")

    def echo_lines(self, lines: Iterable[str]) -> None:
        """Print lines to the output."""
        for line in lines:
            self.echo(line)

    def echo_json(self, value: Any) -> None:
        """Print a JSON value, indented."""
        self.echo(json.dumps(value, ensure_ascii=False, indent=2, default=str))


Handler = Callable[[Context, argparse.Namespace], int]


def _require(manager: SessionManager, session_id: str) -> SessionInfo:
    info = manager.get(session_id)
    if info is None:
        raise SessionNotFound(f"no session {session_id!r} in this scope")
    return info


def _all_messages(manager: SessionManager, session_id: str) -> list[Message]:
    """Return every message of a session, parents first, in one pass over its export."""
    return [
        Message.from_dict(record["message"])
        for record in manager.export(session_id)
        if record.get("type") == "message"
    ]


def _history_lines(ctx: Context, session: Session, limit: int | None, full: bool) -> list[str]:
    history = session.history(limit=limit)
    lines: list[str] = []
    if limit is not None and history and history[0].parent_id is not None:
        earlier = session.path_length() - len(history)
        lines.append(ctx.style.dim(f"… {_plural(earlier, 'earlier message')} not shown"))
    for message in history:
        lines.extend(["", *render_message(message, ctx.style, full=full)])
    return lines


def show_lines(
    ctx: Context,
    session_id: str,
    *,
    tree: bool = False,
    limit: int | None = None,
    full: bool = False,
    header: bool = True,
) -> list[str]:
    """Return what `sessionary show` prints for a session: its row, then history or tree.

    Args:
        ctx: The command's context.
        session_id: The session to show.
        tree: Draw the whole message tree instead of the active history.
        limit: Show only the last `limit` messages of the history.
        full: Show long text, tool output and reasoning whole.
        header: Start with the session's row and state.

    Raises:
        SessionNotFound: If there is no such session in the manager's scope.
    """
    info = _require(ctx.manager, session_id)
    session = ctx.manager.session(session_id)
    lines = render_session(info, session.get_state(), ctx.style) if header else []
    if tree:
        messages = _all_messages(ctx.manager, session_id)
        return [*lines, "", *render_tree(messages, info.head_id, ctx.style, ctx.width)]
    return lines + _history_lines(ctx, session, limit, full)


def cmd_ls(ctx: Context, args: argparse.Namespace) -> int:
    """List sessions, most recently active first."""
    page = ctx.manager.list(limit=_LIST_PAGE if args.all else args.limit)
    infos = list(page.items)
    while args.all and page.next_cursor is not None:
        page = ctx.manager.list(limit=_LIST_PAGE, cursor=page.next_cursor)
        infos.extend(page.items)
    if args.json:
        ctx.echo_json([info_to_dict(info) for info in infos])
    elif infos:
        ctx.echo_lines(render_session_table(infos, ctx.style))
    else:
        print("no sessions", file=sys.stderr)
    if page.next_cursor is not None and not args.json:
        print(f"(more sessions: use --all or a larger --limit than {args.limit})", file=sys.stderr)
    return 0


def cmd_show(ctx: Context, args: argparse.Namespace) -> int:
    """Show a session's row and history, or its whole tree."""
    if not args.json:
        ctx.echo_lines(show_lines(ctx, args.id, tree=args.tree, limit=args.limit, full=args.full))
        return 0
    info = _require(ctx.manager, args.id)
    session = ctx.manager.session(args.id)
    state = session.get_state()
    value: dict[str, Any] = {
        "session": info_to_dict(info),
        "state": {"data": state.data, "version": state.version},
    }
    if args.tree:
        value["messages"] = [m.to_dict() for m in _all_messages(ctx.manager, args.id)]
    else:
        value["history"] = [m.to_dict() for m in session.history(limit=args.limit)]
    ctx.echo_json(value)
    return 0


def _hit_to_dict(hit: SearchHit) -> dict[str, Any]:
    return {
        "session_id": hit.session_id,
        "message_id": hit.message_id,
        "role": hit.role,
        "rank": hit.rank,
        "snippet": hit.snippet,
        "created_at": hit.created_at.isoformat(),
    }


def cmd_search(ctx: Context, args: argparse.Namespace) -> int:
    """Search the messages of every session, best match first."""
    hits = ctx.manager.search(args.query, limit=args.limit, session_id=args.session, role=args.role)
    if args.json:
        ctx.echo_json([_hit_to_dict(hit) for hit in hits])
        return 0
    for hit in hits:
        ctx.echo_lines(render_hit(hit, ctx.style))
    if not hits:
        print("no matches", file=sys.stderr)
    return 0


def _write_records(stream: TextIO, records: Iterable[dict[str, Any]]) -> tuple[int, int]:
    sessions = messages = 0
    for record in records:
        stream.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        sessions += record.get("type") == "session"
        messages += record.get("type") == "message"
    return sessions, messages


def cmd_export(ctx: Context, args: argparse.Namespace) -> int:
    """Write sessions as JSON lines: a session record, then its messages, parents first."""
    records = ctx.manager.export(args.id)
    first = next(records, None)  # a missing session fails here, before any file is made
    batch = _chain(first, records)
    if args.output in (None, "-"):
        _write_records(ctx.out, batch)
        return 0
    with open(args.output, "w", encoding="utf-8", newline="\n") as stream:
        sessions, messages = _write_records(stream, batch)
    ctx.echo(
        f"exported {_plural(sessions, 'session')} ({_plural(messages, 'message')}) to {args.output}"
    )
    return 0


def _chain(
    first: dict[str, Any] | None, rest: Iterator[dict[str, Any]]
) -> Iterator[dict[str, Any]]:
    if first is not None:
        yield first
        yield from rest


def _parse_records(lines: Iterable[str], name: str) -> list[dict[str, Any]]:
    """Parse JSON lines into records, skipping blank lines.

    Raises:
        CLIError: Naming the line, if a line is not JSON or not a JSON object, or the
            input is not UTF-8.
    """
    records: list[dict[str, Any]] = []
    try:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                where = f"{name}, line {number}, column {exc.colno}"
                raise CLIError(f"{where}: not valid JSON ({exc.msg}); nothing imported") from None
            if not isinstance(record, dict):
                raise CLIError(f"{name}, line {number}: expected a JSON object; nothing imported")
            records.append(record)
    except UnicodeDecodeError:
        raise CLIError(f"{name}: not UTF-8 text") from None
    return records


def _check_importable(manager: SessionManager, records: list[dict[str, Any]]) -> None:
    """Raise unless every record would import, so that an import is all or nothing.

    The library imports each session whole, but a later bad session would leave the
    earlier ones in place; a dry run into a private memory store catches that first.
    """
    scope = manager.scope
    with SessionManager("memory://", tenant=scope.tenant, user=scope.user) as dry_run:
        imported = dry_run.import_records(records)
    taken = [info.id for info in imported if manager.get(info.id) is not None]
    if taken:
        names = ", ".join(map(repr, taken[:3])) + (" ..." if len(taken) > 3 else "")
        noun = "a session" if len(taken) == 1 else f"{len(taken)} sessions"
        raise CLIError(f"{noun} already in this scope: {names}; nothing imported")


def cmd_import(ctx: Context, args: argparse.Namespace) -> int:
    """Import sessions from an export (a file, or `-` for standard input)."""
    if args.file == "-":
        records = _parse_records(sys.stdin, "<stdin>")
    else:
        with open(args.file, encoding="utf-8") as stream:
            records = _parse_records(stream, args.file)
    _check_importable(ctx.manager, records)
    imported = ctx.manager.import_records(records)
    messages = sum(info.message_count for info in imported)
    ctx.echo(f"imported {_plural(len(imported), 'session')} ({_plural(messages, 'message')})")
    return 0


def cmd_rm(ctx: Context, args: argparse.Namespace) -> int:
    """Delete sessions; if one is missing, nothing is deleted."""
    ids = list(dict.fromkeys(args.ids))
    missing = [session_id for session_id in ids if ctx.manager.get(session_id) is None]
    if missing:
        names = ", ".join(map(repr, missing))
        noun = "session" if len(missing) == 1 else "sessions"
        raise SessionNotFound(f"no {noun} {names} in this scope; nothing deleted")
    for session_id in ids:
        ctx.manager.delete(session_id)
    ctx.echo(f"deleted {_plural(len(ids), 'session')}")
    return 0


# ---------------------------------------------------------------------------- demo

_DEMO_SYSTEM = (
    "You are a coding agent working in the git repository ~/src/shop. Use the tools to "
    "inspect files and run the tests, and explain what you found before you change code."
)
_DEMO_ASK = "The test suite started failing after yesterday's merge (#482). Can you find out why?"
_DEMO_TEST_RUN = """\
.....F
=================================== FAILURES ===================================
_______________________ test_total_with_percent_discount _______________________

    def test_total_with_percent_discount():
        cart = Cart([Item("notebook", price=12.50, qty=2)])
        cart.apply(Discount.percent("10"))
>       assert cart.total() == 22.50

tests/test_cart.py:27:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _
src/shop/cart.py:41: in total
    return round(subtotal * (1 - self.discount.rate), 2)
E   TypeError: unsupported operand type(s) for *: 'float' and 'decimal.Decimal'
=========================== short test summary info ============================
FAILED tests/test_cart.py::test_total_with_percent_discount - TypeError: unsupp...
1 failed, 5 passed in 0.42s"""
_DEMO_GREP = """\
src/shop/discount.py:3:from decimal import Decimal
src/shop/discount.py:19:        return cls(rate=Decimal(value) / 100)
src/shop/cart.py:41:            return round(subtotal * (1 - self.discount.rate), 2)
tests/test_discount.py:8:    assert Discount.percent("10").rate == Decimal("0.1")"""
_DEMO_CART = """\
30  class Cart:
31      def __init__(self, items: list[Item]) -> None:
32          self.items = items
33          self.discount: Discount | None = None
34
35      def apply(self, discount: Discount) -> None:
36          self.discount = discount
37
38      def total(self) -> float:
39          subtotal = sum(item.price * item.qty for item in self.items)
40          if self.discount is not None:
41              return round(subtotal * (1 - self.discount.rate), 2)
42          return round(subtotal, 2)"""
_DEMO_DIAGNOSIS = (
    "Found it. Since #482, `Discount.percent()` builds its rate as a `Decimal` "
    "(src/shop/discount.py:19), but `Cart.total()` still multiplies a float subtotal by "
    "`1 - rate` (src/shop/cart.py:41). Python refuses to mix float and Decimal, so every "
    "discounted total raises TypeError. Either do the cart arithmetic in Decimal too, or "
    "convert the rate back to float."
)
_DEMO_TEST_FILE = """\
20  def test_total_without_discount():
21      cart = Cart([Item("pen", price=1.20, qty=3)])
22      assert cart.total() == 3.60
23
24  def test_total_with_percent_discount():
25      cart = Cart([Item("notebook", price=12.50, qty=2)])
26      cart.apply(Discount.percent("10"))
27      assert cart.total() == 22.50"""


@dataclass
class Demo:
    """The sessions `build_demo` made: the branched conversation and its fork."""

    main: Session
    fork: Session


def _call(number: int, name: str, **arguments: Any) -> ToolCallPart:
    return ToolCallPart(id=f"call_{number}", name=name, arguments=arguments)


def _assistant(
    manager: SessionManager,
    chat: Session,
    text: str,
    *,
    call: ToolCallPart | None = None,
    thinking: str | None = None,
    tokens: tuple[int, int] = (0, 0),
) -> Message:
    parts: list[Part] = [ReasoningPart(thinking)] if thinking else []
    parts.append(TextPart(text))
    parts.extend([call] if call else [])
    message = chat.append(Message(role="assistant", parts=parts))
    # Priced like a mid-size model: $3 per million input tokens, $15 per million output.
    manager.add_usage(chat.id, tokens[0], tokens[1], (tokens[0] * 3 + tokens[1] * 15) / 1e6)
    return message


def _result(chat: Session, call: ToolCallPart, output: str) -> Message:
    return chat.append(Message.tool(call.id, output, name=call.name))


def _demo_diagnosis(manager: SessionManager, chat: Session) -> Message:
    """Append the shared start: the task, three tool rounds, and the diagnosis."""
    chat.append(Message.system(_DEMO_SYSTEM))
    chat.append(Message.user(_DEMO_ASK))
    chat.update_state({"task": "find why the tests fail after #482", "files_touched": []})
    run = _call(1, "run_tests", path="tests/", args=["-x", "-q"])
    thinking = "Tests broke after a merge: run them first to see which one fails and where."
    _assistant(
        manager,
        chat,
        "I'll run the test suite first.",
        call=run,
        thinking=thinking,
        tokens=(1840, 62),
    )
    _result(chat, run, _DEMO_TEST_RUN)
    grep = _call(2, "grep", pattern="Decimal|discount.rate", path="src/ tests/")
    _assistant(
        manager,
        chat,
        "A float meets a Decimal. Where does the Decimal come from?",
        call=grep,
        tokens=(2410, 48),
    )
    _result(chat, grep, _DEMO_GREP)
    read = _call(3, "read_file", path="src/shop/cart.py", start=30, end=42)
    _assistant(manager, chat, "Let me read Cart.total.", call=read, tokens=(2690, 41))
    _result(chat, read, _DEMO_CART)
    chat.update_state({"files_touched": ["src/shop/cart.py", "src/shop/discount.py"]})
    return _assistant(manager, chat, _DEMO_DIAGNOSIS, tokens=(3020, 118))


def _demo_branches(manager: SessionManager, chat: Session, diagnosis: Message) -> None:
    """Answer the diagnosis, then edit that answer's question: a second branch, now the head."""
    chat.append(Message.user("OK, convert the rate to float in Cart.total and rerun the tests."))
    quick = _call(4, "run_tests", path="tests/", args=["-q"])
    _assistant(
        manager,
        chat,
        "Changed line 41 to use float(self.discount.rate); rerunning.",
        call=quick,
        tokens=(3210, 57),
    )
    _result(chat, quick, "......\n6 passed in 0.40s")
    edited = "Fix it, but keep money in Decimal end to end: no floats in prices."
    chat.append(Message.user(edited), parent=diagnosis.id)
    rerun = _call(5, "run_tests", path="tests/", args=["-q"])
    thinking = "Item.price is a float; make it Decimal so the sum and the discount agree."
    _assistant(
        manager,
        chat,
        "I'll make Item.price a Decimal and sum the cart in Decimal, then rerun the tests.",
        call=rerun,
        thinking=thinking,
        tokens=(3260, 140),
    )
    _result(chat, rerun, "......\n6 passed in 0.44s")
    chat.update_state(
        {
            "status": "fixed",
            "files_touched": ["src/shop/cart.py", "src/shop/discount.py", "src/shop/models.py"],
        }
    )
    _assistant(
        manager,
        chat,
        "All 6 tests pass. Item.price is now a Decimal "
        "(src/shop/models.py:12) and Cart.total() returns a Decimal rounded with "
        'quantize(Decimal("0.01")), so no float ever touches a price.',
        tokens=(3490, 76),
    )


def _demo_fork(manager: SessionManager, chat: Session, diagnosis: Message) -> Session:
    """Fork the conversation at the diagnosis and take it somewhere else."""
    fork = manager.fork(chat.id, diagnosis.id, name="demo: regression test first")
    fork.append(Message.user("Before anything is fixed, add a regression test for this."))
    read = _call(6, "read_file", path="tests/test_cart.py", start=20, end=27)
    _assistant(manager, fork, "Let me see the existing cart tests.", call=read, tokens=(3150, 44))
    _result(fork, read, _DEMO_TEST_FILE)
    _assistant(
        manager,
        fork,
        "Added test_total_with_decimal_rate to tests/test_cart.py: it "
        "fails with the same TypeError today and passes once Cart.total stops mixing "
        "float and Decimal.",
        tokens=(3400, 95),
    )
    fork.update_state({"task": "add a regression test", "files_touched": ["tests/test_cart.py"]})
    manager.end(fork.id, "completed")
    return fork


def build_demo(manager: SessionManager) -> Demo:
    """Build a coding agent's conversation: tool calls, a branch, a fork, state and usage.

    Every call makes new sessions, so running it again never collides with earlier runs.

    Args:
        manager: Where to build it.

    Returns:
        The main session (head on its second branch) and its fork.
    """
    chat = manager.create(
        name="demo: why do the tests fail?",
        model="claude-sonnet-4-5",
        source="sessionary demo",
        metadata={"repo": "~/src/shop"},
    )
    diagnosis = _demo_diagnosis(manager, chat)
    _demo_branches(manager, chat, diagnosis)
    return Demo(main=chat, fork=_demo_fork(manager, chat, diagnosis))


def _section(ctx: Context, title: str) -> None:
    ctx.echo("")
    ctx.echo(ctx.style.bold(f"── {title} " + "─" * max(ctx.width - len(title) - 4, 3)))


def cmd_demo(ctx: Context, args: argparse.Namespace) -> int:
    """Build a demo conversation in the store, show it, and suggest what to try next."""
    demo = build_demo(ctx.manager)
    ctx.echo(f"Built two demo sessions in {args.url}:")
    ctx.echo(f"  {demo.main.id}  a coding agent's session, with an edited question (a branch)")
    ctx.echo(f"  {demo.fork.id}  its fork at the diagnosis, continued another way")
    _section(ctx, "sessionary show --tree: every branch; ◀ head marks the active leaf")
    ctx.echo_lines(show_lines(ctx, demo.main.id, tree=True))
    _section(ctx, "sessionary show: the active history, root to head")
    ctx.echo_lines(show_lines(ctx, demo.main.id, header=False))
    _section(ctx, "sessionary search Decimal: every session in the scope, best first")
    for hit in ctx.manager.search("Decimal", limit=5):
        ctx.echo_lines(render_hit(hit, ctx.style))
    _section(ctx, "Try next")
    for hint in (
        "ls",
        f"show {demo.main.id} --tree",
        f"show {demo.fork.id}",
        "search 'float OR Decimal' --role tool",
        f"export {demo.main.id} -o demo.jsonl",
    ):
        ctx.echo(f"  {ctx.command} {hint}")
    return 0


# ---------------------------------------------------------------------------- parser


def _scope_options(parser: argparse.ArgumentParser, top: bool) -> None:
    """Add --db, --tenant and --user; on a command they override the ones before it."""
    default: Any = None if top else argparse.SUPPRESS
    parser.add_argument(
        "--db",
        metavar="URL",
        default=default,
        help=f"store URL or SQLite path (default: ${ENV_URL}, else {DEFAULT_DB})",
    )
    parser.add_argument(
        "--tenant",
        default="default" if top else default,
        help="the application that owns the data (default: default)",
    )
    parser.add_argument(
        "--user",
        default="default" if top else default,
        help="the user within the tenant (default: default)",
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


_Add = Callable[..., argparse.ArgumentParser]


def _add_ls(add: _Add) -> None:
    ls = add("ls", cmd_ls, "list sessions, most recently active first")
    ls.add_argument(
        "--limit", type=_positive, default=20, help="at most N sessions (default 20)", metavar="N"
    )
    ls.add_argument("--all", action="store_true", help="every session, read page by page")
    ls.add_argument("--json", action="store_true", help="print the session rows as JSON")


def _add_show(add: _Add) -> None:
    show = add("show", cmd_show, "show a session: its row, then its history (root to head)")
    show.add_argument("id", help="the session id")
    show.add_argument("--tree", action="store_true", help="draw every branch, the head marked")
    show.add_argument("--json", action="store_true", help="print the row and history as JSON")
    show.add_argument(
        "--limit", type=_positive, metavar="N", help="only the last N messages of the history"
    )
    show.add_argument(
        "--full", action="store_true", help="show long text, tool output and reasoning whole"
    )


def _add_search(add: _Add) -> None:
    search = add(
        "search",
        cmd_search,
        "full-text search over the messages of every session",
        'words must all match; "a phrase", pre*, a OR b, -excluded',
    )
    search.add_argument("query", help="what to look for")
    search.add_argument("--session", metavar="ID", help="only in this session")
    search.add_argument("--role", choices=_ROLES, help="only messages with this role")
    search.add_argument(
        "--limit", type=_positive, default=20, metavar="N", help="at most N hits (default 20)"
    )
    search.add_argument("--json", action="store_true", help="print the hits as JSON")


def _add_export(add: _Add) -> None:
    export = add("export", cmd_export, "write sessions as JSON lines (all of them without an ID)")
    export.add_argument("id", nargs="?", help="the session to export (default: every session)")
    export.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")


def _add_import(add: _Add) -> None:
    imp = add("import", cmd_import, "import sessions from an export; all or nothing")
    imp.add_argument("file", help="the JSON lines file, or - for standard input")
    imp.set_defaults(creates=True)


def _add_rm(add: _Add) -> None:
    rm = add("rm", cmd_rm, "delete sessions with their messages and state")
    rm.add_argument("ids", nargs="+", metavar="ID", help="the sessions to delete")


def _add_demo(add: _Add) -> None:
    demo = add(
        "demo",
        cmd_demo,
        "build a demo agent conversation (tools, a branch, a fork)",
        "Each run adds two new sessions; it never touches existing ones.",
    )
    demo.set_defaults(creates=True)


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the `sessionary` command, one subparser per command."""
    parser = argparse.ArgumentParser(
        prog="sessionary",
        description="Durable, branching, searchable sessions for LLM agents.",
        epilog="Start with `sessionary demo`, then `sessionary ls`.",
    )
    _scope_options(parser, top=True)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(
        title="commands", dest="command", metavar="COMMAND", required=True
    )
    common = argparse.ArgumentParser(add_help=False)
    _scope_options(common, top=False)

    def add(
        name: str, handler: Handler, summary: str, epilog: str | None = None
    ) -> argparse.ArgumentParser:
        sub = commands.add_parser(
            name,
            help=summary,
            description=summary[0].upper() + summary[1:] + ".",
            epilog=epilog,
            parents=[common],
        )
        sub.set_defaults(handler=handler, creates=False)
        return sub

    for adder in (_add_ls, _add_show, _add_search, _add_export, _add_import, _add_rm, _add_demo):
        adder(add)
    return parser


# ---------------------------------------------------------------------------- main


def _sqlite_path(url: str) -> str | None:
    """Return the file a SQLite URL or plain path names, or None for other stores."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        scheme, rest = "sqlite", "/" + url
    if scheme != "sqlite":
        return None
    parts = urlsplit("sqlite://" + rest)
    path = parts.path[1:] if parts.path.startswith("/") else parts.path
    return None if parts.netloc or path in ("", ":memory:") else path


def _invocation(args: argparse.Namespace) -> str:
    words = ["sessionary"]
    if args.db is not None:
        words += ["--db", args.db]
    for option in ("tenant", "user"):
        if getattr(args, option) != "default":
            words += [f"--{option}", getattr(args, option)]
    return shlex.join(words)


def _run(args: argparse.Namespace) -> int:
    args.url = args.db or os.environ.get(ENV_URL) or DEFAULT_DB
    path = _sqlite_path(args.url)
    if not args.creates and path is not None and not os.path.exists(path):
        raise CLIError(
            f"no database at {path} (pass --db or set {ENV_URL}; `sessionary demo` makes one)"
        )
    with SessionManager(args.url, tenant=args.tenant, user=args.user) as manager:
        out = sys.stdout
        width = max(shutil.get_terminal_size((100, 24)).columns, 60)
        ctx = Context(manager, out, Style.for_stream(out), width, _invocation(args))
        handler: Handler = args.handler
        return handler(ctx, args)


def _one_line(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        where = error.filename
        return f"{error.strerror}: {where}" if where is not None else error.strerror
    return " ".join(str(error).split()) or type(error).__name__


def _silence_stdout() -> None:
    """After a closed pipe (`sessionary export | head`), stop Python's exit-time flush error."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # not a real file descriptor (e.g. captured in tests): nothing to silence


def main(argv: list[str] | None = None) -> int:
    """Run the `sessionary` command line and return its exit status.

    Args:
        argv: The arguments, without the program name (default: `sys.argv[1:]`).

    Returns:
        0 on success, 1 after an error (reported on one line of stderr), 2 for a usage
        error, 130 when interrupted.
    """
    try:
        return _run(build_parser().parse_args(argv))
    except SystemExit as exc:  # argparse: --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return 1
    except (SessionaryError, CLIError, OSError) as exc:
        print(f"sessionary: error: {_one_line(exc)}", file=sys.stderr)
        return 1
