"""Token counting: the heuristic formula, per-part counts, prompts, and the offline tokenizer."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from sessionary.blocks import ContextBlock
from sessionary.errors import BackendNotInstalled, InvalidInput
from sessionary.model import DataPart, FilePart, Message, ReasoningPart, TextPart, ToolCallPart
from sessionary.tokens import (
    MESSAGE_OVERHEAD,
    TOOL_OVERHEAD,
    ContextCounter,
    HeuristicCounter,
    TiktokenCounter,
    TokenCounter,
    count_context,
    count_parts,
    default_counter,
    estimate_text_tokens,
    tiktoken_cache_path,
)


def test_empty_text_costs_nothing() -> None:
    assert estimate_text_tokens("") == 0


def test_long_words_count_by_characters() -> None:
    text = "x" * 400  # one word, 400 narrow characters
    assert estimate_text_tokens(text) == 100


def test_short_words_count_by_words() -> None:
    text = " ".join(["a"] * 100)  # 199 characters, 100 words
    assert estimate_text_tokens(text) == math.ceil(100 * 1.3)


def test_wide_characters_count_one_each() -> None:
    # 7 wide characters, one "word": ceil(max(0 / 4, 1 * 1.3) + 7)
    assert estimate_text_tokens("数据库连接失败") == 9


def test_per_part_counts() -> None:
    message = Message(
        role="assistant",
        parts=[
            TextPart("hello world"),
            ReasoningPart("thinking about it"),
            ToolCallPart(id="c1", name="read_file", arguments={"path": "src/app.py"}),
        ],
    )
    counts = count_parts(message)
    assert counts.text == estimate_text_tokens("hello world")
    assert counts.reasoning == estimate_text_tokens("thinking about it")
    assert counts.tool_arguments == estimate_text_tokens("read_file") + estimate_text_tokens(
        '{"path":"src/app.py"}'
    )
    assert counts.tool_outputs == 0
    assert counts.total == counts.text + counts.reasoning + counts.tool_arguments + MESSAGE_OVERHEAD


def test_tool_output_json_and_files() -> None:
    result = Message.tool("c1", {"rows": [1, 2, 3]}, name="query")
    counts = count_parts(result)
    assert counts.tool_outputs == estimate_text_tokens("query") + estimate_text_tokens(
        '{"rows":[1,2,3]}'
    )
    image = Message(role="user", parts=[FilePart("image/png", url="https://x/y.png")])
    assert count_parts(image, image_tokens=321).files == 321
    inline = Message(role="user", parts=[FilePart("text/plain", data="A" * 160, filename="a.txt")])
    assert count_parts(inline).files == estimate_text_tokens("a.txt") + 30


def test_data_parts_cost_nothing() -> None:
    message = Message(role="user", parts=[DataPart({"x": "y" * 1000})])
    assert count_parts(message).total == MESSAGE_OVERHEAD


def test_prompt_counts_system_and_tool_schemas() -> None:
    counter = HeuristicCounter()
    messages = [Message.user("hi there"), Message.assistant("hello")]
    tool = {"name": "search", "parameters": {"type": "object", "properties": {}}}
    bare = counter.count_prompt(messages)
    assert bare == sum(counter.count_message(m) for m in messages)
    full = counter.count_prompt(messages, system="You are helpful.", tools=[tool])
    expected_tool = TOOL_OVERHEAD + counter.count_text(
        '{"name":"search","parameters":{"type":"object","properties":{}}}'
    )
    assert full == bare + counter.count_text("You are helpful.") + MESSAGE_OVERHEAD + expected_tool


def test_counter_satisfies_protocol_and_validates() -> None:
    assert isinstance(HeuristicCounter(), TokenCounter)
    with pytest.raises(InvalidInput):
        HeuristicCounter(image_tokens=-1)


class WordCounter(HeuristicCounter):
    """A plug-in counter: one token per whitespace-separated word."""

    def count_text(self, text: str) -> int:
        return len(text.split())


def test_plugged_counter_drives_message_counts() -> None:
    counter = WordCounter()
    message = Message.user("one two three")
    assert counter.count_message(message) == 3 + MESSAGE_OVERHEAD
    assert count_parts(message, counter).text == 3


def test_uncached_encoding_falls_back_without_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("tiktoken")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    # Any attempt to download would have to open a socket: forbid it.
    import socket

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    with pytest.raises(BackendNotInstalled, match="not cached"):
        TiktokenCounter("o200k_base")
    assert isinstance(default_counter("o200k_base"), HeuristicCounter)
    assert type(default_counter("o200k_base")) is HeuristicCounter


def test_disabled_cache_means_no_exact_counter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    assert tiktoken_cache_path("cl100k_base") is None
    assert type(default_counter("cl100k_base")) is HeuristicCounter


def test_exact_counter_with_an_offline_encoding() -> None:
    tiktoken = pytest.importorskip("tiktoken")
    # A byte-level encoding built in memory: one token per byte, no file needed.
    ranks = {bytes([i]): i for i in range(256)}
    encoding = tiktoken.Encoding(
        name="bytes", pat_str=r"[\s\S]", mergeable_ranks=ranks, special_tokens={}
    )
    counter = TiktokenCounter(encoding)
    assert counter.count_text("héllo") == len("héllo".encode())
    assert counter.count_text("<|endoftext|>") == len("<|endoftext|>")
    assert counter.count_message(Message.user("abc")) == 3 + MESSAGE_OVERHEAD
    assert "bytes" in repr(counter)


def test_default_counter_without_encoding_is_heuristic() -> None:
    assert type(default_counter()) is HeuristicCounter


class ThreeMethods:
    """A counter written against the three-method protocol, before count_context existed."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, str, int]] = []

    def count_text(self, text: str) -> int:
        return len(text)

    def count_message(self, message: Message) -> int:
        return 1

    def count_prompt(
        self, messages: Sequence[Message], system: str = "", tools: Sequence[Any] = ()
    ) -> int:
        self.calls.append((len(messages), system, len(tools)))
        return len(messages) + len(system) + len(tools)


class Returns:
    def __init__(self, value: object) -> None:
        self.value = value

    def count_text(self, text: str) -> int:
        return 0

    def count_message(self, message: Message) -> int:
        return 0

    def count_prompt(self, messages: Any, system: str = "", tools: Any = ()) -> Any:
        return self.value


def test_the_heuristic_counts_a_context_as_its_prompt_without_the_blocks_again() -> None:
    counter = HeuristicCounter()
    messages = [Message.user("hello there")]
    block = ContextBlock("memory", "writable", "likes tea", 3)
    tools = [{"name": "t", "parameters": {"type": "object"}}]
    whole = counter.count_prompt(messages, "MEMORY\nlikes tea", tools)
    assert isinstance(counter, ContextCounter)
    assert (
        count_context(counter, messages, system="MEMORY\nlikes tea", blocks=[block], tools=tools)
        == whole
    )
    assert whole > counter.count_prompt(messages)


def test_an_old_counter_still_counts_the_prompt_and_a_bad_count_is_refused() -> None:
    old = ThreeMethods()
    assert not isinstance(old, ContextCounter) and isinstance(old, TokenCounter)
    block = ContextBlock("memory", "writable", "x", 1)
    tools = [{"name": "t"}]
    assert count_context(old, [Message.user("a")], system="sys", blocks=[block], tools=tools) == 5
    assert old.calls == [(1, "sys", 1)]
    assert count_context(Returns(2.2), []) == 3  # rounded up
    assert count_context(Returns(-4), []) == 0
    for bad in (float("nan"), float("inf"), "12", None, True):
        with pytest.raises(InvalidInput, match="token counter returned"):
            count_context(Returns(bad), [])  # type: ignore[arg-type]
