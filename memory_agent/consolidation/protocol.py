"""The consolidator protocol: read a view of memory, decide a plan; never write.

Two implementations ship: `RulesConsolidator` (no model) and `ModelConsolidator` (the cheap
compaction model, falling back to the rules on any failure). A consolidator is async because a
model call is; the rules one never awaits anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from .plan import MemoryView, Plan

__all__ = ["Consolidator", "Embed"]

Embed = Callable[[Sequence[str]], Sequence[Sequence[float]]]
"""Embeds texts with archival memory's embedding function (the vectors search uses)."""


@runtime_checkable
class Consolidator(Protocol):
    """Decides how to tidy one agent's memory."""

    @property
    def name(self) -> str:
        """Recorded with each session ('rules', 'model:<model>')."""
        ...

    async def plan(self, view: MemoryView, embed: Embed) -> Plan:
        """The changes to make; raising fails the run (recorded, nothing half-planned is
        applied)."""
        ...
