"""An in-memory vector store: the reference implementation of the `VectorStore` protocol.

Exact cosine search over a dict of normalised vectors, in plain Python. It is what the protocol
means, written plainly; tests and small tools can use it. It keeps nothing on disk and is meant
for thousands of passages, not millions.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence

from .filters import PassageFilter
from .vector_store import VectorMatch, VectorRecord

__all__ = ["InMemoryVectorStore"]


class InMemoryVectorStore:
    """Exact nearest-neighbour search in a Python dict; thread-safe."""

    def __init__(self) -> None:
        self._records: dict[str, tuple[VectorRecord, list[float]]] = {}
        self._lock = threading.Lock()

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        with self._lock:
            for record in records:
                self._records[record.passage_id] = (record, _unit(record.embedding))

    def query(
        self, embedding: Sequence[float], where: PassageFilter, limit: int
    ) -> list[VectorMatch]:
        probe = _unit(embedding)
        with self._lock:
            candidates = [
                (record.passage_id, vector)
                for record, vector in self._records.values()
                if where.accepts(record.agent_id, record.tags, record.created_at)
            ]
        scored = [VectorMatch(passage_id, _dot(vector, probe)) for passage_id, vector in candidates]
        scored.sort(key=lambda match: match.similarity, reverse=True)
        return scored[: max(limit, 0)]

    def delete(self, agent_id: str, passage_ids: Sequence[str]) -> None:
        with self._lock:
            for passage_id in passage_ids:
                entry = self._records.get(passage_id)
                if entry is not None and entry[0].agent_id == agent_id:
                    del self._records[passage_id]

    def embeddings(self, agent_id: str, passage_ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored (unit) vectors of these ids of the agent."""
        with self._lock:
            return {
                pid: list(self._records[pid][1])
                for pid in passage_ids
                if pid in self._records and self._records[pid][0].agent_id == agent_id
            }

    def ids(self, agent_id: str) -> set[str]:
        with self._lock:
            return {
                pid for pid, (record, _) in self._records.items() if record.agent_id == agent_id
            }

    def agents(self) -> set[str]:
        with self._lock:
            return {record.agent_id for record, _ in self._records.values()}

    def count(self, agent_id: str) -> int:
        return len(self.ids(agent_id))


def _unit(vector: Sequence[float]) -> list[float]:
    values = [float(x) for x in vector]
    norm = math.sqrt(sum(x * x for x in values))
    return [x / norm for x in values] if norm else values


def _dot(left: Sequence[float], right: Sequence[float]) -> float:
    return float(sum(a * b for a, b in zip(left, right)))
