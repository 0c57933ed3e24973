"""Recall memory: every message of every turn, and the summaries that replaced old ones.

Messages are never deleted by compaction: evicted ones are marked out of context and stay
readable and searchable (`conversation_search`). A message that carries the SDK's uuid is stored at
most once, so a retried or resumed turn cannot duplicate it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..authors import Author, acting_author
from ..errors import ConfigurationError
from ..store import fts, journal, pg_fulltext
from ..store.database import utc_now
from ..store.dialect import by_engine
from ..store.protocol import Connection, Row, Store
from ..store.text_copies import replace_text
from ..validation import checked_methods

__all__ = [
    "MessageContent",
    "RecallMemory",
    "StoredMessage",
    "StoredSummary",
    "content_text",
    "insert_message_row",
    "insert_summary_row",
    "mark_vectors",
    "message_filter",
    "messages_between",
    "messages_by_ids",
    "pending_vector_count",
    "pending_vector_rows",
    "previous_text",
    "purge_message_rows",
    "redact_text",
    "rewrite_summary_row",
    "summaries_from",
    "summary_rows",
    "vector_chunks",
    "agents_with_messages",
]

MessageContent = str | list[dict[str, Any]]


@dataclass(frozen=True)
class StoredMessage:
    message_id: int
    agent_id: str
    role: str
    message_type: str
    content: MessageContent
    text: str
    created_at: str
    session_id: str | None = None
    turn_id: str | None = None
    token_count: int | None = None
    in_context: bool = True
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StoredSummary:
    summary_id: int
    agent_id: str
    summary: str
    first_message_id: int | None
    last_message_id: int | None
    model: str | None
    tokens_before: int | None
    tokens_after: int | None
    is_fallback: bool
    created_at: str


def content_text(content: MessageContent) -> str:
    """Plain text of a message for search: text blocks, tool inputs and tool results."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "tool_use":
            parts.append(
                f"{block.get('name', '')} {json.dumps(block.get('input', {}), ensure_ascii=False)}"
            )
        elif kind == "tool_result":
            inner = block.get("content", "")
            parts.append(inner if isinstance(inner, str) else content_text(inner))
        elif kind == "thinking":
            parts.append(str(block.get("thinking", "")))
    return "\n".join(part for part in parts if part)


def _message_from_row(row: Row) -> StoredMessage:
    raw = json.loads(row["content"])
    return StoredMessage(
        message_id=row["message_id"],
        agent_id=row["agent_id"],
        role=row["role"],
        message_type=row["message_type"],
        content=raw,
        text=row["text"],
        created_at=row["created_at"],
        session_id=row["session_id"],
        turn_id=row["turn_id"],
        token_count=row["token_count"],
        in_context=bool(row["in_context"]),
        metadata=json.loads(row["metadata"]),
    )


def _summary_from_row(row: Row) -> StoredSummary:
    return StoredSummary(
        summary_id=row["summary_id"],
        agent_id=row["agent_id"],
        summary=row["summary"],
        first_message_id=row["first_message_id"],
        last_message_id=row["last_message_id"],
        model=row["model"],
        tokens_before=row["tokens_before"],
        tokens_after=row["tokens_after"],
        is_fallback=bool(row["is_fallback"]),
        created_at=row["created_at"],
    )


@checked_methods()
class RecallMemory:
    """Messages and summaries in one database; every method names the agent it acts for.

    Arguments are checked against the annotations (see `validation`): the manager and the agent
    both write here, and a value SQLite cannot hold must be refused before the transaction.
    """

    def __init__(self, db: Store, *, author: Callable[[], Author | None] = acting_author) -> None:
        """`author` says who acts for each journalled write (the manager's current author)."""
        self._db = db
        self._author = author

    def store(
        self,
        agent_id: str,
        role: str,
        content: MessageContent,
        *,
        message_type: str | None = None,
        session_id: str | None = None,
        turn_id: str | None = None,
        sdk_uuid: str | None = None,
        token_count: int | None = None,
        metadata: dict[str, Any] | None = None,
        in_context: bool = True,
    ) -> StoredMessage | None:
        """Store one message; returns None when a message with this sdk_uuid is already stored.

        `in_context=False` is for records that are not part of the model's conversation (the
        SDK's result and system messages): kept and searchable, never sent back to the model.
        """
        if not isinstance(content, (str, list)):
            raise ConfigurationError(
                "A message's content must be a string or a list of content blocks."
            )
        text = content_text(content)
        now = utc_now()
        meta = metadata or {}
        with self._db.transaction() as conn:
            message_id = insert_message_row(
                conn,
                agent_id,
                role,
                message_type or role,
                content,
                session_id=session_id,
                turn_id=turn_id,
                sdk_uuid=sdk_uuid,
                token_count=token_count,
                metadata=meta,
                in_context=in_context,
                created_at=now,
            )
            if message_id is None:
                return None
        return StoredMessage(
            message_id=message_id,
            agent_id=agent_id,
            role=role,
            message_type=message_type or role,
            content=content,
            text=text,
            created_at=now,
            session_id=session_id,
            turn_id=turn_id,
            token_count=token_count,
            in_context=in_context,
            metadata=dict(meta),
        )

    def in_context(
        self, agent_id: str, *, after_id: int = 0, up_to_id: int | None = None
    ) -> list[StoredMessage]:
        """Messages still in the context window, oldest first, optionally only ids in (after,
        up_to]."""
        bound = "" if up_to_id is None else "AND message_id <= ?"
        params: tuple[object, ...] = (
            (agent_id, after_id) if up_to_id is None else (agent_id, after_id, up_to_id)
        )
        with self._db.reading() as conn:
            rows = conn.execute(
                "SELECT * FROM messages WHERE agent_id = ? AND in_context = 1 AND message_id > ?"
                f" {bound} ORDER BY message_id",
                params,
            ).fetchall()
        return [_message_from_row(row) for row in rows]

    def recent(
        self, agent_id: str, limit: int, *, in_context_only: bool = True
    ) -> list[StoredMessage]:
        """The newest `limit` messages, returned oldest first."""
        if limit <= 0:
            return []
        condition = "AND in_context = 1" if in_context_only else ""
        with self._db.reading() as conn:
            rows = conn.execute(
                f"SELECT * FROM messages WHERE agent_id = ? {condition}"
                " ORDER BY message_id DESC LIMIT ?",
                (agent_id, limit),
            ).fetchall()
        return [_message_from_row(row) for row in reversed(rows)]

    def get(self, agent_id: str, message_id: int) -> StoredMessage | None:
        """One of the agent's messages by id (None when the agent has no message with it)."""
        with self._db.reading() as conn:
            row = conn.execute(
                "SELECT * FROM messages WHERE agent_id = ? AND message_id = ?",
                (agent_id, message_id),
            ).fetchone()
        return None if row is None else _message_from_row(row)

    def all_messages(self, agent_id: str) -> list[StoredMessage]:
        with self._db.reading() as conn:
            rows = conn.execute(
                "SELECT * FROM messages WHERE agent_id = ? ORDER BY message_id", (agent_id,)
            ).fetchall()
        return [_message_from_row(row) for row in rows]

    def count(self, agent_id: str, *, in_context_only: bool = False) -> int:
        condition = "AND in_context = 1" if in_context_only else ""
        with self._db.reading() as conn:
            return int(
                conn.execute(
                    f"SELECT COUNT(*) FROM messages WHERE agent_id = ? {condition}", (agent_id,)
                ).fetchone()[0]
            )

    def search(
        self,
        agent_id: str,
        query: str,
        *,
        roles: Sequence[str] | None = None,
        start_date: str | None = None,
        end_date: str | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[StoredMessage]:
        """Full-text search over all of the agent's messages, evicted ones included.

        An empty query lists messages newest first; otherwise results are ranked by bm25.
        Dates are ISO strings compared against the stored UTC timestamps.
        """
        ranked = self.keyword_ranked(
            agent_id,
            query,
            roles=roles,
            start_date=start_date,
            end_date=end_date,
            limit=limit,
            offset=offset,
        )
        return [message for message, _ in ranked]

    def keyword_ranked(
        self,
        agent_id: str,
        query: str,
        *,
        roles: Sequence[str] | None = None,
        start_date: str | None = None,
        end_date: str | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[tuple[StoredMessage, float]]:
        """`search`, each message with its keyword score (higher is better; 0.0 when the query
        has no words and messages are listed newest first), for fusion with vector search."""
        where, params = message_filter(agent_id, roles, start_date, end_date)
        with self._db.reading() as conn:
            search: fts.MessageSearch = by_engine(
                conn, sqlite=fts.FTS5_MESSAGES, postgresql=pg_fulltext.TSVECTOR_MESSAGES
            )
            match = search.query(query)
            if match is None:
                rows = conn.execute(
                    f"SELECT m.* FROM messages m WHERE {where} ORDER BY m.message_id DESC LIMIT ? "
                    "OFFSET ?",
                    (*params, limit, offset),
                ).fetchall()
                return [(_message_from_row(row), 0.0) for row in rows]
            rows = search.rows(conn, match, where, params, limit, offset)
        return [(_message_from_row(row), float(row["keyword_score"])) for row in rows]

    def add_summary(
        self,
        agent_id: str,
        summary: str,
        *,
        first_message_id: int | None,
        last_message_id: int | None,
        model: str | None,
        tokens_before: int | None,
        tokens_after: int | None,
        is_fallback: bool = False,
    ) -> StoredSummary:
        """Record a summary and evict the messages it covers, in one transaction."""
        now = utc_now()
        with self._db.transaction() as conn:
            summary_id = insert_summary_row(
                conn,
                agent_id,
                summary,
                first_message_id=first_message_id,
                last_message_id=last_message_id,
                model=model,
                tokens_before=tokens_before,
                tokens_after=tokens_after,
                is_fallback=is_fallback,
                created_at=now,
            )
            if last_message_id is not None:
                conn.execute(
                    "UPDATE messages SET in_context = 0 WHERE agent_id = ? AND in_context = 1"
                    " AND message_id <= ?",
                    (agent_id, last_message_id),
                )
            journal.record(
                conn,
                author=self._author(),
                agent_id=agent_id,
                action="compact",
                target_type="summary",
                target_id=str(summary_id),
                new_value=summary,
                created_at=now,
                detail={
                    "first_message_id": first_message_id,
                    "last_message_id": last_message_id,
                    "model": model,
                    "tokens_before": tokens_before,
                    "tokens_after": tokens_after,
                    "is_fallback": is_fallback,
                },
            )
            row = conn.execute(
                "SELECT * FROM summaries WHERE summary_id = ?", (summary_id,)
            ).fetchone()
            return _summary_from_row(row)

    def latest_summary(self, agent_id: str) -> StoredSummary | None:
        with self._db.reading() as conn:
            row = conn.execute(
                "SELECT * FROM summaries WHERE agent_id = ? ORDER BY summary_id DESC LIMIT 1",
                (agent_id,),
            ).fetchone()
        return None if row is None else _summary_from_row(row)

    def summaries(self, agent_id: str) -> list[StoredSummary]:
        with self._db.reading() as conn:
            rows = conn.execute(
                "SELECT * FROM summaries WHERE agent_id = ? ORDER BY summary_id", (agent_id,)
            ).fetchall()
        return [_summary_from_row(row) for row in rows]


# ----- row writers (the live paths above and imports share them) -----------------------------


def insert_message_row(
    conn: Connection,
    agent_id: str,
    role: str,
    message_type: str,
    content: MessageContent,
    *,
    session_id: str | None,
    turn_id: str | None,
    sdk_uuid: str | None,
    token_count: int | None,
    metadata: Mapping[str, Any],
    in_context: bool,
    created_at: str,
) -> int | None:
    """The one writer of a message row; returns its id, or None when the agent already has a
    message with this sdk_uuid (nothing is written)."""
    cursor = conn.execute(
        "INSERT OR IGNORE INTO messages (agent_id, role, message_type, content, text,"
        " session_id, turn_id, sdk_uuid, token_count, metadata, in_context, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            agent_id,
            role,
            message_type,
            json.dumps(content, ensure_ascii=False),
            content_text(content),
            session_id,
            turn_id,
            sdk_uuid,
            token_count,
            json.dumps(dict(metadata), ensure_ascii=False, default=str),
            int(in_context),
            created_at,
        ),
    )
    return int(cursor.lastrowid or 0) if cursor.rowcount else None


def insert_summary_row(
    conn: Connection,
    agent_id: str,
    summary: str,
    *,
    first_message_id: int | None,
    last_message_id: int | None,
    model: str | None,
    tokens_before: int | None,
    tokens_after: int | None,
    is_fallback: bool,
    created_at: str,
) -> int:
    """The one writer of a summary row; returns its id."""
    cursor = conn.execute(
        "INSERT INTO summaries (agent_id, summary, first_message_id, last_message_id, model,"
        " tokens_before, tokens_after, is_fallback, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            agent_id,
            summary,
            first_message_id,
            last_message_id,
            model,
            tokens_before,
            tokens_after,
            int(is_fallback),
            created_at,
        ),
    )
    return int(cursor.lastrowid or 0)


# ----- forgetting (see memory_agent.forgetting): deletes and rewrites, never inserts --------------


def purge_message_rows(
    conn: Connection, agent_id: str, message_ids: Sequence[int]
) -> list[StoredMessage]:
    """Delete these messages of the agent outright (their keyword-index rows follow by trigger);
    returns what was deleted. Unjournalled: the caller records only that it forgot."""
    gone = []
    for message_id in message_ids:
        row = conn.execute(
            "SELECT * FROM messages WHERE agent_id = ? AND message_id = ?", (agent_id, message_id)
        ).fetchone()
        if row is not None:
            gone.append(_message_from_row(row))
            conn.execute("DELETE FROM messages WHERE message_id = ?", (message_id,))
    return gone


def redact_text(conn: Connection, texts: Sequence[str], agent_id: str | None = None) -> int:
    """Replace copies of these texts in messages (text and JSON content) and summaries by the
    mark."""
    where, params = ("AND agent_id = ?", (agent_id,)) if agent_id is not None else ("", ())
    return (
        replace_text(conn, "messages", "text", texts, where=where, params=params)
        + replace_text(
            conn, "messages", "content", texts, json_column=True, where=where, params=params
        )
        + replace_text(conn, "summaries", "summary", texts, where=where, params=params)
    )


def summaries_from(conn: Connection, agent_id: str, message_id: int) -> list[StoredSummary]:
    """The summaries a message reached: the one that covered it and every later one (each rolling
    summary is written from the one before, so the message may be repeated in all of them)."""
    first = conn.execute(
        "SELECT MIN(summary_id) FROM summaries WHERE agent_id = ? AND first_message_id <= ? AND "
        "last_message_id >= ?",
        (agent_id, message_id, message_id),
    ).fetchone()[0]
    if first is None:
        return []
    rows = conn.execute(
        "SELECT * FROM summaries WHERE agent_id = ? AND summary_id >= ? ORDER BY summary_id",
        (agent_id, first),
    ).fetchall()
    return [_summary_from_row(row) for row in rows]


def messages_between(
    conn: Connection, agent_id: str, first_id: int | None, last_id: int | None
) -> list[StoredMessage]:
    """The agent's messages with ids in [first_id, last_id], in order (a summary's range)."""
    if first_id is None or last_id is None:
        return []
    rows = conn.execute(
        "SELECT * FROM messages WHERE agent_id = ? AND message_id BETWEEN ? AND ? ORDER BY "
        "message_id",
        (agent_id, first_id, last_id),
    ).fetchall()
    return [_message_from_row(row) for row in rows]


def summary_rows(conn: Connection, agent_id: str) -> list[StoredSummary]:
    """Every summary of the agent, oldest first."""
    rows = conn.execute(
        "SELECT * FROM summaries WHERE agent_id = ? ORDER BY summary_id", (agent_id,)
    ).fetchall()
    return [_summary_from_row(row) for row in rows]


def rewrite_summary_row(
    conn: Connection, summary_id: int, summary: str, *, model: str | None, is_fallback: bool
) -> None:
    """Replace a summary's text in place (forgetting re-summarises without the forgotten
    message)."""
    conn.execute(
        "UPDATE summaries SET summary = ?, model = ?, is_fallback = ? WHERE summary_id = ?",
        (summary, model, int(is_fallback), summary_id),
    )


def message_filter(
    agent_id: str,
    roles: Sequence[str] | None = None,
    start_date: str | None = None,
    end_date: str | None = None,
) -> tuple[str, list[object]]:
    """The WHERE fragment (alias `m`) and parameters every message search applies: the agent,
    optionally its roles and an inclusive window of ISO times against the stored UTC times."""
    clauses = ["m.agent_id = ?"]
    params: list[object] = [agent_id]
    if roles:
        clauses.append(f"m.role IN ({', '.join('?' for _ in roles)})")
        params.extend(roles)
    if start_date:
        clauses.append("m.created_at >= ?")
        params.append(start_date)
    if end_date:
        clauses.append("m.created_at <= ?")
        params.append(end_date)
    return " AND ".join(clauses), params


def messages_by_ids(
    conn: Connection, where: str, params: Sequence[object], message_ids: Sequence[int]
) -> dict[int, StoredMessage]:
    """The messages among these ids that pass `where` (from `message_filter`), by id."""
    found: dict[int, StoredMessage] = {}
    for start in range(0, len(message_ids), 500):
        chunk = list(message_ids[start : start + 500])
        marks = ", ".join("?" for _ in chunk)
        rows = conn.execute(
            f"SELECT m.* FROM messages m WHERE {where} AND m.message_id IN ({marks})",
            (*params, *chunk),
        ).fetchall()
        found.update((int(row["message_id"]), _message_from_row(row)) for row in rows)
    return found


# ----- message vectors' bookkeeping (see memory_agent.conversation.message_vectors)
# ------------------------


def pending_vector_rows(conn: Connection, agent_id: str | None, limit: int) -> list[StoredMessage]:
    """Messages whose vectors are not written yet (`vector_chunks` NULL), newest first."""
    where, params = ("AND agent_id = ?", [agent_id]) if agent_id is not None else ("", [])
    rows = conn.execute(
        f"SELECT * FROM messages WHERE vector_chunks IS NULL {where}"
        " ORDER BY message_id DESC LIMIT ?",
        (*params, limit),
    ).fetchall()
    return [_message_from_row(row) for row in rows]


def pending_vector_count(conn: Connection, agent_id: str | None) -> int:
    where, params = ("AND agent_id = ?", (agent_id,)) if agent_id is not None else ("", ())
    return int(
        conn.execute(
            f"SELECT COUNT(*) FROM messages WHERE vector_chunks IS NULL {where}", params
        ).fetchone()[0]
    )


def previous_text(conn: Connection, message: StoredMessage) -> str:
    """The text of the message before this one in its session (the turn it answers); '' if none."""
    if message.session_id is None:
        row = conn.execute(
            "SELECT text FROM messages WHERE agent_id = ? AND message_id < ? AND session_id IS NULL"
            " AND text != '' ORDER BY message_id DESC LIMIT 1",
            (message.agent_id, message.message_id),
        ).fetchone()
    else:
        row = conn.execute(
            "SELECT text FROM messages WHERE agent_id = ? AND message_id < ? AND session_id = ?"
            " AND text != '' ORDER BY message_id DESC LIMIT 1",
            (message.agent_id, message.message_id, message.session_id),
        ).fetchone()
    return "" if row is None else str(row["text"])


def mark_vectors(conn: Connection, counts: Sequence[tuple[int, int | None]]) -> None:
    """Record how many vectors hold each message (None: not written, so the catch-up embeds it)."""
    conn.executemany(
        "UPDATE messages SET vector_chunks = ? WHERE message_id = ?",
        [(chunks, message_id) for message_id, chunks in counts],
    )


def vector_chunks(conn: Connection, agent_id: str) -> dict[int, int]:
    """Each of the agent's messages with vectors written, and how many."""
    rows = conn.execute(
        "SELECT message_id, vector_chunks FROM messages"
        " WHERE agent_id = ? AND vector_chunks IS NOT NULL",
        (agent_id,),
    ).fetchall()
    return {int(row["message_id"]): int(row["vector_chunks"]) for row in rows}


def agents_with_messages(conn: Connection) -> set[str]:
    return {str(row[0]) for row in conn.execute("SELECT DISTINCT agent_id FROM messages")}
