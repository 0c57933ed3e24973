"""The SQL of the passages table: every statement archival memory runs against SQLite.

Functions take the connection of a transaction (or of `Database.reading()`) so that callers
decide what is atomic: an insert, its tag rows and its journal entry commit together.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence

from ..errors import AgentNotFoundError
from ..privacy.sensitivity import DEFAULT_CLEARANCE, Sensitivity, visible_levels
from ..store import passage_fts
from ..store.protocol import Connection
from .filters import PassageFilter, superseded_sql
from .links import find_link
from .passages import (
    Passage,
    PreparedPassage,
    indexed_text,
    inserted_passage,
    passage_from_row,
)

__all__ = [
    "LIFECYCLE_COLUMNS",
    "agent_rows",
    "agents_with_passages",
    "column_values",
    "delete_row",
    "excluded_ids",
    "expired_rows",
    "fetch_by_ids",
    "fetch_one",
    "indexed_chunks",
    "insert_or_get",
    "insert_row",
    "keyword_indexer",
    "known_ids",
    "list_rows",
    "mark_indexed",
    "mark_pending",
    "mark_truncated_pending",
    "passage_count",
    "pending_count",
    "pending_rows",
    "purge_rows",
    "rows_holding",
    "record_access",
    "require_agent",
    "state_counts",
    "successor_chain",
    "superseded_by_rows",
    "superseded_now",
    "update_columns",
    "truncated_count",
    "vector_count",
]

LIFECYCLE_COLUMNS = (
    "tags",
    "metadata",
    "provenance",
    "importance",
    "superseded_by",
    "expires_at",
    "sensitivity",
)
"""The columns `update_columns` may change, as the journal records them (raw stored values)."""
_TAGS = json.JSONEncoder(ensure_ascii=False)
"""A new row's tags as stored JSON (made once: `json.dumps` with an option builds one per call)."""


def require_agent(conn: Connection, agent_id: str) -> None:
    if conn.execute("SELECT 1 FROM agents WHERE agent_id = ?", (agent_id,)).fetchone() is None:
        raise AgentNotFoundError(agent_id)


def insert_or_get(
    conn: Connection,
    agent_id: str,
    item: PreparedPassage,
    now: str,
    indexer: passage_fts.RowIndexer | None = None,
) -> tuple[Passage, bool]:
    """Insert the passage, or return the agent's existing one with identical content.

    Returns the stored passage and whether it was created by this call. A new passage is built
    from the values written (`inserted_passage`), not read back: the read and its parsing cost
    about as much as the INSERT. A batch passes the agent's `passage_fts.agent_indexer`.
    """
    passage_id = f"passage-{uuid.uuid4()}"
    created_at = item.created_at or now
    if insert_row(conn, passage_id, agent_id, item, created_at, indexer) is not None:
        return inserted_passage(passage_id, agent_id, item, created_at), True
    row = conn.execute(
        "SELECT * FROM passages WHERE agent_id = ? AND content_hash = ?",
        (agent_id, item.content_hash),
    ).fetchone()
    return passage_from_row(row), False


def insert_row(
    conn: Connection,
    passage_id: str,
    agent_id: str,
    item: PreparedPassage,
    created_at: str,
    indexer: passage_fts.RowIndexer | None = None,
) -> int | None:
    """The one writer of a passage row with its tag rows and keyword-index entry (live inserts and
    imports alike); the vectors are 'pending' until written. Returns the new row id, or None
    when the agent already has a passage with identical content (nothing is written)."""
    cursor = conn.execute(
        "INSERT INTO passages (passage_id, agent_id, content, content_hash, tags, metadata, "
        "created_at,"
        " expires_at, importance, provenance, access_count, last_accessed_at, sensitivity, "
        "index_context, context_of)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (agent_id, content_hash) DO NOTHING",
        (
            passage_id,
            agent_id,
            item.content,
            item.content_hash,
            _TAGS.encode(list(item.tags)),
            item.metadata_json,
            created_at,
            item.expires_at,
            item.importance,
            item.provenance_json,
            item.access_count,
            item.last_accessed_at,
            item.sensitivity,
            item.context,
            find_link(conn, agent_id, item.context) if item.context else None,
        ),
    )
    if not cursor.rowcount:
        return None
    rowid = int(cursor.lastrowid or 0)
    rows = [(rowid, indexed_text(item.content, item.context))]
    if indexer is None:
        passage_fts.index_rows(conn, agent_id, rows)
    else:
        indexer(rows)
    _write_tags(conn, rowid, item.tags)
    return rowid


def keyword_indexer(conn: Connection, agent_id: str) -> passage_fts.RowIndexer:
    """The agent's keyword-index writer for a batch of inserts in one transaction (see
    `passage_fts.agent_indexer`)."""
    return passage_fts.agent_indexer(conn, agent_id)


def _write_tags(conn: Connection, rowid: int, tags: Sequence[str]) -> None:
    """The one writer of tag rows (a new passage's, or a passage's new tags)."""
    if tags:
        conn.executemany(
            "INSERT INTO passage_tags (passage_rowid, tag) VALUES (?, ?)",
            [(rowid, tag) for tag in tags],
        )


def fetch_one(conn: Connection, agent_id: str, passage_id: str) -> Passage | None:
    row = conn.execute(
        "SELECT * FROM passages WHERE passage_id = ? AND agent_id = ?", (passage_id, agent_id)
    ).fetchone()
    return None if row is None else passage_from_row(row)


def fetch_by_ids(conn: Connection, agent_id: str, passage_ids: Sequence[str]) -> dict[str, Passage]:
    """The agent's passages among these ids (others' and missing ids are left out).

    Looked up by id alone and checked for the agent afterwards: given both conditions, SQLite's
    planner (without statistics) prefers the agent index and scans all of an agent's rows.
    """
    found: dict[str, Passage] = {}
    for start in range(0, len(passage_ids), 500):
        chunk = list(passage_ids[start : start + 500])
        marks = ", ".join("?" for _ in chunk)
        rows = conn.execute(
            f"SELECT * FROM passages WHERE passage_id IN ({marks})", chunk
        ).fetchall()
        found.update(
            (row["passage_id"], passage_from_row(row))
            for row in rows
            if row["agent_id"] == agent_id
        )
    return found


def list_rows(conn: Connection, where: PassageFilter, limit: int, offset: int) -> list[Passage]:
    """Newest first."""
    clause, params = where.sql("p")
    rows = conn.execute(
        f"SELECT p.* FROM passages p WHERE {clause}"
        " ORDER BY p.created_at DESC, p.passage_rowid DESC LIMIT ? OFFSET ?",
        (*params, limit, offset),
    ).fetchall()
    return [passage_from_row(row) for row in rows]


def delete_row(conn: Connection, agent_id: str, passage_id: str) -> Passage | None:
    """Delete the passage (its tags and keyword-index row follow by cascade and trigger)."""
    passage = fetch_one(conn, agent_id, passage_id)
    if passage is not None:
        conn.execute("DELETE FROM passages WHERE passage_id = ?", (passage_id,))
    return passage


def purge_rows(conn: Connection, passage_ids: Sequence[str]) -> int:
    """Forgetting: delete these passages outright, unjournalled (the caller records only that it
    forgot). Their tags and keyword-index rows follow by cascade and trigger; a passage they
    superseded that is kept stops pointing at them. Returns how many rows went."""
    gone = 0
    for start in range(0, len(passage_ids), 500):
        chunk = list(passage_ids[start : start + 500])
        marks = ", ".join("?" for _ in chunk)
        conn.execute(
            f"UPDATE passages SET superseded_by = NULL WHERE superseded_by IN ({marks})", chunk
        )
        gone += max(
            conn.execute(f"DELETE FROM passages WHERE passage_id IN ({marks})", chunk).rowcount, 0
        )
    return gone


def agent_rows(conn: Connection, agent_id: str) -> list[Passage]:
    """Every passage of the agent, superseded and expired ones included, oldest first."""
    rows = conn.execute(
        "SELECT * FROM passages WHERE agent_id = ? ORDER BY passage_rowid", (agent_id,)
    ).fetchall()
    return [passage_from_row(row) for row in rows]


def rows_holding(conn: Connection, agent_id: str | None, text: str) -> list[Passage]:
    """Passages (of the agent, or of every agent) whose content or ranking-only context contains
    `text` exactly (a context quoting a forgotten turn is a copy of it too)."""
    clause, params = ("AND agent_id = ?", (agent_id,)) if agent_id is not None else ("", ())
    rows = conn.execute(
        f"SELECT * FROM passages WHERE (instr(content, ?) > 0 OR instr(index_context, ?) > 0)"
        f" {clause} ORDER BY passage_rowid",
        (text, text, *params),
    ).fetchall()
    return [passage_from_row(row) for row in rows]


def pending_rows(conn: Connection, agent_id: str | None, limit: int) -> list[Passage]:
    """Passages whose embedding is still owed, oldest first."""
    agent_clause = "" if agent_id is None else "AND agent_id = ?"
    params: tuple[object, ...] = () if agent_id is None else (agent_id,)
    rows = conn.execute(
        f"SELECT * FROM passages WHERE vector_state = 'pending' {agent_clause}"
        " ORDER BY passage_rowid LIMIT ?",
        (*params, limit),
    ).fetchall()
    return [passage_from_row(row) for row in rows]


def pending_count(conn: Connection, agent_id: str | None = None) -> int:
    """Passages whose embedding is owed (answered from the partial index of pending rows)."""
    agent_clause = "" if agent_id is None else "AND agent_id = ?"
    params: tuple[object, ...] = () if agent_id is None else (agent_id,)
    return int(
        conn.execute(
            f"SELECT COUNT(*) FROM passages WHERE vector_state = 'pending' {agent_clause}", params
        ).fetchone()[0]
    )


def passage_count(conn: Connection, agent_id: str | None = None) -> int:
    agent_clause = "" if agent_id is None else "WHERE agent_id = ?"
    params: tuple[object, ...] = () if agent_id is None else (agent_id,)
    return int(conn.execute(f"SELECT COUNT(*) FROM passages {agent_clause}", params).fetchone()[0])


def state_counts(conn: Connection, agent_id: str | None = None) -> dict[str, int]:
    """How many passages are 'indexed' and 'pending' (of one agent, or of all)."""
    pending = pending_count(conn, agent_id)
    return {"indexed": passage_count(conn, agent_id) - pending, "pending": pending}


def known_ids(conn: Connection, agent_id: str, passage_ids: Sequence[str]) -> set[str]:
    """Which of these ids are passages of the agent (in any vector state)."""
    return set(fetch_by_ids(conn, agent_id, passage_ids))


def agents_with_passages(conn: Connection) -> set[str]:
    """One index probe per agent, rather than a scan of every passage."""
    return {
        row[0]
        for row in conn.execute(
            "SELECT agent_id FROM agents a WHERE EXISTS (SELECT 1 FROM passages p WHERE p.agent_id "
            "= a.agent_id)"
        )
    }


def column_values(conn: Connection, passage_id: str) -> dict[str, object]:
    """The stored (raw) values of LIFECYCLE_COLUMNS, as the journal keeps them for a rollback."""
    row = conn.execute(
        f"SELECT {', '.join(LIFECYCLE_COLUMNS)} FROM passages WHERE passage_id = ?", (passage_id,)
    ).fetchone()
    return {} if row is None else {column: row[column] for column in LIFECYCLE_COLUMNS}


def update_columns(conn: Connection, passage_id: str, values: Mapping[str, object]) -> None:
    """The one writer of a passage's changeable columns (raw stored values, e.g. tags as JSON text).

    A change of tags rewrites the tag rows too, so tag filters see it at once.
    """
    unknown = set(values) - set(LIFECYCLE_COLUMNS)
    if unknown:
        raise ValueError(f"not a changeable passage column: {sorted(unknown)}")
    if not values:
        return
    assignments = ", ".join(f"{column} = ?" for column in values)
    conn.execute(
        f"UPDATE passages SET {assignments} WHERE passage_id = ?", (*values.values(), passage_id)
    )
    if "tags" in values:
        rowid = conn.execute(
            "SELECT passage_rowid FROM passages WHERE passage_id = ?", (passage_id,)
        ).fetchone()[0]
        conn.execute("DELETE FROM passage_tags WHERE passage_rowid = ?", (rowid,))
        _write_tags(conn, int(rowid), json.loads(str(values["tags"])))


def excluded_ids(
    conn: Connection,
    passage_ids: Sequence[str],
    now: str,
    *,
    include_superseded: bool,
    clearance: Sensitivity = DEFAULT_CLEARANCE,
) -> set[str]:
    """Which of these ids search must leave out: above the clearance, expired at `now`, or
    superseded at `now` (unless included; a passage whose successors have all expired is current
    again)."""
    levels = visible_levels(clearance)
    found: set[str] = set()
    superseded, chain_params = superseded_sql("p", now)
    for start in range(0, len(passage_ids), 500):
        chunk = list(passage_ids[start : start + 500])
        marks = ", ".join("?" for _ in chunk)
        lifecycle = (
            f"(p.sensitivity NOT IN ({', '.join('?' for _ in levels)})"
            " OR (p.expires_at IS NOT NULL AND p.expires_at <= ?))"
        )
        params: list[object] = [*chunk, *levels, now]
        if not include_superseded:
            lifecycle = f"({lifecycle} OR {superseded})"
            params.extend(chain_params)
        found.update(
            row[0]
            for row in conn.execute(
                f"SELECT p.passage_id FROM passages p WHERE p.passage_id IN ({marks}) AND "
                f"{lifecycle}",
                params,
            )
        )
    return found


def superseded_now(conn: Connection, passage_ids: Sequence[str], now: str) -> set[str]:
    """Which of these ids are superseded at `now` (their chain of successors holds a live
    passage)."""
    found: set[str] = set()
    superseded, chain_params = superseded_sql("p", now)
    for start in range(0, len(passage_ids), 500):
        chunk = list(passage_ids[start : start + 500])
        marks = ", ".join("?" for _ in chunk)
        found.update(
            row[0]
            for row in conn.execute(
                f"SELECT p.passage_id FROM passages p WHERE p.passage_id IN ({marks}) AND "
                f"{superseded}",
                [*chunk, *chain_params],
            )
        )
    return found


def expired_rows(conn: Connection, agent_id: str | None, now: str) -> list[Passage]:
    """Passages whose expiry has passed (of one agent, or of all), oldest expiry first."""
    agent_clause = "" if agent_id is None else "AND agent_id = ?"
    params: tuple[object, ...] = (now,) if agent_id is None else (now, agent_id)
    rows = conn.execute(
        f"SELECT * FROM passages WHERE expires_at IS NOT NULL AND expires_at <= ? {agent_clause}"
        " ORDER BY expires_at, passage_rowid",
        params,
    ).fetchall()
    return [passage_from_row(row) for row in rows]


def superseded_by_rows(conn: Connection, passage_id: str) -> list[Passage]:
    """The passages this one superseded directly."""
    rows = conn.execute(
        "SELECT * FROM passages WHERE superseded_by = ? ORDER BY passage_rowid", (passage_id,)
    ).fetchall()
    return [passage_from_row(row) for row in rows]


def successor_chain(
    conn: Connection, agent_id: str, passage_id: str, limit: int = 10_000
) -> list[str]:
    """The ids reached by following `superseded_by` from this passage (itself first); stops at a
    repeat, so a cycle cannot loop."""
    chain = [passage_id]
    seen = {passage_id}
    current = fetch_one(conn, agent_id, passage_id)
    while current is not None and current.superseded_by is not None and len(chain) < limit:
        if current.superseded_by in seen:
            break
        chain.append(current.superseded_by)
        seen.add(current.superseded_by)
        current = fetch_one(conn, agent_id, current.superseded_by)
    return chain


def record_access(conn: Connection, passage_ids: Sequence[str], when: str) -> None:
    """Count one more use of each passage (returned by a search); not journalled, like a read."""
    conn.executemany(
        "UPDATE passages SET access_count = access_count + 1, last_accessed_at = ? WHERE "
        "passage_id = ?",
        [(when, passage_id) for passage_id in passage_ids],
    )


def mark_indexed(conn: Connection, chunks: Sequence[tuple[str, int]]) -> None:
    """Mark these (passage id, number of vectors written) pairs indexed."""
    conn.executemany(
        "UPDATE passages SET vector_state = 'indexed', vector_chunks = ?"
        " WHERE passage_id = ? AND vector_state = 'pending'",
        [(count, passage_id) for passage_id, count in chunks],
    )


def vector_count(conn: Connection, agent_id: str | None = None) -> int:
    """How many vectors the indexed passages should have in the vector store (one per chunk).

    The extra chunks are summed over the few multi-chunk rows only (a partial index), so the
    check stays a pair of index counts on a store of short passages.
    """
    agent_clause = "" if agent_id is None else "AND agent_id = ?"
    params: tuple[object, ...] = () if agent_id is None else (agent_id,)
    extra = conn.execute(
        "SELECT COALESCE(SUM(vector_chunks - 1), 0) FROM passages"
        " WHERE vector_chunks != 1 AND vector_chunks > 1 AND vector_state = 'indexed' "
        f"{agent_clause}",
        params,
    ).fetchone()[0]
    return state_counts(conn, agent_id)["indexed"] + int(extra)


def indexed_chunks(conn: Connection, agent_id: str) -> dict[str, int]:
    """The agent's indexed passages and how many vectors each has."""
    return {
        row[0]: int(row[1])
        for row in conn.execute(
            "SELECT passage_id, vector_chunks FROM passages WHERE vector_state = 'indexed' AND "
            "agent_id = ?",
            (agent_id,),
        )
    }


def truncated_count(conn: Connection) -> int:
    """Indexed passages embedded before chunking from their first window only (`vector_chunks`
    0)."""
    return int(
        conn.execute(
            "SELECT COUNT(*) FROM passages WHERE vector_chunks != 1 AND vector_chunks = 0 AND "
            "vector_state = 'indexed'"
        ).fetchone()[0]
    )


def mark_truncated_pending(conn: Connection) -> int:
    """Owe whole-passage vectors for every passage embedded from its first window only."""
    return int(
        conn.execute(
            "UPDATE passages SET vector_state = 'pending' WHERE vector_chunks != 1 AND "
            "vector_chunks = 0"
            " AND vector_state = 'indexed'"
        ).rowcount
    )


def mark_pending(conn: Connection, passage_ids: Sequence[str]) -> None:
    conn.executemany(
        "UPDATE passages SET vector_state = 'pending' WHERE passage_id = ?",
        [(passage_id,) for passage_id in passage_ids],
    )
