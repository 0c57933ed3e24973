"""A Chroma query answered short (its HNSW graph is approximate) is completed by an exact scan.

Chroma's index can fail to reach a record, and then answers with fewer results than asked even
when the collection holds more (seen: 64 of 65 records for 240 asked). `_nearest` then scores the
records the query could have answered with itself. The index's misses are rare and not
reproducible on demand, so the short answer is made here by a collection that drops the last
result of Chroma's own answer; everything else is the real embedded Chroma.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_agent.archival import ChromaVectorStore, VectorConfig, VectorRecord
from memory_agent.archival.chroma_store import _exact_nearest, _nearest

pytestmark = pytest.mark.sqlite_only(
    reason="Chroma's own index and query path; no SQL store is opened"
)

DAY = 86_400.0
START = 1_700_000_000.0


class DropsTheLastResult:
    """The real collection, except that each query's answer loses its last result."""

    def __init__(self, collection: Any) -> None:
        self._collection = collection

    def query(self, **arguments: Any) -> dict[str, Any]:
        answer = self._collection.query(**arguments)
        return {key: [rows[0][:-1]] if rows else rows for key, rows in answer.items()}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._collection, name)


@pytest.fixture
def vectors() -> np.ndarray:
    return np.random.default_rng(7).normal(size=(40, 16))


@pytest.fixture
def collection(tmp_path: Path, vectors: np.ndarray) -> Any:
    store = ChromaVectorStore(VectorConfig(path=tmp_path / "chroma"), "short_answers")
    store.upsert(
        [
            VectorRecord(f"p{n}", "a", list(row), ("even",) if n % 2 == 0 else (), START + n * DAY)
            for n, row in enumerate(vectors)
        ]
    )
    found = store._collection("a", create=False)
    assert found is not None
    return found


def _cosine_order(vectors: np.ndarray, query: np.ndarray, ids: list[int]) -> list[str]:
    rows = vectors[ids]
    similarity = rows @ query / (np.linalg.norm(rows, axis=1) * np.linalg.norm(query))
    return [f"p{ids[n]}" for n in np.argsort(-similarity)]


def test_the_exact_scan_ranks_by_cosine_within_the_filter(
    collection: Any, vectors: np.ndarray
) -> None:
    query = np.random.default_rng(8).normal(size=16)
    everything = _exact_nearest(collection, list(query), 10, None)
    assert [m.passage_id for m, _ in everything] == _cosine_order(vectors, query, list(range(40)))[
        :10
    ]
    assert all(-1.0 <= m.similarity <= 1.0 for m, _ in everything)
    even = _exact_nearest(collection, list(query), 100, {"tags": {"$contains": "even"}})
    assert [m.passage_id for m, _ in even] == _cosine_order(vectors, query, list(range(0, 40, 2)))
    assert all(metadata["tags"] == ["even"] for _, metadata in even)


def test_a_short_answer_is_completed_by_the_exact_scan(
    collection: Any, vectors: np.ndarray
) -> None:
    query = list(np.random.default_rng(9).normal(size=16))
    order = _cosine_order(vectors, np.asarray(query), list(range(40)))
    short = DropsTheLastResult(collection)
    assert [m.passage_id for m, _ in _nearest(short, query, 5)] == order[:5]
    everything = _nearest(short, query, 100)  # more than the collection holds: all 40, in order
    assert [m.passage_id for m, _ in everything] == order
    late = {"created_at": {"$gte": START + 30 * DAY}}
    assert sorted(m.passage_id for m, _ in _nearest(short, query, 20, late)) == sorted(
        f"p{n}" for n in range(30, 40)
    )


def test_a_short_answer_of_a_small_collection_costs_no_scan(
    collection: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fewer results than asked because there are no more: Chroma's answer stands."""

    def no_scan(*arguments: Any) -> Any:
        raise AssertionError("an exact scan for an answer that was complete")

    monkeypatch.setattr("memory_agent.archival.chroma_store._exact_nearest", no_scan)
    assert len(_nearest(collection, [1.0] * 16, 100)) == 40
    assert len(_nearest(collection, [1.0] * 16, 100, {"tags": {"$contains": "even"}})) == 20
