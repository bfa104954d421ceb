"""Summarizers that ask a model: OpenAI-compatible chat completions, and Anthropic messages.

`AsyncOpenAISummarizer` uses the official `openai` SDK (`sessionary[openai]`) against any
base URL, so local OpenAI-compatible servers work too; `AsyncAnthropicSummarizer` uses the
official `anthropic` SDK (`sessionary[anthropic]`). Both send the prompt of
`sessionary.compaction.summary.build_prompt` (the four sections, iterative when a previous
summary exists) and map every SDK failure, timeouts included, to `SummarizerError`.

These classes are the source; `OpenAISummarizer` and `AnthropicSummarizer` are their
generated synchronous twins.
"""

from __future__ import annotations

from typing import Any

from sessionary._optional import require
from sessionary.compaction.summary import SummaryRequest, build_prompt, check_summary
from sessionary.errors import SummarizerError

__all__ = ["AsyncAnthropicSummarizer", "AsyncOpenAISummarizer"]


def _output_tokens(request: SummaryRequest) -> int:
    # Room for the budget plus slack: the model is told the target, this only stops runaways.
    return max(256, request.budget * 2)


class AsyncOpenAISummarizer:
    """Summarizes with an OpenAI-compatible chat-completions endpoint.

    Args:
        model: The model name the server knows.
        client: An SDK client to use as is (then the other connection arguments are unused).
        base_url: The API's base URL (default: the SDK's, or `OPENAI_BASE_URL`).
        api_key: The API key (default: `OPENAI_API_KEY`).
        timeout: Seconds before one request gives up.
        max_retries: How often the SDK retries a failed request.

    Raises:
        BackendNotInstalled: If the `openai` package is not installed.
    """

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
        openai = require("openai", extra="openai", what="the OpenAI summarizer")
        self.model = model
        self._errors: tuple[type[BaseException], ...] = (openai.OpenAIError,)
        self.client = client or openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
        )

    async def summarize(self, request: SummaryRequest) -> str:
        """Return the model's summary of `request`.

        Raises:
            SummarizerError: If the request fails, times out, or returns no text.
        """
        system, user = build_prompt(request)
        try:
            response = await self.client.chat.completions.create(
                model=self.model,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                max_tokens=_output_tokens(request),
            )
        except self._errors as exc:
            raise SummarizerError(f"the OpenAI summarizer failed: {exc}") from exc
        choices = response.choices or []
        text = choices[0].message.content if choices else None
        return check_summary(text or "")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r})"


class AsyncAnthropicSummarizer:
    """Summarizes with the Anthropic messages API.

    Args:
        model: The model name.
        client: An SDK client to use as is (then the other connection arguments are unused).
        base_url: The API's base URL (default: the SDK's, or `ANTHROPIC_BASE_URL`).
        api_key: The API key (default: `ANTHROPIC_API_KEY`).
        timeout: Seconds before one request gives up.
        max_retries: How often the SDK retries a failed request.

    Raises:
        BackendNotInstalled: If the `anthropic` package is not installed.
    """

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
        anthropic = require("anthropic", extra="anthropic", what="the Anthropic summarizer")
        self.model = model
        self._errors: tuple[type[BaseException], ...] = (anthropic.AnthropicError,)
        self.client = client or anthropic.AsyncAnthropic(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
        )

    async def summarize(self, request: SummaryRequest) -> str:
        """Return the model's summary of `request`.

        Raises:
            SummarizerError: If the request fails, times out, or returns no text.
        """
        system, user = build_prompt(request)
        try:
            response = await self.client.messages.create(
                model=self.model,
                system=system,
                messages=[{"role": "user", "content": user}],
                max_tokens=_output_tokens(request),
            )
        except self._errors as exc:
            raise SummarizerError(f"the Anthropic summarizer failed: {exc}") from exc
        blocks = response.content or []
        text = "".join(getattr(b, "text", "") for b in blocks if getattr(b, "type", "") == "text")
        return check_summary(text)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r})"
