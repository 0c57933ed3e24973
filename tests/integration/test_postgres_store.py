"""The PostgreSQL store itself: schema parity with SQLite, the write lock across connections,
errors that keep secrets out, reconnecting. (The SDK's session-store conformance suite runs on
both backends in tests/unit/test_session_store.py.)"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_agent import MemoryManager
from memory_agent.errors import ConfigurationError, StorageError
from memory_agent.privacy.redaction import redact_url
from memory_agent.store.backend import open_store
from memory_agent.store.database import Database
from memory_agent.store.pg_schema import PG_SCHEMA_VERSION
from memory_agent.store.postgres import PostgresDatabase
from memory_agent.testing.postgres_cluster import PostgresCluster

# Columns PostgreSQL has for its own reasons (see store.pg_schema): the generated full-text
# vectors and the identities standing in for SQLite's implicit rowid.
PG_ONLY_COLUMNS = {
    ("messages", "text_tsv"),
    ("passages", "content_tsv"),
    ("blocks", "rowid"),
    ("agent_blocks", "rowid"),
}
# SQLite-only tables: FTS5 (its shadow tables and views) and the per-agent FTS5 registry.
SQLITE_ONLY_TABLES = {"passage_fts_tables", "sqlite_sequence"}

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg(postgres_url: str, tmp_path: Path) -> Iterator[PostgresDatabase]:
    with PostgresDatabase(postgres_url, tmp_path) as db:
        yield db


def _sqlite_columns(tmp_path: Path) -> set[tuple[str, str]]:
    with Database(tmp_path / "lite" / "memory.db") as db, db.reading() as conn:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '%fts%'"
            )
        ]
        return {
            (table, row[1])
            for table in tables
            if table not in SQLITE_ONLY_TABLES
            for row in conn.execute(f"PRAGMA table_info({table})")
        }


def test_schema_has_the_same_tables_and_columns_as_sqlite(
    pg: PostgresDatabase, tmp_path: Path
) -> None:
    with pg.reading() as conn:
        columns = {
            (row[0], row[1])
            for row in conn.execute(
                "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema "
                "= 'public'"
                " AND table_name != 'memory_agent_schema'"
            )
        }
    assert columns - PG_ONLY_COLUMNS == _sqlite_columns(tmp_path)
    assert pg.schema_version() == PG_SCHEMA_VERSION


def test_a_second_open_does_not_migrate_again(postgres_url: str, tmp_path: Path) -> None:
    with (
        PostgresDatabase(postgres_url, tmp_path) as first,
        PostgresDatabase(postgres_url, tmp_path) as second,
    ):
        assert first.schema_version() == second.schema_version() == PG_SCHEMA_VERSION


def test_a_writer_waits_for_another_hosts_transaction(postgres_url: str, tmp_path: Path) -> None:
    # Two connections stand for two hosts: the second's write transaction cannot start its
    # read-modify-write until the first commits, so it reads the committed value.
    with (
        MemoryManager(tmp_path / "a", agent_id="a", database_url=postgres_url) as one,
        MemoryManager(tmp_path / "b", agent_id="a", database_url=postgres_url) as two,
    ):
        entered = threading.Event()
        seen: list[str] = []

        def second_host() -> None:
            entered.wait(10)
            with two.db.transaction() as conn:
                seen.append(
                    conn.execute("SELECT value FROM meta WHERE key = 'probe'").fetchone()[0]
                )

        thread = threading.Thread(target=second_host)
        thread.start()
        with one.db.transaction() as conn:
            conn.execute("INSERT INTO meta (key, value) VALUES ('probe', 'first')")
            entered.set()
            _wait_until_a_session_waits_for_a_lock(postgres_url)  # the other host, meanwhile
            assert not seen
        thread.join(10)
        assert seen == ["first"]


def _wait_until_a_session_waits_for_a_lock(url: str) -> None:
    """Return once a session of the database waits for a lock (the server says so): no fixed
    pause that a loaded machine might outlast before the other host even asks."""
    import psycopg

    deadline = time.monotonic() + 10
    with psycopg.connect(url, autocommit=True) as watcher:
        while not watcher.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()[0]:  # type: ignore[index]
            assert time.monotonic() < deadline, "the other host never waited for the lock"
            time.sleep(0.01)


def test_errors_never_show_the_password(postgres_cluster: PostgresCluster, tmp_path: Path) -> None:
    url = f"postgresql://nobody:s3cret-pw@127.0.0.1:{postgres_cluster.port}/no_such_database"
    with pytest.raises(StorageError) as caught:
        open_store(tmp_path, url)
    assert "s3cret-pw" not in str(caught.value) and "nobody:***@" in str(caught.value)
    assert (
        redact_url(url)
        == f"postgresql://nobody:***@127.0.0.1:{postgres_cluster.port}/no_such_database"
    )


def test_a_url_that_is_not_postgresql_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="postgresql://"):
        open_store(tmp_path, "mysql://user:pw@host/db")


def test_text_postgresql_cannot_hold_is_refused_and_nothing_written(
    postgres_url: str, tmp_path: Path
) -> None:
    # PostgreSQL's text cannot hold NUL; SQLite's can. The difference is a clear error, not a crash.
    with MemoryManager(tmp_path, agent_id="a", database_url=postgres_url) as memory:
        before = memory.get_block("human").value
        with pytest.raises(ConfigurationError, match="cannot store"):
            memory.core_memory_append("human", "nul\x00byte")
        assert memory.get_block("human").value == before


def test_the_connection_comes_back_after_the_server_drops_it(
    postgres_url: str, tmp_path: Path, postgres_cluster: PostgresCluster
) -> None:
    import psycopg

    name = postgres_url.rsplit("/", 1)[1]
    with (
        MemoryManager(tmp_path, agent_id="a", database_url=postgres_url) as memory,
        psycopg.connect(postgres_cluster.url(), autocommit=True) as admin,
    ):

        def drop() -> None:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,)
            )

        drop()
        before = memory.get_block(
            "human"
        ).value  # a read on a dropped idle connection is sent again ...
        drop()
        memory.core_memory_append(
            "human", "still here"
        )  # ... and so is a write's BEGIN: nothing had started
        assert memory.get_block("human").value == before + "\nstill here"
