"""The vector store protocol: what archival memory needs from a vector index, nothing more.

The store holds one embedding per passage under the passage's id, with the metadata needed to
filter (agent id, tags, creation time); every operation is scoped to one agent. It never holds the
text: SQLite is the source of truth, and the vector side can be rebuilt from it at any time
(`ArchivalMemory.reconcile`). Embeddings are computed by archival memory, not by the store, so one
batch-encoding path serves every store.

`ChromaVectorStore` is the real implementation; `InMemoryVectorStore` is the reference one that
tests and small tools can use. Both pass the same conformance tests (tests/archival).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from .filters import PassageFilter

__all__ = ["VectorMatch", "VectorRecord", "VectorStore"]


@dataclass(frozen=True)
class VectorRecord:
    """One passage's embedding and the metadata a search can filter on."""

    passage_id: str
    agent_id: str
    embedding: Sequence[float]
    tags: tuple[str, ...]
    created_at: float
    """Epoch seconds (UTC)."""


@dataclass(frozen=True)
class VectorMatch:
    passage_id: str
    similarity: float
    """Cosine similarity in [-1, 1]; higher is closer."""


@runtime_checkable
class VectorStore(Protocol):
    """A vector index of passages. Every method may raise; archival memory copes with that."""

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Write (or overwrite) these embeddings; writing the same record twice is harmless."""
        ...

    def query(
        self, embedding: Sequence[float], where: PassageFilter, limit: int
    ) -> list[VectorMatch]:
        """The `limit` nearest passages that pass `where`, closest first."""
        ...

    def delete(self, agent_id: str, passage_ids: Sequence[str]) -> None:
        """Remove these ids of the agent; ids that are not stored are ignored."""
        ...

    def ids(self, agent_id: str) -> set[str]:
        """Every id stored for the agent, for reconciliation with SQLite."""
        ...

    def agents(self) -> set[str]:
        """The agents that have vectors stored."""
        ...

    def count(self, agent_id: str) -> int:
        """How many vectors the agent has (a cheap consistency check)."""
        ...
