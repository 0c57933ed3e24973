"""What a consolidation run reports back (and, for a real run, what its session row records)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ConsolidationReport"]


@dataclass(frozen=True)
class ConsolidationReport:
    """The outcome of `MemoryManager.consolidate`.

    A dry run has `dry_run=True`, `status='dry_run'` and no `session_id`: it wrote nothing, not
    even a session row, and `changes` lists what a real run would do.
    """

    session_id: str | None
    agent_id: str
    consolidator: str
    status: str
    """'completed', 'failed' or 'dry_run'."""
    dry_run: bool
    counts: dict[str, int]
    summary: str
    changes: tuple[str, ...] = ()
    """One line per change made (or, in a dry run, planned)."""
    retry_later: tuple[str, ...] = ()
    """Changes refused because the item changed after it was read (stale write); a later run
    retries them on the fresh text."""
    warnings: tuple[str, ...] = ()
    failure: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None

    @property
    def ok(self) -> bool:
        return self.status != "failed"

    def as_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "agent_id": self.agent_id,
            "consolidator": self.consolidator,
            "status": self.status,
            "dry_run": self.dry_run,
            "counts": dict(self.counts),
            "summary": self.summary,
            "changes": list(self.changes),
            "retry_later": list(self.retry_later),
            "warnings": list(self.warnings),
            "failure": self.failure,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }
