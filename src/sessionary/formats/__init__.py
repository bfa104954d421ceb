"""Formats: converters between our messages and the wire shapes of model providers.

OpenAI Chat Completions, OpenAI Responses, Anthropic Messages, Gemini contents, AI SDK
UIMessages, Cloudflare Workers AI chat messages, and the session event log.

Every format has a `to_<format>(messages, *, strict=False)` that returns a `Conversion`
(`value, dropped`), and a `from_<format>(...)` that returns our messages. Reading never
loses anything: wire fields our model has no slot for are kept in `extra` under the
format's name and written back by the same format. Writing reports, in
`Conversion.dropped`, every `Loss` the target cannot carry; with `strict=True` it raises
`LossyConversion` instead. A message's identity (id, created_at) travels only in formats
that have a slot for it (AI SDK, events). None of these modules imports a provider SDK;
they accept plain dicts and, when reading, the SDKs' pydantic objects.
"""

from sessionary.formats._shared import Conversion, Loss
from sessionary.formats.ai_sdk import from_ai_sdk, to_ai_sdk
from sessionary.formats.anthropic import AnthropicPrompt, from_anthropic, to_anthropic
from sessionary.formats.events import event_to_message, from_events, to_events
from sessionary.formats.gemini import GeminiPrompt, from_gemini, to_gemini
from sessionary.formats.openai_chat import from_openai_chat, to_openai_chat
from sessionary.formats.openai_responses import from_openai_responses, to_openai_responses
from sessionary.formats.workers_ai import from_workers_ai, from_workers_ai_response, to_workers_ai

__all__ = [
    "AnthropicPrompt",
    "Conversion",
    "GeminiPrompt",
    "Loss",
    "event_to_message",
    "from_ai_sdk",
    "from_anthropic",
    "from_events",
    "from_gemini",
    "from_openai_chat",
    "from_openai_responses",
    "from_workers_ai",
    "from_workers_ai_response",
    "to_ai_sdk",
    "to_anthropic",
    "to_events",
    "to_gemini",
    "to_openai_chat",
    "to_openai_responses",
    "to_workers_ai",
]
