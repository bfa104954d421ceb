"""The memory flush: durable facts of a range about to be compacted, kept in a block (pure).

Before a range is summarized, an extractor reads its *original* messages (never the
context view, whose eviction previews and clipped arguments are not conversation) and
returns the facts worth keeping in the agent's memory, one line each, labelled:

- ``User:`` what the user stated about themselves, their work or their preferences
  ("My favourite colour is teal.", "I prefer tabs.", "Never deploy on Fridays.");
- ``Decision:`` what was decided or agreed;
- ``Error:`` errors met (a failing tool, a traceback), with the tool's name;
- ``Files:``, ``Commands:``, ``URLs:`` the artefacts, verbatim.

`add_facts` then appends the lines the block does not hold yet (a fact already in it, in
any case and spacing, or an artefact already named in it, is left out) as ``- `` lines,
as many as fit the block's token limit. `HeuristicExtractor` is offline and
deterministic; `sessionary.compaction.llm` has extractors that ask a model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from sessionary.compaction.summary import (
    extract_references,
    refuse_coroutine,
    render_transcript,
    result_text,
)
from sessionary.errors import SummarizerError
from sessionary.model import Message

__all__ = [
    "FACT_LABELS",
    "AsyncMemoryExtractor",
    "FlushRequest",
    "HeuristicExtractor",
    "MemoryExtractor",
    "add_facts",
    "build_flush_prompt",
    "check_facts",
    "memory_facts",
    "parse_facts",
]

FACT_LABELS = ("User", "Decision", "Error", "Files", "Commands", "URLs")


@dataclass(frozen=True, slots=True)
class FlushRequest:
    """What to extract facts from: the original `messages`, and the block as it is."""

    messages: tuple[Message, ...]
    existing: str = ""


@runtime_checkable
class MemoryExtractor(Protocol):
    """Turns a `FlushRequest` into fact lines (synchronously)."""

    def extract(self, request: FlushRequest) -> list[str]:
        """Return the facts, one line each (see the module docstring)."""
        ...


@runtime_checkable
class AsyncMemoryExtractor(Protocol):
    """Turns a `FlushRequest` into fact lines (awaited)."""

    async def extract(self, request: FlushRequest) -> list[str]:
        """Return the facts, one line each (see the module docstring)."""
        ...


# ------------------------------------------------------------------ offline extraction

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_USER_FACT = re.compile(
    r"""(?ix)
    \b(?:my|our)\s+[\w' -]{1,40}?\s+(?:is|are|was|were)\b
    | \b(?:i|we)\s+(?:am|'m|are|'re|was|prefer|like|love|enjoy|hate|dislike|want|need|use
        |work|live|have|own|speak|always|never|usually|don't|do\ not|can't|cannot|won't
        |would\ rather|'d\ rather|would\ like|'d\ like)\b
    | ^(?:always|never|don't|do\ not|remember|call\ me|note\ that|from\ now\ on|let's
        |please\s+(?:always|never|don't|do\ not|use|keep|avoid|reply|answer|write|call))\b
    """
)
_REQUEST = re.compile(r"(?i)\b(?:want|need|would like|'d like)\s+you\b")
_DECISION = re.compile(
    r"(?i)\b(?:decided|decision|we will|we'll|let's|chose|chosen|agreed|going with|"
    r"settled on|switch(?:ed)? to|will use)\b"
)
_ERROR = re.compile(r"(?i)\b(?:error|exception|traceback|failed|failure)\b")
_LIMIT = 300


def _clip(text: str) -> str:
    return text if len(text) <= _LIMIT else f"{text[: _LIMIT - 1]}…"


def _sentences(text: str) -> list[str]:
    plain = text.replace("\u2019", "'")  # a typographic apostrophe reads as a plain one
    return [s.strip() for s in _SENTENCE.split(plain) if s.strip()]


def _is_user_fact(sentence: str) -> bool:
    # Questions and requests addressed to the agent are not facts about the user.
    if sentence.endswith("?") or _REQUEST.search(sentence):
        return False
    return bool(_USER_FACT.search(sentence))


def _said(message: Message) -> list[str]:
    """The user's facts and anyone's decisions among a message's sentences."""
    found = []
    for sentence in _sentences(message.text):
        if message.role == "user" and _is_user_fact(sentence):
            found.append(f"User: {_clip(sentence)}")
        elif message.role in ("user", "assistant") and _DECISION.search(sentence):
            found.append(f"Decision: {_clip(sentence)}")
    return found


def _errors(message: Message) -> list[str]:
    found = []
    for result in message.tool_results:
        text = result_text(result)
        if result.is_error or _ERROR.search(text[:2000]):
            first = next((line.strip() for line in text.splitlines() if line.strip()), "")
            found.append(f"Error: {result.name or result.call_id}: {_clip(first)}")
    return found


def _artefacts(messages: Sequence[Message]) -> list[str]:
    texts = []
    for message in messages:
        texts.append(message.text)
        texts.extend(f"{c.name} {c.arguments}" for c in message.tool_calls)
        texts.extend(result_text(r) for r in message.tool_results)
    refs = extract_references("\n".join(texts))
    lines = []
    for kind, label in (("files", "Files"), ("commands", "Commands"), ("urls", "URLs")):
        if refs[kind]:
            items = (f"`{item}`" if kind == "commands" else item for item in refs[kind])
            lines.append(f"{label}: " + ", ".join(items))
    return lines


def memory_facts(messages: Sequence[Message]) -> list[str]:
    """Return the facts of `messages` worth keeping in memory (offline, deterministic).

    User facts and preferences come from the user's own statements (questions and
    requests addressed to the agent are not facts); decisions from any message;
    errors from tool results; artefacts from everything.
    """
    said = [fact for m in messages for fact in _said(m)]
    user = [fact for fact in said if fact.startswith("User: ")]
    decisions = [fact for fact in said if fact.startswith("Decision: ")]
    errors = [fact for m in messages for fact in _errors(m)]
    return list(dict.fromkeys([*user, *decisions, *errors, *_artefacts(messages)]))


class HeuristicExtractor:
    """The offline extractor: `memory_facts` behind the `MemoryExtractor` protocol."""

    def extract(self, request: FlushRequest) -> list[str]:
        """Return the facts of the request's messages."""
        return memory_facts(request.messages)

    def __repr__(self) -> str:
        return "HeuristicExtractor()"


# ------------------------------------------------------------------ asking a model

_INSTRUCTIONS = """You keep the long-term memory of an AI agent. A part of its conversation \
is about to be summarized; extract what is worth remembering beyond it:

User: facts and preferences the user stated about themselves, their work or how they want \
things done.
Decision: what was decided or agreed.
Error: errors met, with the tool or command, and how they were resolved.
Files: / Commands: / URLs: artefacts created, read or changed, copied verbatim.

Leave out small talk, requests already carried out, and anything MEMORY already holds. \
Answer with one fact per line, starting with "- " and one of those labels. Answer NONE if \
there is nothing new."""


def build_flush_prompt(request: FlushRequest) -> tuple[str, str]:
    """Return the (system, user) prompt a model extractor sends for `request`."""
    memory = request.existing.strip() or "(empty)"
    return _INSTRUCTIONS, (
        f"MEMORY:\n{memory}\n\nCONVERSATION:\n{render_transcript(request.messages)}"
    )


def parse_facts(text: str) -> list[str]:
    """Return the fact lines of a model's answer (bullets stripped; NONE is no facts)."""
    facts = []
    for line in text.splitlines():
        fact = line.strip().removeprefix("- ").removeprefix("* ").strip()
        if fact and fact.upper().rstrip(".") != "NONE":
            facts.append(fact)
    return facts


def check_facts(result: object) -> list[str]:
    """Return `result` if it is a list of fact lines.

    Raises:
        SummarizerError: If the extractor returned something else (a coroutine from an
            async extractor given to a synchronous session included).
    """
    refuse_coroutine(result, "memory extractor")
    if not isinstance(result, list | tuple) or not all(isinstance(f, str) for f in result):
        raise SummarizerError(f"a memory extractor must return a list of strings, not {result!r}")
    return [" ".join(f.split()) for f in result if f.strip()]


# ------------------------------------------------------------------ writing to the block

_LABEL = re.compile(r"^(?:[-*]\s*)?(?:[A-Za-z]{1,12}:\s+)?")


def _core(line: str) -> str:
    """A fact without bullet and label, in one case and spacing, for comparison."""
    return " ".join(_LABEL.sub("", line.strip()).lower().split()).rstrip(".")


def _new_in(fact: str, existing: str, known: str) -> str | None:
    label, _, items = fact.partition(": ")
    if label in ("Files", "Commands", "URLs"):
        fresh = [i for i in items.split(", ") if i.strip("`") not in existing]
        return f"{label}: {', '.join(fresh)}" if fresh else None
    core = _core(fact)
    return None if not core or core in known else fact


def add_facts(
    existing: str,
    facts: Sequence[str],
    *,
    limit: int | None = None,
    count: Callable[[str], int] | None = None,
) -> tuple[str, list[str]]:
    """Return `existing` with the new `facts` appended as ``- `` lines, and those left out.

    A fact the block holds already (compared without bullet, label, case or spacing),
    and each artefact the block names already, is not added again. Facts are added in
    order while the content stays within `limit` tokens (counted with `count`); the
    ones that did not fit are returned.
    """
    known = " ".join(_core(line) for line in existing.splitlines())
    content, left = existing, []
    for fact in facts:
        fresh = _new_in(fact, content, known)
        if fresh is None:
            continue
        candidate = f"{content}\n- {fresh}" if content else f"- {fresh}"
        if limit is not None and count is not None and count(candidate) > limit:
            left.append(fresh)
            continue
        content, known = candidate, f"{known} {_core(fresh)}"
    return content, left
