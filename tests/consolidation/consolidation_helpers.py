"""Shared data and helpers of the consolidation tests (imported by name: a module called
`conftest` would be ambiguous beside other test directories)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from backends import backend_environ

from memory_agent import MemoryManager, Settings
from memory_agent.store.snapshot import Snapshot

HARBOUR = (
    "The harbour master is called Ines Duarte.",
    "Ines Duarte is the harbour master.",
    "The name of the harbour master is Ines Duarte.",
)
BERTHS = ("Berth 4 was repainted green in May.", "Berth 5 was repainted green in May.")


def settings_for(tmp_path: Path, **extra: str) -> Settings:
    return Settings.from_env(
        backend_environ(
            {
                "PERSIST_DIRECTORY": str(tmp_path / "store"),
                "MEMORY_CHARACTER_LIMITS": "notes=400",
                **extra,
            }
        ),
        env_file=None,
    )


_GROWING = {"journal", "block_history", "consolidation_sessions"}
"""Tables that only grow: a rollback adds its own entries there instead of erasing history."""
_FTS_SEGMENTS = re.compile(r"_fts.*_(data|idx|config)$")
"""FTS5's b-tree segments: the same indexed rows after a delete are stored in other segments (the
indexed rows themselves, the `_content` and `_docsize` tables, are compared). Key counters
(`sqlite_sequence`, PostgreSQL's sequences) are left out for the same reason as in `snapshot`."""


def memory_content(snapshot: Snapshot, blocks_columns: list[str]) -> dict[str, Any]:
    """The snapshot's memory content: every table but the growing ones and keyword-index segments,
    with a block's version and update time left out (a rollback is a new version)."""
    content: dict[str, Any] = {}
    for table, rows in snapshot.items():
        if table in _GROWING or table == "sqlite_sequence" or _FTS_SEGMENTS.search(table):
            continue
        if table == "blocks":
            keep = [
                i for i, name in enumerate(blocks_columns) if name not in ("version", "updated_at")
            ]
            rows = sorted((tuple(row[i] for i in keep) for row in rows), key=repr)
        content[table] = rows
    return content


def block_columns(memory: MemoryManager) -> list[str]:
    with memory.database.reading() as conn:
        return list(conn.execute("SELECT * FROM blocks LIMIT 1").fetchone().keys())


def fill_notes(memory: MemoryManager, count: int = 8) -> list[str]:
    """A 'notes' block (limit 400) filled past 80 % with one fact per line."""
    lines = [f"Fact {number}: the crane on pier {number} was serviced." for number in range(count)]
    memory.create_block("notes", "\n".join(lines[:4]))
    for line in lines[4:]:
        memory.core_memory_append("notes", line)
    return lines
