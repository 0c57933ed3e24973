"""What a consolidator decides, before anything is written: a plan of changes the engine applies.

Consolidators only read and decide; the engine (`engine.py`) applies a plan through the
manager's public operations, so limits, read-only, stale-write refusal and the journal hold for
every change whichever consolidator planned it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..archival import Passage
from ..core.blocks import Block

__all__ = ["ArchivedLine", "BlockRewrite", "MemoryView", "PassageMerge", "Plan", "Supersession"]


@dataclass(frozen=True)
class MemoryView:
    """What a consolidator reads: the agent's blocks and its passages, as of one moment."""

    agent_id: str
    blocks: tuple[Block, ...]
    passages: tuple[Passage, ...]
    """Live passages: neither superseded nor expired, oldest first."""
    expired: tuple[Passage, ...]
    """Passages past their expires_at, not yet purged."""
    now: str


@dataclass(frozen=True)
class ArchivedLine:
    """Text leaving a block for archival memory, with where it came from."""

    content: str
    provenance: dict[str, Any]


@dataclass(frozen=True)
class BlockRewrite:
    """A block's new value, written only if the block is still at `expected_version`."""

    label: str
    block_id: str
    expected_version: int
    new_value: str
    archived: tuple[ArchivedLine, ...] = ()
    """Text moved to archival passages in the same transaction (nothing of the block is lost)."""
    how: str = "archive_overflow"
    """'archive_overflow' (rules) or 'model_rewrite'."""


@dataclass(frozen=True)
class PassageMerge:
    """Passages that state one fact: all but the survivor are superseded by it.

    With `merged_text` (the model's), a new passage with that text becomes the survivor and every
    passage of the group is superseded by it; otherwise `survivor_id` keeps its text and gains the
    union of the group's tags, metadata and provenance."""

    survivor_id: str
    merged_ids: tuple[str, ...]
    reason: str
    merged_text: str | None = None


@dataclass(frozen=True)
class Supersession:
    """A newer passage that contradicts an older one replaces it (the old one stays, linked)."""

    old_id: str
    new_id: str
    reason: str


@dataclass
class Plan:
    """Everything one run decided; `warnings` travel into the session record."""

    rewrites: list[BlockRewrite] = field(default_factory=list)
    merges: list[PassageMerge] = field(default_factory=list)
    supersessions: list[Supersession] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    blocks_analysed: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
