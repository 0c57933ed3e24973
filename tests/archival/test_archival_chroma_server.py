"""Archival memory against a real Chroma server (`chroma run`), through HttpClient mode."""

from __future__ import annotations

from pathlib import Path

import pytest
from archival_helpers import HashEmbedding

from memory_agent import Settings
from memory_agent.archival import ArchivalMemory, VectorConfig
from memory_agent.store.database import Database
from memory_agent.testing.chroma_server import ChromaServer

pytestmark = pytest.mark.usefixtures("backend")


def test_insert_and_search_through_a_chroma_server(
    chroma_server: ChromaServer, db: Database, tmp_path: Path
) -> None:
    port = chroma_server.port
    settings = Settings(
        persist_directory=tmp_path / "store", chroma_host="127.0.0.1", chroma_port=port
    )
    config = VectorConfig.from_settings(settings)
    assert config.host == "127.0.0.1" and config.location == f"http://127.0.0.1:{port}"
    archival = ArchivalMemory(db, config, HashEmbedding())
    first = archival.insert(
        "alice",
        "The server keeps the vectors of archival memory.",
        tags=["infra"],
        created_at="2024-06-01",
    )
    archival.insert_many(
        "alice", ["Unrelated note about gardening tomatoes.", "Another note about bread baking."]
    )
    archival.insert("bob", "Bob's note: the server keeps vectors too.")
    assert not (tmp_path / "store" / "chroma").exists()  # nothing embedded when a host is set

    for mode in ("vector", "hybrid"):
        hits = archival.search("alice", "server keeps vectors", limit=3, mode=mode)  # type: ignore[arg-type]
        assert hits[0].passage_id == first and all(h.passage.agent_id == "alice" for h in hits)
    assert [
        h.passage_id
        for h in archival.search(
            "alice", "vectors", tags=["infra"], end_date="2024-06-01", mode="vector"
        )
    ] == [first]
    assert archival.reconcile(full=True).ok
    archival.delete("alice", first)
    assert first not in archival.index.store.ids("alice")


def test_a_server_that_is_down_leaves_inserts_pending(db: Database) -> None:
    archival = ArchivalMemory(
        db,
        VectorConfig(path=Path("unused"), host="127.0.0.1", port=ChromaServer(Path("unused")).port),
        HashEmbedding(),
    )
    passage_id = archival.insert("alice", "Written while the server is down.")
    assert archival.get("alice", passage_id).vector_state == "pending"
    assert [h.passage_id for h in archival.search("alice", "server down")] == [passage_id]
    assert archival.reconcile().errors
