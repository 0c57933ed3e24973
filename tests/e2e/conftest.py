"""Fixtures for end-to-end tests: the real SDK and CLI against the scripted Messages API server.

`storage_settings` follows the test's backend: a test module that uses the `backend` fixture
(`pytestmark = pytest.mark.usefixtures("backend")`) runs once on SQLite and once on PostgreSQL,
and its agents, managers and CLI processes all store to that backend.
"""

from __future__ import annotations

import dataclasses
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from backends import backend_environ
from claude_agent_sdk import ClaudeAgentOptions

from memory_agent import MemoryManager, Settings
from memory_agent.testing import ScriptedMessagesServer


@pytest.fixture
def server() -> Iterator[ScriptedMessagesServer]:
    with ScriptedMessagesServer() as running:
        yield running


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    """The agent's working directory (the SDK keys stored sessions by it)."""
    directory = tmp_path / "project"
    directory.mkdir()
    return directory


@pytest.fixture
def storage_settings(tmp_path: Path, server: ScriptedMessagesServer) -> Settings:
    return Settings.from_env(
        backend_environ(
            {
                "PERSIST_DIRECTORY": str(tmp_path / "store"),
                "ANTHROPIC_BASE_URL": server.url,
                "ANTHROPIC_API_KEY": "test-key",
            }
        ),
        env_file=None,
    )


StoreCopier = Callable[[Settings, Path], Settings]
"""The `copy_store` fixture: the settings of a copy of a store, made at `Path`."""


@pytest.fixture
def copy_store(request: pytest.FixtureRequest) -> Iterator[StoreCopier]:
    """Copy a whole store, SDK session transcripts included: the storage dir, and on PostgreSQL
    its database too (cloned by the server, `CREATE DATABASE ... TEMPLATE`, while nothing is
    connected to it), so the copy starts exactly where the original stands."""
    made: list[str] = []

    def copy(settings: Settings, target: Path) -> Settings:
        if settings.persist_directory.exists():  # on PostgreSQL it may hold nothing, not even exist
            shutil.copytree(settings.persist_directory, target)
        if not settings.database_url:
            return dataclasses.replace(settings, persist_directory=target)
        import psycopg  # only here: the postgres extra is optional, and SQLite runs need none of it

        cluster = request.getfixturevalue("postgres_cluster")
        name = f"copy_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(cluster.url(), autocommit=True) as admin:
            admin.execute(
                f'CREATE DATABASE "{name}" TEMPLATE "{settings.database_url.rsplit("/", 1)[1]}"'
            )
        made.append(cluster.url(name))
        return dataclasses.replace(settings, persist_directory=target, database_url=made[-1])

    yield copy
    for url in made:
        request.getfixturevalue("postgres_cluster").drop(url)


@pytest.fixture
def agent_memory(storage_settings: Settings) -> Iterator[MemoryManager]:
    with MemoryManager(agent_id="e2e-agent", settings=storage_settings) as manager:
        yield manager


@pytest.fixture
def options(server: ScriptedMessagesServer, project_dir: Path) -> ClaudeAgentOptions:
    """Plain SDK options a user would write: a system prompt, no built-in tools, our server."""
    return ClaudeAgentOptions(
        env=server.env(),
        system_prompt="You are a careful assistant.",
        tools=[],
        cwd=str(project_dir),
    )
