"""Turning the SDK's messages into stored recall records.

Conversation messages (user prompts, assistant text and tool calls, tool results) are stored in
context with their content as Messages API blocks, so compaction can cut them and the summariser
can read them. The SDK's result and system messages are stored too, out of context, for the
record (usage, cost, session, stop reason). Unknown message and block types are skipped with a
debug log, so a newer SDK does not break an older memory-agent.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from .model_errors import is_authentication_failure

__all__ = ["MessageFields", "block_to_dict", "message_fields"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class MessageFields:
    """What `RecallMemory.store` needs for one SDK message."""

    role: str
    content: str | list[dict[str, Any]]
    message_type: str
    sdk_uuid: str | None = None
    session_id: str | None = None
    in_context: bool = True
    metadata: dict[str, Any] = field(default_factory=dict)


def block_to_dict(block: Any) -> dict[str, Any] | None:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if isinstance(block, ToolResultBlock):
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": block.tool_use_id,
            "content": block.content if block.content is not None else "",
        }
        if block.is_error:
            result["is_error"] = True
        return result
    if isinstance(block, ThinkingBlock):
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if dataclasses.is_dataclass(block) and not isinstance(block, type) and hasattr(block, "type"):
        return dataclasses.asdict(block)
    logger.debug("skipping content block of unknown type %s", type(block).__name__)
    return None


def _blocks(content: Any) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    return [converted for block in content if (converted := block_to_dict(block)) is not None]


def message_fields(message: Any) -> MessageFields | None:
    """The stored form of one SDK message, or None for messages not worth keeping (stream events,
    and the CLI's "not logged in"/401/403 replies, which must never become the agent's answer)."""
    if is_authentication_failure(message) and isinstance(message, AssistantMessage):
        return None
    if isinstance(message, AssistantMessage):
        return MessageFields(
            role="assistant",
            content=_blocks(message.content),
            message_type="assistant",
            sdk_uuid=message.uuid,
            session_id=message.session_id,
            metadata={
                "model": message.model,
                "usage": message.usage,
                "stop_reason": message.stop_reason,
                "message_id": message.message_id,
                "error": message.error,
                "parent_tool_use_id": message.parent_tool_use_id,
            },
        )
    if isinstance(message, UserMessage):
        content = _blocks(message.content)
        is_tool_result = isinstance(content, list) and any(
            b.get("type") == "tool_result" for b in content
        )
        return MessageFields(
            role="user",
            content=content,
            message_type="tool_result" if is_tool_result else "user",
            sdk_uuid=message.uuid,
            metadata={"parent_tool_use_id": message.parent_tool_use_id},
        )
    if isinstance(message, ResultMessage):
        return MessageFields(
            role="result",
            content=message.result or "",
            message_type="result",
            sdk_uuid=message.uuid,
            session_id=message.session_id,
            in_context=False,
            metadata={
                "subtype": message.subtype,
                "is_error": message.is_error,
                "usage": message.usage,
                "total_cost_usd": message.total_cost_usd,
                "stop_reason": message.stop_reason,
                "num_turns": message.num_turns,
                "duration_ms": message.duration_ms,
                "errors": message.errors,
            },
        )
    if isinstance(message, SystemMessage):
        if message.subtype == "init":
            # Sent at every turn and large (every tool and command of the CLI): not worth a row.
            return None
        return MessageFields(
            role="system",
            content="",
            message_type=f"system:{message.subtype}",
            sdk_uuid=message.data.get("uuid") if isinstance(message.data, dict) else None,
            session_id=message.data.get("session_id") if isinstance(message.data, dict) else None,
            in_context=False,
            metadata={"data": message.data},
        )
    logger.debug("not storing SDK message of type %s", type(message).__name__)
    return None
