"""Compaction overlays on every backend with documents: branches, restarts, raw views,
auto-compaction and its error hook, bounded reads, splits, eviction and memory flush.
"""

from __future__ import annotations

from typing import Any

import pytest

import sessionary
from sessionary import Message, ToolCallPart
from sessionary.compaction import COMPACTION_PREFIX, SUMMARY_KEY, SummaryRequest, structured_summary
from sessionary.compaction.policy import CompactionPolicy, Eviction, MemoryFlush
from sessionary.compaction.split import CONTINUED_KEY
from sessionary.errors import InvalidMessage, SummarizerError
from sessionary.stores.base import DOCUMENTS, SEARCH
from sessionary.tokens import HeuristicCounter


class Tens(HeuristicCounter):
    """Every message costs 10 tokens, so budgets read as message counts."""

    def count_message(self, message: Message) -> int:
        return 10


class Recorder:
    """A summarizer that records its requests and answers with the offline summary."""

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        return structured_summary(request)


class Failing:
    def summarize(self, request: SummaryRequest) -> str:
        raise RuntimeError("model down")


def policy(**changes: Any) -> CompactionPolicy:
    settings: dict[str, Any] = {
        "protect_head": 2,
        "tail_tokens": 40,
        "min_tail": 2,
        "counter": Tens(),
    }
    settings.update(changes)
    return CompactionPolicy(**settings)


def open_manager(url: str, **changes: Any) -> sessionary.SessionManager:
    manager = sessionary.SessionManager(url, compaction=policy(**changes))
    if DOCUMENTS not in manager.store.capabilities:
        manager.close()
        pytest.skip("this backend has no documents yet")
    return manager


def fill(session: sessionary.Session, count: int, prefix: str = "m") -> list[Message]:
    messages = []
    for i in range(count):
        text = f"step {i}: edit src/mod_{prefix}{i}.py"
        make = Message.user if i % 2 == 0 else Message.assistant
        messages.append(session.append(make(text, id=f"{prefix}{i}")))
    return messages


def test_compact_shows_a_summary_and_keeps_the_originals(store_url: str) -> None:
    with open_manager(store_url) as manager:
        chat = manager.create()
        fill(chat, 20)
        overlay = chat.compact()
        assert overlay is not None
        assert (overlay.first_id, overlay.last_id) == ("m2", "m15")
        assert (overlay.first_depth, overlay.last_depth, overlay.covered) == (3, 16, 14)
        shown = chat.history()
        assert [m.id for m in shown] == [
            "m0",
            "m1",
            f"{COMPACTION_PREFIX}{overlay.id}",
            *[f"m{i}" for i in range(16, 20)],
        ]
        summary = shown[2]
        assert summary.metadata[SUMMARY_KEY]["first_id"] == "m2"
        assert "src/mod_m7.py" in summary.text
        assert overlay.tokens_before == 200 and overlay.tokens_after == 70
        assert [m.id for m in chat.history(raw=True)] == [f"m{i}" for i in range(20)]
        assert [m.id for m in chat.history(limit=3)] == ["m17", "m18", "m19"]
        assert chat.history(limit=5)[0].id.startswith(COMPACTION_PREFIX)
        if SEARCH in manager.store.capabilities:
            assert chat.search("mod_m7")[0].message_id == "m7"  # originals stay searchable
        assert chat.overlays() == [overlay]


def test_iterative_compaction_widens_and_updates_the_summary(store_url: str) -> None:
    recorder = Recorder()
    with open_manager(store_url, summarizer=recorder) as manager:
        chat = manager.create()
        fill(chat, 20)
        first = chat.compact()
        fill(chat, 10, prefix="n")
        second = chat.compact()
        assert first is not None and second is not None
        assert second.first_id == "m2" and second.last_id == "n5"
        assert second.supersedes == first.id
        request = recorder.requests[-1]
        assert request.previous is not None and "src/mod_m7.py" in request.previous
        assert all(not m.id.startswith(COMPACTION_PREFIX) for m in request.messages)
        assert request.messages[0].id == "m16"
        shown = chat.history()
        assert shown[2].id == f"{COMPACTION_PREFIX}{second.id}" and len(shown) == 7
        assert "src/mod_m7.py" in shown[2].text and "src/mod_n3.py" in shown[2].text


def test_overlays_are_branch_local(store_url: str) -> None:
    with open_manager(store_url) as manager:
        chat = manager.create()
        fill(chat, 20)
        chat.append(Message.user("other way", id="b0"), parent="m9")
        for i in range(1, 8):
            chat.append(Message.assistant(f"branch {i}", id=f"b{i}"))
        on_a = chat.compact(leaf="m19")
        assert on_a is not None
        branch_b = chat.history(leaf="b7")
        assert [m.id for m in branch_b] == [
            *(f"m{i}" for i in range(10)),
            *(f"b{i}" for i in range(8)),
        ]
        on_b = chat.compact(leaf="b7")
        assert on_b is not None and on_b.last_id == "b3"
        assert chat.history(leaf="b7")[2].id == f"{COMPACTION_PREFIX}{on_b.id}"
        assert chat.history(leaf="m19")[2].id == f"{COMPACTION_PREFIX}{on_a.id}"
        # An overlay of a sibling does not apply to a branch that left before its end.
        assert chat.history(leaf="m12")[2].id == "m2"


def test_overlays_survive_a_restart(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path}/restart.db"
    with open_manager(url) as manager:
        chat = manager.create(id="s")
        fill(chat, 20)
        overlay = chat.compact()
    with sessionary.SessionManager(url) as manager:
        shown = manager.session("s").history()
        assert overlay is not None and shown[2].id == f"{COMPACTION_PREFIX}{overlay.id}"


def test_an_echoed_summary_cannot_be_stored(store_url: str) -> None:
    with open_manager(store_url) as manager:
        chat = manager.create()
        fill(chat, 20)
        chat.compact()
        echoed = chat.history()[2]
        with pytest.raises(InvalidMessage):
            chat.append(echoed)
        renamed = Message(role=echoed.role, parts=echoed.parts, metadata=echoed.metadata)
        with pytest.raises(InvalidMessage):
            chat.append_all([Message.user("ok"), renamed])
        assert chat.path_length() == 20


def test_auto_compaction_fires_past_the_trigger(store_url: str) -> None:
    errors: list[BaseException] = []
    with open_manager(store_url, trigger_tokens=150, on_error=errors.append) as manager:
        chat = manager.create()
        fill(chat, 15)
        assert chat.overlays() == []
        fill(chat, 1, prefix="x")  # 16 messages = 160 tokens > 150
        assert len(chat.overlays()) == 1 and errors == []
        assert chat.estimate_tokens() <= 150


def test_auto_compaction_failures_reach_the_hook_and_the_append_stands(store_url: str) -> None:
    errors: list[BaseException] = []
    with open_manager(
        store_url, trigger_tokens=50, tail_tokens=20, summarizer=Failing(), on_error=errors.append
    ) as manager:
        chat = manager.create()
        fill(chat, 8)
        assert chat.path_length() == 8 and chat.overlays() == []
        # Tried at 60 tokens, then held off until the context grew by a quarter of 50.
        assert len(errors) == 2 and all(isinstance(e, SummarizerError) for e in errors)
        assert isinstance(errors[0].__cause__, RuntimeError)
        with pytest.raises(SummarizerError):
            chat.compact()


def test_a_throwing_hook_never_fails_the_append(store_url: str) -> None:
    def explode(error: BaseException) -> None:
        raise ValueError("hook broke")

    with open_manager(
        store_url, trigger_tokens=50, summarizer=Failing(), on_error=explode
    ) as manager:
        chat = manager.create()
        fill(chat, 8)
        assert chat.path_length() == 8


class CountingStore:
    """Wraps a store and counts the messages its path reads return."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.read = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def get_path(self, *args: Any) -> list[Message]:
        found = self._store.get_path(*args)
        self.read += len(found)
        return found


def test_reading_a_compacted_history_reads_what_it_returns(tmp_path: Any) -> None:
    counting = CountingStore(sessionary.open_store(f"sqlite:///{tmp_path}/c.db"))
    manager = sessionary.SessionManager(counting, compaction=policy())  # type: ignore[arg-type]
    chat = manager.create()
    chat.append_all([Message.user(f"turn {i}", id=f"m{i}") for i in range(500)])
    assert chat.compact() is not None
    counting.read = 0
    shown = chat.history()
    assert len(shown) == 7
    assert counting.read <= len(shown) + 2  # the head, the tail and the overlay's last message
    counting._store.close()


def test_compact_and_split_continues_from_the_summary(store_url: str) -> None:
    with open_manager(store_url) as manager:
        chat = manager.create(name="long")
        fill(chat, 20)
        chat.update_state({"k": 1})
        fresh = manager.compact_and_split(chat.id)
        old = manager.get(chat.id)
        assert old is not None and old.end_reason == "compacted"
        info = fresh.info()
        assert info.parent_session_id == chat.id and info.name == "long"
        shown = fresh.history()
        assert shown[0].metadata[CONTINUED_KEY]["session_id"] == chat.id
        assert "src/mod_m10.py" in shown[0].text
        assert [m.id for m in shown[1:]] == [f"m{i}" for i in range(16, 20)]
        assert fresh.get_state().data == {"k": 1}
        fresh.append(Message.user("carry on"))


def test_eviction_previews_large_results_and_reads_them_back(store_url: str) -> None:
    eviction = Eviction(threshold=1000, preview=100, exclude=frozenset({"cat"}))
    big = "".join(f"{i:05d}" for i in range(2000))  # 10,000 characters
    with open_manager(store_url, eviction=eviction, max_argument_chars=64) as manager:
        chat = manager.create()
        call = ToolCallPart(id="c1", name="grep", arguments={"pattern": "x" * 500, "n": 3})
        chat.append(Message.assistant(tool_calls=[call], id="a1"))
        chat.append(Message.tool("c1", big, name="grep", id="t1"))
        chat.append(Message.assistant(tool_calls=[ToolCallPart(id="c2", name="cat")], id="a2"))
        chat.append(Message.tool("c2", big, name="cat", id="t2"))
        shown = chat.context_history()
        preview = shown[1].tool_results[0]
        assert preview.output.startswith(big[:100]) and preview.output.endswith(big[-100:])
        assert 'message_id="t1"' in preview.output and len(preview.output) < 1000
        assert shown[3].tool_results[0].output == big  # excluded tool
        arguments = shown[0].tool_calls[0].arguments
        assert arguments["n"] == 3 and len(arguments["pattern"]) < 64
        assert chat.read_tool_result("t1", "c1", 4000, 4010) == big[4000:4010]
        assert chat.read_tool_result("t1") == big
        assert chat.history()[1].tool_results[0].output == big  # the store is untouched
        assert chat.history()[0].tool_calls[0].arguments["pattern"] == "x" * 500


def test_memory_flush_appends_facts_before_compacting(store_url: str) -> None:
    with open_manager(store_url, memory_flush=MemoryFlush(label="notes")) as manager:
        chat = manager.create()
        fill(chat, 20)
        chat.compact()
        doc = manager.store.get_document(manager.scope, "session", chat.id, "block", "notes", None)
        assert doc is not None and doc.author == "compaction"
        assert "src/mod_m7.py" in doc.body["content"] and doc.text == doc.body["content"]
        fill(chat, 10, prefix="n")
        chat.compact()
        versions = manager.store.document_versions(
            manager.scope, "session", chat.id, "block", "notes"
        )
        assert len(versions) == 2
        assert versions[1].body["content"].startswith(versions[0].body["content"])


async def test_async_session_compacts(store_url: str) -> None:
    manager = sessionary.AsyncSessionManager(store_url, compaction=policy())
    if DOCUMENTS not in manager.store.capabilities:
        await manager.close()
        pytest.skip("this backend has no documents yet")
    async with manager:
        chat = await manager.create()
        for i in range(20):
            await chat.append(Message.user(f"u{i}", id=f"m{i}"))
        overlay = await chat.compact()
        assert overlay is not None
        assert len(await chat.history()) == 7


def test_the_read_tool_is_offered_with_eviction_and_never_raises(store_url: str) -> None:
    with open_manager(store_url) as manager:
        assert "read_tool_result" not in [t.name for t in manager.create().tools()]
    with open_manager(store_url, eviction=Eviction(threshold=100, preview=10)) as manager:
        chat = manager.create()
        chat.append(Message.assistant(tool_calls=[ToolCallPart(id="c1", name="ls")], id="a1"))
        chat.append(Message.tool("c1", "abcdefghij" * 50, name="ls", id="t1"))
        assert "read_tool_result" in [t.name for t in chat.tools()]
        args = {"message_id": "t1", "call_id": "c1", "start": 5, "end": 25}
        result = chat.call_tool("read_tool_result", args)
        assert (result.text, result.is_error) == (("abcdefghij" * 3)[5:25], False)
        assert chat.call_tool("read_tool_result", '{"message_id": "t1", "start": 495}').text == (
            "fghij"
        )
        for bad in (
            {"message_id": "nope", "start": 0, "end": 5},
            {"message_id": "t1", "start": 9, "end": 2},
            {"message_id": "t1", "call_id": "zz", "start": 0, "end": 1},
            {"message_id": "t1", "start": -1},
            "not json",
        ):
            failed = chat.call_tool("read_tool_result", bad)
            assert failed.is_error and failed.text.startswith("Error:"), bad


def test_a_fork_keeps_the_overlays_on_its_path(store_url: str) -> None:
    with open_manager(store_url) as manager:
        chat = manager.create()
        fill(chat, 20)
        overlay = chat.compact()
        assert overlay is not None
        fork = manager.fork(chat.id, "m18")
        assert [o.id for o in fork.overlays()] == [overlay.id]
        assert fork.history()[2].id == f"{COMPACTION_PREFIX}{overlay.id}"
        assert len(fork.history(raw=True)) == 19
        early = manager.fork(chat.id, "m10")  # before the overlay's end: not copied
        assert early.overlays() == [] and len(early.history()) == 11


def test_clear_drops_overlays_loaded_entries_and_refreezes_the_prompt(store_url: str) -> None:
    config = (
        sessionary.SessionConfig()
        .with_block("notes", description="Notes")
        .with_block("docs", kind="skill")
        .with_cached_prompt()
    )
    with open_manager(store_url) as manager:
        made = manager.create().id
        chat = sessionary.Session(manager.store, manager.scope, made, config, compaction=policy())
        chat.replace_context_block("notes", "old note")
        chat.put_context_entry("docs", "Run make release.", title="Releasing")
        assert chat.load_context_entry("docs", "releasing") is not None
        assert "old note" in chat.freeze_system_prompt()
        fill(chat, 20)
        assert chat.compact() is not None
        chat.replace_context_block("notes", "new note")
        assert chat.clear() == 20
        assert chat.overlays() == [] and chat.loaded_context() == {}
        assert "new note" in chat.freeze_system_prompt()
        # Messages that come back under the old ids are not hidden by an old summary.
        fill(chat, 20)
        assert [m.id for m in chat.history()] == [f"m{i}" for i in range(20)]
        assert chat.get_context_block("notes").content == "new note"  # blocks stay
        assert chat.get_context_block("docs").keys == ("releasing",)
