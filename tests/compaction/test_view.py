"""The context view: which tool results are evicted, and how clipped arguments end (pure)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sessionary import CompactionPolicy, Eviction, Message, ToolCallPart
from sessionary.compaction.policy import DEFAULT_EVICTION_EXCLUDE
from sessionary.compaction.summary import result_text
from sessionary.compaction.view import (
    CLIPPED_KEY,
    EVICTED_KEY,
    clip_arguments,
    context_view,
    evict_result,
)
from sessionary.errors import InvalidInput
from sessionary.formats.anthropic import to_anthropic
from sessionary.model import ToolResultPart

BIG = "x" * 500


def evicted(eviction: Eviction, tool: str) -> bool:
    shown = context_view([Message.tool("c1", BIG, name=tool, id="t1")], eviction, None)
    return EVICTED_KEY in shown[0].tool_results[0].extra


def test_the_default_exclusions_follow_the_harness_seed() -> None:
    eviction = Eviction(threshold=100, preview=10)
    assert eviction.exclude == DEFAULT_EVICTION_EXCLUDE
    kept = (
        "read_file write_file edit_file grep_files glob_files list_files memory_search "
        "memory_get session_search load_context search_context session_history "
        "read_tool_result"
    )
    for tool in kept.split():
        assert not evicted(eviction, tool), tool
    for tool in ("execute", "shell", "http_get", "memory", "read_files"):
        assert evicted(eviction, tool), tool


def test_custom_exclusions_take_patterns_and_never_evict_the_reader() -> None:
    eviction = Eviction(threshold=100, preview=10, exclude=["cat", "db_*"])  # type: ignore[arg-type]
    assert eviction.exclude == frozenset({"cat", "db_*"})
    assert not evicted(eviction, "cat") and not evicted(eviction, "db_query")
    assert not evicted(eviction, "read_tool_result")  # reading back must never evict again
    assert evicted(eviction, "read_file")
    nameless = context_view([Message(role="tool", parts=[ToolResultPart("c", BIG)])], eviction, 0)
    assert EVICTED_KEY in nameless[0].tool_results[0].extra
    for bad in ("read_file", [""], [3]):
        with pytest.raises(InvalidInput, match="exclude"):
            Eviction(exclude=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="threshold"):
        Eviction(threshold=0)


def test_the_truncation_marker_is_configurable() -> None:
    call = ToolCallPart(id="c1", name="write_file", arguments={"path": "a.py", "body": "y" * 400})
    default = clip_arguments(call, 100).arguments
    assert default["path"] == "a.py"
    assert default["body"] == "y" * 25 + "… [375 characters clipped]"
    seed_style = clip_arguments(call, 100, "... [truncated] ...").arguments
    assert seed_style["body"] == "y" * 25 + "... [truncated] ..."
    many = ToolCallPart(id="c2", name="f", arguments={str(i): i for i in range(40)})
    whole = clip_arguments(many, 32, " <cut {omitted}>").arguments
    assert isinstance(whole, dict) and list(whole) == [CLIPPED_KEY]  # still an object
    text = whole[CLIPPED_KEY]
    assert text.endswith(" <cut 269>") and text.startswith('{"0"')
    # Anthropic takes tool input only as an object: it gets the clipped text, no loss.
    sent = to_anthropic(
        [Message.user("go"), Message.assistant(tool_calls=[replace(many, arguments=whole)])]
    )
    assert sent.lossless, sent.dropped
    assert sent.value.messages[1]["content"][0]["input"] == whole
    listed = ToolCallPart(id="c3", name="f", arguments=[str(i) for i in range(40)])
    assert isinstance(clip_arguments(listed, 32).arguments, str)  # not an object: as before
    policy = CompactionPolicy(max_argument_chars=100, truncation_marker="[+{omitted}]")
    shown = context_view(
        [Message.assistant(tool_calls=[call])],
        None,
        policy.max_argument_chars,
        policy.truncation_marker,
    )
    assert shown[0].tool_calls[0].arguments["body"].endswith("[+375]")
    for bad in ("{n}", "{}", "{omitted", 3):
        with pytest.raises(InvalidInput, match="truncation_marker"):
            CompactionPolicy(truncation_marker=bad)  # type: ignore[arg-type]


def test_a_preview_wider_than_the_threshold_never_repeats_the_output() -> None:
    # Eviction(threshold=1000) keeps the default preview of 2000: the head and the tail
    # used to be the whole output each, so the "preview" was twice the output.
    text = "".join(f"{i:05d}" for i in range(300))  # 1500 characters, no repeats
    part = ToolResultPart("c1", text, name="shell")
    shown = evict_result(part, "m1", Eviction(threshold=1000))
    assert isinstance(shown.output, str)
    head = shown.output.partition("\n\n…")[0]
    assert head == text[:500] and shown.output.endswith(text[-500:])
    assert "… [500 characters not shown of 1500;" in shown.output
    assert len(shown.output) < len(text)
    assert shown.extra[EVICTED_KEY]["preview"] == 500
    assert result_text(shown) == f"{text[:500]}\n…\n{text[-500:]}"
