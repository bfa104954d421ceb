"""The `sessionary` command group: store and scope options, output, errors, short ids.

Every command works through an `Env`: it opens the store the options name (read-only for
commands that only read a SQLite file, so they never change it), prints through a rich
console (colours only on a terminal without `NO_COLOR`; long output through `$PAGER` on
a terminal unless `--no-pager`), and turns any id prefix into the one id it names.
"""

from __future__ import annotations

import contextlib
import io
import os
import pydoc
import shlex
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import click
from click.shell_completion import CompletionItem
from rich.console import Console, RenderableType
from rich.pager import Pager

from sessionary import __version__
from sessionary._sync.manager import SessionManager
from sessionary._sync.stores.adapter import wrap_engine
from sessionary._sync.stores.base import Store
from sessionary.cli._views import PrintableOnly, json_safe, printable
from sessionary.crypto import Encryption, Keyring
from sessionary.errors import MessageNotFound, SessionaryError, SessionNotFound
from sessionary.ids import check_id
from sessionary.model import Message
from sessionary.records import SessionInfo
from sessionary.stores.urls import parse_store_url

__all__ = [
    "DEFAULT_DB",
    "ENV_KEYS",
    "ENV_URL",
    "CLIError",
    "Env",
    "complete_session",
    "db_option",
    "env_encryption",
    "json_option",
    "main",
    "open_existing",
    "root",
    "store_options",
]

ENV_URL = "SESSIONARY_URL"
ENV_KEYS = "SESSIONARY_KEYS"
DEFAULT_DB = "./sessionary.db"
LIST_PAGE = 200
F = TypeVar("F", bound=Callable[..., Any])
OpenMode = Literal["read", "update", "write"]


class CLIError(Exception):
    """A command-line mistake the library does not know about (a bad file, a bad line)."""


class _Pager(Pager):
    """`$PAGER` (else `less`) via pydoc, with git's `LESS=FRX` unless `LESS` is set.

    R keeps the colours, F prints output that fits on one screen as it is, X leaves it
    on the screen after `less` quits.
    """

    def show(self, content: str) -> None:
        os.environ.setdefault("LESS", "FRX")
        command = os.environ.get("MANPAGER") or os.environ.get("PAGER")
        sys.stdout.flush()  # what was printed before goes first
        if command and not _runnable(command):  # pydoc would lose the output to a shell error
            sys.stdout.write(content)
            sys.stderr.write(f"sessionary: the pager {command!r} ($PAGER) was not found\n")
            return
        pydoc.pager(content)


def _runnable(command: str) -> bool:
    """Whether a shell command line's program exists (a `VAR=value` prefix is skipped)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return True  # the shell may make sense of it; pydoc runs it through one
    program = next((word for word in words if "=" not in word), None)
    return program is None or shutil.which(program) is not None


def _console(stream: Any) -> Console:
    terminal = stream.isatty() if hasattr(stream, "isatty") else False
    # Off a terminal nothing wraps lines for the reader, so tables get room to breathe.
    width = None if terminal else int(os.environ.get("COLUMNS") or 160)
    console = Console(
        file=stream, width=width, markup=False, highlight=False, emoji=False, soft_wrap=False
    )
    console.push_render_hook(PrintableOnly())  # stored text never steers the terminal
    return console


def env_encryption() -> Encryption | None:
    """The encryption `$SESSIONARY_KEYS` asks for (``id=base64key,...``, current first), or None.

    The keys are read from the environment only, never from an option, so they stay out
    of shell history and process listings; no message ever shows them.
    """
    if not os.environ.get(ENV_KEYS):
        return None
    return Encryption(Keyring.from_env(ENV_KEYS))


@dataclass
class Env:
    """What every command works with: the store options, the consoles, the open manager."""

    db: str | None = None
    tenant: str = "default"
    user: str = "default"
    pager: bool = True
    out: Console = field(default_factory=lambda: _console(sys.stdout))
    err: Console = field(default_factory=lambda: _console(sys.stderr))
    _manager: SessionManager | None = None
    _store: Store | None = None
    _mode: OpenMode = "read"

    # ------------------------------------------------------------------ the store

    @property
    def url(self) -> str:
        """The store URL: `--db`, else `$SESSIONARY_URL`, else `./sessionary.db`."""
        return self.db or os.environ.get(ENV_URL) or DEFAULT_DB

    def where(self) -> str:
        """The scope, in words, for messages that say where something was looked for."""
        return f"tenant {self.tenant!r}, user {self.user!r}"

    def manager(self, mode: OpenMode = "read") -> SessionManager:
        """Return the manager of the scope, opening its store the first time.

        `mode` says what the command does to the store. "read" opens a SQLite file
        read-only, so a file that is not a sessionary database (or an empty one) is
        refused and left byte-identical. "update" checks the file the same way, then
        opens it for writing: for commands that change a store but have no business
        making one (search, which brings the full-text index up to date, rm, rekey,
        erase, sweep), so a mistyped path is an error, not a new empty database. "write"
        opens, and creates, it for writing (demo, import).

        Raises:
            CLIError: If a command that does not create a store names a missing file.
        """
        if self._manager is not None and self._mode == "read" and mode != "read":
            self.close()  # a command that read first (e.g. to resolve an id) now writes
        if self._manager is None:
            self._store, self._mode = self._open(mode), mode
            self._manager = SessionManager(
                self._store, tenant=self.tenant, user=self.user, encryption=env_encryption()
            )
        return self._manager

    def _open(self, mode: OpenMode) -> Store:
        from sessionary._sync.stores.registry import open_store

        if mode == "write":
            return open_store(self.url)
        reader = open_existing(self.url)
        if reader is None:
            return open_store(self.url)
        if mode == "read":
            return reader
        reader.close()
        return open_store(self.url)

    def require_store(self) -> None:
        """Refuse, changing nothing, a SQLite file that is missing or not a sessionary store.

        For commands that hand the URL on to code that would create the file (`keys`).
        """
        reader = open_existing(self.url)
        if reader is not None:
            reader.close()

    def close(self) -> None:
        """Close the store, if a command opened it."""
        if self._store is not None:
            self._store.close()
            self._store = self._manager = None

    def invocation(self) -> str:
        """How to run sessionary on this store and scope again, for hints."""
        words = ["sessionary"]
        if self.db is not None:
            words += ["--db", self.db]
        for option in ("tenant", "user"):
            if getattr(self, option) != "default":
                words += [f"--{option}", getattr(self, option)]
        return shlex.join(words)

    # ------------------------------------------------------------------ ids

    def session_id(self, text: str) -> str:
        """Return the id of the one session in the scope whose id is or starts with `text`.

        Raises:
            SessionNotFound: If none does, naming the scope.
            CLIError: If several do, listing them.
        """
        manager = self.manager()
        check_id(text, "session id")
        if manager.get(text) is not None:
            return text
        found = [info for info in self._all_sessions() if info.id.startswith(text)]
        if not found:
            raise SessionNotFound(
                f"no session {text!r} in {self.where()} (`sessionary scopes` lists the others)"
            )
        if len(found) > 1:
            listed = ", ".join(f"{info.id} ({info.name or 'unnamed'})" for info in found[:5])
            more = f" and {len(found) - 5} more" if len(found) > 5 else ""
            raise CLIError(f"session id prefix {text!r} is ambiguous: {listed}{more}")
        return found[0].id

    def session_info(self, text: str) -> SessionInfo:
        """Return the row of the session `text` names (an id or a unique prefix)."""
        info = self.manager().get(self.session_id(text))
        if info is None:  # deleted since it was resolved
            raise SessionNotFound(f"no session {text!r} in {self.where()}")
        return info

    def sessions(self) -> Iterator[SessionInfo]:
        """Yield every session of the scope, most recently active first, page by page."""
        return self._all_sessions()

    def _all_sessions(self) -> Iterator[SessionInfo]:
        manager, cursor = self.manager(), None
        while True:
            page = manager.list(limit=LIST_PAGE, cursor=cursor)
            yield from page.items
            cursor = page.next_cursor
            if cursor is None:
                return

    def message_id(self, messages: list[Message], text: str, session_id: str) -> str:
        """Return the id of the one message in `messages` whose id is or starts with `text`.

        Raises:
            MessageNotFound: If none does.
            CLIError: If several do, listing them.
        """
        check_id(text, "message id")
        found = [m.id for m in messages if m.id == text] or [
            m.id for m in messages if m.id.startswith(text)
        ]
        if not found:
            raise MessageNotFound(f"no message {text!r} in session {session_id!r}")
        if len(found) > 1:
            raise CLIError(f"message id prefix {text!r} is ambiguous: {', '.join(found[:5])}")
        return found[0]

    # ------------------------------------------------------------------ output

    @contextlib.contextmanager
    def paged(self, enabled: bool = True) -> Iterator[None]:
        """Send what is printed inside through the pager, on a terminal, unless disabled."""
        if enabled and self.pager and self.out.is_terminal:
            with self.out.pager(_Pager(), styles=True):
                yield
        else:
            yield

    def print(self, *items: RenderableType, soft_wrap: bool = False) -> None:
        """Print renderables on standard output, each starting on a line of its own."""
        for item in items:
            self.out.print(item, soft_wrap=soft_wrap)

    def echo(self, text: str = "") -> None:
        """Print plain text and a newline on standard output, control characters shown."""
        self.out.file.write(printable(text, lines=True) + "\n")

    def note(self, text: str) -> None:
        """Print a remark for the person reading (not data) on standard error."""
        self.err.file.write(printable(text, lines=True) + "\n")

    def echo_json(self, value: Any) -> None:
        """Print a JSON value, indented, every control character escaped (`json_safe`)."""
        self.out.file.write(json_safe(value, indent=2, default=str) + "\n")


def open_existing(url: str) -> Store | None:
    """Open the SQLite file `url` names read-only; None if `url` names no SQLite file.

    Raises:
        CLIError: If the file is missing.
        SchemaError: If it is not a sessionary database at this code's schema version
            (it is left byte-identical).
    """
    parsed = parse_store_url(url)  # InvalidURL: a one-line error from main
    path = parsed.sqlite_file
    if path is None:
        return None
    if not os.path.exists(path):
        raise CLIError(
            f"no database at {path} (pass --db or set {ENV_URL}; `sessionary demo` makes one)"
        )
    from sessionary.stores.sqlite import SQLiteEngine

    return wrap_engine(SQLiteEngine(path, readonly=True, **parsed.options))  # type: ignore[arg-type]


pass_env = click.make_pass_decorator(Env)


def complete_session(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Offer the ids of the scope's sessions that start with what was typed."""
    top = ctx.find_root().params
    own = ctx.find_object(Env)
    env = Env(
        db=(own.db if own and own.db else top.get("db")),
        tenant=(own.tenant if own and own.tenant != "default" else top.get("tenant") or "default"),
        user=(own.user if own and own.user != "default" else top.get("user") or "default"),
    )
    try:
        return [
            CompletionItem(info.id, help=info.name)
            for info in env.sessions()
            if info.id.startswith(incomplete)
        ]
    except Exception:
        return []
    finally:
        env.close()


def _override(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """Let `--db`, `--tenant` and `--user` after a command override the ones before it."""
    if value is not None and param.name is not None:
        setattr(ctx.ensure_object(Env), param.name, value)


def store_options(command: F) -> F:
    """Add `--db`, `--tenant` and `--user` to a command, so they may follow its name."""
    return _scope_options(command, _SCOPE_HELP)


def db_option(command: F) -> F:
    """Add `--db` alone, to a command whose `--tenant`/`--user` mean something else."""
    return _scope_options(command, _SCOPE_HELP[:1])


def _scope_options(command: F, options: tuple[tuple[str, str], ...]) -> F:
    for name, help_text in reversed(options):
        command = click.option(
            name,
            metavar="URL" if name == "--db" else None,
            expose_value=False,
            callback=_override,
            help=help_text,
        )(command)
    return command


_SCOPE_HELP = (
    ("--db", f"Store URL or SQLite path (default: ${ENV_URL}, else {DEFAULT_DB})."),
    ("--tenant", "The application that owns the data (default: default)."),
    ("--user", "The user within the tenant (default: default)."),
)

json_option = click.option("--json", "as_json", is_flag=True, help="Print the data as JSON.")


_ORDER = (
    "ls", "show", "search", "scopes", "inspect", "context", "export", "import", "rm",
    "erase", "sweep", "migrate", "schema", "demo", "serve", "mcp", "keys", "examples", "completion",
)  # fmt: skip


class _Group(click.Group):
    """Commands listed from the everyday to the rare, not alphabetically."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        rank = {name: i for i, name in enumerate(_ORDER)}
        return sorted(self.commands, key=lambda name: (rank.get(name, len(rank)), name))


@click.group(
    cls=_Group,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="Start with `sessionary demo`, then `sessionary ls`. Every error is one line on "
    "standard error and exit status 1; usage errors exit with 2.",
)
@click.option("--db", metavar="URL", help=_SCOPE_HELP[0][1])
@click.option("--tenant", default="default", show_default=False, help=_SCOPE_HELP[1][1])
@click.option("--user", default="default", show_default=False, help=_SCOPE_HELP[2][1])
@click.option("--no-pager", is_flag=True, help="Never send output through $PAGER.")
@click.version_option(__version__, prog_name="sessionary", message="%(prog)s %(version)s")
@click.pass_context
def root(ctx: click.Context, db: str | None, tenant: str, user: str, no_pager: bool) -> None:
    """Durable, branching, searchable sessions for LLM agents.

    Commands that only read (ls, show, context, inspect, scopes, export) open a SQLite
    file read-only, so they never change it; search changes nothing but the full-text
    index it brings up to date. Only demo, import, migrate --to, keys create, serve and
    mcp make a store where there is none; the others refuse a missing file or another
    program's.
    """
    env = ctx.ensure_object(Env)
    env.db, env.tenant, env.user, env.pager = db, tenant, user, not no_pager
    ctx.call_on_close(env.close)


def _one_line(error: BaseException) -> str:
    """The error as one line, its control characters shown (it may quote stored names)."""
    if isinstance(error, OSError) and error.strerror:
        where = error.filename
        text = f"{error.strerror}: {where}" if where is not None else error.strerror
    else:
        text = " ".join(str(error).split()) or type(error).__name__
    return printable(text)


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
    with _whole_writes():
        return _run(argv)


@contextlib.contextmanager
def _whole_writes() -> Iterator[None]:
    """Make standard output write everything it is given, or fail: never lose a part unseen.

    Under `python -u` or PYTHONUNBUFFERED, `sys.stdout` writes straight to the file and
    drops what a short write leaves (a pipe whose reader has gone: `ls --json | head -1`),
    so output was cut with status 0. A buffered writer on the same descriptor writes the
    rest, and so meets the closed pipe as `BrokenPipeError`.
    """
    stdout = sys.stdout
    if not isinstance(getattr(stdout, "buffer", None), io.RawIOBase):
        yield
        return
    sys.stdout = open(  # noqa: SIM115 - it is flushed, and the descriptor stays open
        stdout.fileno(), "w", encoding=stdout.encoding, errors=stdout.errors, closefd=False
    )
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        sys.stdout = stdout


def _run(argv: list[str] | None) -> int:
    try:
        result = root.main(args=argv, prog_name="sessionary", standalone_mode=False)
        sys.stdout.flush()  # so a reader gone early (`ls --json | head -1`) is seen here
    except click.UsageError as exc:
        exc.show()
        return 2
    except click.Abort:  # click's form of an interrupt (or end of input at a prompt)
        return 130
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return 1
    except click.ClickException as exc:
        print(f"sessionary: error: {_one_line(Exception(exc.format_message()))}", file=sys.stderr)
        return exc.exit_code
    except (SessionaryError, CLIError, OSError) as exc:
        print(f"sessionary: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except SystemExit as exc:  # shell completion exits when it has printed its answer
        return exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    return result if isinstance(result, int) else 0
