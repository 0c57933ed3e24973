"""Plain-text renderings of messages for the summariser, and clipping of long text.

The summariser reads evicted messages as a transcript, not as API messages: sent as messages,
the model would answer them instead of summarising them, and tool blocks without their tool
definitions would be refused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .records import MessageRecord, content_blocks, tool_result_text

__all__ = ["ELLIPSIS", "clip_text", "render_message", "render_transcript", "tail_text"]

ELLIPSIS = "…"
_WORD_BREAK_WINDOW = 0.2
"""Clip at a whitespace found within the last 20% of the allowed length, if any."""


def clip_text(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, preferring a word break, marked by '…'."""
    if len(text) <= limit:
        return text
    if limit <= len(ELLIPSIS):
        return text[:limit]
    head = text[: limit - len(ELLIPSIS)]
    floor = int(len(head) * (1 - _WORD_BREAK_WINDOW))
    space = max(head.rfind(" "), head.rfind("\n"))
    if space >= floor:
        head = head[:space]
    return head.rstrip() + ELLIPSIS


def tail_text(text: str, limit: int) -> str:
    """The last ``limit`` characters of ``text`` at most, marked with a leading '…' when cut.

    Starts after a line break found in the first 20% of the kept part, if any, so the tail
    does not open mid-word.
    """
    if len(text) <= limit:
        return text
    if limit <= len(ELLIPSIS):
        return text[len(text) - limit :]
    tail = text[len(text) - (limit - len(ELLIPSIS)) :]
    newline = tail.find("\n", 0, int(len(tail) * _WORD_BREAK_WINDOW))
    if newline >= 0:
        tail = tail[newline + 1 :]
    return ELLIPSIS + tail.lstrip()


def _middle_cut(text: str, limit: int | None) -> str:
    """Keep the start and the end of an over-long message; the middle matters least."""
    if limit is None or len(text) <= limit:
        return text
    half = max(limit // 2, 1)
    omitted = len(text) - 2 * half
    return f"{text[:half]}\n[… {omitted} characters omitted …]\n{text[len(text) - half :]}"


def _render_block(block: Mapping[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_use":
        arguments = json.dumps(block.get("input", {}), ensure_ascii=False, default=str)
        return f"[calls tool {block.get('name', '?')} with {arguments}]"
    if kind == "tool_result":
        label = "tool error" if block.get("is_error") else "tool result"
        return f"[{label}]\n{tool_result_text(block)}"
    if kind == "thinking":
        return f"[thinking] {block.get('thinking', '')}"
    if kind in ("image", "document", "redacted_thinking"):
        return f"[{kind}]"
    return f"[{kind or 'block'}] {json.dumps(dict(block), ensure_ascii=False, default=str)}"


def render_message(message: MessageRecord, *, max_chars: int | None = None) -> str:
    """One message as a transcript entry: a role heading, then its blocks as text."""
    body = "\n".join(_render_block(block) for block in content_blocks(message.content))
    return f"{message.role.upper()}:\n{_middle_cut(body.strip(), max_chars)}"


def render_transcript(
    messages: Sequence[MessageRecord], *, max_message_chars: int | None = None
) -> str:
    """Messages as a transcript, one entry per message, separated by blank lines."""
    return "\n\n".join(render_message(m, max_chars=max_message_chars) for m in messages)
