"""Facts about the machine and the libraries, and the notes whose content depends on the run."""

from __future__ import annotations

import os
import platform
import sqlite3
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from bench.runner import Result

__all__ = [
    "AGENTS_NOTE",
    "ASYNC_NOTE",
    "LANGGRAPH_NOTE",
    "READS_NOTE",
    "collect",
    "durability_note",
    "langgraph_storage_note",
    "load",
]

_PACKAGES = ("sessionary", "openai-agents", "langgraph", "langgraph-checkpoint-sqlite")

AGENTS_NOTE = (
    "openai-agents `SQLiteSession`: file-backed database, `add_items([item])` per message, "
    "`get_items(limit=20)` and `get_items()` to read. Its API is async only; every call runs "
    "in a worker thread (`asyncio.to_thread`) and one append is one transaction of three "
    "statements (register session, insert, touch `updated_at`). Items are "
    '`{"role": ..., "content": text}` dicts.'
)

LANGGRAPH_NOTE = (
    "LangGraph `SqliteSaver`: driven through the saver API directly (no compiled graph), the "
    "way a `MessagesState` graph (`add_messages` reducer) uses it: each message `put`s a "
    "checkpoint whose `channel_values['messages']` holds the whole accumulated list of "
    "`HumanMessage`/`AIMessage` objects; both reads are one `get_tuple` of the latest "
    "checkpoint (the last 20 are sliced from the full list, since a checkpoint is read whole). "
    "This is a lower bound: a real `invoke` writes at least two checkpoints plus pending "
    "writes per turn and `add_messages` re-merges the list. Building depth writes only the "
    "latest checkpoint, which also favours LangGraph (see the storage note)."
)

READS_NOTE = (
    "What a read returns differs: sessionary returns typed `Message` objects whose bodies "
    "(parts, metadata, creation time) are decoded on first use; every timed read touches "
    "each message's text, so it pays for decoding what a caller reads (a message that is "
    "one text part is stored as its text and needs no JSON parsing). `SQLiteSession` "
    "`json.loads` every row into plain dicts, and `SqliteSaver` rebuilds langchain message "
    "objects from one msgpack blob. Raw sqlite3 reads the JSON bodies and `json.loads` "
    "them, newest 20 by primary key."
)

ASYNC_NOTE = (
    "Both async columns are timed inside one running event loop, per `await`; their "
    "percentage of raw compares with the synchronous raw sqlite3 baseline. Targets compare "
    "like with like: sessionary async against `SQLiteSession` (async API), sessionary sync "
    "against `SqliteSaver` (sync API). Messages are text only (no tool calls), identical for "
    "every library."
)


def load() -> str:
    """Return the 1/5/15-minute load averages, to show how busy the shared machine was."""
    return " / ".join(f"{value:.2f}" for value in os.getloadavg())


def collect(command: str, started: datetime, load_before: str, workdir: Path) -> dict[str, str]:
    """Return the report's fact table, in display order."""
    finished = datetime.now(UTC)
    return {
        "command": f"`{os.environ.get('SESSIONARY_BENCH_COMMAND', command)}`",
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "duration": f"{(finished - started).total_seconds():,.0f} s",
        "CPU": f"{_cpu_model()}, {os.cpu_count()} cores ({len(os.sched_getaffinity(0))} usable)",
        "memory": _memory(),
        "OS": platform.platform(),
        "Python": f"{platform.python_implementation()} {sys.version.split()[0]}",
        "SQLite": f"{sqlite3.sqlite_version} (Python `sqlite3` module)",
        "packages": ", ".join(_versions()),
        "load average before / after": f"{load_before} → {load()}",
        "database files": f"`{_relative(workdir)}` (removed after the run)",
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _memory() -> str:
    try:
        first = Path("/proc/meminfo").read_text().splitlines()[0]
    except (OSError, IndexError):
        return "unknown"
    return f"{int(first.split()[1]) / 1024**2:.0f} GiB"


def _versions() -> list[str]:
    found = []
    for name in _PACKAGES:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return found


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def durability_note(results: list[Result]) -> str:
    """Say, from what the peers' connections reported, whether the comparison is like-for-like."""
    ours = _settings(results, "sync")
    lines = []
    for key in ("agents", "langgraph"):
        theirs = _settings(results, key)
        if theirs is None:
            continue
        label = next(r.label for r in results if r.key == key)
        mode, level = theirs
        if theirs == ("WAL", "FULL"):
            lines.append(f"{label} runs with WAL and synchronous=FULL, like sessionary's default")
        else:
            lines.append(
                f"{label} runs with journal_mode={mode}, synchronous={level}: weaker than "
                "WAL + FULL; compare it with the `durability=normal` column as well"
            )
    if not lines:
        return "Durability: no peer was run."
    ours_text = "sessionary (default) " + (
        f"runs with journal_mode={ours[0]}, synchronous={ours[1]}" if ours else "did not run"
    )
    return "Durability: " + "; ".join([ours_text, *lines]) + "."


def _settings(results: list[Result], key: str) -> tuple[str, str] | None:
    for result in results:
        if result.key == key and result.durability:
            return result.durability["journal_mode"], result.durability["synchronous"]
    return None


def langgraph_storage_note(results: list[Result]) -> list[str]:
    """Estimate what a real LangGraph thread of the deepest reached depth would store."""
    reached = [r for r in results if r.key == "langgraph" and r.ok and r.size_bytes]
    if not reached:
        return []
    deepest = max(reached, key=lambda r: r.depth)
    checkpoints = 1 + len(deepest.samples["append"])
    per_checkpoint = deepest.size_bytes / checkpoints
    whole_thread = per_checkpoint * (deepest.depth + 1) / 2
    return [
        f"LangGraph storage: at depth {deepest.depth:,} one checkpoint takes about "
        f"{per_checkpoint / 1e6:,.1f} MB, because each holds the whole list. A thread that "
        f"reached that depth one message at a time would have written about "
        f"{whole_thread / 1e9:,.1f} GB of checkpoints; this benchmark builds depth with a "
        f"single checkpoint instead."
    ]
