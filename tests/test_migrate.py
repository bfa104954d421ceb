"""`sessionary migrate` and `sessionary.migrate`: copying whole stores between backends."""

from __future__ import annotations

import contextlib
import io
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

import sessionary
from sessionary import Message, Scope, State, VersionConflict
from sessionary._sync.stores.base import Store
from sessionary._sync.stores.registry import open_store as _open_store
from sessionary.cli import main
from sessionary.cli._progress import Reporter
from sessionary.errors import AlreadyExists
from sessionary.migrate import MigrationProgress, count_scopes, migrate, verify
from sessionary.query import parse_query
from sessionary.stores.base import DOCUMENT_SEARCH, SEARCH

PAIRS = [
    pytest.param(("memory", "sqlite"), marks=[pytest.mark.memory, pytest.mark.sqlite]),
    pytest.param(("sqlite", "postgres"), marks=[pytest.mark.sqlite, pytest.mark.postgres]),
    pytest.param(("postgres", "mysql"), marks=[pytest.mark.postgres, pytest.mark.mysql]),
    pytest.param(("mysql", "sqlite"), marks=[pytest.mark.mysql, pytest.mark.sqlite]),
    pytest.param(("sqlite", "memory"), marks=[pytest.mark.sqlite, pytest.mark.memory]),
    pytest.param(("sqlite", "redis"), marks=[pytest.mark.sqlite, pytest.mark.redis]),
    pytest.param(("redis", "postgres"), marks=[pytest.mark.redis, pytest.mark.postgres]),
]
SCOPES = [Scope("acme", "alice"), Scope("acme", "bob"), Scope("globex", "default")]
SESSIONS = 7  # what `populate` creates


def _url(request: pytest.FixtureRequest, tmp_path: Path, backend: str, role: str) -> str:
    if backend == "memory":
        return f"memory://migrate-{role}-{uuid.uuid4().hex}"
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / f'{role}.db'}"
    return str(request.getfixturevalue(f"{backend}_url"))


@pytest.fixture(params=PAIRS, ids=lambda pair: "-to-".join(pair))
def urls(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """(source URL, target URL): fresh, empty stores of two backends."""
    source, target = request.param
    return _url(request, tmp_path, source, "source"), _url(request, tmp_path, target, "target")


@pytest.fixture
def sqlite_urls(tmp_path: Path) -> tuple[str, str]:
    return f"sqlite:///{tmp_path / 'source.db'}", f"sqlite:///{tmp_path / 'target.db'}"


def _with_unknown_fields(message: Message) -> Message:
    raw: dict[str, Any] = message.to_dict()
    raw["future_field"] = {"kept": [1, 2]}
    raw["parts"][0]["future_part_field"] = "kept too"
    return Message.from_dict(raw)


def _populate_scope(manager: sessionary.SessionManager, index: int) -> None:
    """Two sessions with state; the first has a branch and unknown fields, the second ended."""
    chat = manager.create(name=f"chat {index}", model="m", metadata={"n": index, "x": [True]})
    root = chat.append(_with_unknown_fields(Message.user("hello there")))
    chat.append(Message.assistant("first answer"))
    chat.append(Message.assistant("second answer"), parent=root.id)  # a branch
    chat.update_state({"step": index})
    chat.update_state({"more": {"deep": None, "kept": 1.5}})
    manager.add_usage(chat.id, input_tokens=10, output_tokens=20, cost=0.25)
    other = manager.create(name="ended")
    other.append(Message.user("bye"))
    manager.end(other.id, "done")
    manager.update_state({"theme": f"dark-{index}"})


def populate(url: str) -> None:
    """Fill a store: three scopes in two tenants, state at every level, one empty session."""
    with sessionary.SessionManager(url) as base:
        for index, scope in enumerate(SCOPES):
            _populate_scope(base.for_user(scope.user, tenant=scope.tenant), index)
        base.for_user("carol", tenant="acme").create(id="empty")
        base.for_user("x", tenant="acme").update_state({"shared": 1}, level="app")
        base.for_user("x", tenant="acme").update_state({"shared": 2}, level="app")
        base.for_user("default", tenant="initech").update_state({"only": "app"}, level="app")


def snapshot(url: str) -> dict[Scope, Any]:
    """Everything a store holds, scope by scope, in a form two backends can compare."""
    with open_store(url) as store:
        scopes = store.list_scopes()
    out: dict[Scope, Any] = {}
    with sessionary.SessionManager(url) as base:
        for scope in scopes:
            manager = base.for_user(scope.user, tenant=scope.tenant)
            records = sorted(manager.export(), key=lambda r: str(r.get("session", r)))
            out[scope] = (records, manager.get_state(), manager.get_state("app"))
    return out


def open_store(url: str) -> contextlib.closing[Store]:
    """Open a store as a context manager that closes it."""
    return contextlib.closing(_open_store(url))


def _count_progress(limit: int) -> Callable[[MigrationProgress], None]:
    def interrupt(progress: MigrationProgress) -> None:
        if progress.sessions_done == limit:
            raise KeyboardInterrupt

    return interrupt


# ------------------------------------------------------------------------- across backends


def test_migrate_copies_everything(
    capsys: pytest.CaptureFixture[str], urls: tuple[str, str]
) -> None:
    source, target = urls
    populate(source)
    code = main(["migrate", "--from", source, "--to", target])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"migrated {SESSIONS} sessions" in out
    assert "verified" in out
    assert f"migrating: {SESSIONS}/{SESSIONS} sessions" in err  # not a tty: plain lines
    copied = snapshot(target)
    assert copied == snapshot(source)
    assert set(copied) == {*SCOPES, Scope("acme", "carol"), Scope("acme"), Scope("initech")}
    records, _, app = copied[Scope("acme", "alice")]
    messages = [r["message"] for r in records if r["type"] == "message"]
    assert any(m.get("future_field") == {"kept": [1, 2]} for m in messages)
    assert any(m["parts"][0].get("future_part_field") == "kept too" for m in messages)
    assert app == State({"shared": 2}, 2)
    with sessionary.SessionManager(target, tenant="acme", user="alice") as manager:
        if SEARCH in manager.store.capabilities:
            assert [hit.snippet for hit in manager.search("second")]  # the index is built


def test_a_second_run_changes_nothing(urls: tuple[str, str]) -> None:
    source, target = urls
    populate(source)
    with open_store(source) as src, open_store(target) as dst:
        first = migrate(src, dst)
        before = snapshot(target)
        second = migrate(src, dst)
        assert (first.sessions_copied, first.sessions_skipped) == (SESSIONS, 0)
        assert (second.sessions_copied, second.sessions_skipped) == (0, SESSIONS)
        assert second.messages_copied == 0
        assert verify(src, dst) == []
    assert snapshot(target) == before


def test_an_interrupted_run_completes_when_run_again(urls: tuple[str, str]) -> None:
    source, target = urls
    populate(source)
    with open_store(source) as src, open_store(target) as dst:
        with pytest.raises(KeyboardInterrupt):
            migrate(src, dst, on_progress=_count_progress(3))
        assert verify(src, dst) != []
        result = migrate(src, dst)
        assert (result.sessions_copied, result.sessions_skipped) == (SESSIONS - 3, 3)
        assert verify(src, dst) == []
    assert snapshot(target) == snapshot(source)


# ------------------------------------------------------------------------- conflicts and checks


def test_verification_catches_a_tampered_target(sqlite_urls: tuple[str, str]) -> None:
    source, target = sqlite_urls
    populate(source)
    with open_store(source) as src, open_store(target) as dst:
        migrate(src, dst)
        assert count_scopes(src) == count_scopes(dst)
        with sessionary.SessionManager(dst, tenant="acme", user="bob") as bob:
            session_id = bob.list().items[0].id
            head = bob.session(session_id).history()[-1]
            bob.session(session_id).delete(head.id)
        (mismatch,) = verify(src, dst)
    assert mismatch.scope == Scope("acme", "bob")
    assert mismatch.source.messages == mismatch.target.messages + 1
    assert "tenant 'acme' user 'bob'" in mismatch.describe()


def test_cli_refuses_a_target_with_other_sessions_before_copying(
    capsys: pytest.CaptureFixture[str], sqlite_urls: tuple[str, str]
) -> None:
    source, target = sqlite_urls
    populate(source)
    with sessionary.SessionManager(target, tenant="acme", user="alice") as alice:
        alice.create(id="already-here")  # an extra session the source does not have
    code = main(["migrate", "--from", source, "--to", target])
    _, err = capsys.readouterr()
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("sessionary: error: the --to store already holds data: ")
    assert "'already-here' of tenant 'acme' user 'alice'" in err
    with open_store(target) as dst:  # refused before anything was copied
        assert [s.tenant for s in dst.list_scopes()] == ["acme"]


def test_a_differing_session_stops_the_copy_unless_replace(
    capsys: pytest.CaptureFixture[str], sqlite_urls: tuple[str, str]
) -> None:
    source, target = sqlite_urls
    populate(source)
    assert main(["migrate", "--from", source, "--to", target]) == 0
    with sessionary.SessionManager(target, tenant="globex") as globex:
        session_id = globex.list().items[0].id
        globex.session(session_id).append(Message.user("only in the target"))
    capsys.readouterr()
    assert main(["migrate", "--from", source, "--to", target]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith("sessionary: error: session ")
    assert "--replace" in err
    assert main(["migrate", "--from", source, "--to", target, "--replace"]) == 0
    assert snapshot(target) == snapshot(source)


def test_a_differing_state_document_is_never_overwritten(sqlite_urls: tuple[str, str]) -> None:
    source, target = sqlite_urls
    populate(source)
    with sessionary.SessionManager(target, tenant="acme", user="bob") as bob:
        bob.update_state({"theme": "light"})
    with open_store(source) as src, open_store(target) as dst, pytest.raises(VersionConflict):
        migrate(src, dst)


def test_library_error_without_replace(sqlite_urls: tuple[str, str]) -> None:
    source, target = sqlite_urls
    populate(source)
    with sessionary.SessionManager(target, tenant="acme", user="carol") as carol:
        carol.create(id="empty").append(Message.user("different"))
    with open_store(source) as src, open_store(target) as dst:
        with pytest.raises(AlreadyExists, match="'empty' of tenant 'acme' user 'carol'"):
            migrate(src, dst)
        migrate(src, dst, replace=True)
        assert verify(src, dst) == []


def test_an_empty_source(capsys: pytest.CaptureFixture[str], sqlite_urls: tuple[str, str]) -> None:
    source, target = sqlite_urls
    sessionary.SessionManager(source).close()
    assert main(["migrate", "--from", source, "--to", target]) == 0
    assert "migrated 0 sessions" in capsys.readouterr().out


# ------------------------------------------------------------------------- the command


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Usage: sessionary migrate")
    for words in ("--from URL", "--to URL", "--replace", "compaction overlays"):
        assert words in out
    assert "do not exist yet" not in out


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--from", "nosuch://x", "--to", "memory://"], "nosuch"),
        (["--from", "memory://", "--to", "sqlite://bad"], "sqlite"),
        (["--from", "sqlite:///missing/none.db", "--to", "memory://"], "no database at"),
        (["--from", "memory://a", "--to", "memory://a"], "the same store"),
    ],
)
def test_bad_urls_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], args: list[str], fragment: str
) -> None:
    code = main(["migrate", *args])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("sessionary: error: ") and err.count("\n") == 1, err
    assert fragment in err


def test_missing_options_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", "--from", "memory://"]) == 2
    assert "--to" in capsys.readouterr().err


def test_progress_lines_when_not_a_terminal() -> None:
    console = Console(file=io.StringIO(), width=100)
    with Reporter(console, "migrating", 5, "sessions", every=2) as bar:
        for done in range(1, 6):
            bar.advance(1, f"{done} messages copied")
    with Reporter(console, "import", None, "bytes", every=2e6) as bar:
        for _ in range(5):
            bar.advance(1e6)
    with Reporter(console, "import", 20e3, "bytes") as bar:
        bar.advance(20e3)
    lines = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
    assert lines == [
        "migrating: 1/5 sessions, 1 messages copied",  # at each tenth of the work
        "migrating: 2/5 sessions, 2 messages copied",
        "migrating: 3/5 sessions, 3 messages copied",
        "migrating: 4/5 sessions, 4 messages copied",
        "migrating: 5/5 sessions, 5 messages copied",
        "import: 2.0 MB read",  # every `every` without a total
        "import: 4.0 MB read",
        "import: 5.0 MB read",  # and where it ended
        "import: 20.0 kB of 20.0 kB read",
    ]


def test_progress_bar_on_a_terminal() -> None:
    console = Console(file=io.StringIO(), width=100, force_terminal=True)
    with Reporter(console, "import", 1000.0, "bytes") as bar:
        bar.advance(500, "3 sessions read")
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "\x1b[" in text and "import" in text  # drawn in place, with colour


# ------------------------------------------------------------------------- documents

ALICE = Scope("acme", "alice")
LONER = Scope("umbrella")  # a scope that owns nothing but a document


def _add_documents(url: str) -> list[tuple[Scope, str, str | None, str, str]]:
    """Documents at every level; return each one's (scope, level, session id, namespace, key)."""
    with sessionary.SessionManager(url, tenant=ALICE.tenant, user=ALICE.user) as alice:
        sid = alice.list().items[0].id
        store = alice.store
        for i in range(3):
            body = {"content": f"note {i}"}
            store.put_document(ALICE, "session", sid, "block", "notes", body, f"pelican {i}",
                               "model", None)  # fmt: skip
        store.put_document(ALICE, "user", None, "block", "persona", {}, "likes tea", "user", 0)
        store.put_document(ALICE, "app", None, "prompt", "system", {"text": "hi"}, "", "x", 0)
        store.put_document(LONER, "user", None, "agent", "a1", {"step": 1}, "", "system", 0)
    return [
        (ALICE, "session", sid, "block", "notes"),
        (ALICE, "user", None, "block", "persona"),
        (ALICE, "app", None, "prompt", "system"),
        (LONER, "user", None, "agent", "a1"),
    ]


def test_migrate_copies_documents_of_every_level(urls: tuple[str, str]) -> None:
    source, target = urls
    populate(source)
    owners = _add_documents(source)
    with open_store(source) as src, open_store(target) as dst:
        result = migrate(src, dst)
        assert result.documents_copied == 4
        assert verify(src, dst) == []
        counts = count_scopes(dst)
        assert (counts[ALICE].documents, counts[ALICE].document_versions) == (3, 5)
        assert (counts[LONER].documents, counts[LONER].sessions) == (1, 0)
        for scope, level, sid, namespace, key in owners:
            copied = dst.document_versions(scope, level, sid, namespace, key)  # type: ignore[arg-type]
            assert copied == src.document_versions(scope, level, sid, namespace, key)  # type: ignore[arg-type]
            assert copied
        again = migrate(src, dst)
        assert again.sessions_copied == 0 and verify(src, dst) == []
        notes = dst.document_versions(ALICE, "session", owners[0][2], "block", "notes")
        assert [d.version for d in notes] == [1, 2, 3]
        if DOCUMENT_SEARCH in dst.capabilities:
            query = parse_query("pelican")
            hits = dst.search_documents(ALICE, "session", owners[0][2], None, query, 5)
            assert [(h.key, h.version) for h in hits] == [("notes", 3)]
        dst.put_document(ALICE, "user", None, "block", "persona", {}, "tampered", "user", None)
        (mismatch,) = verify(src, dst)
    assert mismatch.scope == ALICE
    assert "3 documents (5 versions); target has" in mismatch.describe()
    assert "3 documents (6 versions)" in mismatch.describe()


def test_documents_of_a_skipped_session_are_completed(sqlite_urls: tuple[str, str]) -> None:
    source, target = sqlite_urls
    populate(source)
    owners = _add_documents(source)
    _, _, sid, namespace, key = owners[0]
    with open_store(source) as src, open_store(target) as dst:
        migrate(src, dst)
        dst.delete_document(ALICE, "session", sid, namespace, key)  # as if cut off mid-way
        assert verify(src, dst) != []
        result = migrate(src, dst)
        assert result.sessions_skipped == SESSIONS
        assert verify(src, dst) == []
        assert len(dst.document_versions(ALICE, "session", sid, namespace, key)) == 3
