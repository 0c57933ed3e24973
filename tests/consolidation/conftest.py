"""Fixtures for consolidation tests: a manager with small blocks, a witness store for snapshots."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from consolidation_helpers import settings_for

from compaction import CompactionSettings
from memory_agent import MemoryManager
from memory_agent.store.backend import open_store
from memory_agent.store.snapshot import Snapshot, store_snapshot
from memory_agent.testing import ScriptedMessagesServer


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[MemoryManager]:
    with MemoryManager(agent_id="ada", settings=settings_for(tmp_path)) as manager:
        yield manager


@pytest.fixture
def server() -> Iterator[ScriptedMessagesServer]:
    with ScriptedMessagesServer() as running:
        yield running


@pytest.fixture
def model_memory(tmp_path: Path, server: ScriptedMessagesServer) -> Iterator[MemoryManager]:
    """A manager whose compaction model is the scripted server, with quick retries."""
    settings = settings_for(tmp_path, ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="k")
    quick = CompactionSettings(max_attempts=2, retry_initial_wait=0.01, retry_max_wait=0.02)
    with MemoryManager(agent_id="ada", settings=settings, compaction_settings=quick) as manager:
        yield manager


@pytest.fixture
def snapshot(memory: MemoryManager) -> Iterator[Callable[[], Snapshot]]:
    """Every row of the store, read through a store opened separately from the manager's."""
    witness = open_store(memory.storage_dir, memory.settings.database_url)
    yield lambda: store_snapshot(witness)
    witness.close()
