"""Summarizers: the offline structured one, and the LLM ones through their real SDK clients."""

from __future__ import annotations

import asyncio
import random
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from _llm_server import ANTHROPIC_OVERFLOW, OPENAI_OVERFLOW, Behaviour, FakeLLM, serve

from sessionary.compaction import (
    SECTIONS,
    AnthropicSummarizer,
    AsyncAnthropicSummarizer,
    AsyncOpenAISummarizer,
    OpenAISummarizer,
    StructuredSummarizer,
    SummaryRequest,
    build_prompt,
    extract_references,
    memory_facts,
    render_transcript,
    structured_summary,
    summary,
)
from sessionary.compaction.summary import check_summary
from sessionary.errors import SummarizerError
from sessionary.model import Message, ToolCallPart
from sessionary.tokens import HeuristicCounter

pytest.importorskip("openai")
pytest.importorskip("anthropic")


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with serve() as fake:
        yield fake


def turns() -> tuple[Message, ...]:
    return (
        Message.user(
            "Please fix the failing test in tests/test_api.py; we deploy with `make release`."
        ),
        Message.assistant(
            "Looking at it.",
            tool_calls=[
                ToolCallPart(id="c1", name="read_file", arguments={"path": "src/app/api.py"})
            ],
        ),
        Message.tool(
            "c1", "Traceback: KeyError user_id in parse_request", is_error=True, name="read_file"
        ),
        Message.assistant(
            "We decided to validate user_id in parse_request. Next: update docs/api.md"
        ),
        Message.user("Can you also check https://example.com/spec and the ORDER_LIMIT setting?"),
    )


# ------------------------------------------------------------------ offline


def test_structured_summary_has_sections_and_verbatim_references() -> None:
    text = structured_summary(SummaryRequest(turns(), budget=2000))
    for name in SECTIONS:
        assert f"## {name}" in text
    for ref in (
        "tests/test_api.py",
        "src/app/api.py",
        "docs/api.md",
        "make release",
        "user_id",
        "parse_request",
        "ORDER_LIMIT",
        "https://example.com/spec",
    ):
        assert ref in text
    assert "KeyError" in text  # the error is a key point
    assert "decided to validate" in text
    assert "?" in text.split("## Open Items")[1]


def test_references_go_to_the_artifacts_section() -> None:
    text = structured_summary(SummaryRequest(turns(), budget=2000))
    assert SECTIONS == ("Intent", "Key Points", "Artifacts", "Current State", "Open Items")
    artifacts = text.split("## Artifacts")[1].split("## Current State")[0]
    assert "Files: tests/test_api.py, src/app/api.py, docs/api.md" in artifacts
    assert "Commands: `make release`" in artifacts and "https://example.com/spec" in artifacts
    key_points = text.split("## Key Points")[1].split("## Artifacts")[0]
    assert "Files:" not in key_points and "KeyError" in key_points
    # A summary written before the Artifacts section existed keeps its references.
    old = "## Intent\n- fix it\n\n## Key Points\n- Files: lib/old.py\n- chose plan B"
    merged = structured_summary(SummaryRequest(turns(), previous=old))
    assert "lib/old.py" in merged.split("## Artifacts")[1]
    assert "chose plan B" in merged.split("## Key Points")[1].split("## Artifacts")[0]
    assert "## Artifacts" in build_prompt(SummaryRequest(turns()))[0]


def test_an_evicted_preview_reads_without_its_note() -> None:
    from sessionary import Eviction
    from sessionary.compaction.view import context_view

    output = "see src/big.py " * 400
    result = Message.tool("c1", output, name="shell", id="t1")
    shown = context_view([result], Eviction(threshold=100, preview=60), None)
    assert "read_tool_result" in shown[0].tool_results[0].output  # the model is told how
    text = structured_summary(SummaryRequest(tuple(shown)))
    assert "src/big.py" in text
    for noise in ("read_tool_result", "message_id", "call_id", "t1"):
        assert noise not in text


def test_structured_summary_is_deterministic_and_iterative() -> None:
    first = structured_summary(SummaryRequest(turns()))
    assert first == structured_summary(SummaryRequest(turns()))
    later = (Message.user("Now rename HttpClient in lib/net.py"), Message.assistant("Renamed."))
    second = structured_summary(SummaryRequest(later, previous=first))
    for ref in ("tests/test_api.py", "src/app/api.py", "lib/net.py", "HttpClient", "user_id"):
        assert ref in second
    assert "Renamed." in second.split("## Current State")[1]
    assert second.count("## Intent") == 1


def test_structured_summary_fits_its_budget() -> None:
    long = tuple(Message.assistant(f"We decided step {i} " + "word " * 50) for i in range(60))
    counter = HeuristicCounter()
    text = StructuredSummarizer().summarize(SummaryRequest(long, budget=300, counter=counter))
    assert counter.count_text(text) <= 300
    assert all(f"## {name}" in text for name in SECTIONS)


def test_extract_references_kinds() -> None:
    refs = extract_references(
        "edit ./a/b.py and config.toml, run `pytest -q`, see PROJ-12 or deadbeef1"
    )
    assert refs["files"] == ["./a/b.py", "config.toml"]
    assert refs["commands"] == ["pytest -q"]
    assert "PROJ-12" in refs["identifiers"] and "deadbeef1" in refs["identifiers"]


def _plain_references(text: str) -> tuple[list[str], list[str]]:
    """Files and identifiers as the regular expressions find them on the whole text."""
    bare = summary._URL.sub(" ", text)
    paths = [p.rstrip(".,:;") for p in summary._PATH.findall(bare)]
    files = list(dict.fromkeys(p for p in paths if p and summary._is_path(p)))
    idents = [i for i in summary._IDENT.findall(bare) if not any(i in p for p in files)]
    return files, list(dict.fromkeys(idents))


def test_references_and_questions_are_found_as_on_the_whole_text() -> None:
    # They are found run by run, and questions only from where a sentence can start,
    # so that a long text is read once: the same as scanning it whole, on random texts.
    rng = random.Random(7)
    alphabet = "ab_XY0/.-~ ?!\n$`:"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 50)))
        text += rng.choice(["", " src/app.py foo-bar.md ./x/y ~/a/b.txt some_name ok?"])
        refs = extract_references(text)
        assert (refs["files"], refs["identifiers"]) == _plain_references(text), text
        assert summary._QUESTION.findall(text) == re.findall(r"[^.!?\n]*\?", text), text


def test_a_long_text_without_stops_is_read_once() -> None:
    # Each of these took time growing with the square of its length (minutes at this
    # size): a question scanned from every position, a path from every word boundary.
    long = "y" * 200_000 + " why?"
    assert summary._QUESTION.findall(long) == [long]
    dashed = "a-" * 100_000 + " see notes.md"
    assert extract_references(dashed)["files"] == ["notes.md"]
    many = " ".join(f"src/m{i}/f_{i}.py Name_{i}" for i in range(5000))
    refs = extract_references(many)
    assert len(refs["files"]) == len(refs["identifiers"]) == summary.MOST_REFERENCES
    assert refs["files"][:2] == ["src/m0/f_0.py", "src/m1/f_1.py"]


def test_blank_lines_are_read_once() -> None:
    # A command or a to-do started with \s*, which took in every blank line after each
    # line start: minutes at this size, for the summary and the memory flush alike.
    blank = "\n" * 300_000 + "  $ make test\n" + " \n" * 100_000 + "- TODO: ship it\n"
    assert extract_references(blank)["commands"] == ["make test"]
    assert [m.strip() for m in summary._TODO.findall(blank)] == ["- TODO: ship it"]
    assert "Commands: `make test`" in memory_facts([Message.user(blank)])
    assert extract_references("$\nls")["commands"] == []  # a command stays on its line


def test_transcript_renders_objects_as_json_and_clips() -> None:
    text = render_transcript([Message.tool("c", {"rows": [1, 2]}), Message.user("x" * 100)], 14)
    assert '{"rows":[1,2]}' in text and "[object" not in text
    assert "more characters" in text


def test_prompt_is_iterative_with_a_previous_summary() -> None:
    system, user = build_prompt(SummaryRequest(turns(), previous="## Intent\n- old", budget=777))
    assert "777" in system and "verbatim" in system
    assert "PREVIOUS SUMMARY:\n## Intent\n- old" in user and "NEW TURNS:" in user
    assert "CONVERSATION TO SUMMARIZE" in build_prompt(SummaryRequest(turns()))[1]


def test_check_summary_refuses_blank_and_non_text() -> None:
    with pytest.raises(SummarizerError):
        check_summary("  ")
    with pytest.raises(SummarizerError):
        check_summary(None)


# ------------------------------------------------------------------ OpenAI-compatible


async def test_openai_summarizer_through_the_sdk(llm: FakeLLM) -> None:
    llm.reply(Behaviour(text="## Intent\n- fix tests"))
    summarizer = AsyncOpenAISummarizer("test-model", base_url=f"{llm.base_url}/v1", api_key="k")
    text = await summarizer.summarize(SummaryRequest(turns(), previous="old one", budget=500))
    assert text == "## Intent\n- fix tests"
    sent = llm.requests[-1]
    assert sent["path"] == "/v1/chat/completions" and sent["model"] == "test-model"
    assert sent["messages"][0]["role"] == "system"
    assert "PREVIOUS SUMMARY:\nold one" in sent["messages"][1]["content"]
    assert sent["max_tokens"] == 1000


@pytest.mark.parametrize("kind", [AsyncOpenAISummarizer, AsyncAnthropicSummarizer])
def test_an_async_summarizer_works_from_any_event_loop(kind: type[Any]) -> None:
    # The SDK keeps its connections open (HTTP/1.1): they must not be left on a loop
    # that has closed ("Event loop is closed" on the next asyncio.run).
    request = SummaryRequest(turns(), budget=200)
    with serve(keep_alive=True) as llm:
        base = f"{llm.base_url}/v1" if kind is AsyncOpenAISummarizer else llm.base_url
        summarizer = kind("m", base_url=base, api_key="k", max_retries=0)
        texts = [asyncio.run(summarizer.summarize(request)) for _ in range(3)]
        other = threading.Thread(
            target=lambda: texts.append(asyncio.run(summarizer.summarize(request)))
        )
        other.start()
        other.join(120)
        asyncio.run(summarizer.close())
        asyncio.run(summarizer.close())
    assert texts == ["## Intent\n- summary"] * 4


def test_sync_openai_summarizer(llm: FakeLLM) -> None:
    summarizer = OpenAISummarizer("m", base_url=f"{llm.base_url}/v1", api_key="k")
    assert summarizer.summarize(SummaryRequest(turns())) == "## Intent\n- summary"


@pytest.mark.parametrize(
    ("status", "body"),
    [(400, OPENAI_OVERFLOW), (500, {"error": {"message": "boom"}}), (200, {"choices": []})],
)
async def test_openai_failures_become_summarizer_errors(
    llm: FakeLLM, status: int, body: dict[str, object]
) -> None:
    llm.reply(Behaviour(status=status, body=body))
    summarizer = AsyncOpenAISummarizer(
        "m", base_url=f"{llm.base_url}/v1", api_key="k", max_retries=0
    )
    with pytest.raises(SummarizerError):
        await summarizer.summarize(SummaryRequest(turns()))


async def test_openai_timeout_becomes_a_summarizer_error(llm: FakeLLM) -> None:
    import openai

    llm.reply(Behaviour(stall=True))
    summarizer = AsyncOpenAISummarizer(
        "m", base_url=f"{llm.base_url}/v1", api_key="k", timeout=0.2, max_retries=0
    )
    with pytest.raises(SummarizerError) as caught:
        await summarizer.summarize(SummaryRequest(turns()))
    assert isinstance(caught.value.__cause__, openai.APITimeoutError)


# ------------------------------------------------------------------ Anthropic


async def test_anthropic_summarizer_through_the_sdk(llm: FakeLLM) -> None:
    llm.reply(Behaviour(text="## Intent\n- ship it"))
    summarizer = AsyncAnthropicSummarizer("claude-test", base_url=llm.base_url, api_key="k")
    text = await summarizer.summarize(SummaryRequest(turns(), budget=300))
    assert text == "## Intent\n- ship it"
    sent = llm.requests[-1]
    assert sent["path"] == "/v1/messages" and sent["model"] == "claude-test"
    assert "## Open Items" in sent["system"] and sent["max_tokens"] == 600
    assert sent["messages"][0]["content"].startswith("CONVERSATION TO SUMMARIZE")


def test_sync_anthropic_summarizer(llm: FakeLLM) -> None:
    summarizer = AnthropicSummarizer("m", base_url=llm.base_url, api_key="k")
    assert summarizer.summarize(SummaryRequest(turns())) == "## Intent\n- summary"


async def test_anthropic_errors_and_timeouts(llm: FakeLLM) -> None:
    import anthropic

    llm.reply(Behaviour(status=400, body=ANTHROPIC_OVERFLOW), Behaviour(stall=True))
    summarizer = AsyncAnthropicSummarizer(
        "m", base_url=llm.base_url, api_key="k", timeout=0.2, max_retries=0
    )
    with pytest.raises(SummarizerError) as caught:
        await summarizer.summarize(SummaryRequest(turns()))
    assert isinstance(caught.value.__cause__, anthropic.BadRequestError)
    with pytest.raises(SummarizerError) as caught:
        await summarizer.summarize(SummaryRequest(turns()))
    assert isinstance(caught.value.__cause__, anthropic.APITimeoutError)
