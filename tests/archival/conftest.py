"""Fixtures for archival memory: real SQLite, real (embedded) Chroma, and the real MiniLM model
loaded once per session; `HashEmbedding` where a test is about storage rather than meaning."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from archival_helpers import HashEmbedding

from memory_agent import MemoryManager, Settings
from memory_agent.archival import ArchivalMemory, ChromaVectorStore, VectorConfig
from memory_agent.store.database import Database


@pytest.fixture(scope="session")
def minilm():  # type: ignore[no-untyped-def]
    """The default embedding function, loaded once for the whole session (it takes seconds)."""
    from memory_agent.archival import MiniLMEmbeddingFunction

    function = MiniLMEmbeddingFunction()
    function.load()
    return function


@pytest.fixture
def storage(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def manager(storage: Path) -> Iterator[MemoryManager]:
    """A storage dir with two agents, alice and bob."""
    # The database URL is set when the test runs under the `backend` fixture's PostgreSQL param.
    settings = Settings(
        persist_directory=storage, database_url=os.environ.get("MEMORY_DATABASE_URL")
    )
    memory = MemoryManager(agent_id="alice", settings=settings)
    memory.ensure_agent("bob")
    yield memory
    memory.close()


@pytest.fixture
def db(manager: MemoryManager) -> Database:
    return manager.db


@pytest.fixture
def chroma_config(storage: Path) -> VectorConfig:
    return VectorConfig(path=storage / "chroma")


@pytest.fixture
def archival(db: Database, chroma_config: VectorConfig, minilm) -> ArchivalMemory:  # type: ignore[no-untyped-def]
    """Archival memory as shipped: embedded Chroma and all-MiniLM-L6-v2."""
    return ArchivalMemory(db, chroma_config, minilm)


@pytest.fixture
def hashed(db: Database, chroma_config: VectorConfig) -> ArchivalMemory:
    """Archival memory on real Chroma with the fast hashing embedding."""
    return ArchivalMemory(db, chroma_config, HashEmbedding())


@pytest.fixture
def chroma_store(chroma_config: VectorConfig) -> ChromaVectorStore:
    return ChromaVectorStore(chroma_config, "archival_test")
