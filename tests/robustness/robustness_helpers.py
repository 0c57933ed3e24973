"""Helpers for hostile-input and broken-environment tests: the tests' hashing embedding, a
snapshot of a store (see memory_agent.store.snapshot) so that a refused call can be shown
to have changed nothing, on SQLite and on PostgreSQL alike, and the CLI's one-line errors."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "archival"))

from archival_helpers import HashEmbedding
from click.testing import CliRunner, Result

from memory_agent.cli import cli
from memory_agent.store.backend import open_store
from memory_agent.store.database import Database
from memory_agent.store.snapshot import Snapshot, store_snapshot

__all__ = ["HashEmbedding", "cli_run", "observer", "one_line_error", "state_of"]


def observer(storage: Path, database_url: str | None = None) -> Database:
    """A second, separate connection to the store of `storage` (the backend the test runs on,
    from MEMORY_DATABASE_URL, unless a URL is given), to take snapshots through."""
    return open_store(storage, database_url or os.environ.get("MEMORY_DATABASE_URL"))


def state_of(storage: Path) -> Snapshot:
    """Every row of the store of `storage`, read through a connection of its own."""
    with observer(storage) as db:
        return store_snapshot(db)


def cli_run(*args: str) -> Result:
    """The CLI run in-process; whatever happens, no exception and no traceback escape it."""
    result = CliRunner().invoke(cli, list(args), catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output + result.stderr
    return result


def one_line_error(result: Result) -> str:
    """The CLI's error line, checked to be the only line on stderr, with exit status 1."""
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]
