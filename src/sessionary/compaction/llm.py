"""Summarizers and memory extractors that ask a model (OpenAI-compatible, or Anthropic).

`AsyncOpenAISummarizer` and `AsyncOpenAIExtractor` use the official `openai` SDK
(`sessionary[openai]`) against any base URL, so local OpenAI-compatible servers work too;
`AsyncAnthropicSummarizer` and `AsyncAnthropicExtractor` use the official `anthropic` SDK
(`sessionary[anthropic]`). Summarizers send the prompt of
`sessionary.compaction.summary.build_prompt` (the five sections, iterative when a previous
summary exists); extractors send `sessionary.compaction.flush.build_flush_prompt` (the
range's original messages and the memory block as it is, so the model leaves out what it
holds). Both map every SDK failure, timeouts included, to `SummarizerError`.

These classes are the source; `OpenAISummarizer`, `AnthropicSummarizer`,
`OpenAIExtractor` and `AnthropicExtractor` are their generated synchronous twins.
"""

from __future__ import annotations

from typing import Any

from sessionary._optional import require
from sessionary.compaction.flush import FlushRequest, build_flush_prompt, parse_facts
from sessionary.compaction.summary import SummaryRequest, build_prompt, check_summary
from sessionary.errors import SummarizerError

__all__ = [
    "AsyncAnthropicExtractor",
    "AsyncAnthropicSummarizer",
    "AsyncOpenAIExtractor",
    "AsyncOpenAISummarizer",
]

_FACT_TOKENS = 1024


def _output_tokens(request: SummaryRequest) -> int:
    # Room for the budget plus slack: the model is told the target, this only stops runaways.
    return max(256, request.budget * 2)


class _SDKModel:
    """What the provider classes share: an SDK client, its errors, one request each.

    Args:
        model: The model name the server knows.
        client: An SDK client to use as is (then the other connection arguments are unused).
        base_url: The API's base URL (default: the SDK's, or its environment variable).
        api_key: The API key (default: the SDK's environment variable).
        timeout: Seconds before one request gives up.
        max_retries: How often the SDK retries a failed request.

    Raises:
        BackendNotInstalled: If the provider's package is not installed.
    """

    _package = ""
    _client_class = ""
    _error_class = ""
    _label = ""
    _role = ""

    def __init__(
        self,
        model: str,
        *,
        client: Any = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
    ) -> None:
        sdk = require(self._package, extra=self._package, what=f"the {self._label} {self._role}")
        self.model = model
        self._errors: tuple[type[BaseException], ...] = (getattr(sdk, self._error_class),)
        self.client = client or getattr(sdk, self._client_class)(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
        )

    async def _ask(self, system: str, user: str, max_tokens: int) -> str:
        """Send one request; return the reply's text.

        Raises:
            SummarizerError: If the request fails or times out.
        """
        try:
            return await self._complete(system, user, max_tokens)
        except self._errors as exc:
            raise SummarizerError(f"the {self._label} {self._role} failed: {exc}") from exc

    async def _complete(self, system: str, user: str, max_tokens: int) -> str:
        """Send one request; return the text of the reply ("" if it has none)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r})"


class _OpenAIModel(_SDKModel):
    _package = "openai"
    _client_class = "AsyncOpenAI"
    _error_class = "OpenAIError"
    _label = "OpenAI"

    async def _complete(self, system: str, user: str, max_tokens: int) -> str:
        response = await self.client.chat.completions.create(
            model=self.model,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            max_tokens=max_tokens,
        )
        choices = response.choices or []
        return (choices[0].message.content if choices else None) or ""


class _AnthropicModel(_SDKModel):
    _package = "anthropic"
    _client_class = "AsyncAnthropic"
    _error_class = "AnthropicError"
    _label = "Anthropic"

    async def _complete(self, system: str, user: str, max_tokens: int) -> str:
        response = await self.client.messages.create(
            model=self.model,
            system=system,
            messages=[{"role": "user", "content": user}],
            max_tokens=max_tokens,
        )
        blocks = response.content or []
        return "".join(getattr(b, "text", "") for b in blocks if getattr(b, "type", "") == "text")


class _Summarizing(_SDKModel):
    _role = "summarizer"

    async def summarize(self, request: SummaryRequest) -> str:
        """Return the model's summary of `request`.

        Raises:
            SummarizerError: If the request fails, times out, or returns no text.
        """
        system, user = build_prompt(request)
        return check_summary(await self._ask(system, user, _output_tokens(request)))


class _Extracting(_SDKModel):
    _role = "memory extractor"

    async def extract(self, request: FlushRequest) -> list[str]:
        """Return the facts the model finds in `request`, one line each.

        Raises:
            SummarizerError: If the request fails or times out.
        """
        system, user = build_flush_prompt(request)
        return parse_facts(await self._ask(system, user, _FACT_TOKENS))


class AsyncOpenAISummarizer(_Summarizing, _OpenAIModel):
    """Summarizes with an OpenAI-compatible chat-completions endpoint.

    Args: `model`, then either `client` (an SDK client used as is) or `base_url` (default:
    the SDK's, or `OPENAI_BASE_URL`), `api_key` (default: `OPENAI_API_KEY`), `timeout`
    (seconds per request, 60) and `max_retries` (2).

    Raises:
        BackendNotInstalled: If the `openai` package is not installed.
    """


class AsyncAnthropicSummarizer(_Summarizing, _AnthropicModel):
    """Summarizes with the Anthropic messages API.

    Args: `model`, then either `client` (an SDK client used as is) or `base_url` (default:
    the SDK's, or `ANTHROPIC_BASE_URL`), `api_key` (default: `ANTHROPIC_API_KEY`), `timeout`
    (seconds per request, 60) and `max_retries` (2).

    Raises:
        BackendNotInstalled: If the `anthropic` package is not installed.
    """


class AsyncOpenAIExtractor(_Extracting, _OpenAIModel):
    """Extracts memory facts with an OpenAI-compatible chat-completions endpoint.

    Arguments as `AsyncOpenAISummarizer`'s. Use it as ``MemoryFlush(extractor=...)``.

    Raises:
        BackendNotInstalled: If the `openai` package is not installed.
    """


class AsyncAnthropicExtractor(_Extracting, _AnthropicModel):
    """Extracts memory facts with the Anthropic messages API.

    Arguments as `AsyncAnthropicSummarizer`'s. Use it as ``MemoryFlush(extractor=...)``.

    Raises:
        BackendNotInstalled: If the `anthropic` package is not installed.
    """
