"""Whole passages in the vector index: a passage longer than the model's window is embedded as
overlapping chunks, found by meaning anywhere in its text, and deleted, reconciled and re-embedded
as one passage (`memory_agent/archival/chunks.py`). Real Chroma, the real MiniLM model, both
database backends."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from archival_helpers import HashEmbedding
from hypothesis import given
from hypothesis import strategies as st
from old_schemas import postgres_schema_at, sqlite_schema_at

from memory_agent import MemoryManager
from memory_agent.archival import ArchivalMemory, VectorConfig, VectorMatch, VectorRecord
from memory_agent.archival.chunks import (
    CHUNK_MARK,
    best_per_passage,
    chunk_id,
    passage_of,
    vector_ids,
)
from memory_agent.archival.embeddings import (
    CHUNK_TOKENS,
    MAX_TOKENS,
    MiniLMEmbeddingFunction,
    _windows,
)
from memory_agent.archival.rebuild import reembed_truncated
from memory_agent.archival.sentences import sentence_texts
from memory_agent.maintenance.health import check_whole_passages
from memory_agent.store.database import Database
from memory_agent.store.migrations import MIGRATIONS, m009_issue25_whole_passage_vectors

FILLER = (
    "The old harbour town grew around a fishing fleet and a small shipyard. Its streets climb from "
    "the quay "
    "to a church on the hill, and the market still opens every Saturday morning with bread, "
    "cheese, apples "
    "and nets for sale. In the nineteenth century the railway arrived, the fleet shrank, and the "
    "shipyard "
    "turned to repairing ferries. Summer visitors now walk the cliff path, photograph the "
    "lighthouse and "
    "eat chips on the harbour wall while gulls circle overhead. "
)
FACT = "My sister Margaret adopted a three-legged greyhound called Biscuit last spring."
PARAPHRASE = "Who in my family got a new dog?"
OTHERS = [
    "We repainted the kitchen cupboards a pale green colour over the weekend.",
    "The quarterly budget meeting moved to Thursday afternoon at three.",
    "I finally learned to bake sourdough bread with a crunchy crust.",
    "Our train to Vienna was delayed by two hours because of snow.",
    "The dentist said my teeth are fine but I should floss more often.",
    "Tom is training for a half marathon along the river in October.",
]


def long_passage() -> str:
    """More than 300 words before the one sentence stating the fact."""
    text = FILLER * 5
    assert len(text.split()) > 300
    return text + FACT + " " + FILLER


# ----- chunk ids and best-per-passage (no model) ------------------------------------------------


@given(st.text(min_size=1), st.integers(min_value=0, max_value=10_000))
def test_a_chunk_id_names_its_passage(passage_id: str, number: int) -> None:
    if CHUNK_MARK in passage_id:  # never stored: the importer replaces such ids
        return
    assert passage_of(chunk_id(passage_id, number)) == passage_id
    assert vector_ids(passage_id, 3) == [
        passage_id,
        f"{passage_id}{CHUNK_MARK}1",
        f"{passage_id}{CHUNK_MARK}2",
    ]
    assert vector_ids(passage_id, 0) == [passage_id]  # one vector from before chunking


def test_best_per_passage_keeps_each_passages_best_chunk_and_widens_until_it_has_enough() -> None:
    ranking = [
        VectorMatch(chunk_id("a", 2), 0.9),
        VectorMatch(chunk_id("a", 0), 0.8),
        VectorMatch("b", 0.7),
        VectorMatch(chunk_id("a", 1), 0.6),
        VectorMatch("c", 0.5),
        VectorMatch("d", 0.4),
    ]
    asked: list[int] = []

    def fetch(depth: int) -> list[VectorMatch]:
        asked.append(depth)
        return ranking[:depth]

    assert best_per_passage(fetch, 3) == [
        VectorMatch("a", 0.9),
        VectorMatch("b", 0.7),
        VectorMatch("c", 0.5),
    ]
    assert asked == [3, 6]  # three chunks held only two passages, so it asked again, wider
    asked.clear()
    assert [m.passage_id for m in best_per_passage(fetch, 10)] == ["a", "b", "c", "d"]
    assert asked == [10]  # a list shorter than asked for is everything there is


# ----- the windows of the model ------------------------------------------------------------------


@given(
    st.lists(st.sampled_from(["w", "##p"]), min_size=1, max_size=900),
    st.integers(min_value=2, max_value=254),
    st.data(),
)
def test_windows_cover_every_word_piece_in_order_within_the_window(
    pieces: list[str], size: int, data: st.DataObject
) -> None:
    overlap = data.draw(st.integers(min_value=0, max_value=size - 1))
    ids = [101, *range(1000, 1000 + len(pieces)), 102]
    windows = _windows(ids, ["[CLS]", *pieces, "[SEP]"], size, overlap)
    if len(ids) <= MAX_TOKENS:  # fits the model: one window, as before chunking
        assert windows == [ids]
        return
    assert all(
        window[0] == 101 and window[-1] == 102 and len(window) - 2 <= size for window in windows
    )
    covered = [piece for window in windows for piece in window[1:-1]]
    assert sorted(set(covered)) == ids[1:-1]  # nothing left out
    starts = [window[1] for window in windows]
    assert starts == sorted(set(starts))  # each window starts later than the one before
    assert windows[-1][-2] == ids[-2]


def test_a_text_that_fits_has_the_one_vector_it_always_had(minilm: MiniLMEmbeddingFunction) -> None:
    text = OTHERS[0]
    [whole] = minilm.embed_chunks([text])
    assert len(whole) == 1
    assert np.allclose(whole[0], minilm([text])[0])


def test_a_long_text_is_embedded_whole_in_windows(minilm: MiniLMEmbeddingFunction) -> None:
    text = long_passage()
    pieces = len(minilm._loaded().whole_tokenizer.encode(text).ids)
    assert pieces > 2 * MAX_TOKENS
    [chunks] = minilm.embed_chunks([text])
    assert len(chunks) >= pieces // CHUNK_TOKENS + 1
    query = minilm.embed_query([PARAPHRASE])[0]
    truncated = float(
        np.dot(minilm([text])[0], query)
    )  # what embedding the first window alone gives
    assert max(float(np.dot(chunk, query)) for chunk in chunks) > truncated + 0.1


def test_chunk_settings_are_checked(minilm: MiniLMEmbeddingFunction) -> None:
    from memory_agent import ArchivalError

    with pytest.raises(ArchivalError, match="chunk_tokens"):
        MiniLMEmbeddingFunction(chunk_tokens=300)
    with pytest.raises(ArchivalError, match="chunk_overlap"):
        MiniLMEmbeddingFunction(chunk_tokens=100, chunk_overlap=100)
    assert (
        MiniLMEmbeddingFunction.build_from_config(minilm.get_config()).get_config()
        == minilm.get_config()
    )


# ----- archival memory, both backends -----------------------------------------------------------


@pytest.mark.usefixtures("backend")
def test_a_fact_past_the_first_300_words_is_found_by_a_paraphrase(archival: ArchivalMemory) -> None:
    long_id = archival.insert("alice", long_passage())
    archival.insert_many("alice", [*OTHERS, FILLER * 2])
    passage = archival.get("alice", long_id)
    assert passage is not None and passage.vector_chunks > 1
    # every other passage: one vector, and one per sentence when it has several (sentences.py)
    others = sum(1 + len(sentence_texts(text)) for text in [*OTHERS, FILLER * 2])
    assert len(archival.index.store.ids("alice")) == others + passage.vector_chunks
    hits = archival.search("alice", PARAPHRASE, limit=3, mode="vector")
    assert hits[0].passage_id == long_id, [hit.content[:60] for hit in hits]
    assert len({hit.passage_id for hit in hits}) == len(hits)  # one hit per passage, not per chunk
    hybrid = archival.search("alice", PARAPHRASE, limit=3, mode="hybrid")
    assert hybrid[0].passage_id == long_id


@pytest.mark.usefixtures("backend")
def test_deleting_a_passage_removes_all_its_chunks(archival: ArchivalMemory) -> None:
    long_id = archival.insert("alice", long_passage())
    short_id = archival.insert("alice", OTHERS[0])
    assert len(archival.index.store.ids("alice")) > 2
    archival.delete("alice", long_id)
    assert archival.index.store.ids("alice") == {short_id}
    assert archival.reconcile(full=True).ok


@pytest.mark.usefixtures("backend")
def test_reconcile_restores_a_lost_chunk_and_drops_stray_ones(archival: ArchivalMemory) -> None:
    long_id = archival.insert("alice", long_passage())
    gone_id = archival.insert("alice", FILLER * 4)
    passage = archival.get("alice", long_id)
    assert passage is not None
    store = archival.index.store
    store.delete("alice", [chunk_id(long_id, 1)])  # a chunk lost by the vector store
    with (
        archival.db.transaction() as conn
    ):  # a passage deleted behind the store's back: its chunks are orphans
        conn.execute("DELETE FROM passages WHERE passage_id = ?", (gone_id,))
    stray = chunk_id(long_id, passage.vector_chunks + 3)  # a chunk the passage no longer has
    store.upsert([VectorRecord(stray, "alice", [1.0] + [0.0] * 383, (), 0.0)])
    report = archival.reconcile()
    assert report.ok and report.compared_ids
    assert report.missing_vectors == 1 and report.embedded == 1
    assert report.removed_vectors >= 2  # the deleted passage's chunks and the stray one
    assert store.ids("alice") == set(vector_ids(long_id, passage.vector_chunks))
    assert not archival.reconcile().compared_ids  # the counts agree again


@pytest.mark.usefixtures("backend")
def test_pending_long_passages_are_embedded_whole_by_reconcile(
    db: Database, chroma_config: VectorConfig, minilm: MiniLMEmbeddingFunction
) -> None:
    down = ArchivalMemory(db, chroma_config, _Broken())
    long_id = down.insert("alice", long_passage())  # stored; its vectors are owed
    assert down.pending_count() == 1
    archival = ArchivalMemory(db, chroma_config, minilm)
    assert archival.reconcile().ok
    passage = archival.get("alice", long_id)
    assert passage is not None and passage.vector_state == "indexed" and passage.vector_chunks > 1
    assert archival.search("alice", PARAPHRASE, limit=1, mode="vector")[0].passage_id == long_id


@pytest.mark.usefixtures("backend")
def test_passages_embedded_from_their_first_window_are_found_and_re_embedded_whole(
    archival: ArchivalMemory,
) -> None:
    long_id = archival.insert("alice", long_passage())
    archival.insert("alice", OTHERS[1])
    # What migration m006 leaves of a long passage embedded before chunking: one vector, marked 0.
    archival.index.store.delete("alice", vector_ids(long_id, 99)[1:])
    with archival.db.transaction() as conn:
        conn.execute("UPDATE passages SET vector_chunks = 0 WHERE passage_id = ?", (long_id,))
    assert archival.reconcile().ok  # one vector under the passage id is what a 0 expects
    check = check_whole_passages(archival)
    assert check.status == "warn" and check.detail.startswith("1 passages")
    shown: list[tuple[int, int]] = []
    report = reembed_truncated(archival, lambda done, total: shown.append((done, total)))
    assert report.ok and report.embedded == 1 and shown[-1] == (1, 1)
    passage = archival.get("alice", long_id)
    assert passage is not None and passage.vector_chunks > 1
    assert len(archival.index.store.ids("alice")) == passage.vector_chunks + 1
    assert check_whole_passages(archival).status == "ok"


@pytest.mark.usefixtures("backend")
def test_a_function_without_windows_embeds_each_passage_once(hashed: ArchivalMemory) -> None:
    long_id = hashed.insert("alice", long_passage())
    assert hashed.index.store.ids("alice") == {long_id}
    passage = hashed.get("alice", long_id)
    assert passage is not None and passage.vector_chunks == 1


@pytest.mark.sqlite_only(
    reason="builds a SQLite file at the schema before m006; the PostgreSQL twin is below"
)
def test_the_migration_marks_long_passages_embedded_before_chunking(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    before = MIGRATIONS.index(m009_issue25_whole_passage_vectors)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    sqlite_schema_at(conn, before)
    _old_passages(conn.execute)
    conn.execute("COMMIT")
    conn.close()
    with (
        MemoryManager(storage_dir=tmp_path, agent_id="old") as memory,
        memory.db.reading() as reading,
    ):
        rows = dict(reading.execute("SELECT passage_id, vector_chunks FROM passages").fetchall())
    assert rows == {"short": 1, "long": 0}


@pytest.mark.postgres
def test_the_postgres_migration_marks_long_passages_embedded_before_chunking(
    postgres_url: str, tmp_path: Path
) -> None:
    import psycopg

    from memory_agent.store.pg_schema import PG_MIGRATIONS, p007_whole_passage_vectors

    before = PG_MIGRATIONS.index(p007_whole_passage_vectors)
    with psycopg.connect(postgres_url) as conn:
        postgres_schema_at(conn, before)
        _old_passages(lambda sql, params=(): conn.execute(sql.replace("?", "%s"), params))
    with (
        MemoryManager(tmp_path, agent_id="old", database_url=postgres_url) as memory,
        memory.db.reading() as reading,
    ):
        rows = dict(reading.execute("SELECT passage_id, vector_chunks FROM passages").fetchall())
    assert rows == {"short": 1, "long": 0}


def _old_passages(execute) -> None:  # type: ignore[no-untyped-def]  # sqlite3's or psycopg's execute
    now = "2024-01-01T00:00:00.000000+00:00"
    execute("INSERT INTO agents (agent_id, created_at) VALUES ('old', ?)", (now,))
    for passage_id, content in (("short", OTHERS[0]), ("long", long_passage())):
        execute(
            "INSERT INTO passages (passage_id, agent_id, content, content_hash, created_at, "
            "vector_state)"
            " VALUES (?, 'old', ?, ?, ?, 'indexed')",
            (passage_id, content, passage_id, now),
        )


class _Broken(HashEmbedding):
    """An embedding function that fails, so inserted passages stay pending."""

    def __call__(self, input):  # type: ignore[no-untyped-def,override]  # Chroma's signature
        raise RuntimeError("model down (test)")
