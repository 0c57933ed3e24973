"""A restore: a snapshot's rows in one transaction, then the vectors of its passages.

The rows are all or nothing (`tables.write_snapshot`). The vectors live outside the database, so
they are written afterwards; a failure there leaves the passages 'pending' (keyword search finds
them already, `reconcile` writes the vectors later) and never undoes the rows.
"""

from __future__ import annotations

from collections.abc import Callable

from ..archival import ArchivalMemory
from ..authors import Author
from ..store.protocol import Store
from .records import Snapshot
from .tables import ImportReport, write_snapshot

__all__ = ["restore_snapshot"]


def restore_snapshot(
    db: Store,
    snapshot: Snapshot,
    archival: Callable[[], ArchivalMemory],
    *,
    agent_id: str | None = None,
    author: Author | None = None,
    default_agent_key: str | None = None,
) -> ImportReport:
    """Write the snapshot as new agents, then their passages' vectors through `archival()`
    (called only when passages were written); `report.vectors_pending` counts those left."""
    report = write_snapshot(
        db, snapshot, agent_id=agent_id, author=author, default_agent_key=default_agent_key
    )
    if report.passages:
        memory = archival()
        report.vectors_pending = sum(
            memory.reconcile(imported).still_pending for imported in report.agent_ids
        )
    return report
