"""Tests for tools/async_to_sync.py, which generates the sync twins of the async modules."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
TOOL = REPO / "tools" / "async_to_sync.py"


def _load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("async_to_sync", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _has_ruff() -> bool:
    if shutil.which("ruff"):
        return True
    args = [sys.executable, "-m", "ruff", "--version"]
    return subprocess.run(args, capture_output=True, check=False).returncode == 0


a2s = _load_tool()
needs_ruff = pytest.mark.skipif(not _has_ruff(), reason="ruff is not installed")


def sync(source: str) -> str:
    return str(a2s.transform(textwrap.dedent(source), "src/sessionary/fake.py"))


def test_async_def_with_and_for_become_plain() -> None:
    source = """\
    async def run(self):
        async with self.lock:
            async for item in self.items():
                yield [x async for x in item]
    """
    assert sync(source) == textwrap.dedent("""\
    def run(self):
        with self.lock:
            for item in self.items():
                yield [x for x in item]
    """)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("return await self.load()\n", "return self.load()\n"),
        ("x = await a + await b\n", "x = a + b\n"),
        ("x = (await a) * 2\n", "x = (a) * 2\n"),
        ("f(await g(), key=await h)\n", "f(g(), key=h)\n"),
        ("await  spaced\n", "spaced\n"),
    ],
)
def test_await_is_dropped_and_its_expression_kept(source: str, expected: str) -> None:
    assert sync(source) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("AsyncSession", "Session"),
        ("AsyncStore", "Store"),
        ("AsyncIterator", "Iterator"),
        ("AsyncExitStack", "ExitStack"),
        ("AsyncMock", "Mock"),
        ("__aenter__", "__enter__"),
        ("__aexit__", "__exit__"),
        ("__aiter__", "__iter__"),
        ("__anext__", "__next__"),
        ("aclose", "close"),
        ("open_async_store", "open_store"),
        ("asynccontextmanager", "contextmanager"),
        ("pytest_asyncio", "pytest_asyncio"),
        ("Asynchronous", "Asynchronous"),
        ("MyAsyncThing", "MyAsyncThing"),
    ],
)
def test_names_are_renamed(name: str, expected: str) -> None:
    assert sync(f"x = {name}\nobj.{name}()\n") == f"x = {expected}\nobj.{expected}()\n"


def test_async_generator_gains_a_return_type() -> None:
    source = "def f() -> AsyncGenerator[dict[str, int], None]: ...\n"
    assert sync(source) == "def f() -> Generator[dict[str, int], None, None]: ...\n"


def test_imports_of_listed_modules_point_at_sync() -> None:
    source = """\
    import sessionary.session as session_module
    from sessionary.stores.base import AsyncStore
    from sessionary.stores.adapter import AsyncEngineStore as Engine
    x = sessionary.session.AsyncSession
    """
    assert sync(source) == textwrap.dedent("""\
    import sessionary._sync.session as session_module
    from sessionary._sync.stores.base import Store
    from sessionary._sync.stores.adapter import EngineStore as Engine
    x = sessionary._sync.session.Session
    """)


def test_imports_of_unlisted_modules_keep_their_path() -> None:
    source = """\
    import sessionary
    from sessionary.errors import SessionaryError
    from sessionary.runner import AsyncRunner, Runner
    from sessionary.stores import AsyncStore
    """
    assert sync(source) == textwrap.dedent("""\
    import sessionary
    from sessionary.errors import SessionaryError
    from sessionary.runner import Runner, Runner
    from sessionary.stores import Store
    """)


def test_docstrings_and_strings_name_the_sync_classes() -> None:
    source = '''\
    class AsyncSession:
        """An async session over an AsyncStore; see sessionary.stores.base and aclose()."""

        def ref(self) -> "AsyncSession":
            return f"{self} is an AsyncSession"
    '''
    assert sync(source) == textwrap.dedent('''\
    class Session:
        """An async session over an Store; see sessionary._sync.stores.base and close()."""

        def ref(self) -> "Session":
            return f"{self} is an Session"
    ''')


def test_comments_and_layout_survive() -> None:
    source = """\
    # Why: the store owns the connection, so it closes last.
    async def close(self):  # AsyncSession.close
        await self._flush(
            force=True,  # keep this
        )


    X = 1
    """
    assert sync(source) == textwrap.dedent("""\
    # Why: the store owns the connection, so it closes last.
    def close(self):  # Session.close
        self._flush(
            force=True,  # keep this
        )


    X = 1
    """)


@pytest.mark.parametrize(
    ("source", "line"),
    [
        ("import asyncio\n", 1),
        ("x = 1\nawait asyncio.sleep(0)\n", 2),
        ("from asyncio import Lock\n", 1),
    ],
)
def test_asyncio_is_rejected(source: str, line: int) -> None:
    message = f"async source src/sessionary/fake.py uses asyncio at line {line}; move that"
    with pytest.raises(a2s.GenerationError, match=message):
        sync(source)


@pytest.mark.parametrize("source", ["from . import base\n", "\nfrom .base import X\n"])
def test_relative_imports_are_rejected(source: str) -> None:
    line = source.count("\n")
    with pytest.raises(a2s.GenerationError, match=f"fake.py uses a relative import at line {line}"):
        sync(source)


def test_importing_a_generated_module_from_its_package_is_rejected() -> None:
    with pytest.raises(a2s.GenerationError, match=r"sessionary\.stores\.base at line 1"):
        sync("from sessionary.stores import base\n")


def test_transform_is_idempotent_on_its_output() -> None:
    once = sync("async def f() -> AsyncIterator[int]:\n    yield await g()\n")
    assert sync(once) == once


FAKE_SESSION = '''\
"""Sessions; AsyncSession is the async one."""

from sessionary.stores.base import AsyncStore
from collections.abc import AsyncIterator


class AsyncSession:
    async def __aenter__(self) -> "AsyncSession":
        return self

    async def scan(self, store: AsyncStore) -> AsyncIterator[int]:
        async for row in store.rows():
            yield row
'''


@pytest.fixture
def fake_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    package = tmp_path / "src" / "sessionary"
    (package / "stores").mkdir(parents=True)
    (package / "session.py").write_text(FAKE_SESSION)
    (package / "stores" / "base.py").write_text("class AsyncStore:\n    pass\n")
    monkeypatch.setattr(a2s, "ROOT", tmp_path)
    return package


@needs_ruff
def test_generation_writes_formatted_twins(fake_repo: Path) -> None:
    assert a2s.main([]) == 0
    session = (fake_repo / "_sync" / "session.py").read_text()
    assert session.startswith(
        "# This file was generated from src/sessionary/session.py by tools/async_to_sync.py.\n"
        "# Do not edit it: edit the source and run `python tools/async_to_sync.py`.\n"
        '"""Sessions; Session is the async one."""\n'
    )
    # Import sorting ran: stdlib before first party.
    assert "from collections.abc import Iterator\n\nfrom sessionary._sync.stores.base" in session
    assert (fake_repo / "_sync" / "stores" / "base.py").is_file()
    assert not (fake_repo / "_sync" / "manager.py").exists()
    assert (fake_repo / "_sync" / "__init__.py").read_text().startswith('"""Generated')
    assert (fake_repo / "_sync" / "stores" / "__init__.py").is_file()
    assert a2s.main(["--check"]) == 0


@needs_ruff
def test_check_reports_drift(fake_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert a2s.main([]) == 0
    generated = fake_repo / "_sync" / "session.py"
    generated.write_text(generated.read_text().replace("Session", "Sesion"))
    (fake_repo / "_sync" / "stores" / "base.py").unlink()
    (fake_repo / "_sync" / "manager.py").write_text(a2s.HEADER.format(src="manager.py"))
    capsys.readouterr()
    assert a2s.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "+class Session:" in out
    assert "out of date: src/sessionary/_sync/session.py" in out
    assert "missing: src/sessionary/_sync/stores/base.py" in out
    assert "extra: src/sessionary/_sync/manager.py" in out


@needs_ruff
def test_check_passes_on_this_repository(tmp_path: Path) -> None:
    args = [sys.executable, str(TOOL), "--check"]
    done = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
