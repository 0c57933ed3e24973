"""Shared fixtures: every test gets its own HOME and a clean memory-agent environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory_agent import MemoryManager, Settings

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

_OUR_VARIABLES = (
    "PERSIST_DIRECTORY", "AGENT_ID", "AGENT_INSTANCE_ID", "MODEL_NAME", "DEFAULT_BLOCK_LIMIT",
    "MEMORY_CHARACTER_LIMITS", "MEMORY_SHARED_BLOCKS", "MEMORY_HYBRID_SEARCH", "MEMORY_PERSONA",
    "MEMORY_HUMAN", "CHROMA_HOST", "CHROMA_PORT", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
)


def pytest_report_header() -> str:
    """The SDK version every run was made with (the seams in memory_agent.sdk_seams depend on it)."""
    from memory_agent.sdk_seams import sdk_version

    return f"claude-agent-sdk {sdk_version()}"


@pytest.fixture(autouse=True)
def isolated_environment(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the developer's HOME, ~/.memory_agent or exported settings."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for name in [*_OUR_VARIABLES, *(n for n in os.environ if n.startswith("COMPACTION_"))]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANONYMIZED_TELEMETRY", "False")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.from_env({"PERSIST_DIRECTORY": str(tmp_path / "store")}, env_file=None)


@pytest.fixture
def memory(settings: Settings) -> MemoryManager:
    manager = MemoryManager(agent_id="agent-a", settings=settings)
    yield manager
    manager.close()


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared test data not found at {SHARED_DATA} (clone with ../shared beside it)")
    return SHARED_DATA
