"""Overflow recovery with the real SDK exception types, raised by the SDKs against a local
server: recognise the error, compact hard, retry once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from _llm_server import ANTHROPIC_OVERFLOW, OPENAI_OVERFLOW, Behaviour, FakeLLM, serve

import sessionary
from sessionary import Message
from sessionary._sync.compaction.recovery import call_with_recovery
from sessionary.compaction.overflow import is_context_overflow
from sessionary.compaction.policy import CompactionPolicy
from sessionary.compaction.recovery import call_with_recovery as acall_with_recovery

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with serve() as fake:
        yield fake


def wire(messages: list[Message]) -> list[dict[str, str]]:
    return [{"role": "user" if m.role == "system" else m.role, "content": m.text} for m in messages]


def long_chat(manager: sessionary.SessionManager) -> sessionary.Session:
    chat = manager.create()
    chat.append_all(
        Message.user(f"turn {i} about lib/part_{i}.py " + "words " * 40) for i in range(60)
    )
    return chat


def test_recognises_texts_and_wrapped_errors() -> None:
    assert is_context_overflow(ValueError("This model's maximum context length is 8192 tokens"))
    assert is_context_overflow(RuntimeError("prompt is too long: 300000 tokens > 200000"))
    assert not is_context_overflow(RuntimeError("rate limited"))
    try:
        try:
            raise ValueError("context_length_exceeded")
        except ValueError as inner:
            raise RuntimeError("call failed") from inner
    except RuntimeError as outer:
        assert is_context_overflow(outer)


def test_openai_overflow_compacts_and_retries_once(llm: FakeLLM) -> None:
    client = openai.OpenAI(base_url=f"{llm.base_url}/v1", api_key="k", max_retries=0)
    llm.reply(Behaviour(status=400, body=OPENAI_OVERFLOW), Behaviour(text="answer"))
    sizes: list[int] = []

    def ask(messages: list[Message]) -> str:
        sizes.append(len(messages))
        reply = client.chat.completions.create(model="m", messages=wire(messages))  # type: ignore[arg-type]
        return reply.choices[0].message.content or ""

    with sessionary.SessionManager("memory://", compaction=CompactionPolicy()) as manager:
        chat = long_chat(manager)
        assert call_with_recovery(chat, ask) == "answer"
        assert sizes[0] == 60 and sizes[1] < 20
        assert len(chat.overlays()) == 1
        assert chat.history()[0].id.startswith("compaction_")


def test_openai_error_object_is_recognised(llm: FakeLLM) -> None:
    client = openai.OpenAI(base_url=f"{llm.base_url}/v1", api_key="k", max_retries=0)
    llm.reply(Behaviour(status=400, body=OPENAI_OVERFLOW))
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert is_context_overflow(caught.value)


def test_other_errors_propagate_without_compaction(llm: FakeLLM) -> None:
    client = openai.OpenAI(base_url=f"{llm.base_url}/v1", api_key="k", max_retries=0)
    llm.reply(Behaviour(status=500, body={"error": {"message": "server broke"}}))

    def ask(messages: list[Message]) -> Any:
        return client.chat.completions.create(model="m", messages=wire(messages))  # type: ignore[arg-type]

    with sessionary.SessionManager("memory://", compaction=CompactionPolicy()) as manager:
        chat = long_chat(manager)
        with pytest.raises(openai.InternalServerError):
            call_with_recovery(chat, ask)
        assert chat.overlays() == []


def test_a_second_overflow_is_raised(llm: FakeLLM) -> None:
    client = openai.OpenAI(base_url=f"{llm.base_url}/v1", api_key="k", max_retries=0)
    llm.default = Behaviour(status=400, body=OPENAI_OVERFLOW)

    def ask(messages: list[Message]) -> Any:
        return client.chat.completions.create(model="m", messages=wire(messages))  # type: ignore[arg-type]

    with sessionary.SessionManager("memory://", compaction=CompactionPolicy()) as manager:
        chat = long_chat(manager)
        with pytest.raises(openai.BadRequestError):
            call_with_recovery(chat, ask)
        assert len(llm.requests) == 2


async def test_anthropic_overflow_compacts_and_retries(llm: FakeLLM) -> None:
    client = anthropic.AsyncAnthropic(base_url=llm.base_url, api_key="k", max_retries=0)
    llm.reply(Behaviour(status=400, body=ANTHROPIC_OVERFLOW), Behaviour(text="done"))

    async def ask(messages: list[Message]) -> str:
        reply = await client.messages.create(
            model="m",
            max_tokens=100,
            messages=wire(messages),  # type: ignore[arg-type]
        )
        return "".join(b.text for b in reply.content if b.type == "text")

    manager = sessionary.AsyncSessionManager("memory://", compaction=CompactionPolicy())
    async with manager:
        chat = await manager.create()
        await chat.append_all(Message.user(f"turn {i} " + "words " * 40) for i in range(60))
        assert await acall_with_recovery(chat, ask) == "done"
        assert len(await chat.overlays()) == 1
    await client.close()
