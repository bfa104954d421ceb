"""The commands that read sessions: `ls`, `show`, `search` and `scopes`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, get_args

import click
from rich.text import Text

from sessionary._sync.session import Session
from sessionary.cli._app import (
    LIST_PAGE,
    Env,
    complete_session,
    json_option,
    pass_env,
    root,
    store_options,
)
from sessionary.cli._views import (
    TreeMarks,
    compacted_ranges,
    hit_to_dict,
    message_view,
    plural,
    render_hit,
    session_table,
    session_view,
    summarize,
    summary_info,
    tree_lines,
    unique_prefixes,
)
from sessionary.compaction.overlays import Overlay
from sessionary.migrate import count_scopes
from sessionary.model import Message, Role
from sessionary.records import SessionInfo, info_to_dict

__all__ = ["Since", "all_messages", "overlay_to_dict", "selected_sessions", "show_session"]

_AGO = re.compile(r"(\d+)\s*([smhdw])\Z")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class Since(click.ParamType[datetime]):
    """A moment: an ISO date or time (`2025-06-01`, `2025-06-01T12:00`) or an age (`2h`)."""

    name = "WHEN"

    def convert(self, value: Any, param: click.Parameter | None, ctx: Any) -> datetime:
        if isinstance(value, datetime):
            return value
        text = str(value).strip()
        found = _AGO.match(text)
        try:
            if found:
                return datetime.now(UTC) - timedelta(**{_UNITS[found[2]]: int(found[1])})
            try:
                moment = datetime.fromisoformat(text)
            except ValueError:
                self.fail(f"{text!r} is neither a date (2025-06-01) nor an age (30m, 2h, 7d)")
            return moment if moment.tzinfo else moment.astimezone()
        except (OverflowError, ValueError):  # before year 1 (or a local time of year 1)
            self.fail(f"{text!r} is further back than the calendar goes (year 1)")


def selected_sessions(
    env: Env,
    *,
    name: str | None = None,
    model: str | None = None,
    ended: bool | None = None,
    since: datetime | None = None,
    before: datetime | None = None,
) -> Iterator[SessionInfo]:
    """Yield the scope's sessions that match, most recently active first, page by page.

    Sessions come newest activity first, so reading stops at the first one older than
    `since`.
    """
    manager, cursor = env.manager(), None
    while True:
        page = manager.list(limit=LIST_PAGE, cursor=cursor, name=name, model=model, ended=ended)
        for info in page.items:
            updated = info.updated_at
            if since is not None and updated is not None and updated < since:
                return
            if before is None or (updated is not None and updated < before):
                yield info
        cursor = page.next_cursor
        if cursor is None:
            return


def _preview(session: Session) -> str:
    head = session.head()
    return "" if head is None else f"{head.role}: {summarize(head, 60)}"


def _empty_scope_note(env: Env) -> str:
    others = [
        s for s in env.manager().store.list_scopes() if (s.tenant, s.user) != (env.tenant, env.user)
    ]
    note = f"no sessions in {env.where()}"
    if not others:
        return note
    named = ", ".join(f"{s.tenant}/{s.user}" for s in others[:5])
    more = f" and {len(others) - 5} more" if len(others) > 5 else ""
    return f"{note}; other scopes hold data: {named}{more} (see `sessionary scopes`)"


@root.command("ls")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    metavar="N",
    help="At most N sessions.",
)
@click.option(
    "--all", "everything", is_flag=True, help="Every matching session, read page by page."
)
@click.option("--name", help="Only sessions with exactly this name.")
@click.option("--model", help="Only sessions of this model.")
@click.option(
    "--since",
    type=Since(),
    help="Only sessions active since WHEN (a date, or an age: 30m, 2h, 7d).",
)
@json_option
@store_options
@pass_env
def ls_command(
    env: Env,
    limit: int,
    everything: bool,
    name: str | None,
    model: str | None,
    since: datetime | None,
    as_json: bool,
) -> None:
    """List sessions, most recently active first, with their last message.

    MSGS counts the messages stored on every branch; TOKENS adds the input and output
    tokens recorded with `add_usage`.
    """
    infos: list[SessionInfo] = []
    for info in selected_sessions(env, name=name, model=model, since=since):
        if not everything and len(infos) == limit:
            if not as_json:
                env.note(f"(more sessions: use --all or a larger --limit than {limit})")
            break
        infos.append(info)
    if as_json:
        env.echo_json([info_to_dict(info) for info in infos])
    elif not infos:
        env.note(_empty_scope_note(env))
    else:
        previews = {info.id: _preview(env.manager().session(info.id)) for info in infos}
        with env.paged():
            env.print(session_table(infos, previews, env.out.width))


# ---------------------------------------------------------------------------- show


def all_messages(env: Env, session_id: str) -> list[Message]:
    """Return every message of a session, parents first, in one pass over its export."""
    return [
        Message.from_dict(record["message"])
        for record in env.manager().export(session_id)
        if record.get("type") == "message"
    ]


def overlay_to_dict(overlay: Overlay) -> dict[str, Any]:
    """Return a compaction overlay as JSON-ready data."""
    return {
        "id": overlay.id,
        "first_id": overlay.first_id,
        "last_id": overlay.last_id,
        "covered": overlay.covered,
        "tokens_before": overlay.tokens_before,
        "tokens_after": overlay.tokens_after,
        "created_at": overlay.created_at.isoformat(),
        "supersedes": overlay.supersedes,
        "summary": overlay.summary,
    }


def _stored_count(history: list[Message]) -> int:
    """How many stored messages a history stands for (a summary stands for its range)."""
    return sum(int((summary_info(m) or {}).get("covered") or 1) for m in history)


def _range_rules(history: list[Message], overlays: list[Overlay]) -> dict[str, list[Text]]:
    """Lines to print before messages of a raw history: where compacted ranges start and end."""
    covered = compacted_ranges(history, overlays)
    rules: dict[str, list[Text]] = {}
    ids = [m.id for m in history]
    for position, message_id in enumerate(ids):
        overlay = covered.get(message_id)
        before = covered.get(ids[position - 1]) if position else None
        if overlay is not None and overlay is not before:
            rules.setdefault(message_id, []).append(
                Text(
                    f"┄┄ from here {plural(overlay.covered, 'message')} reach the model as one "
                    f"summary (compaction {overlay.id}, history {overlay.tokens_before:,} → "
                    f"{overlay.tokens_after:,} tokens) ┄┄",
                    style="blue",
                )
            )
        if before is not None and overlay is not before:
            rules.setdefault(message_id, []).append(
                Text("┄┄ end of the compacted range ┄┄", style="blue")
            )
    return rules


def _show_history(
    env: Env, session: Session, history: list[Message], leaf: str | None, raw: bool, full: bool
) -> None:
    earlier = session.path_length(leaf) - _stored_count(history)
    if earlier > 0:
        env.print(Text(f"… {plural(earlier, 'earlier message')} not shown", style="dim"))
    rules = _range_rules(history, session.overlays()) if raw else {}
    prefixes = unique_prefixes(m.id for m in history)
    for message in history:
        env.print("")
        for rule in rules.get(message.id, []):
            env.print(rule)
        env.print(message_view(message, prefixes[message.id], full=full), soft_wrap=True)


def _show_tree(env: Env, session: Session, info: SessionInfo) -> None:
    messages = all_messages(env, info.id)
    marks = TreeMarks(
        info.head_id,
        unique_prefixes(m.id for m in messages),
        compacted_ranges(messages, session.overlays()),
    )
    env.print("")
    for line in tree_lines(messages, marks, env.out.width):
        env.print(line, soft_wrap=True)


@root.command("show")
@click.argument("session_id", metavar="ID", shell_complete=complete_session)
@click.option("--tree", is_flag=True, help="Draw every branch, the head marked.")
@click.option(
    "--raw", is_flag=True, help="Show the stored messages a compaction summarised, not its summary."
)
@click.option(
    "--leaf", metavar="MSG", help="Show the branch ending at this message (default: the head)."
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    metavar="N",
    help="Only the last N messages of the history.",
)
@click.option("--full", is_flag=True, help="Show long text, tool output and reasoning whole.")
@json_option
@store_options
@pass_env
def show_command(
    env: Env,
    session_id: str,
    tree: bool,
    raw: bool,
    leaf: str | None,
    limit: int | None,
    full: bool,
    as_json: bool,
) -> None:
    """Show a session: its row and state, then its history, root to head.

    A compacted range shows as the summary the model sees, saying how many stored
    messages it stands for; --raw shows those messages, between marks. --tree draws
    every message on every branch and marks the compacted ones with ┆. Ids are shown
    as their shortest unique prefix; any unique prefix works where an ID is taken.
    """
    info = env.session_info(session_id)
    if leaf is not None:
        leaf = env.message_id(all_messages(env, info.id), leaf, info.id)
    if as_json:
        session = env.manager().session(info.id)
        env.echo_json(_show_data(env, session, info, tree=tree, raw=raw, leaf=leaf, limit=limit))
        return
    with env.paged():
        show_session(env, info.id, tree=tree, raw=raw, leaf=leaf, limit=limit, full=full)


def show_session(
    env: Env,
    session_id: str,
    *,
    tree: bool = False,
    raw: bool = False,
    leaf: str | None = None,
    limit: int | None = None,
    full: bool = False,
    header: bool = True,
) -> None:
    """Print what `sessionary show` prints for a session: its row, then history or tree."""
    info = env.session_info(session_id)
    session = env.manager().session(info.id)
    if header:
        env.print(session_view(info, session.get_state()))
    if tree:
        _show_tree(env, session, info)
    else:
        history = session.history(leaf, limit, raw=raw)
        _show_history(env, session, history, leaf, raw, full)


def _show_data(
    env: Env,
    session: Session,
    info: SessionInfo,
    *,
    tree: bool,
    raw: bool,
    leaf: str | None,
    limit: int | None,
) -> dict[str, Any]:
    state = session.get_state()
    value: dict[str, Any] = {
        "session": info_to_dict(info),
        "state": {"data": state.data, "version": state.version},
        "overlays": [overlay_to_dict(o) for o in session.overlays()],
    }
    if tree:
        value["messages"] = [m.to_dict() for m in all_messages(env, info.id)]
    else:
        value["history"] = [m.to_dict() for m in session.history(leaf, limit, raw=raw)]
    return value


# ---------------------------------------------------------------------------- search


class _SearchCommand(click.Command):
    """`search`, whose query may start with `-` (an excluded word: `-float OR Decimal`).

    Click reads any word starting with `-` as an option. A query holding a space cannot
    be one, so it is moved after `--` before parsing; a one-word query (`-draft`) is
    ambiguous, so the error then says to put it after `--`.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, self._query_last(ctx, args))
        except click.NoSuchOption as exc:
            raise click.UsageError(
                f"{exc.format_message()} (a query starting with '-' goes after '--': "
                "sessionary search -- '-draft report')",
                ctx,
            ) from None

    def _query_last(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            return args
        taking = {
            name
            for param in self.get_params(ctx)
            if isinstance(param, click.Option) and not param.is_flag
            for name in param.opts
        }
        queries = [
            i
            for i, word in enumerate(args)
            if word.startswith("-")
            and any(c.isspace() for c in word)
            and (i == 0 or args[i - 1] not in taking)
        ]
        if len(queries) != 1:
            return args
        query = args[queries[0]]
        return [*args[: queries[0]], *args[queries[0] + 1 :], "--", query]


@root.command("search", cls=_SearchCommand)
@click.argument("query")
@click.option(
    "--session",
    "session_id",
    metavar="ID",
    shell_complete=complete_session,
    help="Only in this session.",
)
@click.option("--role", type=click.Choice(get_args(Role)), help="Only messages with this role.")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    metavar="N",
    help="At most N hits.",
)
@json_option
@store_options
@pass_env
def search_command(
    env: Env, query: str, session_id: str | None, role: str | None, limit: int, as_json: bool
) -> None:
    """Full-text search over the messages of every session in the scope, best first.

    Words must all match; "a phrase", pre*, a OR b, -excluded. Whole words match, never
    stems (deploy* finds deployment). A query that starts with - and is one word goes
    after --: sessionary search -- -draft. Snippets are the text as written; the matches are
    styled on a terminal, and --json gives them as spans. A search first brings
    the store's full-text index up to date (the only write it makes); a SQLite file that
    is not a sessionary database is refused unchanged.
    """
    manager = env.manager("update")
    if session_id is not None:
        session_id = env.session_id(session_id)
    hits = manager.search(query, limit=limit, session_id=session_id, role=role)
    if as_json:
        env.echo_json([hit_to_dict(hit) for hit in hits])
        return
    if not hits:
        env.note("no matches")
    with env.paged():
        for hit in hits:
            env.print(render_hit(hit), soft_wrap=True)


# ---------------------------------------------------------------------------- scopes


@root.command("scopes")
@json_option
@store_options
@pass_env
def scopes_command(env: Env, as_json: bool) -> None:
    """List every tenant and user the store holds data for, with what each holds.

    MESSAGES counts every stored message of the scope's sessions (all branches);
    DOCUMENTS counts blocks, compactions, prompts and agent states of the scope, its
    sessions and its tenant's app (latest versions).
    """
    counts = count_scopes(env.manager().store)
    rows = [
        {
            "tenant": scope.tenant,
            "user": scope.user,
            "sessions": c.sessions,
            "messages": c.messages,
            "user_state_version": c.user_state_version,
            "app_state_version": c.app_state_version,
            "documents": c.documents,
        }
        for scope, c in counts.items()
    ]
    if as_json:
        env.echo_json(rows)
        return
    if not rows:
        env.note("the store holds no data yet")
        return
    from rich.table import Table

    table = Table(box=None, header_style="bold", pad_edge=False)
    for column in (
        "TENANT",
        "USER",
        "SESSIONS",
        "MESSAGES",
        "USER STATE",
        "APP STATE",
        "DOCUMENTS",
    ):
        table.add_column(column, justify="left" if column in ("TENANT", "USER") else "right")
    for row in rows:
        table.add_row(
            str(row["tenant"]),
            str(row["user"]),
            f"{row['sessions']:,}",
            f"{row['messages']:,}",
            f"v{row['user_state_version']}",
            f"v{row['app_state_version']}",
            f"{row['documents']:,}",
        )
    with env.paged():
        env.print(table)
