"""Keyword ranking is per agent: another agent's passages never change this agent's bm25 scores."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest
from archival_helpers import HashEmbedding
from old_schemas import sqlite_schema_at

from memory_agent import MemoryManager, Settings
from memory_agent.archival import ArchivalMemory, InMemoryVectorStore, NewPassage
from memory_agent.maintenance.admin import delete_agent
from memory_agent.maintenance.health import check_fts, rebuild_fts
from memory_agent.store.passage_fts import agent_fts_table, all_fts_tables

PEOPLE = ["Caroline", "Melanie", "Jon", "Gina", "Tim", "John", "Maria", "Joanna", "Nate", "Audrey"]
THINGS = [
    "pottery class",
    "camping trip",
    "adoption agency",
    "dance studio",
    "bakery",
    "painting",
    "marathon",
    "support group",
    "guitar lessons",
    "garden",
    "new job",
    "bookshop",
]
FEELINGS = ["loved", "was nervous about", "talked about", "planned", "finished", "signed up for"]
QUERIES = [
    "When did Caroline go to the support group?",
    "What did Melanie paint?",
    "pottery class with the kids",
    "Jon dance studio",
    "Who signed up for the marathon?",
]


def _notes(count: int, seed: int, prefix: str = "") -> list[NewPassage]:
    rng = random.Random(seed)
    return [
        NewPassage(
            f"{prefix}{rng.choice(PEOPLE)} {rng.choice(FEELINGS)} the {rng.choice(THINGS)}"
            f" {rng.choice(['today', 'last week', 'in May', 'yesterday', 'with friends'])} (#{n})"
        )
        for n in range(count)
    ]


def _ranking(archival: ArchivalMemory, agent: str) -> list[list[tuple[str, float | None]]]:
    return [
        [
            (hit.passage_id, hit.keyword_score)
            for hit in archival.search(agent, query, limit=20, mode="keyword")
        ]
        for query in QUERIES
    ]


def test_ranks_and_scores_unchanged_when_another_agent_adds_10000_passages(
    manager: MemoryManager, backend: str
) -> None:
    # On both backends; the rest of this module is about SQLite's per-agent FTS5 tables
    # (PostgreSQL's tsvector is a column of `passages` and its ranking uses no corpus statistics).
    archival = ArchivalMemory(
        manager.db, embedding_function=HashEmbedding(), vector_store=InMemoryVectorStore()
    )
    archival.insert_many("alice", _notes(300, seed=1))
    before = _ranking(archival, "alice")
    assert all(len(hits) == 20 for hits in before)
    # Bob's notes share Alice's vocabulary (names, activities), so under corpus-wide statistics
    # every one of her query words would get a different weight and her average length would move.
    archival.insert_many("bob", _notes(10_000, seed=2, prefix="Bob wrote down that "))
    assert archival.count("bob") == 10_000
    assert _ranking(archival, "alice") == before
    bob_hits = archival.search("bob", QUERIES[0], limit=20, mode="keyword")
    assert len(bob_hits) == 20 and all(hit.passage.agent_id == "bob" for hit in bob_hits)
    # Deleting Bob's passages (one by id, then the whole agent) leaves Alice's ranking alone too.
    archival.delete("bob", bob_hits[0].passage_id)
    delete_agent(manager.db, "bob")
    assert _ranking(archival, "alice") == before
    if backend == "sqlite":
        with manager.db.reading() as conn:
            assert agent_fts_table(conn, "bob") is None and len(all_fts_tables(conn)) == 1
        assert all(check.ok for check in check_fts(manager.db))


def test_a_deleted_passage_leaves_its_agents_index(manager: MemoryManager, backend: str) -> None:
    archival = ArchivalMemory(
        manager.db, embedding_function=HashEmbedding(), vector_store=InMemoryVectorStore()
    )
    kept = archival.insert("alice", "The lighthouse keeper paints gulls")
    gone = archival.insert("alice", "The lighthouse was repainted in June")
    archival.delete("alice", gone)
    assert [hit.passage_id for hit in archival.search("alice", "lighthouse", mode="keyword")] == [
        kept
    ]
    with manager.db.transaction() as conn:  # a delete that bypasses the library is caught too
        conn.execute("DELETE FROM passages WHERE passage_id = ?", (kept,))
    assert archival.search("alice", "lighthouse", mode="keyword") == []
    if (
        backend == "sqlite"
    ):  # PostgreSQL's tsvector is a column of the row: there is no index to check
        assert all(check.ok for check in check_fts(manager.db))


@pytest.mark.sqlite_only(
    reason="upgrades a version-3 SQLite file into per-agent FTS5 tables; PostgreSQL's "
    "schema began at SQLite's version 5 and has no such tables"
)
def test_version_3_passages_move_into_per_agent_indexes(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    sqlite_schema_at(conn, 3)
    now = "2024-01-01T00:00:00.000000+00:00"
    for agent, texts in {
        "ada": ["Ada keeps bees", "Ada sold honey"],
        "bo": ["Bo keeps goats"],
    }.items():
        conn.execute("INSERT INTO agents (agent_id, created_at) VALUES (?, ?)", (agent, now))
        for number, text in enumerate(texts):
            conn.execute(
                "INSERT INTO passages (passage_id, agent_id, content, content_hash, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (f"{agent}-{number}", agent, text, f"h{agent}{number}", now),
            )
    conn.execute("COMMIT")
    conn.close()
    with MemoryManager(agent_id="ada", settings=Settings(persist_directory=tmp_path)) as memory:
        archival = ArchivalMemory(
            memory.db, embedding_function=HashEmbedding(), vector_store=InMemoryVectorStore()
        )
        assert [hit.passage_id for hit in archival.search("ada", "keeps", mode="keyword")] == [
            "ada-0"
        ]
        assert [hit.passage_id for hit in archival.search("bo", "keeps", mode="keyword")] == [
            "bo-0"
        ]
        assert all(check.ok for check in check_fts(memory.db))


@pytest.mark.sqlite_only(
    reason="corrupts an agent's FTS5 table, which PostgreSQL does not have (its tsvector "
    "is a generated column of `passages`, kept by the database)"
)
def test_a_drifted_agent_index_is_found_and_rebuilt(manager: MemoryManager) -> None:
    archival = ArchivalMemory(
        manager.db, embedding_function=HashEmbedding(), vector_store=InMemoryVectorStore()
    )
    kept = archival.insert("alice", "The lighthouse keeper paints gulls")
    archival.insert("bob", "Bob's lighthouse has a red lamp")
    with manager.db.transaction() as conn:
        table = agent_fts_table(conn, "alice")
        conn.execute(f"INSERT INTO {table}(rowid, content) VALUES (4242, 'ghost lighthouse')")
    checks = {check.name: check for check in check_fts(manager.db)}
    assert not checks["passages_fts index"].ok and checks["messages_fts index"].ok
    assert all(check.ok for check in rebuild_fts(manager.db, ("passages_fts",)))
    assert all(check.ok for check in check_fts(manager.db))
    assert [hit.passage_id for hit in archival.search("alice", "lighthouse", mode="keyword")] == [
        kept
    ]
