"""Hybrid search's two legs run at the same time, each on its own thread and reading connection,
and answer exactly what they answer one after the other (both backends)."""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from archival_helpers import FlakyVectorStore, HashEmbedding

from memory_agent.archival import ArchivalMemory, ChromaVectorStore, VectorConfig
from memory_agent.archival import search as search_module
from memory_agent.archival.filters import PassageFilter
from memory_agent.archival.vector_store import VectorMatch
from memory_agent.errors import ArchivalError, StorageError
from memory_agent.store.database import Database

pytestmark = pytest.mark.usefixtures("backend")

NOTES = [
    "Alice repaired the red bicycle in Lisbon with Tom after a long week.",
    "Tom painted a mural at the community garden for the first time.",
    "Alice and Mira cooked a curry in Osaka to surprise a friend.",
    "Mira photographed a sunrise at the harbor and felt grateful.",
    "Alice sold old records at the night market to raise money.",
    "Tom built a treehouse in the garden before moving house.",
    "The bicycle needed a new chain; Alice fixed it in the garage.",
    "Mira studied ancient history at the library during the holidays.",
]
QUERIES = ["Who repaired the bicycle?", "Alice Tom garden", "curry in Osaka", "sunrise harbor Mira"]


class MeetingStore:
    """A vector store whose queries wait at `barrier` before answering (the other party being the
    keyword leg), so a search can only finish if both legs are running at the same time."""

    def __init__(self, inner: ChromaVectorStore, barrier: threading.Barrier) -> None:
        self.inner = inner
        self.barrier = barrier

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def query(
        self, embedding: Sequence[float], where: PassageFilter, limit: int
    ) -> list[VectorMatch]:
        self.barrier.wait()
        return self.inner.query(embedding, where, limit)


@pytest.fixture
def archive(db: Database, chroma_config: VectorConfig) -> Iterator[ArchivalMemory]:
    archival = ArchivalMemory(db, chroma_config, HashEmbedding())
    archival.insert_many("alice", NOTES)
    yield archival
    archival.close()


@pytest.mark.parametrize("mode", ["hybrid", "scored"])
def test_concurrent_legs_answer_exactly_what_sequential_legs_answer(
    archive: ArchivalMemory, db: Database, chroma_config: VectorConfig, mode: str
) -> None:
    sequential = ArchivalMemory(db, chroma_config, HashEmbedding(), search_threads=0)
    try:
        for query in QUERIES:
            options: dict[str, Any] = {"mode": mode, "explain": True, "count_access": False}
            together = archive.search("alice", query, **options)
            apart = sequential.search("alice", query, **options)
            assert together, query
            assert [(h.passage_id, h.score, h.explanation) for h in together] == [
                (h.passage_id, h.score, h.explanation) for h in apart
            ]
            assert not any(h.degraded for h in together)
    finally:
        sequential.close()


def test_the_legs_run_at_the_same_time_on_the_pool(
    db: Database,
    chroma_config: VectorConfig,
    chroma_store: ChromaVectorStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each leg waits for the other at a barrier: one after the other, the vector leg would time
    out (and the search fall back); together both pass it. The keyword leg reads on a connection of
    its own, never the store's main one, and on a pool thread."""
    barrier = threading.Barrier(2, timeout=10)
    archival = ArchivalMemory(
        db, chroma_config, HashEmbedding(), vector_store=MeetingStore(chroma_store, barrier)
    )
    seen: list[tuple[str, object]] = []
    real_keyword_search = search_module.keyword_search

    def meeting_keyword_search(conn: Any, *args: Any) -> Any:
        seen.append((threading.current_thread().name, conn))
        barrier.wait()
        return real_keyword_search(conn, *args)

    try:
        archival.insert_many("alice", NOTES)
        monkeypatch.setattr(search_module, "keyword_search", meeting_keyword_search)
        hits = archival.search("alice", "Who repaired the bicycle?")
        assert hits and not any(hit.degraded for hit in hits)
        assert hits[0].keyword_rank is not None and hits[0].vector_rank is not None
        (thread_name, conn), *_ = seen
        assert thread_name.startswith("archival-search")
        with db.reading() as main:
            assert conn is not main
    finally:
        archival.close()


def test_sequential_legs_would_not_meet(
    db: Database,
    chroma_config: VectorConfig,
    chroma_store: ChromaVectorStore,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The barrier test's control: with search_threads=0 the keyword leg runs first and alone, so
    the vector leg's wait breaks; the search still answers, from keywords, and says so."""
    barrier = threading.Barrier(2, timeout=0.1)  # the wait that must break: no need to be patient
    archival = ArchivalMemory(
        db,
        chroma_config,
        HashEmbedding(),
        vector_store=MeetingStore(chroma_store, barrier),
        search_threads=0,
    )
    archival.insert_many("alice", NOTES)
    real_keyword_search = search_module.keyword_search

    def waiting_keyword_search(conn: Any, *args: Any) -> Any:
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            pass
        return real_keyword_search(conn, *args)

    monkeypatch.setattr(search_module, "keyword_search", waiting_keyword_search)
    with caplog.at_level(logging.WARNING):
        hits = archival.search("alice", "Who repaired the bicycle?")
    assert hits and all(hit.degraded for hit in hits)
    assert "keyword search only" in caplog.text


def test_a_keyword_failure_propagates_from_the_pool(
    archive: ArchivalMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any) -> Any:
        raise StorageError("the keyword index is unreadable (test)")

    monkeypatch.setattr(search_module, "keyword_search", broken)
    for mode in ("hybrid", "scored"):
        with pytest.raises(StorageError, match="unreadable"):
            archive.search("alice", "bicycle", mode=mode)  # type: ignore[arg-type]


def test_a_vector_failure_on_the_pool_falls_back_and_says_so(
    db: Database,
    chroma_config: VectorConfig,
    chroma_store: ChromaVectorStore,
    caplog: pytest.LogCaptureFixture,
) -> None:
    flaky = FlakyVectorStore(chroma_store)
    archival = ArchivalMemory(db, chroma_config, HashEmbedding(), vector_store=flaky)
    try:
        archival.insert_many("alice", NOTES)
        flaky.failing = {"query"}
        with caplog.at_level(logging.WARNING):
            hits = archival.search("alice", "bicycle chain")
        assert hits and all(hit.degraded and hit.vector_rank is None for hit in hits)
        assert "keyword search only" in caplog.text
    finally:
        archival.close()


def test_a_search_inside_the_callers_transaction_reads_its_own_writes(
    archive: ArchivalMemory, db: Database
) -> None:
    """Inside a write transaction the legs run on the caller's thread and main connection (a
    worker could neither see the uncommitted row nor take the connection the caller holds)."""
    with db.transaction():
        assert db.writing_here()
        passage_id = archive.insert("alice", "The lighthouse keeper restored a brass telescope.")
        hits = archive.search("alice", "lighthouse telescope")
        assert [hit.passage_id for hit in hits][:1] == [passage_id]
    assert not db.writing_here()


def test_parallel_reading_is_a_read_only_connection_of_the_thread_closed_with_the_store(
    db: Database,
) -> None:
    found: dict[str, Any] = {}

    def worker() -> None:
        with db.parallel_reading() as conn:
            found["first"] = conn
            found["count"] = conn.execute("SELECT count(*) FROM agents").fetchone()[0]
            try:
                conn.execute("DELETE FROM agents")
            except (StorageError, Exception) as error:  # noqa: BLE001 - the kind is the backend's
                found["write"] = error
        with db.parallel_reading() as again:
            found["again"] = again

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert found["count"] >= 1 and found["again"] is found["first"]
    assert "write" in found, "a write through the parallel reader was accepted"
    with db.reading() as main:
        assert found["first"] is not main
        assert main.execute("SELECT count(*) FROM agents").fetchone()[0] == found["count"]
    db.close()
    # sqlite3 and psycopg name a closed connection's error differently
    with pytest.raises(Exception):  # noqa: B017
        found["first"].execute("SELECT 1")


def test_a_finished_threads_reader_is_closed(db: Database) -> None:
    """A thread that ends (the pool of a closed archive) does not leave its connection open until
    the store closes."""
    found: dict[str, Any] = {}

    def worker() -> None:
        with db.parallel_reading() as conn:
            found["conn"] = conn
            conn.execute("SELECT 1").fetchone()

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    del thread
    gc.collect()
    with pytest.raises(Exception):  # noqa: B017 - as above
        found["conn"].execute("SELECT 1")


def test_the_pool_closes_with_the_archive(archive: ArchivalMemory) -> None:
    archive.search("alice", "bicycle")
    pool = archive._executor
    assert pool is not None
    workers = list(pool._threads)
    assert workers and all(worker.is_alive() for worker in workers)
    archive.close()
    assert archive._executor is None
    with pytest.raises(RuntimeError):
        pool.submit(print)
    assert not any(worker.is_alive() for worker in workers)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2"])
def test_search_threads_must_be_a_whole_number(
    db: Database, chroma_config: VectorConfig, bad: object
) -> None:
    with pytest.raises(ArchivalError, match="search_threads"):
        ArchivalMemory(db, chroma_config, HashEmbedding(), search_threads=bad)  # type: ignore[arg-type]
