"""The VectorStore conformance suite: every implementation must pass it.

Run against the in-memory reference store and the Chroma store. Another backend passes by
adding a fixture param.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from memory_agent.archival import (
    ChromaVectorStore,
    InMemoryVectorStore,
    PassageFilter,
    VectorConfig,
    VectorRecord,
    VectorStore,
)


@pytest.fixture(params=["memory", "chroma"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> VectorStore:
    if request.param == "memory":
        return InMemoryVectorStore()
    return ChromaVectorStore(VectorConfig(path=tmp_path / "chroma"), "archival_conformance")


def record(
    passage_id: str,
    vector: Sequence[float],
    agent: str = "a",
    tags: tuple[str, ...] = (),
    when: float = 1_700_000_000.0,
) -> VectorRecord:
    return VectorRecord(passage_id, agent, list(vector), tags, when)


@pytest.fixture
def filled(store: VectorStore) -> VectorStore:
    store.upsert(
        [
            record("x", [1, 0, 0], tags=("red",), when=100.0),
            record("y", [0.8, 0.6, 0], tags=("red", "blue"), when=200.0),
            record("z", [0, 1, 0], tags=("blue",), when=300.0),
            record("other", [1, 0, 0], agent="b", tags=("red",), when=100.0),
        ]
    )
    return store


def ids_of(
    store: VectorStore, where: PassageFilter, probe: Sequence[float] = (1, 0, 0), limit: int = 10
) -> list[str]:
    return [match.passage_id for match in store.query(list(probe), where, limit)]


def test_is_a_vector_store(store: VectorStore) -> None:
    assert isinstance(store, VectorStore)


def test_query_orders_by_cosine_similarity_within_the_agent(filled: VectorStore) -> None:
    matches = filled.query([1, 0, 0], PassageFilter("a"), 10)
    assert [m.passage_id for m in matches] == ["x", "y", "z"]
    assert matches[0].similarity == pytest.approx(1.0, abs=1e-5)
    assert matches[1].similarity == pytest.approx(0.8, abs=1e-5)
    assert matches[2].similarity == pytest.approx(0.0, abs=1e-5)
    assert ids_of(filled, PassageFilter("a"), limit=2) == ["x", "y"]


def test_filters_by_tags_and_time(filled: VectorStore) -> None:
    assert ids_of(filled, PassageFilter("a", ("blue",))) == ["y", "z"]
    assert ids_of(filled, PassageFilter("a", ("red", "blue"), "all")) == ["y"]
    assert ids_of(filled, PassageFilter("a", ("red", "green"))) == ["x", "y"]
    start, end = "1970-01-01T00:04:10+00:00", "1970-01-01T00:02:30+00:00"
    assert ids_of(filled, PassageFilter("a", start=start)) == ["z"]
    assert ids_of(filled, PassageFilter("a", end=end)) == ["x"]
    window = PassageFilter("a", start="1970-01-01T00:01:40+00:00", end="1970-01-01T00:05:00+00:00")
    assert ids_of(filled, window) == ["x", "y", "z"]
    assert ids_of(filled, PassageFilter("nobody")) == []


def test_upsert_overwrites_and_delete_ignores_unknown_ids(filled: VectorStore) -> None:
    filled.upsert([record("z", [1, 0, 0], tags=("blue",), when=300.0)])
    assert filled.count("a") == 3
    assert ids_of(filled, PassageFilter("a", ("blue",)), limit=1) == ["z"]
    filled.delete("a", ["x", "never-stored"])
    assert filled.count("a") == 2 and filled.count("b") == 1
    assert filled.ids("a") == {"y", "z"} and filled.ids("b") == {"other"}


def test_delete_is_scoped_to_the_agent(filled: VectorStore) -> None:
    filled.delete("b", ["x"])
    assert filled.ids("a") == {"x", "y", "z"}


def test_agents_lists_who_has_vectors(filled: VectorStore) -> None:
    assert filled.agents() == {"a", "b"}


def test_empty_store(store: VectorStore) -> None:
    assert store.count("a") == 0 and store.ids("a") == set() and store.agents() == set()
    assert store.query([1, 0, 0], PassageFilter("a"), 5) == []
    store.delete("a", [])


def test_a_selective_filter_finds_matches_beyond_the_nearest_hundreds(store: VectorStore) -> None:
    # 300 untagged records near the probe, one tagged record far from it: a store that filters
    # only the nearest candidates would miss it.
    store.upsert([record(f"near{n}", [1, 0.001 * n, 0]) for n in range(300)])
    store.upsert([record("far", [0, 0, 1], tags=("rare",))])
    assert ids_of(store, PassageFilter("a", ("rare",)), limit=5) == ["far"]
    assert ids_of(store, PassageFilter("a", start="1970-01-01T00:00:00+00:00"), limit=3) == [
        "near0",
        "near1",
        "near2",
    ]
