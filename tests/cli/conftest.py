"""Fixtures for CLI tests: a CliRunner bound to a fresh storage dir, real SQLite underneath."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from backends import backend_environ
from click.testing import CliRunner, Result

from memory_agent import MemoryManager, Settings
from memory_agent.cli import cli

Invoke = Callable[..., Result]


@pytest.fixture
def storage(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def run(storage: Path, request: pytest.FixtureRequest) -> Invoke:
    """Run `memory-agent --storage-dir STORAGE ARGS...`; never lets an exception escape unseen.

    On PostgreSQL (the `backend` fixture set MEMORY_DATABASE_URL) another storage dir stands for
    another deployment, so it gets a database of its own, named with --database-url."""
    databases: dict[Path, str] = {}

    def database_of(directory: Path) -> list[str]:
        if directory == storage or not os.environ.get("MEMORY_DATABASE_URL"):
            return []
        if directory not in databases:
            databases[directory] = request.getfixturevalue("postgres_cluster").database_url("cli")
        return ["--database-url", databases[directory]]

    def invoke(
        *args: str,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
        storage_dir: Path | None = None,
    ) -> Result:
        runner = CliRunner()
        directory = storage_dir or storage
        result = runner.invoke(
            cli,
            ["--storage-dir", str(directory), *database_of(directory), *args],
            input=input,
            env=dict(env or {}),
            catch_exceptions=True,
        )
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise AssertionError(
                f"memory-agent {' '.join(args)} raised instead of reporting an error:\n"
                f"{result.output}"
            ) from result.exception
        return result

    return invoke


@pytest.fixture
def initialised(run: Invoke) -> Invoke:
    """A storage dir with one agent, 'ada', the default."""
    result = run("--agent", "ada", "init")
    assert result.exit_code == 0, result.output
    return run


@pytest.fixture
def open_store(storage: Path) -> Callable[[str], MemoryManager]:
    """Open the test's storage dir in Python, as an agent's own code would."""
    settings = Settings.from_env(
        backend_environ({"PERSIST_DIRECTORY": str(storage)}), env_file=None
    )
    return lambda agent_id: MemoryManager(agent_id=agent_id, settings=settings)


@pytest.fixture
def error_of() -> Callable[[Result], str]:
    """The one line a failed command printed on stderr (and it failed, without a traceback)."""

    def error_line(result: Result) -> str:
        assert result.exit_code != 0, result.output
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
        return lines[0]

    return error_line
