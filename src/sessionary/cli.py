"""The `sessionary` command line: thin commands over the synchronous `SessionManager`.

```
sessionary [--db URL] [--tenant T] [--user U] COMMAND ...

ls       sessions, most recently active first
show     a session's row and history, or with --tree its whole message tree
search   full-text search over the messages of every session
export   sessions as JSON lines, one record per line
import   sessions from an export
rm       delete sessions
migrate  copy everything from one store to another
demo     build a realistic agent conversation and show it off
```

`--db` defaults to the `SESSIONARY_URL` environment variable, else `./sessionary.db` (a
plain path is a SQLite file). Every error prints one line, `sessionary: error: ...`, and
exits with status 1; usage errors exit with 2 and an interrupt with 130. Colors are used
only when standard output is a terminal and `NO_COLOR` is unset.

The commands draw sessions with the line renderers of `sessionary._render`; the demo's
conversation is built by `sessionary._demo`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO, get_args

from sessionary import __version__
from sessionary._demo import build_demo
from sessionary._render import (
    Style,
    plural,
    render_hit,
    render_message,
    render_session,
    render_session_table,
    render_tree,
)
from sessionary._sync.manager import SessionManager
from sessionary._sync.session import Session
from sessionary._sync.stores.registry import open_store
from sessionary.errors import SessionaryError, SessionNotFound
from sessionary.migrate import MigrationProgress, MigrationResult, migrate, verify
from sessionary.model import Message, Role
from sessionary.records import SearchHit, SessionInfo, info_to_dict, load_json
from sessionary.stores.urls import parse_store_url

__all__ = [
    "DEFAULT_DB",
    "ENV_URL",
    "CLIError",
    "Context",
    "build_parser",
    "main",
    "show_lines",
]

ENV_URL = "SESSIONARY_URL"
DEFAULT_DB = "./sessionary.db"

_LIST_PAGE = 200


class CLIError(Exception):
    """A command-line mistake the library does not know about (a bad file, a bad line)."""


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
StorelessHandler = Callable[[argparse.Namespace], int]
"""A command that opens its own stores instead of the one `--db` names."""


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
        lines.append(ctx.style.dim(f"… {plural(earlier, 'earlier message')} not shown"))
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
        f"exported {plural(sessions, 'session')} ({plural(messages, 'message')}) to {args.output}"
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
                record = load_json(line)
            except json.JSONDecodeError as exc:
                where = f"{name}, line {number}, column {exc.colno}"
                raise CLIError(f"{where}: not valid JSON ({exc.msg}); nothing imported") from None
            except ValueError as exc:  # nested too deep to decode
                raise CLIError(f"{name}, line {number}: {exc}; nothing imported") from None
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
    ctx.echo(f"imported {plural(len(imported), 'session')} ({plural(messages, 'message')})")
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
    ctx.echo(f"deleted {plural(len(ids), 'session')}")
    return 0


class _ProgressBar:
    """Migration progress on stderr: a bar redrawn in place on a tty, else a line now and then."""

    def __init__(self, stream: TextIO, every: int = 100) -> None:
        self.stream = stream
        self.every = every
        self.tty = stream.isatty()
        self.drawn = False

    def __call__(self, progress: MigrationProgress) -> None:
        done, total = progress.sessions_done, progress.sessions_total
        text = f"{done}/{total} sessions, {plural(progress.messages_copied, 'message')} copied"
        if self.tty:
            filled = 30 * done // max(total, 1)
            bar = "#" * filled + "-" * (30 - filled)
            self.stream.write(f"\rmigrating [{bar}] {text}")
            self.drawn = True
        elif done % self.every == 0 or done == total:
            self.stream.write(f"migrating: {text}\n")
        self.stream.flush()

    def finish(self) -> None:
        """End the bar's line, if one was drawn."""
        if self.drawn:
            self.stream.write("\n")
            self.drawn = False


def _open_existing(url: str, what: str) -> str:
    """Return `url` after checking it parses and, for a SQLite source, that the file exists."""
    path = parse_store_url(url).sqlite_file
    if what == "source" and path is not None and not os.path.exists(path):
        raise CLIError(f"no database at {path} (the --from store must exist)")
    return url


def _summary(result: MigrationResult) -> str:
    skipped = f", {result.sessions_skipped} already there" if result.sessions_skipped else ""
    return (
        f"migrated {plural(result.sessions_copied, 'session')} "
        f"({plural(result.messages_copied, 'message')}), "
        f"{plural(result.states_copied, 'state document')} "
        f"and {plural(result.documents_copied, 'document')} "
        f"in {plural(result.scopes, 'scope')}{skipped}"
    )


def cmd_migrate(args: argparse.Namespace) -> int:
    """Copy every scope, session, message and state from one store to another, then verify."""
    source_url = _open_existing(args.source, "source")
    target_url = _open_existing(args.target, "target")
    if source_url == target_url:
        raise CLIError("--from and --to name the same store")
    bar = _ProgressBar(sys.stderr)
    with contextlib.ExitStack() as stack:
        source = open_store(source_url)
        stack.callback(source.close)
        target = open_store(target_url)
        stack.callback(target.close)
        try:
            result = migrate(source, target, replace=args.replace, on_progress=bar)
        finally:
            bar.finish()
        print(_summary(result))
        mismatches = verify(source, target)
    if mismatches:
        more = f" (and {len(mismatches) - 1} more scopes)" if len(mismatches) > 1 else ""
        raise CLIError(f"verification failed: {mismatches[0].describe()}{more}")
    print("verified: every scope has the same sessions, messages and state in both stores")
    return 0


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
    search.add_argument("--role", choices=get_args(Role), help="only messages with this role")
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


def _add_migrate(add: _Add) -> None:
    migrate = add(
        "migrate",
        None,
        "copy everything from one store to another",
        "Copies every scope, session (all branches), message and session, user and app "
        "state, then checks that both stores hold the same counts. Run it again after an "
        "interruption: sessions already copied are skipped. Compactions do not exist yet, "
        "so there are none to copy. --db, --tenant and --user are ignored.",
    )
    migrate.add_argument("--from", dest="source", metavar="URL", required=True, help="copy from")
    migrate.add_argument("--to", dest="target", metavar="URL", required=True, help="copy into")
    migrate.add_argument(
        "--replace",
        action="store_true",
        help="copy again a session the target holds in a different form (default: stop)",
    )
    migrate.set_defaults(storeless=cmd_migrate)


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
        name: str, handler: Handler | None, summary: str, epilog: str | None = None
    ) -> argparse.ArgumentParser:
        sub = commands.add_parser(
            name,
            help=summary,
            description=summary[0].upper() + summary[1:] + ".",
            epilog=epilog,
            parents=[common],
        )
        sub.set_defaults(handler=handler, creates=False, storeless=None)
        return sub

    adders = (_add_ls, _add_show, _add_search, _add_export, _add_import, _add_rm, _add_migrate)
    for adder in (*adders, _add_demo):
        adder(add)
    return parser


# ---------------------------------------------------------------------------- main


def _invocation(args: argparse.Namespace) -> str:
    words = ["sessionary"]
    if args.db is not None:
        words += ["--db", args.db]
    for option in ("tenant", "user"):
        if getattr(args, option) != "default":
            words += [f"--{option}", getattr(args, option)]
    return shlex.join(words)


def _run(args: argparse.Namespace) -> int:
    if args.storeless is not None:
        storeless: StorelessHandler = args.storeless
        return storeless(args)
    args.url = args.db or os.environ.get(ENV_URL) or DEFAULT_DB
    path = parse_store_url(args.url).sqlite_file  # InvalidURL: a one-line error from main
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
