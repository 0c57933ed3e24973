"""Summarisers: the protocol compaction needs, and the real one on Anthropic's Messages API.

`AnthropicSummarizer` sends the previous summary and the evicted messages (as a transcript) to
a cheap model and clips its answer to ``clip_chars``. Transient failures (429 rate limit, 5xx,
529 overloaded, connection errors and timeouts) are retried with exponential backoff and
jitter, honouring ``retry-after``, for a bounded number of attempts; any other 4xx fails at
once. The ``anthropic`` client's own retries are switched off (``max_retries=0``) so this
policy is the only one and its bounds hold.
"""

from __future__ import annotations

import asyncio
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from .errors import SummarizerError
from .http_clients import async_http_client
from .prompts import SUMMARY_SYSTEM_PROMPT, summary_request_text
from .records import MessageRecord
from .settings import CompactionSettings
from .transcript import clip_text

if TYPE_CHECKING:
    import anthropic

__all__ = ["AnthropicSummarizer", "RetryPolicy", "Summarizer", "is_retryable"]

_CHARS_PER_TOKEN_FLOOR = 2
"""Cap one rendered message at this many chars per chunk token, so a request stays in bounds."""


@runtime_checkable
class Summarizer(Protocol):
    """Writes a new rolling summary from the previous one and the messages leaving context."""

    @property
    def model(self) -> str:
        """The model that writes the summaries, recorded with each one."""
        ...

    async def summarize(
        self, previous_summary: str | None, messages: Sequence[MessageRecord]
    ) -> str:
        """The updated summary; raise (e.g. `SummarizerError`) when none can be made."""
        ...


def _anthropic() -> ModuleType:
    """The ``anthropic`` module, imported on first use: importing it takes seconds, and code
    that only needs settings or token counts should not pay for it."""
    import anthropic

    return anthropic


def _loaded_anthropic() -> ModuleType | None:
    """``anthropic`` if something imported it already (else no error can come from it)."""
    return sys.modules.get("anthropic")


def is_retryable(error: BaseException) -> bool:
    """Whether a failed request is worth repeating: 429, 5xx (529 included), connection errors.

    An explicit ``x-should-retry`` header from the API overrides the status rule.
    """
    api = _loaded_anthropic()
    if api is None:
        return False
    if isinstance(error, api.APIConnectionError):  # timeouts included
        return True
    if not isinstance(error, api.APIStatusError):
        return False
    should_retry = str(error.response.headers.get("x-should-retry", "")).lower()
    if should_retry in ("true", "false"):
        return should_retry == "true"
    status = int(error.status_code)
    return status == 429 or status >= 500


def _retry_after_seconds(error: BaseException | None) -> float | None:
    """The server's requested delay (``retry-after-ms`` or ``retry-after`` in seconds)."""
    api = _loaded_anthropic()
    if api is None or not isinstance(error, api.APIStatusError):
        return None
    headers = error.response.headers
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            return max(float(headers[name]) * scale, 0.0)
        except (KeyError, ValueError):
            continue  # absent, or an HTTP date: fall back to our own backoff
    return None


def _api_message(error: anthropic.APIError) -> str:
    """The API's own ``error.message`` when the body has one, else the client's text."""
    body = error.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        message = body["error"].get("message")
        if message:
            return str(message)
    return str(error.message)


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff with jitter.

    The n-th wait is drawn from [w/2, w] with w = min(max_wait, initial_wait * 2**(n-1)),
    raised to the server's ``retry-after`` when that is longer, and never above ``max_wait``.
    """

    max_attempts: int = 5
    initial_wait: float = 1.0
    max_wait: float = 30.0

    @classmethod
    def from_settings(cls, settings: CompactionSettings) -> RetryPolicy:
        return cls(settings.max_attempts, settings.retry_initial_wait, settings.retry_max_wait)

    def wait_seconds(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        window = min(self.max_wait, self.initial_wait * 2 ** (attempt - 1))
        wait = random.uniform(window / 2, window)
        if retry_after is not None:
            wait = max(wait, retry_after)
        return min(wait, self.max_wait)

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        return self.wait_seconds(state.attempt_number, _retry_after_seconds(error))

    def retrying(self) -> AsyncRetrying:
        """A tenacity controller for one call; the last error is re-raised when it gives up."""
        return AsyncRetrying(
            stop=stop_after_attempt(self.max_attempts),
            wait=self._wait,
            retry=retry_if_exception(is_retryable),
            sleep=asyncio.sleep,
            reraise=True,
        )


class AnthropicSummarizer:
    """`Summarizer` on ``anthropic.AsyncAnthropic``.

    Args:
        settings: Model, clip length, request size and retry bounds.
        client: A client to use (its own retries are turned off on a copy). When omitted, one
            is made on first use from ``api_key``/``base_url`` or, when those are None, from
            ``ANTHROPIC_API_KEY`` / ``ANTHROPIC_BASE_URL``.
        retry: Retry policy; default from ``settings``.
    """

    def __init__(
        self,
        settings: CompactionSettings | None = None,
        *,
        client: anthropic.AsyncAnthropic | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.settings = settings if settings is not None else CompactionSettings()
        self.retry = retry if retry is not None else RetryPolicy.from_settings(self.settings)
        self._api_key = api_key
        self._base_url = base_url
        self._owns_client = client is None
        self._client = client.with_options(max_retries=0) if client is not None else None

    @property
    def model(self) -> str:
        return self.settings.model

    @property
    def client(self) -> anthropic.AsyncAnthropic:
        """The client in use (made on first access when none was given)."""
        if self._client is None:
            self._client = _anthropic().AsyncAnthropic(
                api_key=self._api_key,
                base_url=self._base_url,
                max_retries=0,
                http_client=async_http_client(),
            )
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP client when this summariser made it."""
        if self._owns_client and self._client is not None:
            await self._client.close()
            self._client = None

    async def __aenter__(self) -> AnthropicSummarizer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def summarize(
        self, previous_summary: str | None, messages: Sequence[MessageRecord]
    ) -> str:
        """Ask the model for the updated summary; raises `SummarizerError` when it cannot."""
        request = self._request(previous_summary, messages)
        response = await self.send(request)
        text = "".join(
            getattr(block, "text", "") for block in response.content if block.type == "text"
        ).strip()
        if not text:
            raise SummarizerError(
                f"The summariser ({self.model}) answered without any text "
                f"(stop_reason={response.stop_reason!r}); nothing was compacted.",
            )
        return clip_text(text, self.settings.clip_chars)

    def _request(
        self, previous_summary: str | None, messages: Sequence[MessageRecord]
    ) -> dict[str, Any]:
        settings = self.settings
        text = summary_request_text(
            previous_summary,
            messages,
            limit_chars=settings.clip_chars,
            max_message_chars=settings.summary_chunk_tokens * _CHARS_PER_TOKEN_FLOOR,
        )
        return {
            "model": settings.model,
            "max_tokens": settings.summary_max_tokens,
            "system": SUMMARY_SYSTEM_PROMPT,
            "messages": [{"role": "user", "content": text}],
            "timeout": settings.request_timeout,
        }

    async def send(self, request: dict[str, Any]) -> Any:
        """One Messages API request under this summariser's retry policy; the response as the
        client returns it, or `SummarizerError` when it failed. Other uses of the cheap model
        (memory consolidation) send through here, so there is one retry policy."""
        attempts = 0
        try:
            async for attempt in self.retry.retrying():
                with attempt:
                    attempts += 1
                    return await self.client.messages.create(**request)
        except _anthropic().APIError as exc:
            raise self._failure(exc, attempts) from exc
        raise AssertionError("unreachable: tenacity either returns or re-raises")

    def _failure(self, exc: anthropic.APIError, attempts: int) -> SummarizerError:
        status = exc.status_code if isinstance(exc, _anthropic().APIStatusError) else None
        retryable = is_retryable(exc)
        what = f"HTTP {status}" if status is not None else type(exc).__name__
        advice = "try again later" if retryable else "check the model name, API key and request"
        return SummarizerError(
            f"The summariser ({self.model}) failed after {attempts} attempt(s) with {what}: "
            f"{_api_message(exc)}; {advice}.",
            attempts=attempts,
            retryable=retryable,
            status_code=status,
        )
