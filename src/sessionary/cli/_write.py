"""The commands that move or change data: `export`, `import`, `rm`, `migrate`, `demo`."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
import sys
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import IO, Any, TextIO

import click
from rich.rule import Rule
from rich.text import Text

from sessionary._demo import build_demo
from sessionary._sync.stores.base import Store
from sessionary._sync.stores.registry import open_store
from sessionary._sync.transfer import Importer
from sessionary.cli._app import (
    LIST_PAGE,
    CLIError,
    Env,
    complete_session,
    open_existing,
    pass_env,
    root,
    store_options,
)
from sessionary.cli._progress import Reporter
from sessionary.cli._read import Since, selected_sessions
from sessionary.cli._views import json_safe, plural, render_hit, session_table, unique_prefixes
from sessionary.errors import AlreadyExists, SessionaryError, SessionNotFound
from sessionary.migrate import MigrationProgress, MigrationResult, migrate, verify
from sessionary.records import SessionFilter, SessionInfo, load_json
from sessionary.stores.urls import parse_store_url
from sessionary.transfer import Existing

__all__ = ["RecordReader"]


# ---------------------------------------------------------------------------- export


def _write_records(stream: TextIO, records: Iterable[dict[str, Any]]) -> tuple[int, int]:
    sessions = messages = 0
    for record in records:
        stream.write(json_safe(record, separators=(",", ":")) + "\n")
        sessions += record.get("type") == "session"
        messages += record.get("type") == "message"
    return sessions, messages


def _chain(
    first: dict[str, Any] | None, rest: Iterator[dict[str, Any]]
) -> Iterator[dict[str, Any]]:
    if first is not None:
        yield first
        yield from rest


def _refuse_the_store_itself(env: Env, output: str) -> None:
    """Refuse to write an export over the SQLite file (or its journal) being exported."""
    path = parse_store_url(env.url).sqlite_file
    if path is None or not os.path.exists(output):
        return
    for own in (path, f"{path}-wal", f"{path}-shm", f"{path}-journal"):
        with contextlib.suppress(OSError):
            if os.path.samefile(output, own):
                raise CLIError(f"{output} is the store's own file ({own}); export elsewhere")


@contextlib.contextmanager
def _replacing(output: str) -> Iterator[TextIO]:
    """Write a file through a temporary one beside it, renamed over it only when complete.

    So an export that fails (a store error, a full disk, an interrupt) leaves a file it
    would have replaced as it was. Something that is not a regular file (`/dev/null`, a
    pipe) is written directly, since it cannot be replaced by a rename.
    """
    if os.path.exists(output) and not os.path.isfile(output):
        with open(output, "w", encoding="utf-8", newline="\n") as stream:
            yield stream
        return
    final = os.path.realpath(output)  # through a symlink: replace its target, keep the link
    kept = stat.S_IMODE(os.stat(final).st_mode) if os.path.exists(final) else None
    folder, name = os.path.split(final)
    temporary = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        if kept is not None:
            os.fchmod(descriptor, kept)
        with open(descriptor, "w", encoding="utf-8", newline="\n") as stream:
            yield stream
        os.replace(temporary, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


@root.command("export")
@click.argument("session_id", metavar="[ID]", required=False, shell_complete=complete_session)
@click.option("-o", "--output", metavar="FILE", help="Write here (default: standard output).")
@store_options
@pass_env
def export_command(env: Env, session_id: str | None, output: str | None) -> None:
    """Write sessions as JSON lines: one session, or the whole scope.

    The whole scope starts with the user's and the app's state and documents (such as a
    user-level memory block), then every session: its row and state, its messages
    (parents first) and every version of its documents. `import` reads it back.
    """
    manager = env.manager()
    records = manager.export(None if session_id is None else env.session_id(session_id))
    first = next(records, None)  # a missing session fails here, before any file is made
    batch = _chain(first, records)
    if output in (None, "-"):
        _write_records(sys.stdout, batch)
        return
    _refuse_the_store_itself(env, output)
    with _replacing(output) as stream:
        sessions, messages = _write_records(stream, batch)
    env.echo(f"exported {plural(sessions, 'session')} ({plural(messages, 'message')}) to {output}")


# ---------------------------------------------------------------------------- import


class RecordReader:
    """The JSON records of a JSON-lines stream, read one line at a time, blank lines skipped.

    Iterating raises `CLIError`, naming the line, if a line is not UTF-8, not JSON, or
    not a JSON object. `sessions` counts the session records read so far.
    """

    def __init__(self, stream: IO[bytes], name: str, reporter: Reporter) -> None:
        self.stream, self.name, self.reporter = stream, name, reporter
        self.sessions = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for number, raw in enumerate(self.stream, 1):
            record = self._parse(raw, number)
            if record is not None:
                self.sessions += record.get("type") == "session"
            self.reporter.advance(len(raw), f"{plural(self.sessions, 'session')} read")
            if record is not None:
                yield record

    def _parse(self, raw: bytes, number: int) -> dict[str, Any] | None:
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise CLIError(f"{self.name}, line {number}: not UTF-8 text") from None
        if not line.strip():
            return None
        try:
            record = load_json(line)
        except json.JSONDecodeError as exc:
            where = f"{self.name}, line {number}, column {exc.colno}"
            raise CLIError(f"{where}: not valid JSON ({exc.msg})") from None
        except ValueError as exc:  # nested too deep to decode
            raise CLIError(f"{self.name}, line {number}: {exc}") from None
        if not isinstance(record, dict):
            raise CLIError(f"{self.name}, line {number}: expected a JSON object")
        return record


@contextlib.contextmanager
def _opened(file: str) -> Iterator[tuple[IO[bytes], float | None]]:
    if file == "-":
        yield sys.stdin.buffer, None
        return
    with open(file, "rb") as stream:
        yield stream, float(os.path.getsize(file))


def _existing(skip_existing: bool, replace: bool) -> Existing:
    if skip_existing and replace:
        raise click.UsageError("--skip-existing and --replace cannot be used together")
    return "skip" if skip_existing else "replace" if replace else "fail"


@root.command("import")
@click.argument("file", metavar="FILE")
@click.option(
    "--skip-existing", is_flag=True, help="Leave sessions the scope already holds as they are."
)
@click.option(
    "--replace",
    is_flag=True,
    help="Delete a session the scope already holds, then import the exported one.",
)
@store_options
@pass_env
def import_command(env: Env, file: str, skip_existing: bool, replace: bool) -> None:
    """Import an export (a file, or - for standard input) into the scope.

    The file is read a line at a time. Each session is committed whole, or not at all,
    as soon as its records are read, so memory stays flat however large the file; an
    error or an interrupt stops the import there and keeps the sessions committed
    before it: run it again with --skip-existing to go on. User and app state and
    documents are restored exactly and never overwritten (with --skip-existing a scope's
    own, different copy stays). Progress goes to standard error.
    """
    existing = _existing(skip_existing, replace)
    importer = Importer(env.manager("write").store, env.manager().scope, existing)
    name = "<stdin>" if file == "-" else file
    with _opened(file) as (stream, total), Reporter(env.err, "import", total, "bytes") as bar:
        reader = RecordReader(stream, name, bar)
        try:
            importer.run(reader)
        except (SessionaryError, CLIError) as exc:
            raise CLIError(_import_failure(exc, importer.imported, importer.restored)) from exc
    skipped = reader.sessions - len(importer.imported)
    messages = sum(info.message_count for info in importer.imported)
    kept = f", {plural(skipped, 'session')} already there left as they were" if skipped else ""
    done = plural(len(importer.imported), "session")
    env.echo(f"imported {done} ({plural(messages, 'message')}){kept}")


def _import_failure(error: Exception, imported: list[SessionInfo], restored: int) -> str:
    hint = "; pass --skip-existing or --replace" if isinstance(error, AlreadyExists) else ""
    if imported:
        done = (
            f"; the {plural(len(imported), 'session')} before it stay imported "
            "(run again with --skip-existing to go on)"
        )
    elif restored:
        done = "; no session was imported, the user and app records before it stay restored"
    else:
        done = "; nothing was imported"
    return f"{error}{hint}{done}"


# ---------------------------------------------------------------------------- rm


def _chosen(
    env: Env, ids: tuple[str, ...], filters: dict[str, Any], everything: bool
) -> list[SessionInfo]:
    if not ids and not everything and not any(v is not None for v in filters.values()):
        raise click.UsageError(
            "name sessions to delete: IDs, a filter (--name, --model, --before, --ended) or --all"
        )
    if not ids:
        return list(selected_sessions(env, **filters))
    missing, infos = [], {}
    for text in ids:
        try:
            info = env.session_info(text)
        except SessionNotFound:
            missing.append(text)
        else:
            infos[info.id] = info
    if missing:
        names = ", ".join(map(repr, missing))
        noun = "session" if len(missing) == 1 else "sessions"
        raise SessionNotFound(f"no {noun} {names} in {env.where()}; nothing deleted")
    return list(infos.values())


@root.command("rm")
@click.argument("ids", nargs=-1, metavar="[ID]...", shell_complete=complete_session)
@click.option("--name", help="Every session with exactly this name.")
@click.option("--model", help="Every session of this model.")
@click.option(
    "--before", type=Since(), help="Every session last active before WHEN (a date, or an age: 30d)."
)
@click.option("--ended", is_flag=True, default=None, help="Only ended sessions.")
@click.option("--all", "everything", is_flag=True, help="Every session of the scope.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@store_options
@pass_env
def rm_command(
    env: Env,
    ids: tuple[str, ...],
    name: str | None,
    model: str | None,
    before: datetime | None,
    ended: bool | None,
    everything: bool,
    yes: bool,
) -> None:
    """Delete sessions with their messages, state and documents.

    Name them by ID (or unique prefix), or select them with filters. The sessions are
    listed and you are asked to confirm, unless --yes; without a terminal to ask on,
    --yes is required. If a named session is missing, nothing is deleted.
    """
    filters = {"name": name, "model": model, "before": before, "ended": ended}
    chosen = _chosen(env, ids, filters, everything)
    if not chosen:
        env.note(f"no sessions match in {env.where()}; nothing deleted")
        return
    if not yes:
        _confirm(env, chosen)
    manager = env.manager("update")
    for info in chosen:
        manager.delete(info.id)
    env.echo(f"deleted {plural(len(chosen), 'session')}")


def _confirm(env: Env, chosen: list[SessionInfo]) -> None:
    if not sys.stdin.isatty():
        raise CLIError(
            f"would delete {plural(len(chosen), 'session')}: "
            "pass --yes to confirm without a terminal"
        )
    env.err.print(session_table(chosen[:20], {}, env.err.width))
    if len(chosen) > 20:
        env.note(f"… and {len(chosen) - 20} more")
    if not click.confirm(f"Delete {plural(len(chosen), 'session')} in {env.where()}?", err=True):
        raise CLIError("nothing deleted")


# ---------------------------------------------------------------------------- migrate


def _summary(result: MigrationResult) -> str:
    skipped = f", {result.sessions_skipped} already there" if result.sessions_skipped else ""
    return (
        f"migrated {plural(result.sessions_copied, 'session')} "
        f"({plural(result.messages_copied, 'message')}), "
        f"{plural(result.states_copied, 'user or app state document')} "
        f"and {plural(result.documents_copied, 'document')} "
        f"in {plural(result.scopes, 'scope')}{skipped}"
    )


def _same_store(source_url: str, target_url: str) -> bool:
    """Whether two URLs name one store: the same text, or the same SQLite file."""
    source, target = parse_store_url(source_url), parse_store_url(target_url)
    if source_url == target_url:
        return True
    if source.sqlite_file is None or target.sqlite_file is None:
        return False
    if os.path.exists(source.sqlite_file) and os.path.exists(target.sqlite_file):
        return os.path.samefile(source.sqlite_file, target.sqlite_file)
    return os.path.realpath(source.sqlite_file) == os.path.realpath(target.sqlite_file)


def _refuse_foreign_sessions(source: Store, target: Store) -> None:
    """Refuse, before copying anything, a target holding sessions the source does not.

    Verification compares whole scopes, so such a target would take the copy and then
    fail verification on every run. A target holding only sessions of the source (an
    interrupted migrate's) is taken: they are skipped.
    """
    for scope in target.list_scopes():
        cursor: str | None = None
        while True:
            page = target.list_sessions(scope, SessionFilter(), LIST_PAGE, cursor)
            for info in page.items:
                if source.get_session(scope, info.id) is None:
                    raise CLIError(
                        f"the --to store already holds data: session {info.id!r} of tenant "
                        f"{scope.tenant!r} user {scope.user!r} is not in the --from store; "
                        "migrate into an empty store (or one a migrate from this store began)"
                    )
            cursor = page.next_cursor
            if cursor is None:
                break


@root.command("migrate")
@click.option("--from", "source_url", metavar="URL", required=True, help="Copy from this store.")
@click.option("--to", "target_url", metavar="URL", required=True, help="Copy into this store.")
@click.option(
    "--replace",
    is_flag=True,
    help="Copy again a session the target holds in a different form (default: stop).",
)
@pass_env
def migrate_command(env: Env, source_url: str, target_url: str, replace: bool) -> None:
    """Copy everything from one store to another, then verify.

    Copies every scope, session (all branches), message, session, user and app state,
    and every version of every document (blocks, compaction overlays, frozen prompts,
    agent state), then checks that both stores hold the same counts. Run it again after
    an interruption: sessions already copied are skipped. --db, --tenant and --user are
    not used.
    """
    if _same_store(source_url, target_url):
        raise CLIError("--from and --to name the same store")
    path = parse_store_url(source_url).sqlite_file
    if path is not None and not os.path.exists(path):
        raise CLIError(f"no database at {path} (the --from store must exist)")
    reader = open_existing(source_url)  # not a sessionary file: refused, unchanged
    if reader is not None:
        reader.close()
    with contextlib.ExitStack() as stack:
        source = open_store(source_url)
        stack.callback(source.close)
        target = open_store(target_url)
        stack.callback(target.close)
        _refuse_foreign_sessions(source, target)
        with Reporter(env.err, "migrating", None, "sessions", every=100) as bar:

            def report(progress: MigrationProgress) -> None:
                bar.total = progress.sessions_total  # known once the source is listed
                bar.advance(1, f"{plural(progress.messages_copied, 'message')} copied")

            result = migrate(source, target, replace=replace, on_progress=report)
        env.echo(_summary(result))
        mismatches = verify(source, target)
    if mismatches:
        more = f" (and {len(mismatches) - 1} more scopes)" if len(mismatches) > 1 else ""
        raise CLIError(f"verification failed: {mismatches[0].describe()}{more}")
    env.echo(
        "verified: every scope has the same sessions, messages, state and documents in both stores"
    )


# ---------------------------------------------------------------------------- demo


@root.command("demo")
@store_options
@pass_env
def demo_command(env: Env) -> None:
    """Build a demo agent conversation (tools, a branch, a fork) and show it.

    Each run adds two new sessions; it never touches existing ones.
    """
    from sessionary.cli._read import show_session

    manager = env.manager("write")
    demo = build_demo(manager)
    env.echo(f"Built two demo sessions in {env.url}:")
    env.echo(f"  {demo.main.id}  a coding agent's session, with an edited question (a branch)")
    env.echo(f"  {demo.fork.id}  its fork at the diagnosis, continued another way")
    env.print(
        Rule("sessionary show --tree: every branch; ◀ head marks the active leaf", align="left")
    )
    show_session(env, demo.main.id, tree=True)
    env.print(Rule("sessionary show: the active history, root to head", align="left"))
    show_session(env, demo.main.id, header=False)
    env.print(
        Rule("sessionary search Decimal: every session in the scope, best first", align="left")
    )
    for hit in manager.search("Decimal", limit=5):
        env.print(render_hit(hit), soft_wrap=True)
    env.print(Rule("Try next", align="left"))
    short = unique_prefixes([demo.main.id, demo.fork.id])
    for hint in (
        "ls",
        f"show {short[demo.main.id]} --tree",
        f"context {demo.main.id}",
        f"inspect {demo.fork.id}",
        "search 'float OR Decimal' --role tool",
        f"export {demo.main.id} -o demo.jsonl",
    ):
        env.print(Text(f"  {env.invocation()} {hint}"), soft_wrap=True)
