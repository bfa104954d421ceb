"""Rendering context blocks into a system prompt (pure: no I/O).

Each block is a header between two rules, then its content; blocks are separated by a
blank line and keep their configured order::

    ══════════════════════════════════════════════
    MEMORY: Facts about the user [writable · 45% of 1100 tokens]
    ══════════════════════════════════════════════
    User likes coffee.

The header names the block, its description, what the model can do with it (readonly,
writable, loadable with `load_context`, searchable with `search_context`) and, for a
block with a token limit, how full it is. An empty readonly block is left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sessionary.blocks import ContextBlock, Entry

__all__ = ["RULE", "render_block", "render_header", "render_listing", "render_prompt"]

RULE = "═" * 46

_MARKERS = {
    "readonly": "readonly",
    "writable": "writable",
    "skill": "loadable",
    "searchable": "searchable",
}
_EMPTY = {
    "writable": "(empty)",
    "skill": "(no documents yet)",
    "searchable": "(no entries yet)",
}


def render_header(block: ContextBlock) -> str:
    """Return a block's header line: label, description, kind and usage."""
    name = block.label.upper()
    if block.description:
        name = f"{name}: {block.description}"
    facts = [_MARKERS[block.kind]]
    if block.limit:
        percent = round(block.tokens * 100 / block.limit)
        facts.append(f"{percent}% of {block.limit} tokens")
    return f"{name} [{' · '.join(facts)}]"


def render_block(block: ContextBlock) -> str:
    """Return one block as it appears in the prompt."""
    content = block.content or _EMPTY.get(block.kind, "")
    return f"{RULE}\n{render_header(block)}\n{RULE}\n{content}"


def render_prompt(blocks: Iterable[ContextBlock]) -> str:
    """Return the system prompt for `blocks`, in order; empty readonly blocks are skipped."""
    shown = (b for b in blocks if b.content or b.kind != "readonly")
    return "\n\n".join(render_block(b) for b in shown)


def render_listing(entries: Sequence[Entry]) -> str:
    """Return a skill block's content: one `- key: description` line per entry.

    Line breaks in a title or description become spaces: an entry stays one line, and a
    description the model wrote cannot forge a block header in the system prompt.
    """
    lines = []
    for entry in entries:
        about = " ".join((entry.description or entry.title).split())
        lines.append(f"- {entry.key}: {about}" if about else f"- {entry.key}")
    return "\n".join(lines)
