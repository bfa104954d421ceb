"""What the library keeps beside messages, and what the model sees: `inspect`, `context`.

`inspect` prints everything stored for a session (its row and state, block versions with
their authors, the frozen system prompt, loaded skills, agent states, compaction
overlays) or, without an id, for the scope (user and app state and documents).
`context` builds the next model call with the library's own turn builder
(`Session.turn()`, read-only: it adds nothing, so nothing is stored) and shows each
part with its share of the tokens.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Sequence
from typing import Any, get_args

import click
from rich.console import Group, RenderableType
from rich.progress_bar import ProgressBar
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from sessionary._sync.manager import SessionManager
from sessionary._sync.session import Session
from sessionary._sync.turn import Turn
from sessionary.blocks import BlockSpec, SessionConfig
from sessionary.cli._app import (
    CLIError,
    Env,
    complete_session,
    json_option,
    pass_env,
    root,
    store_options,
)
from sessionary.cli._read import overlay_to_dict
from sessionary.cli._views import (
    clip_lines,
    json_text,
    message_view,
    plural,
    session_view,
    summary_info,
    unique_prefixes,
    when,
)
from sessionary.compaction.policy import CompactionPolicy
from sessionary.records import Document, StateLevel, document_to_dict
from sessionary.tokens import HeuristicCounter, default_counter
from sessionary.toolspec import ToolFormat

__all__ = ["load_object"]

_KNOWN = {
    "block": "blocks",
    "prompt": "frozen system prompt",
    "loaded": "loaded skill entries",
    "agent": "agent states",
    "compaction": "compaction overlays",
}
_HIDDEN = {"compaction.index"}  # the overlays' own index: `compaction` shows them


def _section_of(namespace: str) -> str:
    if namespace.startswith("block."):
        return f"entries of block {namespace[len('block.') :]!r}"
    return _KNOWN.get(namespace, f"documents in {namespace!r}")


def _document_lines(doc: Document, full: bool) -> list[Text]:
    head = Text.assemble(
        (doc.key, "bold"),
        (f"  v{doc.version} by {doc.author}, {when(doc.updated_at)}", "dim"),
    )
    body = (
        doc.body.get("content", doc.body.get("text"))
        if doc.namespace in ("block", "prompt")
        else None
    )
    text = body if isinstance(body, str) else json_text(doc.body)
    limits = (10**9, 10**9) if full else (12, 300)
    return [head, *(Text(f"  {line}") for line in clip_lines(text, *limits))]


def _documents_view(docs: Sequence[Document], full: bool) -> list[RenderableType]:
    shown: list[RenderableType] = []
    section = None
    for doc in docs:
        if doc.namespace in _HIDDEN:
            continue
        if _section_of(doc.namespace) != section:
            section = _section_of(doc.namespace)
            shown.append(Rule(section, align="left", style="dim"))
        shown.extend(_document_lines(doc, full))
    return shown


def _overlays_view(session: Session, full: bool) -> list[RenderableType]:
    overlays = session.overlays()
    if not overlays:
        return []
    shown: list[RenderableType] = [Rule("compaction overlays", align="left", style="dim")]
    for overlay in overlays:
        superseded = (
            ", widened by a later one" if any(o.supersedes == overlay.id for o in overlays) else ""
        )
        shown.append(
            Text.assemble(
                (overlay.id, "bold"),
                (f"  {when(overlay.created_at)}{superseded}", "dim"),
            )
        )
        shown.append(
            Text(
                f"  covers {plural(overlay.covered, 'message')}: {overlay.first_id} .. "
                f"{overlay.last_id}; history {overlay.tokens_before:,} → "
                f"{overlay.tokens_after:,} tokens"
            )
        )
        limits = (10**9, 10**9) if full else (8, 300)
        shown.extend(Text(f"  │ {line}") for line in clip_lines(overlay.summary, *limits))
    return shown


def _state_line(label: str, data: dict[str, Any], version: int) -> Text:
    if not version:
        return Text(f" {label:<13} (none)", style="dim")
    return Text(f" {label:<13} v{version} {json_text(data)}")


@root.command("inspect")
@click.argument("session_id", metavar="[ID]", required=False, shell_complete=complete_session)
@click.option("--versions", is_flag=True, help="Every version of each document, with its author.")
@click.option("--full", is_flag=True, help="Show long contents and summaries whole.")
@json_option
@store_options
@pass_env
def inspect_command(
    env: Env, session_id: str | None, versions: bool, full: bool, as_json: bool
) -> None:
    """Show everything stored beside the messages: state, blocks, prompt, agents, overlays.

    With an ID: the session's row and state, its documents (writable blocks with the
    version and author of each write, keyed block entries, the frozen system prompt,
    loaded skills, agent states) and its compaction overlays (the range each covers, the
    history's tokens before and after, the summary). Without one: the scope's user and
    app state and their documents (such as a user-level memory block).
    """
    manager = env.manager()
    if session_id is None:
        _inspect_scope(env, manager, versions, full, as_json)
        return
    info = env.session_info(session_id)
    session = manager.session(info.id)
    docs = manager.documents("session", session_id=info.id, versions=versions)
    if as_json:
        state = session.get_state()
        env.echo_json(
            {
                "session": {"id": info.id, "state": {"data": state.data, "version": state.version}},
                "documents": [document_to_dict(d) for d in docs if d.namespace not in _HIDDEN],
                "overlays": [overlay_to_dict(o) for o in session.overlays()],
            }
        )
        return
    with env.paged():
        env.print(session_view(info, session.get_state()))
        if not docs:
            env.print(
                Text(
                    "no documents: no stored blocks, prompt, agent state or compaction", style="dim"
                )
            )
        env.print(
            *_documents_view([d for d in docs if d.namespace != "compaction"], full), soft_wrap=True
        )
        env.print(*_overlays_view(session, full), soft_wrap=True)


def _inspect_scope(
    env: Env, manager: SessionManager, versions: bool, full: bool, as_json: bool
) -> None:
    levels: tuple[StateLevel, ...] = ("user", "app")
    states = {level: manager.get_state(level) for level in levels}
    docs = {level: manager.documents(level, versions=versions) for level in levels}
    if as_json:
        env.echo_json(
            {
                level: {
                    "state": {"data": states[level].data, "version": states[level].version},
                    "documents": [document_to_dict(d) for d in docs[level]],
                }
                for level in levels
            }
        )
        return
    with env.paged():
        env.print(Text(f"scope: {env.where()}", style="bold"))
        env.print(_state_line("user state", states["user"].data, states["user"].version))
        env.print(_state_line("app state", states["app"].data, states["app"].version))
        for level in levels:
            env.print(Rule(f"{level}-level documents ({len(docs[level])})", align="left"))
            env.print(*_documents_view(docs[level], full), soft_wrap=True)


# ---------------------------------------------------------------------------- context


def load_object(reference: str) -> Any:
    """Return the object a `module:attribute` reference names, called if it is callable.

    A class is called too (with no arguments), so `myapp.agent:Config` gives a
    `Config()` as a factory function would.

    Raises:
        CLIError: If the module or the attribute cannot be found, or calling it fails
            (or exits).
    """
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise CLIError(f"{reference!r}: expected module:attribute, e.g. myapp.agent:config")
    try:
        found: Any = importlib.import_module(module_name)
        for name in attribute.split("."):
            found = getattr(found, name)
    except (ImportError, AttributeError) as exc:
        raise CLIError(f"cannot load {reference!r}: {exc}") from None
    if not callable(found):
        return found
    try:
        return found()
    except (Exception, SystemExit) as exc:  # the user's code: its failure is one line too
        what = "exited" if isinstance(exc, SystemExit) else f"raised {type(exc).__name__}"
        raise CLIError(f"calling {reference!r} {what}: {exc}") from None


def _stored_blocks(manager: SessionManager, session_id: str) -> tuple[SessionConfig, list[str]]:
    """A config with the writable blocks stored for a session, and notes on what it lacks."""
    specs, notes = [], []
    owners: tuple[tuple[StateLevel, str | None], ...] = (
        ("session", session_id),
        ("user", None),
        ("app", None),
    )
    for level, owner in owners:
        for doc in manager.documents(level, session_id=owner):
            if doc.namespace == "block":
                specs.append(BlockSpec(doc.key, level=level))
            elif doc.namespace.startswith("block.") and doc.namespace[6:] not in notes:
                notes.append(doc.namespace[6:])
    seen, unique = set(), []
    for spec in specs:
        if spec.label not in seen:
            seen.add(spec.label)
            unique.append(spec)
    return SessionConfig(blocks=tuple(unique)), notes


def _config(env: Env, session_id: str, reference: str | None) -> tuple[SessionConfig, list[str]]:
    manager = env.manager()
    frozen = bool(manager.documents("session", session_id=session_id, namespace="prompt"))
    if reference is not None:
        config = load_object(reference)
        if not isinstance(config, SessionConfig):
            raise CLIError(f"{reference!r} is a {type(config).__name__}, not a SessionConfig")
        notes = []
    else:
        config, keyed = _stored_blocks(manager, session_id)
        notes = [
            "blocks found in the store (readonly ones and block settings live in your code: "
            "pass --config module:attribute for exactly what your app sends)"
        ]
        if keyed:
            notes.append(f"keyed blocks stored but not shown without --config: {', '.join(keyed)}")
    # The turn reads a stored prompt as it is; without one it renders the blocks, and
    # must not store what it rendered: this command only reads.
    return dataclasses.replace(config, cached_prompt=frozen), notes


def _counter(config: SessionConfig) -> HeuristicCounter:
    """The config's token counter, else the default (both count tools too)."""
    counter = config.token_counter
    if isinstance(counter, HeuristicCounter):
        return counter
    default = default_counter()
    return default if isinstance(default, HeuristicCounter) else HeuristicCounter()


@dataclasses.dataclass
class _Part:
    kind: str
    label: str
    tokens: int
    indent: bool = False


def _parts(
    turn: Turn, session: Session, counter: HeuristicCounter, prefixes: dict[str, str]
) -> list[_Part]:
    parts = [_Part("system", "system prompt", counter.count_text(turn.system))]
    parts += [
        _Part("block", f"block {b.label}", b.tokens, True) for b in session.get_context_blocks()
    ]
    for message in turn.history:
        info = summary_info(message)
        what = (
            prefixes[message.id]
            if info is None
            else f"summary of {plural(int(info.get('covered') or 0), 'message')}"
        )
        parts.append(_Part("message", f"{message.role} {what}", counter.count_message(message)))
    for tool in turn.export_tools("openai-chat"):
        parts.append(_Part("tool", f"tool {tool['function']['name']}", counter.count_tools([tool])))
    return parts


def _token_table(parts: list[_Part]) -> Table:
    total = sum(p.tokens for p in parts if not p.indent) or 1
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("PART", no_wrap=True, overflow="ellipsis", max_width=48)
    table.add_column("TOKENS", justify="right")
    table.add_column("SHARE", justify="right")
    table.add_column("", width=30)
    for part in parts:
        label = f"  {part.label}" if part.indent else part.label
        share = f"{part.tokens * 100 / total:.1f}%"
        table.add_row(
            label,
            f"{part.tokens:,}",
            share,
            ProgressBar(total=total, completed=part.tokens, width=30),
        )
    table.add_row(
        Text("total", style="bold"),
        Text(f"{sum(p.tokens for p in parts if not p.indent):,}", style="bold"),
        "",
        "",
    )
    return table


@root.command("context")
@click.argument("session_id", metavar="ID", shell_complete=complete_session)
@click.option(
    "--config",
    "reference",
    metavar="MODULE:ATTR",
    help="Your app's SessionConfig (or a function returning one), for its blocks and tools.",
)
@click.option(
    "--compaction",
    "policy_reference",
    metavar="MODULE:ATTR",
    help="Your app's CompactionPolicy, for tool-result eviction and argument clipping.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    metavar="N",
    help="Show the model at most the last N messages, as turn(limit=N) does.",
)
@click.option(
    "--format",
    "wire",
    type=click.Choice(get_args(ToolFormat)),
    default="openai-chat",
    show_default=True,
    help="The provider shape of --json.",
)
@click.option("--full", is_flag=True, help="Show long text and tool output whole.")
@json_option
@store_options
@pass_env
def context_command(
    env: Env,
    session_id: str,
    reference: str | None,
    policy_reference: str | None,
    limit: int | None,
    wire: ToolFormat,
    full: bool,
    as_json: bool,
) -> None:
    """Show exactly what the next model call of a session would receive.

    The call is built by the library's own turn builder, `Session.turn()`: the system
    prompt (the stored frozen one, else rendered from the blocks), the history as the
    model sees it (compaction summaries in place of their ranges) and the tool schemas.
    A table first gives each part's tokens and share, with a bar. Nothing is stored.
    --json prints the request in the provider shape --format names, and the counts.
    """
    info = env.session_info(session_id)
    config, notes = _config(env, info.id, reference)
    policy = load_object(policy_reference) if policy_reference else None
    if policy is not None and not isinstance(policy, CompactionPolicy):
        raise CLIError(f"{policy_reference!r} is a {type(policy).__name__}, not a CompactionPolicy")
    base = env.manager()
    manager = SessionManager(
        base.store, tenant=env.tenant, user=env.user, config=config, compaction=policy
    )
    session = manager.session(info.id)
    with session.turn(limit=limit) as turn:
        request = turn.request(wire)
        prefixes = unique_prefixes(m.id for m in turn.history)
        parts = _parts(turn, session, _counter(config), prefixes)
    if as_json:
        tokens = [{"kind": p.kind, "label": p.label, "tokens": p.tokens} for p in parts]
        env.echo_json(
            {
                "session_id": info.id,
                "format": wire,
                "request": request,
                "tokens": tokens,
                "notes": notes,
            }
        )
        return
    with env.paged():
        _print_context(env, turn, parts, prefixes, notes, full)


def _print_context(
    env: Env, turn: Turn, parts: list[_Part], prefixes: dict[str, str], notes: list[str], full: bool
) -> None:
    env.print(_token_table(parts))
    for note in notes:
        env.print(Text(f"note: {note}", style="dim"), soft_wrap=True)
    env.print(Rule("system prompt", align="left"))
    env.print(Text(turn.system or "(empty)"), soft_wrap=True)
    env.print(Rule(f"messages ({len(turn.history)})", align="left"))
    for message in turn.history:
        env.print(message_view(message, prefixes[message.id], full=full), soft_wrap=True)
    env.print(Rule(f"tools ({len(turn.tools)})", align="left"))
    for tool in turn.tools:
        env.print(
            Group(Text(tool.name, style="bold"), Text(f"  {tool.description}")), soft_wrap=True
        )
