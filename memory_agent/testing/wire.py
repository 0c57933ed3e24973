"""The Messages API wire format for scripted replies: JSON bodies, SSE events, token estimates.

Pure functions, no I/O, so the protocol details can be tested (and read) on their own. The
shapes follow the public Messages API: a streamed reply is ``message_start``, then for each block
``content_block_start`` / ``content_block_delta`` (``text_delta`` or ``input_json_delta``) /
``content_block_stop``, then ``message_delta`` (``stop_reason`` and final ``usage``) and
``message_stop``.

Usage figures are estimates of about four characters per token, so that code which calibrates
itself on reported usage sees numbers that grow with the conversation.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .responses import ScriptedError, ScriptedMessage, TextBlock, ToolUseBlock

__all__ = [
    "CHARS_PER_TOKEN",
    "error_body",
    "error_event",
    "estimate_input_tokens",
    "estimate_output_tokens",
    "estimate_tokens",
    "message_body",
    "message_events",
    "message_start_event",
    "not_found_body",
    "sse",
    "usage_of",
]

#: The ratio behind every estimate; English prose is about four characters per token.
CHARS_PER_TOKEN = 4

# Deltas are cut into pieces so that clients really accumulate them, as they must for the API.
_TEXT_PIECE = 24
_JSON_PIECE = 16


def estimate_tokens(text: str) -> int:
    """Tokens in ``text`` at :data:`CHARS_PER_TOKEN` characters each (at least 1 if non-empty)."""
    if not text:
        return 0
    return max(1, -(-len(text) // CHARS_PER_TOKEN))


def _compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def estimate_input_tokens(body: dict[str, Any]) -> int:
    """Estimated input tokens of a request: its system prompt, messages and tool definitions."""
    parts = [body.get("system") or "", body.get("messages") or [], body.get("tools") or []]
    text = "".join(p if isinstance(p, str) else _compact_json(p) for p in parts)
    return max(1, estimate_tokens(text))


def estimate_output_tokens(reply: ScriptedMessage) -> int:
    """Estimated output tokens of a reply's text and tool inputs."""
    total = 0
    for block in reply.content:
        if isinstance(block, TextBlock):
            total += estimate_tokens(block.text)
        else:
            total += estimate_tokens(block.name) + estimate_tokens(_compact_json(block.input))
    return max(1, total)


def usage_of(reply: ScriptedMessage, request_body: dict[str, Any]) -> dict[str, int]:
    """The ``usage`` object of a reply: scripted figures where given, estimates otherwise."""
    return {
        "input_tokens": (
            reply.input_tokens
            if reply.input_tokens is not None
            else estimate_input_tokens(request_body)
        ),
        "output_tokens": (
            reply.output_tokens
            if reply.output_tokens is not None
            else estimate_output_tokens(reply)
        ),
        "cache_creation_input_tokens": reply.cache_creation_input_tokens,
        "cache_read_input_tokens": reply.cache_read_input_tokens,
    }


def _block_json(block: TextBlock | ToolUseBlock, tool_id: str) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    return {"type": "tool_use", "id": tool_id, "name": block.name, "input": block.input}


def message_body(
    reply: ScriptedMessage,
    *,
    message_id: str,
    model: str,
    tool_ids: list[str],
    usage: dict[str, int],
) -> dict[str, Any]:
    """The non-streaming JSON body of a reply.

    ``tool_ids`` holds one id per block (ignored for text blocks), resolved by the server.
    """
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [_block_json(b, i) for b, i in zip(reply.content, tool_ids)],
        "stop_reason": reply.effective_stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }


def sse(event: str, data: dict[str, Any]) -> bytes:
    """One server-sent event, encoded."""
    return f"event: {event}\ndata: {_compact_json(data)}\n\n".encode()


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _block_events(index: int, block: TextBlock | ToolUseBlock, tool_id: str) -> Iterator[bytes]:
    if isinstance(block, TextBlock):
        yield sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            },
        )
        for piece in _pieces(block.text, _TEXT_PIECE):
            delta = {"type": "text_delta", "text": piece}
            yield sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
    else:
        start = {"type": "tool_use", "id": tool_id, "name": block.name, "input": {}}
        yield sse(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        )
        for piece in _pieces(_compact_json(block.input), _JSON_PIECE):
            delta = {"type": "input_json_delta", "partial_json": piece}
            yield sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
    yield sse("content_block_stop", {"type": "content_block_stop", "index": index})


def message_start_event(message_id: str, model: str, usage: dict[str, int]) -> bytes:
    """The ``message_start`` event; like the API it reports input usage and one output token."""
    message: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 1},
    }
    return sse("message_start", {"type": "message_start", "message": message})


def message_events(
    reply: ScriptedMessage,
    *,
    message_id: str,
    model: str,
    tool_ids: list[str],
    usage: dict[str, int],
) -> Iterator[bytes]:
    """The SSE events of a streamed reply, in the order the API sends them."""
    yield message_start_event(message_id, model, usage)
    yield sse("ping", {"type": "ping"})
    for index, (block, tool_id) in enumerate(zip(reply.content, tool_ids)):
        yield from _block_events(index, block, tool_id)
    delta = {"stop_reason": reply.effective_stop_reason, "stop_sequence": None}
    yield sse("message_delta", {"type": "message_delta", "delta": delta, "usage": usage})
    yield sse("message_stop", {"type": "message_stop"})


def error_body(error: ScriptedError) -> dict[str, Any]:
    """The JSON body of an error reply."""
    return {
        "type": "error",
        "error": {"type": error.effective_error_type, "message": error.effective_message},
    }


def error_event(error: ScriptedError) -> bytes:
    """An SSE ``error`` event, for errors reported after a stream has started."""
    return sse("error", error_body(error))


def not_found_body(path: str) -> dict[str, Any]:
    """The 404 body for a path the server does not serve."""
    return {"type": "error", "error": {"type": "not_found_error", "message": f"Not found: {path}"}}
