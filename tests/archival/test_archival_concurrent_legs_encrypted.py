"""Hybrid search's concurrent legs on an encrypted store: each worker's own reading connection is
opened with the store's key."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_agent import MemoryManager, Settings

NOTES = [
    "Alice repaired the red bicycle in Lisbon with Tom after a long week.",
    "Tom painted a mural at the community garden for the first time.",
    "The bicycle needed a new chain; Alice fixed it in the garage.",
]


@pytest.mark.sqlite_only(reason="SQLCipher encrypts SQLite files; PostgreSQL has no such store")
def test_an_encrypted_store_searches_with_keyed_parallel_readers(tmp_path: Path) -> None:
    pytest.importorskip("sqlcipher3", reason="the encryption extra is not installed")
    settings = Settings.from_env(
        {"PERSIST_DIRECTORY": str(tmp_path), "MEMORY_ENCRYPTION_KEY": "a long test passphrase"},
        env_file=None,
    )
    with MemoryManager(agent_id="alice", settings=settings) as memory:
        for note in NOTES:
            memory.archival_memory_insert(note)
        hits = memory.archival_memory_search("Who repaired the bicycle?", mode="hybrid")
        assert hits and not any(hit.degraded for hit in hits)
        assert hits[0].keyword_rank is not None and hits[0].vector_rank is not None
