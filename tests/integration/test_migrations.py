"""A database created by schema version 1 migrates forward with its data intact."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memory_agent import MemoryManager, StorageError
from memory_agent.store.migrations import MIGRATIONS, SCHEMA_VERSION, schema_version


def _build_version_1(path: Path) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    MIGRATIONS[0](conn)
    conn.execute("PRAGMA user_version = 1")
    now = "2024-01-01T00:00:00.000000+00:00"
    conn.execute("INSERT INTO agents (agent_id, created_at) VALUES ('old-agent', ?)", (now,))
    conn.execute(
        "INSERT INTO blocks (block_id, label, value, char_limit, owner_agent_id, created_at, updated_at)"
        " VALUES ('block-1', 'human', 'Ada from version one', 5000, 'old-agent', ?, ?)",
        (now, now),
    )
    conn.execute(
        "INSERT INTO block_history (block_id, version, value, char_limit, read_only, agent_id, action, created_at)"
        " VALUES ('block-1', 1, 'Ada from version one', 5000, 0, 'old-agent', 'create', ?)",
        (now,),
    )
    conn.execute(
        "INSERT INTO agent_blocks (agent_id, block_id, label, attached_at) VALUES ('old-agent', 'block-1', 'human', ?)",
        (now,),
    )
    conn.execute(
        "INSERT INTO messages (agent_id, role, message_type, content, text, created_at)"
        " VALUES ('old-agent', 'user', 'user', '\"hello from v1\"', 'hello from v1', ?)",
        (now,),
    )
    conn.execute("COMMIT")
    conn.close()


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


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    sqlite3.connect(path).execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StorageError, match="newer"):
        MemoryManager(storage_dir=tmp_path, agent_id="x")
