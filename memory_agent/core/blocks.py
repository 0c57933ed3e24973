"""Core-memory blocks: the record, and the pure text edits the tools perform.

The edits are plain functions from an old value to a new one, so every write path (model tools,
CLI, Python API) shares one definition of what "append" or "replace" means; the store then checks
the limit and records the new version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import AmbiguousContentError, ContentNotFoundError
from ..privacy.sensitivity import DEFAULT_LEVEL
from .labels import validate_label

__all__ = [
    "Block",
    "BlockVersion",
    "append_text",
    "insert_text",
    "replace_text",
    "validate_label",
]


@dataclass(frozen=True)
class Block:
    """One core-memory block as one agent sees it.

    `read_only` is true when the block itself is read-only or this agent's attachment is.
    `in_prompt` is false for an on-demand block: listed in the rendered memory with its path and
    size, not rendered; the model reads it with the memory tool (`memory_paths`).
    """

    block_id: str
    label: str
    value: str
    limit: int
    read_only: bool = False
    description: str | None = None
    is_shared: bool = False
    version: int = 1
    created_at: str = ""
    updated_at: str = ""
    in_prompt: bool = True
    sensitivity: str = DEFAULT_LEVEL
    """public, private or secret (`memory_agent.privacy.sensitivity`): which callers may see the
    block."""

    @property
    def chars_current(self) -> int:
        return len(self.value)


@dataclass(frozen=True)
class BlockVersion:
    """One saved version of a block, with the agent that wrote it and who acted (the author,
    `memory_agent.authors`; None for versions saved before authors were recorded)."""

    block_id: str
    version: int
    value: str
    action: str
    agent_id: str | None
    created_at: str
    author_kind: str | None = None
    author: str | None = None


def append_text(value: str, content: str) -> str:
    """Append on a new line (Letta's core_memory_append behaviour)."""
    if not value:
        return content
    return f"{value}\n{content}"


def replace_text(label: str, value: str, old: str, new: str) -> str:
    """Replace `old`, which must occur exactly once; an empty `new` deletes it."""
    if not old:
        raise ContentNotFoundError(label, old)
    count = value.count(old)
    if count == 0:
        raise ContentNotFoundError(label, old)
    if count > 1:
        raise AmbiguousContentError(label, old, count)
    return value.replace(old, new, 1)


def insert_text(label: str, value: str, text: str, insert_after: str | None) -> str:
    """Insert after the first case-insensitive literal match of `insert_after`, else at the end."""
    if insert_after is None or insert_after == "":
        return append_text(value, text)
    # A regex on the original string keeps positions right even where lower() changes lengths.
    # re's IGNORECASE matches character for character, so a longer needle cannot occur (and
    # compiling a needle of megabytes into a pattern would take seconds for nothing).
    match = (
        None
        if len(insert_after) > len(value)
        else re.search(re.escape(insert_after), value, flags=re.IGNORECASE)
    )
    if match is None:
        raise ContentNotFoundError(label, insert_after)
    end = match.end()
    return f"{value[:end]}\n{text}{value[end:]}"
