"""The SDK session mirror's rows (`session_store`): the same conversation, kept by the SDK's side.

The session store sits above the manager, so forgetting cannot call it; these statements are the
only ones outside it that touch its tables, and they only delete and redact, never insert.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..store.protocol import Connection
from ..store.text_copies import replace_text

__all__ = ["purge_entries", "purge_sessions", "redact_text"]


def purge_entries(conn: Connection, uuids: Sequence[str]) -> int:
    """Delete the transcript lines with these SDK uuids (a forgotten message's own lines), and the
    summary sidecars of their transcripts: a sidecar may hold a clipped copy of the first prompt,
    which no exact-text search finds. The sidecar is derived state (the SDK folds it from the
    lines); folding it again is the SDK's code, which nothing below the tools layer may load, so
    the SDK reads the transcript itself for that session until the next append folds a new one."""
    gone = 0
    transcripts: set[int] = set()
    for uuid in uuids:
        transcripts.update(
            int(r[0])
            for r in conn.execute(
                "SELECT transcript_id FROM session_entries WHERE uuid = ?", (uuid,)
            ).fetchall()
        )
        gone += max(conn.execute("DELETE FROM session_entries WHERE uuid = ?", (uuid,)).rowcount, 0)
    for transcript_id in sorted(transcripts):
        gone += max(
            conn.execute(
                "DELETE FROM session_summaries WHERE transcript_id = ?", (transcript_id,)
            ).rowcount,
            0,
        )
    return gone


def purge_sessions(conn: Connection, session_ids: Sequence[str]) -> int:
    """Delete whole transcripts of these sessions (their lines and summaries follow by cascade)."""
    gone = 0
    for session_id in session_ids:
        gone += max(
            conn.execute(
                "DELETE FROM session_transcripts WHERE session_id = ?", (session_id,)
            ).rowcount,
            0,
        )
    return gone


def redact_text(conn: Connection, texts: Sequence[str], agent_ids: Sequence[str]) -> int:
    """Replace copies of these texts in transcript lines and summary sidecars by the mark, leaving
    the transcripts of sessions that only other agents' messages name."""
    marks = ", ".join("?" for _ in agent_ids)
    where = (
        "AND transcript_id NOT IN (SELECT transcript_id FROM session_transcripts WHERE session_id "
        "IN"
        " (SELECT session_id FROM messages WHERE session_id IS NOT NULL AND agent_id NOT IN "
        f"({marks}))"
        " AND session_id NOT IN (SELECT session_id FROM messages WHERE session_id IS NOT NULL"
        f" AND agent_id IN ({marks})))"
    )
    params = [*agent_ids, *agent_ids]
    return replace_text(
        conn, "session_entries", "entry", texts, json_column=True, where=where, params=params
    ) + replace_text(
        conn, "session_summaries", "data", texts, json_column=True, where=where, params=params
    )
