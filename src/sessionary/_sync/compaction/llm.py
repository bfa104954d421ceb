# This file was generated from src/sessionary/compaction/llm.py by tools/async_to_sync.py.
# Do not edit it: edit the source and run `python tools/async_to_sync.py`.
"""Summarizers and memory extractors that ask a model (OpenAI-compatible, or Anthropic).

`OpenAISummarizer` and `OpenAIExtractor` use the official `openai` SDK
(`sessionary[openai]`) against any base URL, so local OpenAI-compatible servers work too;
`AnthropicSummarizer` and `AnthropicExtractor` use the official `anthropic` SDK
(`sessionary[anthropic]`). Summarizers send the prompt of
`sessionary.compaction.summary.build_prompt` (the five sections, iterative when a previous
summary exists); extractors send `sessionary.compaction.flush.build_flush_prompt` (the
range's original messages and the memory block as it is, so the model leaves out what it
holds). Both map every SDK failure, timeouts included, to `SummarizerError`.

An async SDK client keeps its HTTP connections on the event loop that opened them, so a
model used again from another loop (a second `asyncio.run`, another thread) would find
them on a closed one. A client the class makes itself therefore lives on a loop of its
own, like a server store's driver (see `sessionary.stores._home_loop`); a client passed
in stays where its owner runs it.

These classes are the source; `OpenAISummarizer`, `AnthropicSummarizer`,
`OpenAIExtractor` and `AnthropicExtractor` are their generated synchronous twins.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sessionary._optional import require
from sessionary.compaction.flush import FlushRequest, build_flush_prompt, parse_facts
from sessionary.compaction.summary import SummaryRequest, build_prompt, check_summary
from sessionary.errors import SummarizerError
from sessionary.stores._home_loop import HomeLoop

__all__ = [
    "AnthropicExtractor",
    "AnthropicSummarizer",
    "OpenAIExtractor",
    "OpenAISummarizer",
]

_FACT_TOKENS = 1024


def _output_tokens(request: SummaryRequest) -> int:
    # Room for the budget plus slack: the model is told the target, this only stops runaways.
    return max(256, request.budget * 2)


class _AsyncSDKClient:
    """An SDK client, and the requests sent through it (on its home loop)."""

    def __init__(self, client: Any, owned: bool) -> None:
        self.client = client
        self._owned = owned

    def send(self, request: Callable[..., Any], *args: Any) -> str:
        """Run `request(client, *args)`."""
        text: str = request(self.client, *args)
        return text

    def close(self) -> None:
        """Close the client if the summarizer made it."""
        if self._owned:
            self.client.close()


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
        make = getattr(sdk, self._client_class)
        self._home = HomeLoop(
            lambda: _AsyncSDKClient(
                client
                or make(
                    base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
                ),
                client is None,
            ),
            own_loop=client is None,
        )
        self._home.close_with(self)
        self.client = self._home.resident.client

    def _ask(self, system: str, user: str, max_tokens: int) -> str:
        """Send one request; return the reply's text.

        Raises:
            SummarizerError: If the request fails or times out.
        """
        try:
            text: str = self._home.run("send", self._complete, system, user, max_tokens)
        except self._errors as exc:
            raise SummarizerError(f"the {self._label} {self._role} failed: {exc}") from exc
        return text

    def close(self) -> None:
        """Close the SDK client if this object made it (else leave it to its owner).

        Optional: one never closed is closed when collected, or at exit.
        """
        self._home.close()

    def _complete(self, client: Any, system: str, user: str, max_tokens: int) -> str:
        """Send one request through `client`; return the reply's text ("" if it has none)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r})"


class _OpenAIModel(_SDKModel):
    _package = "openai"
    _client_class = "OpenAI"
    _error_class = "OpenAIError"
    _label = "OpenAI"

    def _complete(self, client: Any, system: str, user: str, max_tokens: int) -> str:
        response = client.chat.completions.create(
            model=self.model,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            max_tokens=max_tokens,
        )
        choices = response.choices or []
        return (choices[0].message.content if choices else None) or ""


class _AnthropicModel(_SDKModel):
    _package = "anthropic"
    _client_class = "Anthropic"
    _error_class = "AnthropicError"
    _label = "Anthropic"

    def _complete(self, client: Any, system: str, user: str, max_tokens: int) -> str:
        response = client.messages.create(
            model=self.model,
            system=system,
            messages=[{"role": "user", "content": user}],
            max_tokens=max_tokens,
        )
        blocks = response.content or []
        return "".join(getattr(b, "text", "") for b in blocks if getattr(b, "type", "") == "text")


class _Summarizing(_SDKModel):
    _role = "summarizer"

    def summarize(self, request: SummaryRequest) -> str:
        """Return the model's summary of `request`.

        Raises:
            SummarizerError: If the request fails, times out, or returns no text.
        """
        system, user = build_prompt(request)
        return check_summary(self._ask(system, user, _output_tokens(request)))


class _Extracting(_SDKModel):
    _role = "memory extractor"

    def extract(self, request: FlushRequest) -> list[str]:
        """Return the facts the model finds in `request`, one line each.

        Raises:
            SummarizerError: If the request fails or times out.
        """
        system, user = build_flush_prompt(request)
        return parse_facts(self._ask(system, user, _FACT_TOKENS))


class OpenAISummarizer(_Summarizing, _OpenAIModel):
    """Summarizes with an OpenAI-compatible chat-completions endpoint.

    Args: `model`, then either `client` (an SDK client used as is) or `base_url` (default:
    the SDK's, or `OPENAI_BASE_URL`), `api_key` (default: `OPENAI_API_KEY`), `timeout`
    (seconds per request, 60) and `max_retries` (2).

    Raises:
        BackendNotInstalled: If the `openai` package is not installed.
    """


class AnthropicSummarizer(_Summarizing, _AnthropicModel):
    """Summarizes with the Anthropic messages API.

    Args: `model`, then either `client` (an SDK client used as is) or `base_url` (default:
    the SDK's, or `ANTHROPIC_BASE_URL`), `api_key` (default: `ANTHROPIC_API_KEY`), `timeout`
    (seconds per request, 60) and `max_retries` (2).

    Raises:
        BackendNotInstalled: If the `anthropic` package is not installed.
    """


class OpenAIExtractor(_Extracting, _OpenAIModel):
    """Extracts memory facts with an OpenAI-compatible chat-completions endpoint.

    Arguments as `OpenAISummarizer`'s. Use it as ``MemoryFlush(extractor=...)``.

    Raises:
        BackendNotInstalled: If the `openai` package is not installed.
    """


class AnthropicExtractor(_Extracting, _AnthropicModel):
    """Extracts memory facts with the Anthropic messages API.

    Arguments as `AnthropicSummarizer`'s. Use it as ``MemoryFlush(extractor=...)``.

    Raises:
        BackendNotInstalled: If the `anthropic` package is not installed.
    """
