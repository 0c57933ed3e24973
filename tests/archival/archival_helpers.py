"""Test doubles for archival memory: a fast deterministic embedding and a breakable store.

`HashEmbedding` is a real Chroma `EmbeddingFunction` (hashed bag of words), so tests that are
about storage, not meaning, run without loading a model, including in subprocesses.
`FlakyVectorStore` wraps any `VectorStore` and fails the operations a test switches off; it is
injected through the `vector_store=` constructor argument, never by patching.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Sequence
from typing import Any

from chromadb.api.types import Documents, EmbeddingFunction, Embeddings

from memory_agent.archival import PassageFilter, VectorMatch, VectorRecord, VectorStore

DIMENSIONS = 64


class HashEmbedding(EmbeddingFunction[Documents]):
    """Each word adds 1 to a hashed coordinate; vectors are unit length."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, input: Documents) -> Embeddings:
        self.calls += 1
        return [_embed(text) for text in input]

    @staticmethod
    def name() -> str:
        return "test-hash"

    def get_config(self) -> dict[str, Any]:
        return {}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> HashEmbedding:
        return HashEmbedding()


def _embed(text: str) -> list[float]:
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"\w+", text.lower()):
        vector[zlib.crc32(word.encode()) % DIMENSIONS] += 1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector] if any(vector) else [1.0 / math.sqrt(DIMENSIONS)] * DIMENSIONS


class VectorStoreDown(RuntimeError):
    """What a FlakyVectorStore raises for a switched-off operation."""


class FlakyVectorStore:
    """Delegates to `inner`, except for the operations named in `failing`."""

    def __init__(self, inner: VectorStore, failing: Sequence[str] = ()) -> None:
        self.inner = inner
        self.failing = set(failing)

    def _check(self, operation: str) -> None:
        if operation in self.failing:
            raise VectorStoreDown(f"vector store {operation} is down (test)")

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        self._check("upsert")
        self.inner.upsert(records)

    def query(
        self, embedding: Sequence[float], where: PassageFilter, limit: int
    ) -> list[VectorMatch]:
        self._check("query")
        return self.inner.query(embedding, where, limit)

    def delete(self, agent_id: str, passage_ids: Sequence[str]) -> None:
        self._check("delete")
        self.inner.delete(agent_id, passage_ids)

    def ids(self, agent_id: str) -> set[str]:
        self._check("ids")
        return self.inner.ids(agent_id)

    def agents(self) -> set[str]:
        self._check("agents")
        return self.inner.agents()

    def count(self, agent_id: str) -> int:
        self._check("count")
        return self.inner.count(agent_id)
