"""Schema migrations on both backends: a database of an older version migrates forward with its
data intact, a newer one is refused, a current one is left alone, and a fresh one is created once
however many processes open it at the same time. (That shipped migrations are never edited is
pinned in tests/unit/test_shipped_migrations.py.)"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest
from forked_workers import run_workers
from old_schemas import postgres_schema_at, sqlite_schema_at

from memory_agent import MemoryManager, StorageError
from memory_agent.store.migrations import MIGRATIONS, SCHEMA_VERSION, schema_version
from memory_agent.store.pg_schema import PG_SCHEMA_VERSION, VERSION_TABLE
from memory_agent.store.postgres import PostgresDatabase


def _build_version_1(path: Path) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    MIGRATIONS[0](conn)
    conn.execute("PRAGMA user_version = 1")
    now = "2024-01-01T00:00:00.000000+00:00"
    conn.execute("INSERT INTO agents (agent_id, created_at) VALUES ('old-agent', ?)", (now,))
    conn.execute(
        "INSERT INTO blocks (block_id, label, value, char_limit, owner_agent_id, created_at, "
        "updated_at)"
        " VALUES ('block-1', 'human', 'Ada from version one', 5000, 'old-agent', ?, ?)",
        (now, now),
    )
    conn.execute(
        "INSERT INTO block_history (block_id, version, value, char_limit, read_only, agent_id, "
        "action, created_at)"
        " VALUES ('block-1', 1, 'Ada from version one', 5000, 0, 'old-agent', 'create', ?)",
        (now,),
    )
    conn.execute(
        "INSERT INTO agent_blocks (agent_id, block_id, label, attached_at) VALUES ('old-agent', "
        "'block-1', 'human', ?)",
        (now,),
    )
    conn.execute(
        "INSERT INTO messages (agent_id, role, message_type, content, text, created_at)"
        " VALUES ('old-agent', 'user', 'user', '\"hello from v1\"', 'hello from v1', ?)",
        (now,),
    )
    conn.execute("COMMIT")
    conn.close()


@pytest.mark.sqlite_only(
    reason="SQLite's own migration list (PRAGMA user_version, FTS5 steps); "
    "PostgreSQL's list is tested below"
)
def test_version_1_database_migrates_forward_with_data(tmp_path: Path) -> None:
    assert SCHEMA_VERSION > 1
    _build_version_1(tmp_path / "memory.db")
    with MemoryManager(storage_dir=tmp_path, agent_id="old-agent") as memory:
        with memory.db.reading() as conn:
            assert schema_version(conn) == SCHEMA_VERSION
        assert memory.get_block("human").value == "Ada from version one"
        assert [m.text for m in memory.search_messages("hello")] == ["hello from v1"]
        memory.core_memory_append("human", "still editable")
        assert memory.block_history("human")[-1].version == 2
        with memory.db.reading() as conn:
            assert conn.execute("SELECT COUNT(*) FROM passages").fetchone()[0] == 0


SENSITIVITY_REWRITE = next(
    index
    for index, migration in enumerate(MIGRATIONS)
    if migration.__name__.endswith("_sensitivity_check_without_a_temporary_index")
)


@pytest.mark.sqlite_only(reason="the rewritten CHECK and SQLite's temporary index are SQLite's")
def test_the_sensitivity_check_is_rewritten_and_still_refuses_other_levels(tmp_path: Path) -> None:
    """A store from before the rewrite keeps its rows, and its passages and blocks take the three
    levels and nothing else, without a temporary index per row written."""
    path = tmp_path / "memory.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    sqlite_schema_at(conn, SENSITIVITY_REWRITE)
    conn.execute("COMMIT")
    conn.close()
    with MemoryManager(storage_dir=tmp_path, agent_id="ada") as memory:
        memory.core_memory_append("human", "Ada keeps a diary")
        memory.archival_memory_insert("The diary is in the desk", sensitivity="secret")
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        for table in ("blocks", "passages"):
            sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
            assert "sensitivity IN" not in sql[0] and "sensitivity = 'secret'" in sql[0]
            plan = [
                row[1]
                for row in conn.execute(f"EXPLAIN UPDATE {table} SET sensitivity = ?", ("public",))
            ]
            assert "OpenEphemeral" not in plan
            for level in ("public", "private", "secret"):
                conn.execute(f"UPDATE {table} SET sensitivity = ?", (level,))
            with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
                conn.execute(f"UPDATE {table} SET sensitivity = 'top secret'")
        assert conn.execute("SELECT content FROM passages").fetchall() == [
            ("The diary is in the desk",)
        ]
    finally:
        conn.close()


@pytest.mark.sqlite_only(
    reason="PRAGMA user_version is SQLite's; PostgreSQL's version table is tested below"
)
def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    sqlite3.connect(path).execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StorageError, match="newer"):
        MemoryManager(storage_dir=tmp_path, agent_id="x")


# ----- PostgreSQL (memory_agent/store/pg_schema.py) --------------------------------------------

DDL_LOG = """
CREATE SCHEMA ddl_audit;
CREATE TABLE ddl_audit.log (tag TEXT, object TEXT, at TIMESTAMPTZ DEFAULT clock_timestamp());
CREATE FUNCTION ddl_audit.record() RETURNS event_trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ddl_audit.log (tag, object)
        SELECT command_tag, object_identity FROM pg_event_trigger_ddl_commands();
END $$;
CREATE EVENT TRIGGER ddl_audit_end ON ddl_command_end EXECUTE FUNCTION ddl_audit.record();
"""
"""Every DDL command the server runs in the database is logged (an event trigger; superuser)."""


def _sql(url: str, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    # the driver is an optional extra: imported where used, the postgres_url fixture skips without
    # it
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(sql, params)
        return cursor.fetchall() if cursor.description else []


def _ddl(url: str) -> list[tuple[object, ...]]:
    return _sql(url, "SELECT tag, object FROM ddl_audit.log ORDER BY at")


def _build_pg_version(url: str, version: int) -> None:
    """A database as the first `version` shipped PostgreSQL migrations left it, with rows in it."""
    import psycopg  # optional extra, as in _sql

    now = "2024-01-01T00:00:00.000000+00:00"
    with psycopg.connect(url) as conn:
        postgres_schema_at(conn, version)
        conn.execute("INSERT INTO agents (agent_id, created_at) VALUES ('old-agent', %s)", (now,))
        conn.execute(
            "INSERT INTO blocks (block_id, label, value, char_limit, owner_agent_id, created_at, "
            "updated_at)"
            " VALUES ('block-1', 'human', 'Ada from an older schema', 5000, 'old-agent', %s, %s)",
            (now, now),
        )
        conn.execute(
            "INSERT INTO block_history (block_id, version, value, char_limit, read_only, agent_id,"
            " action, created_at)"
            " VALUES ('block-1', 1, 'Ada from an older schema', 5000, 0, 'old-agent', 'create', "
            "%s)",
            (now,),
        )
        conn.execute(
            "INSERT INTO agent_blocks (agent_id, block_id, label, attached_at)"
            " VALUES ('old-agent', 'block-1', 'human', %s)",
            (now,),
        )
        conn.execute(
            "INSERT INTO messages (agent_id, role, message_type, content, text, created_at)"
            " VALUES ('old-agent', 'user', 'user', '\"hello from before\"', 'hello from before', "
            "%s)",
            (now,),
        )


@pytest.mark.postgres
def test_a_fresh_postgres_database_gets_the_current_schema(
    postgres_url: str, tmp_path: Path
) -> None:
    with PostgresDatabase(postgres_url, tmp_path) as db:
        assert db.schema_version() == PG_SCHEMA_VERSION
    assert _sql(postgres_url, f"SELECT version FROM {VERSION_TABLE}") == [(PG_SCHEMA_VERSION,)]
    assert _sql(postgres_url, "SELECT to_regclass('passages') IS NOT NULL") == [(True,)]


@pytest.mark.postgres
def test_reopening_a_current_postgres_database_runs_and_writes_nothing(
    postgres_url: str, tmp_path: Path
) -> None:
    PostgresDatabase(postgres_url, tmp_path).close()
    _sql(postgres_url, DDL_LOG)
    version_row = _sql(postgres_url, f"SELECT xmin::text, version FROM {VERSION_TABLE}")
    with MemoryManager(tmp_path, agent_id="a", database_url=postgres_url) as memory:
        memory.core_memory_append("human", "Ada")
    PostgresDatabase(postgres_url, tmp_path).close()
    assert _ddl(postgres_url) == []
    assert _sql(postgres_url, f"SELECT xmin::text, version FROM {VERSION_TABLE}") == version_row


@pytest.mark.postgres
@pytest.mark.parametrize("version", range(1, PG_SCHEMA_VERSION + 1))
def test_an_older_postgres_schema_migrates_forward_with_data(
    postgres_url: str, tmp_path: Path, version: int
) -> None:
    """From every shipped version, the oldest first. (With one shipped PostgreSQL migration the
    only version is the current one, so this then shows that a schema built by the shipped step
    itself, not by the store, is taken as it is; each new migration adds its starting point.)"""
    _build_pg_version(postgres_url, version)
    _sql(postgres_url, DDL_LOG)
    with MemoryManager(tmp_path, agent_id="old-agent", database_url=postgres_url) as memory:
        assert memory.database.schema_version() == PG_SCHEMA_VERSION  # type: ignore[attr-defined]
        assert memory.get_block("human").value == "Ada from an older schema"
        assert [m.text for m in memory.search_messages("hello")] == ["hello from before"]
        memory.core_memory_append("human", "still editable")
        assert memory.block_history("human")[-1].version == 2
    ran = {tag for tag, _ in _ddl(postgres_url)}
    assert bool(ran) == (version < PG_SCHEMA_VERSION), ran
    assert _sql(postgres_url, f"SELECT version FROM {VERSION_TABLE}") == [(PG_SCHEMA_VERSION,)]


@pytest.mark.postgres
def test_a_newer_postgres_schema_is_refused_and_left_alone(
    postgres_url: str, tmp_path: Path
) -> None:
    _sql(
        postgres_url,
        f"CREATE TABLE {VERSION_TABLE} (version INTEGER NOT NULL);"
        f" INSERT INTO {VERSION_TABLE} VALUES ({PG_SCHEMA_VERSION + 1})",
    )
    with pytest.raises(
        StorageError, match=f"schema version {PG_SCHEMA_VERSION + 1}, newer .* Upgrade memory-agent"
    ):
        MemoryManager(tmp_path, agent_id="x", database_url=postgres_url)
    assert _sql(postgres_url, "SELECT to_regclass('agents')") == [(None,)]
    assert _sql(postgres_url, f"SELECT version FROM {VERSION_TABLE}") == [(PG_SCHEMA_VERSION + 1,)]


def _open_together(url: str, gate: str, count: int, storage: str) -> None:
    """One process: say it is ready (a file in `gate`), wait until all `count` are, then open the
    database once. Why a gate, not a start time far enough ahead: forked workers are ready within
    milliseconds, and a fixed time is idle waiting on a quiet machine yet may be too short on a
    loaded one."""
    folder = Path(gate)
    (folder / f"ready-{os.getpid()}").touch()
    deadline = time.monotonic() + 60
    while len(list(folder.iterdir())) < count:
        assert time.monotonic() < deadline, "the other processes never got ready"
        time.sleep(0.002)
    PostgresDatabase(url, Path(storage)).close()


@pytest.mark.postgres
def test_processes_opening_a_fresh_postgres_database_at_once_create_it_once(
    postgres_url: str, tmp_path: Path
) -> None:
    _sql(postgres_url, DDL_LOG)
    gate = tmp_path / "gate"  # every process is up and waiting before the first one opens
    gate.mkdir()
    # Six processes, forked from one launcher (tests/forked_workers.py).
    run_workers(
        _open_together, [(postgres_url, str(gate), 6, str(tmp_path / str(n))) for n in range(6)]
    )
    assert _sql(postgres_url, f"SELECT version FROM {VERSION_TABLE}") == [(PG_SCHEMA_VERSION,)]
    created = [object_ for tag, object_ in _ddl(postgres_url) if tag == "CREATE TABLE"]
    assert sorted(created) == sorted(set(created)) and "public.passages" in created
