"""What a test scripts: the replies the scripted Messages API server will give.

A scripted reply is either a :class:`ScriptedMessage` (an assistant message made of text and
``tool_use`` blocks, with optional usage figures) or a :class:`ScriptedError` (an HTTP error with
a proper Anthropic error body). The helpers below build them; the server turns them into JSON or
SSE on the wire (see :mod:`memory_agent.testing.wire`), so a test never writes protocol by hand.

Replies are immutable values: one reply object can be enqueued several times.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ERROR_TYPES",
    "ContentBlock",
    "ScriptedError",
    "ScriptedMessage",
    "ScriptedResponse",
    "TextBlock",
    "ToolUseBlock",
    "error_response",
    "message_response",
    "text_block",
    "text_response",
    "tool_use_block",
    "tool_use_response",
]

#: Error ``type`` the real API reports for each status; the CLI decides on retries from both.
ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}

_DEFAULT_ERROR_MESSAGES: dict[str, str] = {
    "rate_limit_error": "Scripted rate limit: number of requests has exceeded your rate limit.",
    "overloaded_error": "Overloaded",
    "api_error": "Internal server error",
}


@dataclass(frozen=True)
class TextBlock:
    """A ``text`` content block of a scripted assistant message."""

    text: str


@dataclass(frozen=True)
class ToolUseBlock:
    """A ``tool_use`` content block.

    ``id`` may be left ``None``: the server then assigns a fresh ``toolu_…`` id when the block is
    served, because the CLI rejects a conversation that reuses a tool-use id.
    """

    name: str
    input: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


ContentBlock = TextBlock | ToolUseBlock


@dataclass(frozen=True)
class ScriptedMessage:
    """A successful assistant reply.

    Attributes:
        content: The blocks, in order; text and several ``tool_use`` blocks may be mixed.
        stop_reason: ``None`` means "derive it": ``tool_use`` when any block is a tool use,
            ``end_turn`` otherwise.
        input_tokens: Reported ``usage.input_tokens``; ``None`` estimates it from the request
            (about one token per four characters of system, messages and tools).
        output_tokens: Reported ``usage.output_tokens``; ``None`` estimates it from the content.
        cache_read_input_tokens: Reported ``usage.cache_read_input_tokens`` (default 0).
        cache_creation_input_tokens: Reported ``usage.cache_creation_input_tokens`` (default 0).
        delay: Seconds to wait before answering, e.g. to test interrupts or timeouts.
    """

    content: tuple[ContentBlock, ...]
    stop_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    delay: float = 0.0

    @property
    def effective_stop_reason(self) -> str:
        """The ``stop_reason`` put on the wire."""
        if self.stop_reason is not None:
            return self.stop_reason
        if any(isinstance(block, ToolUseBlock) for block in self.content):
            return "tool_use"
        return "end_turn"


@dataclass(frozen=True)
class ScriptedError:
    """An error reply, shaped like the real API's ``{"type": "error", "error": {...}}``.

    Attributes:
        status: HTTP status (429, 500, 529, ...).
        error_type: ``error.type``; derived from ``status`` when ``None``.
        message: ``error.message``; a generic text when ``None``.
        retry_after: When set, sent as the ``retry-after`` header (seconds). Clients honour it,
            so keep it small in tests.
        should_retry: When set, sent as the ``x-should-retry`` header (``true``/``false``),
            which the CLI and the ``anthropic`` client obey before their own status rules.
        in_stream: For streaming requests, answer 200 and send the error as an SSE ``error``
            event after ``message_start`` (how the real API reports overload mid-stream).
        delay: Seconds to wait before answering.
    """

    status: int
    error_type: str | None = None
    message: str | None = None
    retry_after: float | None = None
    should_retry: bool | None = None
    in_stream: bool = False
    delay: float = 0.0

    @property
    def effective_error_type(self) -> str:
        """The ``error.type`` put on the wire."""
        if self.error_type is not None:
            return self.error_type
        if self.status in ERROR_TYPES:
            return ERROR_TYPES[self.status]
        return "api_error" if self.status >= 500 else "invalid_request_error"

    @property
    def effective_message(self) -> str:
        """The ``error.message`` put on the wire."""
        if self.message is not None:
            return self.message
        kind = self.effective_error_type
        return _DEFAULT_ERROR_MESSAGES.get(kind, f"Scripted {kind} (HTTP {self.status})")


ScriptedResponse = ScriptedMessage | ScriptedError


def text_block(text: str) -> TextBlock:
    """A text block for :func:`message_response`."""
    return TextBlock(text)


def tool_use_block(
    name: str, input: dict[str, Any] | None = None, *, id: str | None = None
) -> ToolUseBlock:
    """A ``tool_use`` block for :func:`message_response`; ``id`` is generated when omitted."""
    return ToolUseBlock(name=name, input=dict(input or {}), id=id)


def message_response(
    *blocks: ContentBlock | str,
    stop_reason: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    cache_read_input_tokens: int = 0,
    cache_creation_input_tokens: int = 0,
    delay: float = 0.0,
) -> ScriptedMessage:
    """An assistant message with any mix of blocks (a bare ``str`` is a text block).

    Use it for a reply holding text plus several tool calls; :func:`text_response` and
    :func:`tool_use_response` cover the common single-block cases.
    """
    if not blocks:
        raise ValueError(
            "message_response() needs at least one block; use text_response('') for an empty reply."
        )
    content = tuple(TextBlock(b) if isinstance(b, str) else b for b in blocks)
    return ScriptedMessage(
        content=content,
        stop_reason=stop_reason,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_input_tokens=cache_read_input_tokens,
        cache_creation_input_tokens=cache_creation_input_tokens,
        delay=delay,
    )


def text_response(
    text: str,
    *,
    stop_reason: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    delay: float = 0.0,
) -> ScriptedMessage:
    """A plain text reply; ``stop_reason`` is ``end_turn`` unless given (e.g. ``max_tokens``)."""
    return message_response(
        TextBlock(text),
        stop_reason=stop_reason,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        delay=delay,
    )


def tool_use_response(
    name: str,
    input: dict[str, Any] | None = None,
    *,
    text: str | None = None,
    id: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    delay: float = 0.0,
) -> ScriptedMessage:
    """A reply that calls one tool (``stop_reason`` ``tool_use``), optionally preceded by text.

    ``name`` is the name the model sees, e.g. ``mcp__memory__core_memory_append`` for an
    in-process SDK MCP tool.
    """
    blocks: list[ContentBlock] = []
    if text is not None:
        blocks.append(TextBlock(text))
    blocks.append(ToolUseBlock(name=name, input=dict(input or {}), id=id))
    return message_response(
        *blocks, input_tokens=input_tokens, output_tokens=output_tokens, delay=delay
    )


def error_response(
    status: int = 529,
    *,
    error_type: str | None = None,
    message: str | None = None,
    retry_after: float | None = None,
    should_retry: bool | None = None,
    in_stream: bool = False,
    delay: float = 0.0,
) -> ScriptedError:
    """An API error: 429 ``rate_limit_error``, 500 ``api_error``, 529 ``overloaded_error``, ...

    Note that clients retry 429/5xx by themselves: each retry takes the next scripted reply.
    """
    if not 400 <= status <= 599:
        raise ValueError(f"error_response() needs an HTTP error status (400-599), got {status}.")
    return ScriptedError(
        status=status,
        error_type=error_type,
        message=message,
        retry_after=retry_after,
        should_retry=should_retry,
        in_stream=in_stream,
        delay=delay,
    )
