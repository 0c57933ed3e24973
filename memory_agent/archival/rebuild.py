"""Rebuilding the vector side from SQLite, the source of truth: the repair for a damaged store.

Reconcile repairs a store that is behind; a store that cannot be read at all (a corrupt
`chroma.sqlite3`, an HNSW segment Chroma can no longer apply its log to after a kill) needs
replacing. For embedded Chroma the old directory is renamed to a dated backup beside it (never
deleted: it may still hold something a person wants); for a Chroma server the collections of
this embedding function are dropped. Every passage is then marked pending and re-embedded through
the archival memory's own embedding function, whatever it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..store.protocol import Store
from . import passage_table
from .archive import ArchivalMemory
from .chroma_store import release_embedded_store
from .reconcile import Progress, ReconcileReport

__all__ = ["RebuildReport", "move_aside", "rebuild_vectors", "reembed_truncated"]


@dataclass(frozen=True)
class RebuildReport:
    backup: Path | None
    """Where the old embedded store was moved (None for a server, or when there was none)."""
    dropped_collections: int
    """Collections dropped on a Chroma server."""
    reconcile: ReconcileReport
    """The re-embedding of every passage."""


def move_aside(path: Path) -> Path | None:
    """Rename `path` to `<name>.backup-<UTC time>` beside it; returns the new path (None if
    absent)."""
    if not path.exists():
        return None
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    backup = path.with_name(f"{path.name}.backup-{stamp}")
    path.rename(backup)
    return backup


def rebuild_vectors(archival: ArchivalMemory, progress: Progress | None = None) -> RebuildReport:
    """Replace the whole vector store by re-embedding every passage (see the module doc).

    `archival` is closed on the way (its client holds the old store); the vectors are written
    through a fresh ArchivalMemory with the same database, config and embedding function.
    """
    config = archival.config
    embedding_function = archival.index.embedding_function
    backup, dropped = None, 0
    if config.host is None:
        archival.close()
        release_embedded_store(config.path)
        backup = move_aside(config.path)
    else:
        dropped = archival.index.store.drop_collections()  # type: ignore[attr-defined]  # a Chroma server store
        archival.close()
    _mark_all_pending(archival.db)
    fresh = ArchivalMemory(archival.db, config, embedding_function, fusion=archival.fusion)
    try:
        report = fresh.reconcile(None, progress)
    finally:
        fresh.close()
    return RebuildReport(backup, dropped, report)


def reembed_truncated(
    archival: ArchivalMemory, progress: Progress | None = None
) -> ReconcileReport:
    """Re-embed whole every passage embedded from its first window only (see `chunks.py`): they
    are marked pending and written again, as chunks where they are long; the store is kept."""
    with archival.db.transaction() as conn:
        passage_table.mark_truncated_pending(conn)
    return archival.reconcile(None, progress)


def _mark_all_pending(db: Store) -> None:
    with db.transaction() as conn:
        conn.execute("UPDATE passages SET vector_state = 'pending' WHERE vector_state != 'pending'")
