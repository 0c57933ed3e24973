"""The vector side failing: inserts still succeed, searches fall back, reconcile repairs."""

from __future__ import annotations

import logging

import pytest
from archival_helpers import FlakyVectorStore, HashEmbedding

from memory_agent.archival import ArchivalMemory, ChromaVectorStore, VectorConfig
from memory_agent.store.database import Database

pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture
def flaky(chroma_store: ChromaVectorStore) -> FlakyVectorStore:
    return FlakyVectorStore(chroma_store)


@pytest.fixture
def fragile(db: Database, chroma_config: VectorConfig, flaky: FlakyVectorStore) -> ArchivalMemory:
    return ArchivalMemory(db, chroma_config, HashEmbedding(), vector_store=flaky)


def test_failed_vector_write_leaves_the_passage_pending_then_reconcile_indexes_it(
    fragile: ArchivalMemory, flaky: FlakyVectorStore, caplog: pytest.LogCaptureFixture
) -> None:
    flaky.failing = {"upsert"}
    with caplog.at_level(logging.WARNING):
        passage_id = fragile.insert("alice", "Quarterly report is due on the ninth.")
    assert "left pending" in caplog.text
    assert fragile.get("alice", passage_id).vector_state == "pending"
    assert fragile.pending_count("alice") == 1
    # Keyword search already finds it; hybrid does too, from the keyword side.
    assert [h.passage_id for h in fragile.search("alice", "quarterly report", mode="keyword")] == [
        passage_id
    ]
    assert [h.passage_id for h in fragile.search("alice", "quarterly report")] == [passage_id]

    failed = fragile.reconcile()
    assert failed.errors and failed.still_pending == 1 and not failed.ok

    flaky.failing = set()
    repaired = fragile.reconcile()
    assert repaired.ok and repaired.embedded == 1
    assert fragile.get("alice", passage_id).vector_state == "indexed"
    assert [h.passage_id for h in fragile.search("alice", "quarterly report", mode="vector")] == [
        passage_id
    ]


def test_reconcile_reports_progress(fragile: ArchivalMemory, flaky: FlakyVectorStore) -> None:
    flaky.failing = {"upsert"}
    fragile.insert_many("alice", [f"pending passage {n}" for n in range(10)])
    flaky.failing = set()
    seen: list[tuple[int, int]] = []
    report = fragile.reconcile(progress=lambda done, total: seen.append((done, total)))
    assert report.embedded == 10 and seen[-1] == (10, 10)


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_search_falls_back_to_keywords_when_the_vector_store_is_down(
    fragile: ArchivalMemory, flaky: FlakyVectorStore, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    passage_id = fragile.insert("alice", "The boat is moored at pier seven.")
    flaky.failing = {"query"}
    with caplog.at_level(logging.WARNING):
        hits = fragile.search("alice", "pier seven", mode=mode)  # type: ignore[arg-type]
    assert [h.passage_id for h in hits] == [passage_id]
    assert hits[0].vector_rank is None and hits[0].keyword_rank == 1
    assert "keyword search only" in caplog.text


def test_a_failing_embedding_function_is_handled_like_a_failing_store(
    db: Database, chroma_config: VectorConfig
) -> None:
    class Broken(HashEmbedding):
        def __call__(self, input):  # type: ignore[no-untyped-def]
            raise RuntimeError("model crashed")

    archival = ArchivalMemory(db, chroma_config, Broken())
    passage_id = archival.insert("alice", "Still stored without a vector.")
    assert archival.get("alice", passage_id).vector_state == "pending"
    assert [h.passage_id for h in archival.search("alice", "stored vector")] == [passage_id]


def test_failed_vector_delete_leaves_an_orphan_that_search_ignores_and_reconcile_removes(
    fragile: ArchivalMemory, flaky: FlakyVectorStore
) -> None:
    keep = fragile.insert("alice", "keep this passage about apples")
    gone = fragile.insert("alice", "delete this passage about apples")
    flaky.failing = {"delete"}
    fragile.delete("alice", gone)
    flaky.failing = set()
    assert gone in flaky.ids("alice")
    assert [
        h.passage_id for h in fragile.search("alice", "passage about apples", mode="vector")
    ] == [keep]
    report = fragile.reconcile()
    assert report.compared_ids and report.removed_vectors == 1 and report.ok
    assert flaky.ids("alice") == {keep}


def test_reconcile_rebuilds_a_lost_vector_store(
    db: Database, chroma_config: VectorConfig, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    first = ArchivalMemory(db, chroma_config, HashEmbedding())
    ids = set(first.insert_many("alice", [f"fact number {n}" for n in range(25)]))
    # A new, empty Chroma (another directory, as after moving to a server) knows none of them.
    moved = ArchivalMemory(db, VectorConfig(path=tmp_path / "elsewhere"), HashEmbedding())
    report = moved.reconcile()
    assert (
        report.compared_ids and report.missing_vectors == 25 and report.embedded == 25 and report.ok
    )
    assert moved.index.store.ids("alice") == ids


def test_reconcile_with_nothing_to_do_is_cheap(hashed: ArchivalMemory) -> None:
    hashed.insert_many("alice", ["a passage", "another passage"])
    embedding = hashed.index.embedding_function
    calls = embedding.calls
    report = hashed.reconcile()
    assert report.ok and not report.changed and not report.compared_ids
    assert embedding.calls == calls


def test_full_reconcile_compares_ids_even_when_counts_agree(hashed: ArchivalMemory) -> None:
    hashed.insert("alice", "only passage")
    report = hashed.reconcile(full=True)
    assert report.compared_ids and report.ok and not report.changed
