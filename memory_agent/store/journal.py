"""The append-only journal: who changed what, from which value to which, and when.

Writers call `record` inside the same transaction as the change itself, so a change and its
journal entry are committed together or not at all. Each entry names its author (who acted,
`memory_agent.authors`): the one given, else the one of the innermost `acting_as`; entries
written before authors were recorded have none.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..authors import AUTHOR_KINDS, Author, acting_author
from ..errors import ConfigurationError

__all__ = ["JournalEntry", "list_entries", "record"]


@dataclass(frozen=True)
class JournalEntry:
    entry_id: int
    agent_id: str | None
    action: str
    target_type: str
    target_id: str | None
    label: str | None
    old_value: str | None
    new_value: str | None
    detail: dict[str, Any]
    created_at: str
    author_kind: str | None = None
    author: str | None = None

    @property
    def acted_by(self) -> Author | None:
        """The entry's author, or None for entries written before authors were recorded."""
        return Author.from_columns(self.author_kind, self.author)


def record(
    conn: sqlite3.Connection,
    *,
    agent_id: str | None,
    action: str,
    target_type: str,
    target_id: str | None,
    created_at: str,
    label: str | None = None,
    old_value: str | None = None,
    new_value: str | None = None,
    detail: Mapping[str, Any] | None = None,
    author: Author | None = None,
) -> None:
    """Append one entry; `author` defaults to the current `acting_as` author (None: no author)."""
    who = author if author is not None else acting_author()
    conn.execute(
        "INSERT INTO journal (agent_id, action, target_type, target_id, label, old_value,"
        " new_value, detail, created_at, author_kind, author) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            agent_id,
            action,
            target_type,
            target_id,
            label,
            old_value,
            new_value,
            json.dumps(dict(detail or {}), ensure_ascii=False),
            created_at,
            who.kind if who else None,
            who.name if who else None,
        ),
    )


def list_entries(
    conn: sqlite3.Connection,
    *,
    agent_id: str | None = None,
    target_type: str | None = None,
    target_id: str | None = None,
    author_kind: str | None = None,
    limit: int = 100,
) -> list[JournalEntry]:
    """Newest first, filtered by whichever of agent, target type, target id and author kind are given."""
    if author_kind is not None and author_kind not in AUTHOR_KINDS:
        raise ConfigurationError(f"An author kind is one of {', '.join(AUTHOR_KINDS)}; got {author_kind!r}.")
    clauses, params = [], []
    for column, value in (
        ("agent_id", agent_id),
        ("target_type", target_type),
        ("target_id", target_id),
        ("author_kind", author_kind),
    ):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = conn.execute(
        f"SELECT * FROM journal {where} ORDER BY entry_id DESC LIMIT ?", (*params, limit)
    ).fetchall()
    return [
        JournalEntry(
            entry_id=row["entry_id"],
            agent_id=row["agent_id"],
            action=row["action"],
            target_type=row["target_type"],
            target_id=row["target_id"],
            label=row["label"],
            old_value=row["old_value"],
            new_value=row["new_value"],
            detail=json.loads(row["detail"]),
            created_at=row["created_at"],
            author_kind=row["author_kind"],
            author=row["author"],
        )
        for row in rows
    ]
