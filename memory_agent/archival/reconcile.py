"""Reconciliation: making the vector store agree with SQLite, the source of truth.

Three things can leave them apart: a vector write that failed or was cut short (the passage is
'pending'), a vector delete that failed after its passage was deleted (an orphan vector), and a
vector store that lost or never had vectors SQLite believes 'indexed' (a new Chroma server, a
deleted chroma directory, a new embedding model and so a new collection). Reconcile re-embeds
pending passages, then compares each agent's counts; only where they disagree (or with
`full=True`) does it list ids on both sides, delete orphans and re-embed the missing. With nothing
to do it costs a few indexed counts per agent. A passage may have several vectors (`chunks.py`):
the counts compare vectors, and a passage missing any of its chunks is re-embedded whole.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..store.protocol import Store
from . import passage_table
from .chunks import passage_of, vector_ids
from .failures import vector_failure_text
from .vector_index import VectorIndex

__all__ = ["ReconcileReport", "reconcile"]

Progress = Callable[[int, int], None]
_PENDING_PAGE = 2048


@dataclass
class ReconcileReport:
    """What a reconcile run did; `errors` holds each vector-store failure it met."""

    embedded: int = 0
    """Pending passages whose vectors were written."""
    missing_vectors: int = 0
    """Passages marked indexed whose vectors were absent (re-embedded, counted in `embedded`)."""
    removed_vectors: int = 0
    """Orphan vectors (no passage in SQLite) deleted."""
    still_pending: int = 0
    """Passages still without a vector afterwards (see `errors`)."""
    compared_ids: bool = False
    """Whether the id lists of both stores were compared (counts disagreed, or full=True)."""
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors and self.still_pending == 0

    @property
    def changed(self) -> bool:
        return bool(self.embedded or self.removed_vectors)


def reconcile(
    db: Store,
    index: VectorIndex,
    agent_id: str | None = None,
    progress: Progress | None = None,
    *,
    full: bool = False,
    pending_only: bool = False,
) -> ReconcileReport:
    """Bring the vector store in line with SQLite for one agent (or all); never raises for
    a vector-store failure, which is reported in `errors` instead. `pending_only` embeds the
    pending passages and compares nothing (it opens the vector store only if some are pending)."""
    report = ReconcileReport()
    _embed_pending(db, index, agent_id, progress, report)
    if not report.errors and not pending_only:
        try:
            for agent in _agents_in_scope(db, index, agent_id):
                if full or _counts_disagree(db, index, agent):
                    _compare_ids(db, index, agent, report)
            if report.missing_vectors:
                _embed_pending(db, index, agent_id, progress, report)
        except Exception as error:  # the store could not be listed or counted
            report.errors.append(vector_failure_text(error))
    with db.reading() as conn:
        report.still_pending = passage_table.pending_count(conn, agent_id)
    return report


def _embed_pending(
    db: Store,
    index: VectorIndex,
    agent_id: str | None,
    progress: Progress | None,
    report: ReconcileReport,
) -> None:
    with db.reading() as conn:
        total = passage_table.pending_count(conn, agent_id)
    done = 0
    while done < total:
        with db.reading() as conn:
            batch = passage_table.pending_rows(conn, agent_id, _PENDING_PAGE)
        if not batch:
            return
        result = index.write(batch)
        done += result.indexed
        report.embedded += result.indexed
        if progress is not None:
            progress(done, total)
        if result.error is not None:
            report.errors.append(result.error)
            return


def _agents_in_scope(db: Store, index: VectorIndex, agent_id: str | None) -> list[str]:
    """The one agent asked for, or every agent with passages or vectors."""
    if agent_id is not None:
        return [agent_id]
    with db.reading() as conn:
        in_sqlite = passage_table.agents_with_passages(conn)
    return sorted(in_sqlite | index.store.agents())


def _counts_disagree(db: Store, index: VectorIndex, agent_id: str) -> bool:
    with db.reading() as conn:
        expected = passage_table.vector_count(conn, agent_id)
    return index.store.count(agent_id) != expected


def _compare_ids(db: Store, index: VectorIndex, agent_id: str, report: ReconcileReport) -> None:
    report.compared_ids = True
    in_store = index.store.ids(agent_id)
    with db.reading() as conn:
        indexed = passage_table.indexed_chunks(conn, agent_id)
        expected = {
            vector_id for pid, chunks in indexed.items() for vector_id in vector_ids(pid, chunks)
        }
        # Pending passages' vectors (rewritten when embedded), orphans of deleted passages, or
        # chunks an indexed passage no longer has.
        unaccounted = sorted(in_store - expected)
        owners = sorted({passage_of(vector_id) for vector_id in unaccounted})
        pending = passage_table.known_ids(conn, agent_id, owners) - indexed.keys()
        orphans = [vector_id for vector_id in unaccounted if passage_of(vector_id) not in pending]
    missing = sorted(
        pid for pid, chunks in indexed.items() if not in_store.issuperset(vector_ids(pid, chunks))
    )
    if missing:
        with db.transaction() as conn:
            passage_table.mark_pending(conn, missing)
        report.missing_vectors += len(missing)
    if orphans:
        error = index.remove(agent_id, orphans)
        if error is None:
            report.removed_vectors += len(orphans)
        else:
            report.errors.append(error)
