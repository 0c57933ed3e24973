"""TurnResult: one turn of a main loop, collected from the SDK's messages."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from claude_agent_sdk import AssistantMessage, ResultMessage, TextBlock, ToolUseBlock

__all__ = ["TurnResult"]


@dataclass(frozen=True)
class TurnResult:
    """What `MemoryAwareAgent.process_turn` returns.

    `text` is the turn's final answer (the result text, else the last assistant text).
    """

    text: str
    messages: list[Any] = field(default_factory=list)
    tool_calls: list[ToolUseBlock] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    cost_usd: float | None = None
    session_id: str | None = None
    is_error: bool = False

    @classmethod
    def from_messages(cls, messages: Sequence[Any]) -> TurnResult:
        texts: list[str] = []
        tool_calls: list[ToolUseBlock] = []
        for message in messages:
            if isinstance(message, AssistantMessage) and message.parent_tool_use_id is None:
                for block in message.content:
                    if isinstance(block, TextBlock):
                        texts.append(block.text)
                    elif isinstance(block, ToolUseBlock):
                        tool_calls.append(block)
        result = next((m for m in reversed(messages) if isinstance(m, ResultMessage)), None)
        final = (
            result.result if result is not None and result.result else (texts[-1] if texts else "")
        )
        return cls(
            text=final,
            messages=list(messages),
            tool_calls=tool_calls,
            usage=result.usage if result else None,
            cost_usd=result.total_cost_usd if result else None,
            session_id=result.session_id if result else None,
            is_error=bool(result.is_error) if result else False,
        )
