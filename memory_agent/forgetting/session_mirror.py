"""The SDK session mirror's rows (`session_store`): the same conversation, kept by the SDK's side.

The session store sits above the manager, so forgetting cannot call it; these statements are the
only ones outside it that touch its tables, and they only delete and redact, never insert.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from ..store.text_copies import replace_text

__all__ = ["purge_entries", "purge_sessions", "redact_text"]


def purge_entries(conn: sqlite3.Connection, uuids: Sequence[str]) -> int:
    """Delete the transcript lines with these SDK uuids (a forgotten message's own lines)."""
    gone = 0
    for uuid in uuids:
        gone += max(conn.execute("DELETE FROM session_entries WHERE uuid = ?", (uuid,)).rowcount, 0)
    return gone


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
