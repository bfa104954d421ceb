"""How the SQLite engine serves reads cheaply: lazily decoded messages, inline short reads.

Messages read back decode their bodies on first use; equality, copies, pickling and
assignments behave as for any other message. Async short reads run on the event loop's
thread when the engine is idle and take the worker's queue when it is busy.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import itertools
import pickle
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

import sessionary
from sessionary import Message, TextPart, ToolCallPart
from sessionary.stores._runner import AsyncRunner

pytestmark = pytest.mark.sqlite

_STORED = [
    Message.user("plain", created_at=datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)),
    Message.user("with metadata", metadata={"k": [1, 2]}),
    Message("assistant", [TextPart("calls", extra={"x": 1})], extra={"future": True}),
    Message.assistant(tool_calls=[ToolCallPart("c1", "lookup", {"q": "x"})]),
    Message.tool("c1", {"rows": 3}),
]


@pytest.fixture
def chat(tmp_path: Path) -> sessionary.Session:
    manager = sessionary.SessionManager(f"sqlite:///{tmp_path / 'reads.db'}")
    chat = manager.create(id="s")
    chat.append_all(_STORED)
    return chat


def test_read_messages_equal_what_was_written(chat: sessionary.Session) -> None:
    read = chat.history()
    assert read == _STORED
    assert [m.parent_id for m in read] == [None, *(m.id for m in _STORED[:-1])]
    assert read[0].created_at == _STORED[0].created_at
    assert [m.text for m in chat.history(limit=2)] == ["", ""]
    assert chat.history(limit=3)[0].parent_id == _STORED[1].id


def test_a_read_message_is_undecoded_until_a_body_field_is_used(
    chat: sessionary.Session,
) -> None:
    (first, *_) = chat.history()
    assert "_stored" in vars(first) and first.role == "user" and first.id == _STORED[0].id
    assert first.text == "plain"  # a message stored as its text needs no decoding for it
    assert "_stored" in vars(first)
    assert first.parts == [TextPart("plain")]
    assert "_stored" not in vars(first)
    assert vars(first).keys() >= {"parts", "metadata", "created_at", "extra"}


def test_parts_assigned_before_decoding_are_what_text_reads(chat: sessionary.Session) -> None:
    first = chat.history()[0]
    first.parts = [TextPart("replaced"), TextPart("too")]
    assert first.text == "replaced\ntoo"
    assert first.created_at == _STORED[0].created_at


@pytest.mark.parametrize("field", ["parts", "metadata", "created_at", "extra"])
def test_each_body_field_decodes_the_message(chat: sessionary.Session, field: str) -> None:
    for read, written in zip(chat.history(), _STORED, strict=True):
        assert getattr(read, field) == getattr(written, field)


def test_an_assignment_before_decoding_is_kept(chat: sessionary.Session) -> None:
    read = chat.history()[1]
    read.parts = [TextPart("replaced")]
    assert read.metadata == {"k": [1, 2]}
    assert read.text == "replaced"


def test_copies_pickles_and_replacements_of_read_messages(chat: sessionary.Session) -> None:
    for read, written in zip(chat.history(), _STORED, strict=True):
        assert copy.copy(read) == written
        assert copy.deepcopy(read) == written
        assert pickle.loads(pickle.dumps(read)) == written
        assert dataclasses.replace(read, metadata={"n": 1}).parts == written.parts
        same = dataclasses.replace(written, parent_id=read.parent_id)
        assert dataclasses.asdict(read) == dataclasses.asdict(same)
        assert repr(read) == repr(same)


def test_a_missing_attribute_is_still_an_attribute_error(chat: sessionary.Session) -> None:
    read = chat.history()[0]
    with pytest.raises(AttributeError, match="no_such_field"):
        read.no_such_field  # noqa: B018
    assert not hasattr(Message.user("x"), "_stored")


def test_threads_decoding_one_message_agree(chat: sessionary.Session) -> None:
    for _ in range(20):
        read = chat.history()[3]
        seen: list[object] = []

        def use(message: Message = read, into: list[object] = seen) -> None:
            into.append(message.parts)

        threads = [threading.Thread(target=use) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert seen == [_STORED[3].parts] * 4


# ---------------------------------------------------------------- inline short reads


class _Probe:
    """Records which thread ran each call."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.threads: list[str] = []

    def read(self, limit: int | None) -> int | None:
        with self.lock:
            self.threads.append(threading.current_thread().name)
            return limit


def test_a_quick_call_runs_inline_when_the_lock_is_free() -> None:
    probe = _Probe()

    async def main() -> None:
        runner = AsyncRunner(True, probe.lock)
        call = runner.bind(probe.read, lambda limit: limit is not None)
        assert await call(5) == 5
        assert await call(None) is None
        await runner.close(lambda: None)

    asyncio.run(main())
    assert probe.threads == ["MainThread", "sessionary-store"]


def test_a_quick_call_takes_the_queue_while_the_engine_is_busy() -> None:
    probe = _Probe()
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with probe.lock:
            held.set()
            release.wait(5)

    async def main() -> None:
        runner = AsyncRunner(True, probe.lock)
        call = runner.bind(probe.read, lambda limit: True)
        holder = threading.Thread(target=hold)
        holder.start()
        held.wait(5)
        pending = asyncio.ensure_future(call(1))
        await asyncio.sleep(0.05)
        assert not pending.done()  # queued behind the busy engine, the loop still free
        release.set()
        assert await pending == 1
        holder.join()
        await runner.close(lambda: None)

    asyncio.run(main())
    assert probe.threads == ["sessionary-store"]


def test_async_reads_and_writes_interleave_correctly(tmp_path: Path) -> None:
    async def main() -> None:
        async with sessionary.AsyncSessionManager(f"sqlite:///{tmp_path / 'a.db'}") as manager:
            chat = await manager.create(id="s")

            async def writer(n: int) -> None:
                for i in range(25):
                    await chat.append(Message.user(f"w{n} {i}"))

            async def reader() -> None:
                for _ in range(50):
                    window = await chat.history(limit=5)
                    assert all(a.id == b.parent_id for a, b in itertools.pairwise(window))

            await asyncio.gather(writer(1), writer(2), reader(), reader())
            history = await chat.history()
            assert len(history) == 50 and await chat.path_length() == 50
            assert [m.parent_id for m in history[1:]] == [m.id for m in history[:-1]]

    asyncio.run(main())


def test_a_whole_history_read_while_another_connection_appends_is_one_prefix(
    tmp_path: Path,
) -> None:
    # A whole history is decoded as its rows arrive: the rows still come from one snapshot.
    url = f"sqlite:///{tmp_path / 'race.db'}"
    reader, writer = sessionary.SessionManager(url), sessionary.SessionManager(url)
    chat = reader.create(id="s")
    chat.append_all([Message.user(f"m{i}") for i in range(3000)])
    theirs, started, stop = writer.session("s"), threading.Event(), threading.Event()

    def write() -> None:
        for i in itertools.count():
            if stop.is_set():
                return
            theirs.append(Message.user(f"w{i}"))
            started.set()

    thread = threading.Thread(target=write)
    thread.start()
    try:
        assert started.wait(30)
        for _ in range(5):
            read = chat.history()
            texts = [m.text for m in read]
            assert len(texts) > 3000 and texts[:3000] == [f"m{i}" for i in range(3000)]
            assert texts[3000:] == [f"w{i}" for i in range(len(texts) - 3000)]
            assert [m.parent_id for m in read] == [None, *(m.id for m in read[:-1])]
    finally:
        stop.set()
        thread.join()
        reader.close()
        writer.close()
