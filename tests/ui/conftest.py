"""Fixtures for the inspector's HTTP tests: a seeded agent and a TestClient on the bound address."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from inspector_helpers import settings_for

from memory_agent import MemoryManager


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[MemoryManager]:
    """Agent 'ada' with a nested on-demand block, a read-only block and one shared with 'bob'."""
    manager = MemoryManager(agent_id="ada", settings=settings_for(tmp_path / "store"))
    manager.create_block("projects/alpha.md", "Alpha ships in May.\nOwner: Dana.", in_prompt=False)
    manager.create_block("rules", "Be brief.", read_only=True)
    manager.join_shared_block("team", agent_id="ada", value="The team meets on Mondays.")
    manager.ensure_agent("bob")
    manager.join_shared_block("team", agent_id="bob")
    yield manager
    manager.close()
