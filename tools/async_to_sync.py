"""Generate the synchronous twins of sessionary's async modules.

The async code is the source. Each module in ``GENERATED`` is tokenized and edited in place at
token positions, so comments, docstrings and layout survive: ``async``/``await`` are dropped,
``Async*`` names and async dunders are renamed, and imports of generated modules point at
``sessionary._sync``. The result gets a do-not-edit header and is formatted with ruff.

    python tools/async_to_sync.py          # regenerate src/sessionary/_sync/
    python tools/async_to_sync.py --check  # exit 1 if the committed files have drifted
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import io
import re
import shutil
import subprocess
import sys
import tempfile
import tokenize
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "sessionary"

# Async source -> generated module, both relative to src/sessionary/.
GENERATED: dict[str, str] = {
    "session.py": "_sync/session.py",
    "manager.py": "_sync/manager.py",
    "transfer.py": "_sync/transfer.py",
    "stores/base.py": "_sync/stores/base.py",
    "stores/adapter.py": "_sync/stores/adapter.py",
    "stores/registry.py": "_sync/stores/registry.py",
    "stores/encrypted.py": "_sync/stores/encrypted.py",
    "stores/audited.py": "_sync/stores/audited.py",
    "stores/sql.py": "_sync/stores/sql.py",
    "stores/_sql_documents.py": "_sync/stores/_sql_documents.py",
    "stores/_sql_driver.py": "_sync/stores/_sql_driver.py",
    "stores/_sql_state.py": "_sync/stores/_sql_state.py",
    "stores/_sql_governance.py": "_sync/stores/_sql_governance.py",
    "stores/redis.py": "_sync/stores/redis.py",
    "stores/_redis_documents.py": "_sync/stores/_redis_documents.py",
    "stores/_redis_governance.py": "_sync/stores/_redis_governance.py",
    "kv/base.py": "_sync/kv/base.py",
    "kv/incremental.py": "_sync/kv/incremental.py",
    "keeper.py": "_sync/keeper.py",
    "turn.py": "_sync/turn.py",
    "providers.py": "_sync/providers.py",
    "context.py": "_sync/context.py",
    "tools.py": "_sync/tools.py",
    "_context_api.py": "_sync/_context_api.py",
    "compaction/llm.py": "_sync/compaction/llm.py",
    "compaction/runtime.py": "_sync/compaction/runtime.py",
    "compaction/recovery.py": "_sync/compaction/recovery.py",
}

# Renames beyond the rule that strips the prefix of `Async[A-Z]...` names.
NAMES: dict[str, str] = {
    "__aenter__": "__enter__",
    "__aexit__": "__exit__",
    "__aiter__": "__iter__",
    "__anext__": "__next__",
    "aclose": "close",
    "aiter": "iter",
    "anext": "next",
    "aclosing": "closing",
    "asynccontextmanager": "contextmanager",
    "AbstractAsyncContextManager": "AbstractContextManager",
    "StopAsyncIteration": "StopIteration",
    "enter_async_context": "enter_context",
    "push_async_callback": "callback",
    "push_async_exit": "push",
    "open_async_store": "open_store",
}

HEADER = (
    "# This file was generated from src/sessionary/{src} by tools/async_to_sync.py.\n"
    "# Do not edit it: edit the source and run `python tools/async_to_sync.py`.\n"
)
HEADER_START = HEADER.split("{", 1)[0]
INIT_TEXT = '"""Generated synchronous twins of the async modules; do not edit by hand."""\n'

ASYNC_NAME = re.compile(r"Async([A-Z]\w*)")
WORD = re.compile(r"\b\w+\b")
MODULE_PATH = re.compile(rf"\b{PACKAGE}(?:\.\w+)+")
# Python 3.12+ splits f-strings into tokens; FSTRING_MIDDLE holds their literal text.
TEXT_TOKENS = {tokenize.STRING, tokenize.COMMENT, getattr(tokenize, "FSTRING_MIDDLE", -1)}
SKIPPED_TOKENS = {tokenize.NL, tokenize.COMMENT}


class GenerationError(Exception):
    """A source the generator cannot convert, or a missing tool."""


def _dotted(path: str) -> str:
    parts = PurePosixPath(path).with_suffix("").parts
    return ".".join((PACKAGE, *(p for p in parts if p != "__init__")))


MODULES = {_dotted(src): _dotted(dst) for src, dst in GENERATED.items()}


def rename(name: str) -> str:
    """Return the sync spelling of an identifier."""
    if name in NAMES:
        return NAMES[name]
    match = ASYNC_NAME.fullmatch(name)
    return match[1] if match else name


def map_module(dotted: str) -> str:
    """Point a dotted path at the generated module when its longest module prefix is listed."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        target = MODULES.get(".".join(parts[:n]))
        if target:
            return ".".join((target, *parts[n:]))
    return dotted


def rename_text(text: str) -> str:
    """Apply the identifier renames and module mapping to prose, strings and comments."""
    text = MODULE_PATH.sub(lambda m: map_module(m[0]), text)
    return WORD.sub(lambda m: rename(m[0]), text)


class _Rewriter:
    """Collects text edits at token positions, then applies them to the source."""

    def __init__(self, source: str, src_name: str) -> None:
        self.source, self.src_name = source, src_name
        lines = io.StringIO(source).readlines()
        self.line_starts = [0]
        for line in lines:
            self.line_starts.append(self.line_starts[-1] + len(line))
        try:
            self.tokens = list(tokenize.generate_tokens(iter(lines).__next__))
        except (tokenize.TokenError, SyntaxError) as exc:
            raise GenerationError(f"cannot tokenize {src_name}: {exc}") from exc
        self.edits: list[tuple[int, int, str]] = []

    def run(self) -> str:
        i = 0
        while i < len(self.tokens):
            tok = self.tokens[i]
            if tok.type == tokenize.NAME:
                i = self._name(i)
                continue
            if tok.type in TEXT_TOKENS:
                self._edit(tok.start, tok.end, rename_text(self._text(tok.start, tok.end)))
            i += 1
        return self._apply()

    def _name(self, i: int) -> int:
        tok, word = self.tokens[i], self.tokens[i].string
        if word == "asyncio":
            raise self._error(tok, "uses asyncio", "move that into a hand-written Async*/sync pair")
        if word == "from":
            self._reject_relative(i)
        if word == "await" or (word == "async" and self._next(i).string in {"def", "with", "for"}):
            nxt = self._next(i)
            self._edit(tok.start, nxt.start if nxt.start[0] == tok.end[0] else tok.end, "")
        elif word == PACKAGE and self._previous(i).string != ".":
            return self._module_chain(i)
        else:
            self._edit(tok.start, tok.end, rename(word))
            if word == "AsyncGenerator":
                self._complete_generator(i)
        return i + 1

    def _reject_relative(self, i: int) -> None:
        if self._next(i).string.startswith(".") and self._previous(i).string != "yield":
            advice = f"import absolutely (from {PACKAGE}.x import ...)"
            raise self._error(self.tokens[i], "uses a relative import", advice)

    def _module_chain(self, i: int) -> int:
        """Map `sessionary.a.b` (an import or an attribute path) to the generated module."""
        names, j = [PACKAGE], i + 1
        while self.tokens[j].string == "." and self.tokens[j + 1].type == tokenize.NAME:
            names.append(self.tokens[j + 1].string)
            j += 2
        dotted = ".".join(names)
        if self.tokens[j].string == "import" and map_module(dotted) == dotted:
            self._reject_module_import(dotted, j)
        self._edit(self.tokens[i].start, self.tokens[j - 1].end, rename_text(dotted))
        return j

    def _reject_module_import(self, package: str, j: int) -> None:
        """Refuse `from sessionary.stores import base`: the rewrite cannot split such a line."""
        for tok in self.tokens[j:]:
            if tok.type == tokenize.NEWLINE:
                return
            if f"{package}.{tok.string}" in MODULES:
                what = f"imports generated module {package}.{tok.string}"
                raise self._error(tok, what, "import it by its full dotted path")

    def _complete_generator(self, i: int) -> None:
        """AsyncGenerator[Y, S] becomes Generator[Y, S, None] (sync ones have a return type)."""
        if self.tokens[i + 1].string != "[":
            return
        depth = 0
        for k in range(i + 1, len(self.tokens)):
            depth += {"[": 1, "(": 1, "{": 1, "]": -1, ")": -1, "}": -1}.get(
                self.tokens[k].string, 0
            )
            if depth == 0:
                last = self._previous(k)
                self._edit(last.end, last.end, " None," if last.string == "," else ", None")
                return

    def _next(self, i: int) -> tokenize.TokenInfo:
        later = (self.tokens[k] for k in range(i + 1, len(self.tokens)))
        return next(t for t in later if t.type not in SKIPPED_TOKENS)

    def _previous(self, i: int) -> tokenize.TokenInfo:
        earlier = (self.tokens[k] for k in range(i - 1, -1, -1))
        return next((t for t in earlier if t.type not in SKIPPED_TOKENS), self.tokens[0])

    def _offset(self, pos: tuple[int, int]) -> int:
        return self.line_starts[pos[0] - 1] + pos[1]

    def _text(self, start: tuple[int, int], end: tuple[int, int]) -> str:
        return self.source[self._offset(start) : self._offset(end)]

    def _edit(self, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
        if text != self._text(start, end):
            self.edits.append((self._offset(start), self._offset(end), text))

    def _apply(self) -> str:
        out = self.source
        for start, end, text in sorted(self.edits, reverse=True):
            out = out[:start] + text + out[end:]
        return out

    def _error(self, tok: tokenize.TokenInfo, what: str, advice: str) -> GenerationError:
        line = tok.start[0]
        return GenerationError(f"async source {self.src_name} {what} at line {line}; {advice}")


def transform(source: str, src_name: str) -> str:
    """Return the sync twin of an async module's source, before formatting.

    Raises GenerationError if the source uses asyncio or relative imports.
    """
    return _Rewriter(source, src_name).run()


def _ruff_command() -> list[str]:
    if importlib.util.find_spec("ruff") is not None:
        return [sys.executable, "-m", "ruff"]
    if exe := shutil.which("ruff"):
        return [exe]
    raise GenerationError("ruff is needed to format generated code: pip install ruff")


def _ruff(root: Path, files: list[Path]) -> None:
    # Explicit settings keep the output identical wherever it is generated: by default ruff
    # calls `sessionary._sync.x` first-party only once that module exists in src/.
    config = [str(root / "pyproject.toml"), f"lint.isort.known-first-party = ['{PACKAGE}']"]
    options = ["--no-cache", "--quiet", *(arg for c in config for arg in ("--config", c))]
    for command in (["check", "--fix", "--select", "I"], ["format"]):
        args = [*_ruff_command(), *command, *options, *map(str, files)]
        done = subprocess.run(args, capture_output=True, text=True, check=False)
        if done.returncode:
            raise GenerationError(f"`ruff {command[0]}` failed:\n{done.stdout}{done.stderr}")


def render(root: Path) -> dict[str, str]:
    """Return the formatted twin of each existing source, keyed by its path in src/sessionary."""
    package, paths = root / "src" / PACKAGE, {}
    with tempfile.TemporaryDirectory() as tmp:
        for src, dst in GENERATED.items():
            if (package / src).is_file():
                source = (package / src).read_text(encoding="utf-8")
                code = transform(source, f"src/{PACKAGE}/{src}")
                paths[dst] = Path(tmp, dst)
                paths[dst].parent.mkdir(parents=True, exist_ok=True)
                paths[dst].write_text(HEADER.format(src=src) + code, encoding="utf-8")
        if paths:
            _ruff(root, list(paths.values()))
        return {dst: path.read_text(encoding="utf-8") for dst, path in paths.items()}


def init_files() -> list[str]:
    """Return the `__init__.py` paths that make the generated modules importable."""
    folders = {p for dst in GENERATED.values() for p in PurePosixPath(dst).parents if p.parts}
    return sorted(str(p / "__init__.py") for p in folders)


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None


def _stale(package: Path, rendered: dict[str, str]) -> list[str]:
    """Committed files with the generated header whose source is not (or no longer) there."""
    found = (p.relative_to(package).as_posix() for p in sorted(package.glob("_sync/**/*.py")))
    return [r for r in found if r not in rendered and _is_generated(package / r)]


def _is_generated(path: Path) -> bool:
    return path.read_text(encoding="utf-8").startswith(HEADER_START)


def write(root: Path) -> int:
    package, rendered = root / "src" / PACKAGE, render(root)
    missing_inits = {rel: INIT_TEXT for rel in init_files() if not (package / rel).is_file()}
    for rel, text in sorted({**missing_inits, **rendered}.items()):
        if _read(package / rel) != text:
            (package / rel).parent.mkdir(parents=True, exist_ok=True)
            (package / rel).write_text(text, encoding="utf-8")
            print(f"wrote src/{PACKAGE}/{rel}")
    for rel in _stale(package, rendered):
        print(f"warning: src/{PACKAGE}/{rel} is generated but has no source", file=sys.stderr)
    return 0


def check(root: Path) -> int:
    package, rendered, problems = root / "src" / PACKAGE, render(root), []
    for rel, text in rendered.items():
        old = _read(package / rel)
        if old is None:
            problems.append(f"missing: src/{PACKAGE}/{rel}")
        elif old != text:
            name = f"src/{PACKAGE}/{rel}"
            lines = old.splitlines(keepends=True), text.splitlines(keepends=True)
            sys.stdout.writelines(difflib.unified_diff(*lines, name, f"{name} (generated)"))
            problems.append(f"out of date: {name}")
    problems += [f"missing: src/{PACKAGE}/{r}" for r in init_files() if _read(package / r) is None]
    problems += [f"extra: src/{PACKAGE}/{rel}" for rel in _stale(package, rendered)]
    for problem in problems:
        print(problem)
    if problems:
        print("generated code has drifted: run `python tools/async_to_sync.py`")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate sessionary's sync modules.")
    parser.add_argument("--check", action="store_true", help="exit 1 if generated files drift")
    args = parser.parse_args(argv)
    try:
        return check(ROOT) if args.check else write(ROOT)
    except GenerationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
