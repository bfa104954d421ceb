"""Summaries: the summarizer protocol, LLM prompts, and the offline structured summarizer.

The offline summarizer is pure and deterministic; it needs no model.

Every summary has five sections: ``## Intent``, ``## Key Points``, ``## Artifacts`` (the
files, URLs, commands and identifiers, verbatim), ``## Current State`` and
``## Open Items``. A new compaction *updates* the previous summary: the LLM prompt hands it
over with the new turns, and the offline summarizer merges the previous sections with the
new ones (a previous summary with its references under Key Points, as older versions
wrote them, is read too).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from sessionary.compaction.planner import EVICTED_KEY, SUMMARY_KEY
from sessionary.errors import SummarizerError
from sessionary.model import Message, TextPart, ToolCallPart, ToolResultPart
from sessionary.tokens import TokenCounter, default_counter, json_text

__all__ = [
    "MOST_REFERENCES",
    "SECTIONS",
    "AsyncSummarizer",
    "StructuredSummarizer",
    "SummaryRequest",
    "Summarizer",
    "build_prompt",
    "check_summary",
    "extract_references",
    "previous_text",
    "refuse_coroutine",
    "render_transcript",
    "result_text",
    "structured_summary",
]

SECTIONS = ("Intent", "Key Points", "Artifacts", "Current State", "Open Items")


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """What to summarize: the new `messages`, the `previous` summary to update, the budget."""

    messages: tuple[Message, ...]
    previous: str | None = None
    budget: int = 2000
    counter: TokenCounter = field(default_factory=default_counter)


@runtime_checkable
class Summarizer(Protocol):
    """Turns a `SummaryRequest` into summary text (synchronously)."""

    def summarize(self, request: SummaryRequest) -> str:
        """Return the summary text."""
        ...


@runtime_checkable
class AsyncSummarizer(Protocol):
    """Turns a `SummaryRequest` into summary text (awaited)."""

    async def summarize(self, request: SummaryRequest) -> str:
        """Return the summary text."""
        ...


def refuse_coroutine(result: object, what: str) -> None:
    """Raise if `result` is a coroutine: an async `what` handed to a synchronous session.

    Raises:
        SummarizerError: If it is (the coroutine is closed first, so nothing warns).
    """
    if inspect.iscoroutine(result):
        result.close()
        raise SummarizerError(f"an async {what} cannot serve a synchronous Session")


def check_summary(result: object) -> str:
    """Return `result` if it is non-blank summary text.

    Raises:
        SummarizerError: If the summarizer returned something else (a coroutine from an
            async summarizer given to a synchronous session included).
    """
    refuse_coroutine(result, "summarizer")
    if not isinstance(result, str):
        raise SummarizerError(f"a summarizer must return text, not {type(result).__name__}")
    if not result.strip():
        raise SummarizerError("the summarizer returned an empty summary")
    return result.strip()


# ------------------------------------------------------------------ transcript and prompt


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


def _message_lines(message: Message, part_chars: int) -> list[str]:
    lines = [f"[{message.role}]"]
    for part in message.parts:
        if isinstance(part, TextPart) and part.text:
            lines.append(_clip(part.text, part_chars * 4))
        elif isinstance(part, ToolCallPart):
            lines.append(
                f"[tool call {part.name} #{part.id}] {_clip(json_text(part.arguments), part_chars)}"
            )
        elif isinstance(part, ToolResultPart):
            status = "error" if part.is_error else "result"
            lines.append(
                f"[tool {status} #{part.call_id}] {_clip(json_text(part.output), part_chars)}"
            )
    return lines


def render_transcript(messages: Iterable[Message], part_chars: int = 2000) -> str:
    """Return messages as a plain-text transcript; tool data is clipped to `part_chars`.

    Objects are rendered as JSON (never as an opaque placeholder); reasoning, files and
    application data are left out.
    """
    return "\n\n---\n\n".join("\n".join(_message_lines(m, part_chars)) for m in messages)


_INSTRUCTIONS = """You maintain the working summary of a long conversation between a user and an \
AI agent, so the agent can continue without the original messages.

Write exactly these five Markdown sections:
## Intent — what the user wants overall, and any constraints they set.
## Key Points — decisions made, facts learned, errors met and how they were resolved.
## Artifacts — the files, commands, URLs and identifiers created, read or changed.
## Current State — what has been done and where things stand now.
## Open Items — pending questions, unfinished tasks and next steps.

Copy file paths, commands, identifiers, URLs, error messages and numbers verbatim. Include only \
what the conversation says: do not invent paths, commands or details. Target about {budget} \
tokens. Write only the summary."""


def build_prompt(request: SummaryRequest) -> tuple[str, str]:
    """Return the (system, user) prompt an LLM summarizer sends for `request`."""
    system = _INSTRUCTIONS.format(budget=request.budget)
    transcript = render_transcript(request.messages)
    if request.previous:
        user = (
            "Update the previous summary with the new turns: keep what still matters, add "
            "what is new, and drop only what is clearly obsolete.\n\n"
            f"PREVIOUS SUMMARY:\n{request.previous}\n\nNEW TURNS:\n{transcript}"
        )
    else:
        user = f"CONVERSATION TO SUMMARIZE:\n{transcript}"
    return system, user


# ------------------------------------------------------------------ offline summarizer

_PATH = re.compile(
    r"(?<![\w/.-])(?:~?/|\.{1,2}/)?(?:[\w.-]+/)+[\w.-]+|\b[\w-]+\.[a-z][a-z0-9]{0,5}\b"
)
_URL = re.compile(r"https?://[^\s\"'<>)\]]+")
_BACKTICK = re.compile(r"`([^`\n]{1,200})`")
_COMMAND = re.compile(r"(?m)^[^\S\n]*\$[^\S\n]+(.{1,200})$")
"""A shell command: `$ ` and the rest of its line. Only the spaces of one line count
(whitespace but a newline): with any whitespace, every line start scanned all the blank
lines after it, which is quadratic."""
_IDENT = re.compile(
    r"\b(?:[A-Za-z]+_[A-Za-z0-9_]+|[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*"
    r"|[A-Z]{2,}-\d+|[A-Z][A-Z0-9]*_[A-Z0-9_]+|[0-9a-f]{7,40})\b"
)
_ERROR = re.compile(r"(?i)\b(?:error|exception|traceback|failed|failure)\b")
_DECISION = re.compile(
    r"(?i)\b(?:decided|decision|we will|we'll|let's|chose|agreed|going with|use)\b"
)
_QUESTION = re.compile(r"(?<![^.!?\n])[^.!?\n]*\?")
"""A question: a sentence ending in `?`. It starts only where a sentence can (the text's
start or a stop), so a long text without a stop is scanned once, not from every position."""
_RUN = re.compile(r"[\w./~-]+")
"""A run of the characters `_PATH` matches: every match lies within one."""
_LONGEST_RUN = 512
"""Runs longer than this are not paths anyone reads back; `_PATH` skips them, since it may
scan a run once from each of its word boundaries (quadratic in its length)."""
_TODO = re.compile(r"(?im)^[^\S\n]*(?:[-*][^\S\n]*)?(?:todo|next|still need|remaining)\b.*$")
_WORD_EXT = re.compile(
    r"\.(?:py|md|txt|json|toml|yaml|yml|js|ts|tsx|sql|sh|cfg|ini|log|csv|html|css|rs|go|java|c|h|cpp|lock)$"
)


def _is_path(candidate: str) -> bool:
    return "/" in candidate or bool(_WORD_EXT.search(candidate))


def result_text(part: ToolResultPart) -> str:
    """Return a tool result's output as text; an evicted preview without its reading note.

    The note (how to call `read_tool_result`, with message and call ids) is for the model
    in the context, not a fact of the conversation.
    """
    text = json_text(part.output)
    marker = part.extra.get(EVICTED_KEY)
    preview = marker.get("preview") if isinstance(marker, dict) else None
    if isinstance(preview, int) and preview >= 0 and 2 * preview < len(text):
        return f"{text[:preview]}\n…\n{text[len(text) - preview :]}"
    return text


def _texts(message: Message) -> list[str]:
    pieces: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            pieces.append(part.text)
        elif isinstance(part, ToolCallPart):
            pieces.append(f"{part.name} {json_text(part.arguments)}")
        elif isinstance(part, ToolResultPart):
            pieces.append(result_text(part))
    return pieces


def _unique(items: Iterable[str], most: int | None = None) -> list[str]:
    """The distinct non-empty items, in order; with `most`, only the first `most` of them."""
    found: dict[str, None] = {}
    for item in items:
        if item and item not in found:
            found[item] = None
            if len(found) == most:
                break
    return list(found)


MOST_REFERENCES = 1000
"""The most references of each kind `extract_references` returns: a text naming more is a
dump (a file listing, a log), and checking each identifier against every path would take
time that grows with the square of their number."""


def extract_references(text: str) -> dict[str, list[str]]:
    """Return the file paths, URLs, commands and identifiers `text` mentions, in order.

    At most `MOST_REFERENCES` of each kind, the first ones; the time taken grows with the
    text's length, never faster.
    """
    # A sentence's full stop (or comma) after a URL is not part of it.
    urls = _unique((u.rstrip(".,;:!?") for u in _URL.findall(text)), MOST_REFERENCES)
    bare = _URL.sub(" ", text)
    found = (
        p for run in _RUN.findall(bare) if len(run) <= _LONGEST_RUN for p in _PATH.findall(run)
    )
    paths = _unique(
        (p.rstrip(".,:;") for p in found if _is_path(p.rstrip(".,:;"))), MOST_REFERENCES
    )
    commands = _unique([*_COMMAND.findall(text), *_BACKTICK.findall(text)], MOST_REFERENCES)
    within = "\n".join(paths)  # an identifier inside a path is that path's, not its own
    named = (m.group() for m in _IDENT.finditer(bare))
    idents = _unique((i for i in named if i not in within), MOST_REFERENCES)
    return {"files": paths, "urls": urls, "commands": commands, "identifiers": idents}


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


@dataclass
class _Notes:
    intent: list[str] = field(default_factory=list)
    points: list[str] = field(default_factory=list)
    state: list[str] = field(default_factory=list)
    open: list[str] = field(default_factory=list)
    refs: dict[str, list[str]] = field(default_factory=dict)


def _note_message(notes: _Notes, message: Message, answered: set[str]) -> None:
    text = "\n".join(_texts(message))
    for kind, found in extract_references(text).items():
        notes.refs.setdefault(kind, []).extend(found)
    if message.role == "user" and message.text.strip():
        notes.intent.append(_clip(message.text.strip(), 300))
        notes.open.extend(q.strip() for q in _QUESTION.findall(message.text))
    for result in message.tool_results:
        if result.is_error or _ERROR.search(json_text(result.output)[:2000]):
            first = json_text(result.output).strip().splitlines() or [""]
            notes.points.append(
                f"Error from {result.name or result.call_id}: {_clip(first[0], 300)}"
            )
    for call in message.tool_calls:
        if call.id not in answered:
            notes.open.append(f"Unanswered tool call {call.name} #{call.id}")
    if message.role == "assistant" and message.text.strip():
        notes.points.extend(_clip(s, 300) for s in _sentences(message.text) if _DECISION.search(s))
        notes.state = [_clip(message.text.strip(), 600)]
    notes.open.extend(m.strip() for m in _TODO.findall(message.text))


def _previous_sections(previous: str | None) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {name: [] for name in SECTIONS}
    current: str | None = None
    for line in (previous or "").splitlines():
        if line.startswith("## ") and line[3:].strip() in sections:
            current = line[3:].strip()
        elif current and line.strip():
            sections[current].append(line.strip().removeprefix("- "))
    return sections


def _reference_lines(refs: dict[str, list[str]]) -> list[str]:
    labels = {
        "files": "Files",
        "urls": "URLs",
        "commands": "Commands",
        "identifiers": "Identifiers",
    }
    lines = []
    for kind, label in labels.items():
        found = _unique(refs.get(kind, []))
        if found:
            lines.append(
                f"{label}: " + ", ".join(f"`{f}`" if kind == "commands" else f for f in found)
            )
    return lines


def _render(sections: dict[str, list[str]]) -> str:
    blocks = []
    for name in SECTIONS:
        items = _unique(sections.get(name, [])) or ["(none)"]
        blocks.append(f"## {name}\n" + "\n".join(f"- {item}" for item in items))
    return "\n\n".join(blocks)


def _fit(sections: dict[str, list[str]], budget: int, counter: TokenCounter) -> str:
    # Over budget: drop the oldest free text first, then the oldest verbatim references.
    text = _render(sections)
    while (excess := counter.count_text(text) - budget) > 0:
        if not (_drop_text(sections, excess) or _drop_references(sections, excess)):
            return text
        text = _render(sections)
    return text


def _take(lines: list[str], excess: int) -> int:
    """Return how many of `lines`, from the front, hold about `excess` tokens (at least 1)."""
    count = chars = 0
    while count < len(lines) and (count == 0 or chars < excess * 4):
        chars += len(lines[count]) + 4
        count += 1
    return count


def _drop_text(sections: dict[str, list[str]], excess: int) -> bool:
    # The first intent and the latest state are the last free text to go.
    for name, keep_first in (("Key Points", False), ("Open Items", False), ("Intent", True)):
        free = [line for line in sections[name] if not _is_reference(line)]
        droppable = free[1:][::-1] if keep_first else free
        if droppable:
            gone = set(droppable[: _take(droppable, excess)])
            sections[name] = [line for line in sections[name] if line not in gone]
            return True
    state = sections["Current State"]
    if len(state) > 1:
        del state[: _take(state[:-1], excess)]
        return True
    return False


def _drop_references(sections: dict[str, list[str]], excess: int) -> bool:
    points = sections["Artifacts"]
    refs = [i for i, line in enumerate(points) if _is_reference(line)]
    if not refs:
        return False
    index = max(refs, key=lambda i: len(points[i]))
    label, _, values = points[index].partition(": ")
    items = values.split(", ")
    rest = items[_take(items, excess) :]
    if rest:
        points[index] = f"{label}: " + ", ".join(rest)
    else:
        del points[index]
    return True


def _is_reference(line: str) -> bool:
    return line.split(":", 1)[0] in {"Files", "URLs", "Commands", "Identifiers"}


def structured_summary(request: SummaryRequest) -> str:
    """Return the offline structured summary of `request` (deterministic, no model).

    The previous summary's sections are kept and the new turns' notes added: the first
    user requests (intent), decisions and errors (key points), the last assistant reply
    (current state), questions, to-dos and unanswered calls (open items), and every file
    path, URL, command and identifier, verbatim. Free text is trimmed oldest first to fit
    the budget; the verbatim references are trimmed last.
    """
    answered = {r.call_id for m in request.messages for r in m.tool_results}
    notes = _Notes()
    for message in request.messages:
        _note_message(notes, message, answered)
    old = _previous_sections(request.previous)
    old_refs: dict[str, list[str]] = {}
    for line in [*old["Key Points"], *old["Artifacts"]]:
        if _is_reference(line):
            label, _, values = line.partition(": ")
            kind = {"Files": "files", "URLs": "urls", "Commands": "commands"}.get(
                label, "identifiers"
            )
            old_refs[kind] = [v.strip().strip("`") for v in values.split(", ")]
    refs = {
        k: [*old_refs.get(k, []), *notes.refs.get(k, [])]
        for k in ("files", "urls", "commands", "identifiers")
    }
    sections = {
        "Intent": [*old["Intent"], *notes.intent[:3]],
        "Key Points": [*(p for p in old["Key Points"] if not _is_reference(p)), *notes.points],
        "Artifacts": _reference_lines(refs),
        "Current State": notes.state or old["Current State"],
        "Open Items": [*(i for i in old["Open Items"] if i != "(none)"), *notes.open],
    }
    for name in SECTIONS:
        sections[name] = [i for i in _unique(sections[name]) if i != "(none)"]
    return _fit(sections, request.budget, request.counter)


class StructuredSummarizer:
    """The offline summarizer: `structured_summary` behind the `Summarizer` protocol."""

    def summarize(self, request: SummaryRequest) -> str:
        """Return the structured summary of `request`."""
        return structured_summary(request)

    def __repr__(self) -> str:
        return "StructuredSummarizer()"


def previous_text(messages: Sequence[Message]) -> str | None:
    """Return the summary text of the synthetic summaries among `messages`, or None."""
    texts = []
    for message in messages:
        info = message.metadata.get(SUMMARY_KEY)
        summary = info.get("summary") if isinstance(info, dict) else None
        texts.append(summary if isinstance(summary, str) else message.text)
    return "\n\n".join(texts) if texts else None
