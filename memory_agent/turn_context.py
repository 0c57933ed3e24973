"""What changes every turn reaches the model with the turn, not in the system prompt.

The system prompt sits before the whole conversation, so any byte of it that changes makes the
next request a cache write of everything (see `memory_agent.testing.prompt_cache`). The current
time and the sizes of recall and archival memory change every turn (or with every archival
insert); rendered into the system prompt they were either frozen at its last rebuild (a time hours
old, counts that are wrong) or would break the cache on every request. So they travel as a
short `<turn_context>` text block at the start of each user message: the turn's own bytes, which
stay the same in every later request that repeats the turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from .blocks import Block
from .rendering import block_tags, escape_text
from .reserved_names import MEMORY_CHANGES, TURN_CONTEXT

__all__ = [
    "TURN_CONTEXT_TAG",
    "TurnContext",
    "render_memory_changes",
    "render_turn_context",
    "with_turn_context",
]

TURN_CONTEXT_TAG = TURN_CONTEXT


@dataclass(frozen=True)
class TurnContext:
    """Facts true at the moment a user message is sent."""

    now: datetime
    recall_messages: int
    archival_passages: int


def render_turn_context(context: TurnContext) -> str:
    """The `<turn_context>` block: the time in UTC to the second, then the memory sizes."""
    moment = context.now.astimezone(timezone.utc)
    return "\n".join(
        [
            f"<{TURN_CONTEXT_TAG}>",
            f"Current time: {moment:%Y-%m-%d %H:%M:%S} UTC ({moment:%A})",
            f"{_count(context.recall_messages, 'message')} stored in recall memory (conversation_search finds them)",
            (
                f"{_count(context.archival_passages, 'passage')} stored in archival memory"
                " (archival_memory_search finds them)"
            ),
            f"</{TURN_CONTEXT_TAG}>",
        ]
    )


def render_memory_changes(blocks: Sequence[Block]) -> str:
    """Blocks changed since the model's last turn by someone else, with their new values: how
    such a change reaches the model without rebuilding the system prompt (`announce` policy)."""
    if not blocks:
        return ""
    parts = [
        f"<{MEMORY_CHANGES}>",
        "Changed since your last turn by another agent or the user; your system prompt still shows"
        " the old value until it is next rebuilt. The current values:",
    ]
    for block in blocks:
        opening, closing = block_tags(block.label)
        parts += [opening, escape_text(block.value), closing]
    return "\n".join([*parts, f"</{MEMORY_CHANGES}>"])


def _count(number: int, noun: str) -> str:
    return f"1 {noun} is" if number == 1 else f"{number} {noun}s are"


def with_turn_context(content: Any, context_text: str) -> list[dict[str, Any]]:
    """A user message's content with the context as its first text block (the user's own text
    or blocks follow unchanged, so what the user wrote stays one block of its own)."""
    first = {"type": "text", "text": context_text}
    if isinstance(content, str):
        return [first, {"type": "text", "text": content}]
    if isinstance(content, list):
        return [first, *content]
    raise TypeError(
        f"A user message's content is a string or a list of blocks, not {type(content).__name__}."
    )
