"""How the command line draws what the store holds, as rich renderables (no I/O).

Messages, session rows and search hits become `rich.text.Text` and `rich.table.Table`
objects; the console that prints them decides on colour (a terminal without `NO_COLOR`)
and width. Message trees are laid out here because a chain of single children is drawn
at one depth (a 10,000-message session is a column, not a staircase), which
`rich.tree.Tree` cannot do.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from typing import Any, Literal

from rich.console import Console, ConsoleOptions, ConsoleRenderable, Group, RenderHook, RenderResult
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from sessionary.compaction.overlays import Overlay
from sessionary.compaction.planner import SUMMARY_KEY, is_synthetic
from sessionary.model import (
    FilePart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from sessionary.records import SearchHit, SessionInfo, State

__all__ = [
    "ROLE_WIDTH",
    "PrintableOnly",
    "Spans",
    "message_view",
    "plural",
    "printable",
    "render_hit",
    "session_table",
    "session_view",
    "style_spans",
    "summarize",
    "tree_lines",
    "unique_prefixes",
    "when",
]

ROLE_STYLES = {"system": "bold magenta", "user": "bold green", "assistant": "bold cyan"}
ROLE_WIDTH = len("assistant")
_UNLIMITED = sys.maxsize
Spans = Sequence[tuple[int, int]]


def _stand_ins(keep: str) -> dict[int, str]:
    """Map each character that could steer a terminal to a visible stand-in of one cell.

    C0 controls become their Unicode control pictures (ESC shows as ␛), DEL ␡, C1
    controls (0x80-0x9f, where 0x9b is a CSI of its own) and the bidirectional overrides
    and isolates (which reorder what a line seems to say) U+FFFD. One character for one,
    so offsets into the text (search spans) still point at the same characters.
    """
    table = {code: chr(0x2400 + code) for code in range(0x20)}
    table[0x7F] = "\u2421"
    table.update(dict.fromkeys(range(0x80, 0xA0), "\ufffd"))
    table.update(dict.fromkeys([*range(0x202A, 0x202F), *range(0x2066, 0x206A)], "\ufffd"))
    for character in keep:
        del table[ord(character)]
    return table


_ONE_LINE = _stand_ins("")
_LINES = _stand_ins("\n\t")
_JSON_ESCAPES = {code: f"\\u{code:04x}" for code in _ONE_LINE if code >= 0x7F}
"""What JSON leaves raw that could steer a terminal (DEL, C1, bidi), as JSON escapes."""


def json_safe(value: Any, **options: Any) -> str:
    r"""`value` as JSON text (`json.dumps` with `options`) that cannot steer a terminal.

    JSON escapes the C0 controls but writes DEL, the C1 controls and the bidirectional
    overrides raw; they are written as `\uXXXX` escapes, which parse back to the same
    text. (They can only stand inside strings, where the escape means the character.)
    """
    return json.dumps(value, ensure_ascii=False, **options).translate(_JSON_ESCAPES)


def printable(text: str, *, lines: bool = False) -> str:
    """Return `text` with every control character shown as a visible stand-in.

    Stored text (messages, names, snippets, document bodies, key names) is anyone's: an
    agent's tool output may hold `ESC ] 52` (a clipboard write) or `ESC [ 2J`. Every
    human-readable view passes it through this; JSON output is escaped by JSON instead.

    Args:
        text: The text to show.
        lines: Keep newlines and tabs, for a view of several lines.
    """
    return text.translate(_LINES if lines else _ONE_LINE)


class _Printable:
    """A renderable drawn with the control characters of its text replaced (see `printable`).

    Rich's own control segments (cursor moves of a progress bar) are kept; colours are
    styles, never characters of the text, so they are kept too.
    """

    def __init__(self, inner: ConsoleRenderable) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for segment in console.render(self.inner, options):
            if segment.control:
                yield segment
            else:
                yield Segment(segment.text.translate(_LINES), segment.style)


class PrintableOnly(RenderHook):
    """A console hook that neutralises control characters in whatever is printed.

    The views also clean what they build, so widths are measured on the stand-ins; this
    catches the text a view forgot, so no path can put stored escapes on the terminal.
    """

    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        return [_Printable(renderable) for renderable in renderables]


def plural(count: int, noun: str) -> str:
    """Return `count` and `noun`, the noun plural unless the count is one (`2 sessions`)."""
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def when(moment: datetime | None) -> str:
    """Return a time in the local zone, to the second, or `-`."""
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S") if moment else "-"


def role_text(role: str, width: int = 0) -> Text:
    """Return a role name, padded to `width`, in the role's colour."""
    return Text(role.ljust(width), style=ROLE_STYLES.get(role, "bold yellow"))


def unique_prefixes(ids: Iterable[str], minimum: int = 8) -> dict[str, str]:
    """Return for each id a prefix no other id shares, all of one length (at least `minimum`).

    Generated ids are UUIDv7, whose first characters are a timestamp, so ids written in
    the same millisecond need longer prefixes than the minimum to stay apart.
    """
    ordered = sorted(set(ids))
    need = dict.fromkeys(ordered, minimum)
    for left, right in pairwise(ordered):
        common = next(
            (i for i, pair in enumerate(zip(left, right, strict=False)) if pair[0] != pair[1]),
            min(len(left), len(right)),
        )
        need[left] = max(need[left], common + 1)
        need[right] = max(need[right], common + 1)
    width = max(need.values(), default=minimum)  # one width, so that columns line up
    return {value: value[:width] for value in ordered}


def shorten(text: str, width: int) -> str:
    """Return `text` on one line, whitespace collapsed, cut to `width` with an ellipsis."""
    flat = printable(" ".join(text.split()))
    return flat if len(flat) <= width else flat[: max(width - 1, 0)] + "…"


def _printable_line(line: str) -> str:
    return printable(line, lines=True)


def clip_lines(text: str, max_lines: int, line_chars: int) -> list[str]:
    """Return the lines of `text`, each cut to `line_chars`, at most `max_lines` of them.

    A long text keeps its first and last lines, since the end of a tool's output (the
    error, the summary) matters as much as its start.
    """
    lines = [
        line if len(line) <= line_chars else line[: line_chars - 1] + "…"
        for line in map(_printable_line, text.splitlines() or [""])
    ]
    if len(lines) <= max_lines:
        return lines
    head = (max_lines + 1) // 2
    tail = max_lines - head
    hidden = plural(len(lines) - head - tail, "more line")
    return [*lines[:head], f"… {hidden} …", *lines[len(lines) - tail :]]


def json_text(value: Any) -> str:
    """Return a JSON value as text: a string as itself, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def format_call(call: ToolCallPart) -> str:
    """Return a tool call as `name(key=value, ...)`, the values in JSON."""
    arguments = call.arguments
    if isinstance(arguments, dict):
        inner = ", ".join(
            f"{key}={json.dumps(value, ensure_ascii=False, default=str)}"
            for key, value in arguments.items()
        )
    elif arguments in (None, ""):
        inner = ""
    else:
        inner = json_text(arguments)
    return f"{call.name}({inner})"


def _part_lines(part: Part, full: bool) -> list[Text]:
    """Return the lines showing one part of a message (long ones clipped unless `full`)."""
    if isinstance(part, TextPart):
        limits = (_UNLIMITED, _UNLIMITED) if full else (40, 2000)
        return [Text(line) for line in clip_lines(part.text, *limits)]
    if isinstance(part, ReasoningPart):
        text = part.text if full else shorten(part.text, 100)
        return [Text(f"✻ {line}", style="dim") for line in text.splitlines() or [""]]
    if isinstance(part, ToolCallPart):
        call = format_call(part)
        return [Text.assemble(("→ ", "cyan"), call if full else shorten(call, 200))]
    if isinstance(part, ToolResultPart):
        limits = (_UNLIMITED, _UNLIMITED) if full else (10, 300)
        lines = clip_lines(json_text(part.output), *limits)
        arrow = ("← error: ", "red") if part.is_error else ("← ", "yellow")
        return [Text.assemble(arrow, lines[0]), *(Text(f"  {line}") for line in lines[1:])]
    if isinstance(part, FilePart):
        where = part.filename or part.url or "inline data"
        return [Text(f"[file {where} ({part.mime_type})]", style="dim")]
    label = f"[data {part.name}]" if part.name else "[data]"
    return [Text(f"{label} {shorten(json_text(part.data), 100)}", style="dim")]


def summary_info(message: Message) -> dict[str, Any] | None:
    """Return the overlay record a compaction summary message carries, or None."""
    if not is_synthetic(message):
        return None
    info = message.metadata.get(SUMMARY_KEY)
    return info if isinstance(info, dict) else {}


def _compacted_header(info: dict[str, Any]) -> Text:
    covered = int(info.get("covered") or 0)
    before, after = info.get("tokens_before"), info.get("tokens_after")
    tokens = f" (history {before:,} → {after:,} tokens)" if before and after else ""
    return Text(
        f"⋯ {plural(covered, 'message')} summarised into this by compaction{tokens}; "
        "--raw shows them",
        style="bold blue",
    )


def message_view(message: Message, short: str, *, full: bool = False) -> Text:
    """Return one message: a header (role, short id, time), then its parts, indented.

    Text is shown whole (up to 40 lines); tool calls as `→ name(args)`; tool results as
    `← output`, clipped to a few lines; reasoning dimmed and cut to one line. A
    compaction summary says how many stored messages it stands for.

    Args:
        message: The message to show.
        short: The id to show (a unique prefix of it).
        full: Show long text, outputs and reasoning whole instead of clipped.
    """
    header = Text.assemble(
        role_text(message.role), "  ", (f"{short}  {when(message.created_at)}", "dim")
    )
    lines = [header]
    info = summary_info(message)
    if info is not None:
        lines.append(Text("  ").append_text(_compacted_header(info)))
    for part in message.parts:
        for line in _part_lines(part, full):
            line.rstrip()
            lines.append(Text("  ").append_text(line))
    return Text("\n").join(lines)


def _summary_piece(part: Part) -> str:
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ToolCallPart):
        return "→ " + format_call(part)
    if isinstance(part, ToolResultPart):
        return ("← error: " if part.is_error else "← ") + json_text(part.output)
    if isinstance(part, FilePart):
        return f"[file {part.filename or part.mime_type}]"
    return ""  # reasoning and data parts stay out of a one-line summary


def summarize(message: Message, width: int) -> str:
    """Return a message as one line of at most `width` characters, for trees and lists."""
    pieces = [piece for piece in map(_summary_piece, message.parts) if piece.strip()]
    if not pieces:
        pieces = ["(reasoning only)" if message.parts else "(empty)"]
    return shorten("  ".join(pieces), width)


# ---------------------------------------------------------------------------- trees

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


def path_ids(messages: Sequence[Message], head_id: str | None) -> list[str]:
    """Return the ids from the root to `head_id`, oldest first."""
    parents = {message.id: message.parent_id for message in messages}
    path: list[str] = []
    current = head_id
    while current is not None and current in parents and current not in path:
        path.append(current)
        current = parents[current]
    return path[::-1]


def _walk(messages: Sequence[Message]) -> Iterator[_Entry]:
    """Yield every message depth first, with the guides that draw its place in the tree."""
    roots, children = _children(messages)
    stack = [(roots[0], "", "")] if len(roots) == 1 else _branch_entries(roots, "")[::-1]
    while stack:  # iterative, so a chain of any length cannot overflow the call stack
        entry = stack.pop()
        yield entry
        kids = children.get(entry[0].id, [])
        if len(kids) == 1:
            stack.append((kids[0], entry[2], entry[2]))
        else:
            stack.extend(_branch_entries(kids, entry[2])[::-1])


@dataclass(frozen=True)
class TreeMarks:
    """What a tree marks beside its messages: the head, and the compacted ranges."""

    head_id: str | None
    prefixes: dict[str, str]
    compacted: dict[str, Overlay]
    """Each message id inside an overlay's range, with that overlay."""


def compacted_ranges(
    messages: Sequence[Message], overlays: Sequence[Overlay]
) -> dict[str, Overlay]:
    """Return each message covered by an overlay (the newest that covers it wins)."""
    parents = {message.id: message.parent_id for message in messages}
    covered: dict[str, Overlay] = {}
    for overlay in overlays:
        current: str | None = overlay.last_id
        while current is not None and current in parents:
            covered[current] = overlay
            if current == overlay.first_id:
                break
            current = parents[current]
    return covered


def tree_lines(messages: Sequence[Message], marks: TreeMarks, width: int = 100) -> list[Text]:
    """Return the lines drawing a session's whole message tree.

    A message's only child is drawn below it at the same depth; where a message has
    several children, each starts a branch (`├─`, `└─`) one step further in. Messages
    off the active path are dimmed, the head is marked `◀ head`, and a message inside a
    compacted range carries `┆` (the first one says how many the summary stands for).

    Args:
        messages: Every message of the session, parents before children.
        marks: The head, the ids to show, and the compacted ranges.
        width: The longest a line may be; summaries are cut to fit.
    """
    active = set(path_ids(messages, marks.head_id))
    lines: list[Text] = []
    for message, lead, _ in _walk(messages):
        short = marks.prefixes.get(message.id, message.id)
        overlay = marks.compacted.get(message.id)
        note = ""
        if overlay is not None:
            note = f"┆ {overlay.covered} compacted " if message.id == overlay.first_id else "┆ "
        mark = "  ◀ head" if message.id == marks.head_id else ""
        room = width - len(lead) - ROLE_WIDTH - len(short) - len(note) - len(mark) - 3
        summary = summarize(message, max(room, 24))
        lines.append(
            Text.assemble(
                (lead, "dim"),
                role_text(message.role, ROLE_WIDTH),
                " ",
                (short, "dim"),
                "  ",
                (note, "blue"),
                (summary, "" if message.id in active else "dim"),
                (mark, "bold"),
            )
        )
    return lines


# ---------------------------------------------------------------------------- sessions


def usage_text(info: SessionInfo) -> str:
    """Return a session's token and cost counters, or "" if it has none."""
    if not (info.input_tokens or info.output_tokens or info.cost):
        return ""
    tokens = f"{info.input_tokens:,} in / {info.output_tokens:,} out tokens"
    return f"{tokens}, ${info.cost:.4f}" if info.cost else tokens


def _ended(info: SessionInfo) -> str:
    if info.ended_at is None and info.end_reason is None:
        return ""
    return f"{info.end_reason or 'ended'} ({when(info.ended_at)})"


def session_view(info: SessionInfo, state: State | None) -> Group:
    """Return a session's registry row and, if given and not empty, its state."""
    fields = [
        ("name", info.name or ""),
        ("model", info.model or ""),
        ("source", info.source or ""),
        ("parent", info.parent_session_id or ""),
        ("created", when(info.created_at)),
        ("updated", when(info.updated_at)),
        ("messages", f"{info.message_count:,} stored, on every branch"),
        ("head", info.head_id or ""),
        ("usage", usage_text(info)),
        ("ended", _ended(info)),
        ("metadata", json_text(info.metadata) if info.metadata else ""),
    ]
    if state is not None and state.data:
        fields.append(("state", f"v{state.version} {shorten(json_text(state.data), 200)}"))
    rows = [Text(f" {key:<9} ", style="dim") + Text(value) for key, value in fields if value]
    return Group(Text(f"session {info.id}", style="bold"), *rows)


_SESSION_COLUMNS = ("ID", "NAME", "MSGS", "TOKENS", "UPDATED", "MODEL", "ENDED", "LAST MESSAGE")
_DROPPED_FIRST = (3, 6, 5, 4, 1)  # TOKENS, ENDED, MODEL, UPDATED, NAME


def session_table(
    infos: Sequence[SessionInfo], previews: dict[str, str], width: int = 160
) -> Table:
    """Return a table of sessions: id, name, messages, usage, updated, model, end, preview.

    Every column keeps its whole width but the preview, which is cut to fit in `width`.
    """
    rows = []
    for info in infos:
        tokens = info.input_tokens + info.output_tokens
        rows.append(
            [
                info.id,
                shorten(info.name or "-", 32),
                f"{info.message_count:,}",
                f"{tokens:,}" if tokens else "-",
                when(info.updated_at),
                shorten(info.model or "-", 24),
                info.end_reason or ("ended" if info.ended_at else "-"),
                previews.get(info.id, ""),
            ]
        )
    columns = list(range(len(_SESSION_COLUMNS)))
    widths = [
        max(len(name), *(len(row[c]) for row in rows)) for c, name in enumerate(_SESSION_COLUMNS)
    ]
    # On a narrow terminal, columns go (least useful first) rather than every one shrinking.
    for dropped in _DROPPED_FIRST:
        if sum(widths[c] + 2 for c in columns[:-1]) + 12 <= width:
            break
        columns.remove(dropped)
    room = max(width - sum(widths[c] + 2 for c in columns[:-1]) - 1, 12)
    table = Table(box=None, pad_edge=False, header_style="bold", show_edge=False)
    for column in columns:
        name = _SESSION_COLUMNS[column]
        justify: Literal["left", "right"] = "right" if name in ("MSGS", "TOKENS") else "left"
        table.add_column(name, justify=justify, no_wrap=True, min_width=min(widths[column], room))
    for row in rows:
        row[-1] = shorten(row[-1], room)
        table.add_row(*(row[c] for c in columns))
    return table


# ---------------------------------------------------------------------------- search


def style_spans(text: str, spans: Spans, style: str = "bold reverse") -> Text:
    """Return `text` with each `(start, end)` span styled; the characters are unchanged.

    Spans are offsets into `text`; they may come in any order and overlap, and parts
    outside the text are ignored, so a span never adds or removes a character.
    """
    styled = Text(text)
    for start, end in spans:
        start, end = max(start, 0), min(end, len(text))
        if start < end:
            styled.stylize(style, start, end)
    return styled


def render_hit(hit: SearchHit) -> Text:
    """Return a search hit: its role, where it is and its rank, then its snippet.

    The snippet is the author's text; the matched words (`hit.spans`) are styled, never
    marked with added characters, so an author's own ``**bold**`` reads as written.
    """
    where = f"session {hit.session_id}  message {hit.message_id}"
    head = Text.assemble(
        role_text(hit.role, ROLE_WIDTH), " ", where, "  ", (f"rank {hit.rank:.3g}", "dim")
    )
    body = style_spans(printable(hit.snippet, lines=True), hit.spans)
    return Text("\n").join([head, Text("  ").append_text(body)])


def hit_to_dict(hit: SearchHit) -> dict[str, Any]:
    """Return a search hit as JSON-ready data."""
    return {
        "session_id": hit.session_id,
        "message_id": hit.message_id,
        "role": hit.role,
        "rank": hit.rank,
        "snippet": hit.snippet,
        "spans": [list(span) for span in hit.spans],
        "created_at": hit.created_at.isoformat(),
    }
