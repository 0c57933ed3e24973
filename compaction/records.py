"""The message record compaction works on: one stored conversation message, plain data.

A record carries an id (ordered like the conversation), a role and content exactly as the
Messages API takes it: a string, or a list of content blocks (``text``, ``tool_use``,
``tool_result``, ``image``, ...). Compaction only reads records; it never changes them.

Two facts about records drive where a conversation may be cut:
- a *turn* starts at a user message that is a real prompt: a user message that carries
  ``tool_result`` blocks continues the turn it answers;
- a ``tool_use`` block and the ``tool_result`` that answers it (same id) must stay together.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

__all__ = [
    "Content",
    "MessageRecord",
    "content_blocks",
    "tool_result_text",
]

Content = str | Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class MessageRecord:
    """One message of a conversation.

    Attributes:
        id: Position in the conversation; larger ids are later messages.
        role: ``"user"`` or ``"assistant"`` (other roles are carried along, never a turn start).
        content: A string or a list of Messages API content blocks. Treat it as read-only.
        tokens: Token count when already known (stored with the message); ``None`` lets a
            `TokenCounter` estimate it.
    """

    id: int
    role: str
    content: Content
    tokens: int | None = None

    @property
    def is_turn_start(self) -> bool:
        """A user message that is a real prompt (it answers no tool call)."""
        return self.role == "user" and not self.tool_result_ids

    @property
    def tool_use_ids(self) -> tuple[str, ...]:
        """Ids of the ``tool_use`` blocks in this message, in order."""
        return tuple(_ids(self.content, "tool_use", "id"))

    @property
    def tool_result_ids(self) -> tuple[str, ...]:
        """Ids of the tool calls this message answers (its ``tool_result`` blocks)."""
        return tuple(_ids(self.content, "tool_result", "tool_use_id"))

    def with_tokens(self, tokens: int) -> MessageRecord:
        """The same record with its token count filled in."""
        return replace(self, tokens=tokens)

    def as_api_message(self) -> dict[str, Any]:
        """The record as a Messages API message (``role`` and ``content``)."""
        content = self.content if isinstance(self.content, str) else list(self.content)
        return {"role": self.role, "content": content}


def content_blocks(content: Content) -> list[Mapping[str, Any]]:
    """Content as a list of blocks; a plain string becomes one ``text`` block."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [block for block in content if isinstance(block, Mapping)]


def tool_result_text(block: Mapping[str, Any]) -> str:
    """The text a ``tool_result`` block carries; its content may be a string or blocks."""
    inner = block.get("content")
    if inner is None:
        return ""
    if isinstance(inner, str):
        return inner
    parts: list[str] = []
    for item in inner if isinstance(inner, Sequence) else [inner]:
        if isinstance(item, Mapping) and item.get("type") == "text":
            parts.append(str(item.get("text", "")))
        elif isinstance(item, Mapping):
            parts.append(f"[{item.get('type', 'block')}]")
        else:
            parts.append(json.dumps(item, default=str))
    return "\n".join(parts)


def _ids(content: Content, block_type: str, key: str) -> Iterator[str]:
    if isinstance(content, str):
        return
    for block in content:
        if isinstance(block, Mapping) and block.get("type") == block_type:
            value = block.get(key)
            if value is not None:
                yield str(value)
