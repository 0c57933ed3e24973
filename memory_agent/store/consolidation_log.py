"""The consolidation_sessions table: one row per consolidation run, and its one writer.

A run inserts its row as `running` before it changes anything, so a process that dies mid-run
leaves a trace; `finish_row` records how it ended. What the run changed is not stored here but in
the journal (entries authored by the session), which rollback reads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .protocol import Connection

__all__ = [
    "COUNT_FIELDS",
    "SESSION_FINISHED",
    "SESSION_STARTED",
    "SESSION_TARGET",
    "session_entry_range",
    "session_exists",
    "STATUSES",
    "ConsolidationSession",
    "finish_row",
    "insert_session_row",
    "latest_by_status",
    "list_rows",
    "mark_rolled_back",
    "read_row",
]

STATUSES = ("running", "completed", "failed", "rolled_back")
COUNT_FIELDS = (
    "blocks_analysed",
    "blocks_changed",
    "passages_merged",
    "passages_superseded",
    "passages_expired",
    "passages_archived",
)


@dataclass(frozen=True)
class ConsolidationSession:
    """One recorded consolidation run."""

    session_id: str
    agent_id: str
    consolidator: str
    started_at: str
    finished_at: str | None
    status: str
    """'running', 'completed', 'failed' or 'rolled_back'."""
    counts: dict[str, int] = field(default_factory=dict)
    """blocks_analysed, blocks_changed, passages_merged, passages_superseded, passages_expired,
    passages_archived."""
    input_tokens: int | None = None
    output_tokens: int | None = None
    summary: str = ""
    failure: str | None = None
    warnings: tuple[str, ...] = ()
    rolled_back_at: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain values for JSON output."""
        return {
            "session_id": self.session_id,
            "agent_id": self.agent_id,
            "consolidator": self.consolidator,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "status": self.status,
            "counts": dict(self.counts),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "summary": self.summary,
            "failure": self.failure,
            "warnings": list(self.warnings),
            "rolled_back_at": self.rolled_back_at,
        }


SESSION_TARGET = "consolidation"
"""The journal's target_type of a session's start and finish markers (target_id: the session id)."""
SESSION_STARTED = "consolidation_started"
SESSION_FINISHED = "consolidation_finished"
"""A session's changes are the entries it authored *between* these two markers, which only the
engine writes (in the transactions that insert and finish the session row): an entry that merely
claims the session's author (imported, or from before this rule) lies outside them."""


def session_entry_range(conn: Connection, session_id: str) -> tuple[int, int | None] | None:
    """The entry ids of the session's first start marker and first finish marker after it (None
    while it runs); None when the session wrote no start marker."""
    row = conn.execute(
        "SELECT MIN(entry_id) AS first FROM journal WHERE target_type = ? AND target_id = ? AND "
        "action = ?"
        " AND author_kind = 'consolidator' AND author = ?",
        (SESSION_TARGET, session_id, SESSION_STARTED, session_id),
    ).fetchone()
    if row is None or row["first"] is None:
        return None
    first = int(row["first"])
    end = conn.execute(
        "SELECT MIN(entry_id) AS last FROM journal WHERE target_type = ? AND target_id = ? AND "
        "action = ?"
        " AND author_kind = 'consolidator' AND author = ? AND entry_id > ?",
        (SESSION_TARGET, session_id, SESSION_FINISHED, session_id, first),
    ).fetchone()
    return first, (None if end is None or end["last"] is None else int(end["last"]))


def session_exists(conn: Connection, session_id: str) -> bool:
    """Whether this storage has a session with this id (an import must not write as it)."""
    row = conn.execute(
        "SELECT 1 FROM consolidation_sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    return row is not None


def insert_session_row(
    conn: Connection, session_id: str, agent_id: str, consolidator: str, started_at: str
) -> None:
    """The one writer of a consolidation_sessions row: a run starting."""
    conn.execute(
        "INSERT INTO consolidation_sessions (session_id, agent_id, consolidator, started_at, "
        "status)"
        " VALUES (?, ?, ?, ?, 'running')",
        (session_id, agent_id, consolidator, started_at),
    )


def finish_row(
    conn: Connection,
    session_id: str,
    *,
    status: str,
    finished_at: str,
    counts: dict[str, int],
    input_tokens: int | None,
    output_tokens: int | None,
    summary: str,
    failure: str | None,
    warnings: list[str],
) -> None:
    """Record how a running session ended (completed or failed) and what it did."""
    if status not in ("completed", "failed"):
        raise ValueError(f"a session finishes as completed or failed, not {status!r}")
    conn.execute(
        "UPDATE consolidation_sessions SET status = ?, finished_at = ?, blocks_analysed = ?, "
        "blocks_changed = ?,"
        " passages_merged = ?, passages_superseded = ?, passages_expired = ?, passages_archived = "
        "?,"
        " input_tokens = ?, output_tokens = ?, summary = ?, failure = ?, warnings = ?"
        " WHERE session_id = ? AND status = 'running'",
        (
            status,
            finished_at,
            *(int(counts.get(name, 0)) for name in COUNT_FIELDS),
            input_tokens,
            output_tokens,
            summary,
            failure,
            json.dumps(warnings, ensure_ascii=False),
            session_id,
        ),
    )


def mark_rolled_back(conn: Connection, session_id: str, at: str) -> bool:
    """Set a finished session's status to rolled_back; False when it was not completed or failed."""
    cursor = conn.execute(
        "UPDATE consolidation_sessions SET status = 'rolled_back', rolled_back_at = ?"
        " WHERE session_id = ? AND status IN ('completed', 'failed')",
        (at, session_id),
    )
    return bool(cursor.rowcount)


def _from_row(row: Any) -> ConsolidationSession:
    return ConsolidationSession(
        session_id=row["session_id"],
        agent_id=row["agent_id"],
        consolidator=row["consolidator"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        status=row["status"],
        counts={name: int(row[name]) for name in COUNT_FIELDS},
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        summary=row["summary"],
        failure=row["failure"],
        warnings=tuple(json.loads(row["warnings"])),
        rolled_back_at=row["rolled_back_at"],
    )


def read_row(conn: Connection, session_id: str) -> ConsolidationSession | None:
    row = conn.execute(
        "SELECT * FROM consolidation_sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    return None if row is None else _from_row(row)


def list_rows(conn: Connection, agent_id: str | None, limit: int) -> list[ConsolidationSession]:
    """Newest first; every agent's when `agent_id` is None."""
    where, params = ("WHERE agent_id = ?", (agent_id,)) if agent_id is not None else ("", ())
    rows = conn.execute(
        f"SELECT * FROM consolidation_sessions {where} ORDER BY started_at DESC, session_id DESC"
        " LIMIT ?",
        (*params, limit),
    ).fetchall()
    return [_from_row(row) for row in rows]


def latest_by_status(conn: Connection, status: str) -> dict[str, ConsolidationSession]:
    """Each agent's newest session with this status (what `doctor` shows)."""
    rows = conn.execute(
        "SELECT * FROM consolidation_sessions s WHERE status = ? AND started_at = (SELECT "
        "MAX(started_at)"
        " FROM consolidation_sessions o WHERE o.agent_id = s.agent_id AND o.status = s.status)"
        " ORDER BY agent_id",
        (status,),
    ).fetchall()
    return {row["agent_id"]: _from_row(row) for row in rows}
