"""Which passages a search may return: one agent's, optionally by tags and a time window, and
(for searches) only live ones: not expired at the time of the search, and not superseded unless
asked for; and only those the caller's clearance allows (`memory_agent.privacy.sensitivity`: private
by default, so secret passages are left out unless asked for). The vector store knows nothing of
expiry, supersession or sensitivity (all change after a vector is written); search checks them in
SQL, where they are stored.

The same filter is applied by both indexes (SQL for the keyword side, the vector store's own
filter for the vector side) so that fusion only ever sees passages the caller may see; an agent's
search never returns another agent's passages.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ..errors import ArchivalError
from ..privacy.sensitivity import (
    DEFAULT_CLEARANCE,
    Sensitivity,
    allowed,
    parse_level,
    visible_levels,
)
from .passages import normalise_tags
from .timestamps import Timestamp, to_epoch, to_utc_iso

__all__ = ["PassageFilter", "TagMode", "superseded_sql"]

TagMode = Literal["any", "all"]

MAX_CHAIN_DEPTH = 32
"""How far along a chain of expired successors search looks for a live one (chains are short:
each link is one supersession; a longer run of expired successors counts as ended)."""


def superseded_sql(alias: str, live_at: str | None) -> tuple[str, list[object]]:
    """A WHERE fragment true when the passage is superseded *now*: it names a successor and, at
    `live_at`, some passage along its chain of successors is not expired. An expired successor no
    longer stands in for the fact it replaced (purge_expired hands the link on the same way), so a
    passage whose successors have all expired is current again. Correlated, so it runs only for
    rows that name a successor; the walk follows expired links only and is bounded."""
    if live_at is None:
        return f"{alias}.superseded_by IS NOT NULL", []
    return (
        f"({alias}.superseded_by IS NOT NULL AND EXISTS ("
        f"WITH RECURSIVE chain(pid, depth) AS (SELECT {alias}.superseded_by, 1"
        " UNION ALL SELECT s.superseded_by, chain.depth + 1 FROM chain JOIN passages s ON "
        "s.passage_id = chain.pid"
        " WHERE s.superseded_by IS NOT NULL AND s.expires_at IS NOT NULL AND s.expires_at <= ?"
        f" AND chain.depth < {MAX_CHAIN_DEPTH})"
        " SELECT 1 FROM chain JOIN passages q ON q.passage_id = chain.pid"
        " WHERE q.expires_at IS NULL OR q.expires_at > ?))",
        [live_at, live_at],
    )


@dataclass(frozen=True)
class PassageFilter:
    """Passages of `agent_id` carrying any (or all) of `tags`, created within [start, end]."""

    agent_id: str
    tags: tuple[str, ...] = ()
    tag_mode: TagMode = "any"
    start: str | None = None
    """Canonical UTC ISO text, inclusive."""
    end: str | None = None
    """Canonical UTC ISO text, inclusive."""
    live_at: str | None = None
    """When set (canonical UTC text), passages expired at this time are left out."""
    include_superseded: bool = True
    """False leaves out passages another passage superseded."""
    clearance: Sensitivity = DEFAULT_CLEARANCE
    """The highest sensitivity level returned (private by default: secret passages are left out)."""

    @classmethod
    def build(
        cls,
        agent_id: str,
        tags: Iterable[str] | str | None = None,
        tag_mode: TagMode = "any",
        start_date: Timestamp | None = None,
        end_date: Timestamp | None = None,
        *,
        live_at: str | None = None,
        include_superseded: bool = True,
        clearance: Sensitivity = DEFAULT_CLEARANCE,
    ) -> PassageFilter:
        """Validate and normalise the caller's arguments (dates in any accepted form)."""
        if tag_mode not in ("any", "all"):
            raise ArchivalError(f"tag_mode must be 'any' or 'all', got '{tag_mode}'.")
        start = None if start_date in (None, "") else to_utc_iso(start_date)
        end = None if end_date in (None, "") else to_utc_iso(end_date, end_of_day=True)
        if start and end and start > end:
            raise ArchivalError(
                f"start_date ({start}) is after end_date ({end}); nothing can match."
            )
        if not isinstance(include_superseded, bool):
            raise ArchivalError(
                f"include_superseded must be true or false, got {include_superseded!r}."
            )
        return cls(
            agent_id,
            normalise_tags(tags),
            tag_mode,
            start,
            end,
            live_at,
            include_superseded,
            parse_level(clearance, "clearance"),
        )

    @property
    def hides_levels(self) -> bool:
        """Whether the clearance leaves some sensitivity level out."""
        return self.clearance != "secret"

    @property
    def checks_lifecycle(self) -> bool:
        """Whether expiry, supersession or sensitivity can exclude a passage (so ids must be checked
        in SQL)."""
        return self.live_at is not None or not self.include_superseded or self.hides_levels

    def admits(self, expires_at: str | None, superseded: bool, sensitivity: object) -> bool:
        """The lifecycle and sensitivity part of the filter, for a row already read; `superseded` is
        whether the row is superseded now (see `superseded_sql`: a successor that expired no longer
        counts). An unknown stored level is never admitted."""
        if not allowed(sensitivity, self.clearance):
            return False
        if self.live_at is not None and expires_at is not None and expires_at <= self.live_at:
            return False
        return self.include_superseded or not superseded

    @property
    def start_epoch(self) -> float | None:
        return None if self.start is None else to_epoch(self.start)

    @property
    def end_epoch(self) -> float | None:
        return None if self.end is None else to_epoch(self.end)

    def sql(self, alias: str = "p") -> tuple[str, list[object]]:
        """A WHERE fragment over the passages table (aliased) and its parameters."""
        clauses = [f"{alias}.agent_id = ?"]
        params: list[object] = [self.agent_id]
        if self.hides_levels:
            levels = visible_levels(self.clearance)
            clauses.append(f"{alias}.sensitivity IN ({', '.join('?' for _ in levels)})")
            params.extend(levels)
        if self.start is not None:
            clauses.append(f"{alias}.created_at >= ?")
            params.append(self.start)
        if self.end is not None:
            clauses.append(f"{alias}.created_at <= ?")
            params.append(self.end)
        if self.tags:
            marks = ", ".join("?" for _ in self.tags)
            having = (
                f" GROUP BY passage_rowid HAVING COUNT(*) = {len(self.tags)}"
                if self.tag_mode == "all"
                else ""
            )
            clauses.append(
                f"{alias}.passage_rowid IN (SELECT passage_rowid FROM passage_tags"
                f" WHERE tag IN ({marks}){having})"
            )
            params.extend(self.tags)
        if self.live_at is not None:
            clauses.append(f"({alias}.expires_at IS NULL OR {alias}.expires_at > ?)")
            params.append(self.live_at)
        if not self.include_superseded:
            superseded, chain_params = superseded_sql(alias, self.live_at)
            clauses.append(f"NOT {superseded}")
            params.extend(chain_params)
        return " AND ".join(clauses), params

    def accepts(self, agent_id: str, tags: Iterable[str], created_epoch: float) -> bool:
        """The agent, tag and date rules in Python, for vector stores that filter in memory (the
        lifecycle rules are `admits`, checked against SQLite)."""
        if agent_id != self.agent_id:
            return False
        if self.start_epoch is not None and created_epoch < self.start_epoch:
            return False
        if self.end_epoch is not None and created_epoch > self.end_epoch:
            return False
        if not self.tags:
            return True
        present = set(tags)
        wanted = [tag in present for tag in self.tags]
        return all(wanted) if self.tag_mode == "all" else any(wanted)
