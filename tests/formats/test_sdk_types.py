"""What the formats write validates against the official SDK types."""

from __future__ import annotations

import itertools
from typing import Any

from _format_strategies import conversations
from hypothesis import HealthCheck, given, settings
from pydantic import ConfigDict, TypeAdapter

from sessionary import FilePart, Message
from sessionary.formats import to_anthropic, to_gemini, to_openai_chat, to_openai_responses

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _consume(value: Any) -> Any:
    """Run the lazy validators pydantic returns for the SDKs' `Iterable[...]` fields."""
    if isinstance(value, dict):
        return {k: _consume(v) for k, v in value.items()}
    if isinstance(value, str | bytes):
        return value
    if hasattr(value, "__iter__"):
        return [_consume(v) for v in value]
    return value


def _strict(sdk_type: Any) -> TypeAdapter[Any]:
    # Unknown keys fail: TypedDicts would otherwise drop them silently.
    return TypeAdapter(sdk_type, config=ConfigDict(extra="forbid"))


def _same_after_validation(adapter: TypeAdapter[Any], item: dict[str, Any]) -> None:
    assert _consume(adapter.validate_python(item)) == item


@SETTINGS
@given(data=conversations())
def test_openai_chat_messages_are_chat_completion_message_params(data: list[Message]) -> None:
    from openai.types.chat import ChatCompletionMessageParam

    adapter = _strict(ChatCompletionMessageParam)
    for item in to_openai_chat(data).value:
        _same_after_validation(adapter, item)


@SETTINGS
@given(data=conversations())
def test_openai_responses_items_are_response_input_item_params(data: list[Message]) -> None:
    from openai.types.responses import ResponseInputItemParam

    adapter = _strict(ResponseInputItemParam)
    for item in to_openai_responses(data).value:
        _same_after_validation(adapter, item)


@SETTINGS
@given(data=conversations())
def test_anthropic_turns_are_message_params(data: list[Message]) -> None:
    from anthropic.types import MessageParam

    adapter = _strict(MessageParam)
    prompt = to_anthropic(data).value
    roles = [turn["role"] for turn in prompt.messages]
    assert all(a != b for a, b in itertools.pairwise(roles)), "turns alternate"
    for turn in prompt.messages:
        _same_after_validation(adapter, turn)
    assert isinstance(prompt.system, str)


@SETTINGS
@given(data=conversations())
def test_gemini_contents_are_contents(data: list[Message]) -> None:
    from google.genai import types

    prompt = to_gemini(data).value
    for content in [*prompt.contents, prompt.system_instruction]:
        validated = types.Content.model_validate(content)  # the SDK forbids unknown keys
        assert validated.role == content.get("role")
        assert len(validated.parts or ()) == len(content["parts"])


def test_files_validate_in_every_sdk() -> None:
    from anthropic.types import MessageParam
    from google.genai import types
    from openai.types.chat import ChatCompletionMessageParam
    from openai.types.responses import ResponseInputItemParam

    user = Message(
        role="user",
        parts=[
            FilePart("image/png", url="https://example.com/a.png"),
            FilePart("application/pdf", data="JVBERg==", filename="a.pdf"),
        ],
    )
    for item in to_openai_chat([user]).value:
        _same_after_validation(_strict(ChatCompletionMessageParam), item)
    for item in to_openai_responses([user]).value:
        _same_after_validation(_strict(ResponseInputItemParam), item)
    for turn in to_anthropic([user]).value.messages:
        _same_after_validation(_strict(MessageParam), turn)
    types.Content.model_validate(to_gemini([user]).value.contents[0])


def test_formats_import_no_sdk() -> None:
    import pathlib
    import re

    import sessionary.formats as formats

    folder = pathlib.Path(formats.__file__).parent
    for module in folder.glob("*.py"):
        source = module.read_text()
        assert not re.search(r"^\s*(import|from) (openai|anthropic|google)", source, re.M), module
