"""The SDK session mirror's rows (`session_store`): the same conversation, kept by the SDK's side.

The session store sits above the manager, so forgetting cannot call it; these statements are the
only ones outside it that touch its tables, and they only delete and redact, never insert.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from ..store.text_copies import replace_text

__all__ = ["purge_entries", "purge_sessions", "redact_text"]


def purge_entries(conn: sqlite3.Connection, uuids: Sequence[str]) -> int:
    """Delete the transcript lines with these SDK uuids (a forgotten message's own lines), and fold
    their transcripts' summary sidecars again from the lines that remain (a sidecar may hold a
    clipped copy of the first prompt, which no exact-text search would find)."""
    gone = 0
    transcripts: set[int] = set()
    for uuid in uuids:
        transcripts.update(int(r[0]) for r in conn.execute(
            "SELECT transcript_id FROM session_entries WHERE uuid = ?", (uuid,)).fetchall())
        gone += max(conn.execute("DELETE FROM session_entries WHERE uuid = ?", (uuid,)).rowcount, 0)
    for transcript_id in sorted(transcripts):
        _fold_again(conn, transcript_id)
    return gone


def _fold_again(conn: sqlite3.Connection, transcript_id: int) -> None:
    """Rewrite a main transcript's sidecar from its remaining lines, as the store's append folds it."""
    row = conn.execute("SELECT project_key, session_id, subpath FROM session_transcripts WHERE transcript_id = ?",
                       (transcript_id,)).fetchone()
    if row is None or row[2] != "" or conn.execute(
            "SELECT 1 FROM session_summaries WHERE transcript_id = ?", (transcript_id,)).fetchone() is None:
        return
    from claude_agent_sdk import fold_session_summary  # only here: storage alone never loads the SDK

    entries = [json.loads(r[0]) for r in conn.execute(
        "SELECT entry FROM session_entries WHERE transcript_id = ? ORDER BY seq", (transcript_id,)).fetchall()]
    folded = fold_session_summary(None, {"project_key": row[0], "session_id": row[1]}, entries)
    conn.execute("UPDATE session_summaries SET data = ? WHERE transcript_id = ?",
                 (json.dumps(folded["data"], ensure_ascii=False, separators=(",", ":")), transcript_id))


def purge_sessions(conn: sqlite3.Connection, session_ids: Sequence[str]) -> int:
    """Delete whole transcripts of these sessions (their lines and summaries follow by cascade)."""
    gone = 0
    for session_id in session_ids:
        gone += max(conn.execute("DELETE FROM session_transcripts WHERE session_id = ?", (session_id,)).rowcount, 0)
    return gone


def redact_text(conn: sqlite3.Connection, texts: Sequence[str]) -> int:
    """Replace copies of these texts in transcript lines and summary sidecars by the mark."""
    return (replace_text(conn, "session_entries", "entry", texts, json_column=True)
            + replace_text(conn, "session_summaries", "data", texts, json_column=True))
