"""Keyword search over passages: FTS5 with bm25 ranking, restricted by the passage filter.

Each agent's passages have their own FTS5 table (`store.passage_fts`), so bm25's statistics
(how many passages hold a word, their average length) are the searching agent's alone: another
agent storing passages in the same storage dir never changes this agent's scores or ranks.

The query text is turned into quoted OR-ed tokens by `store.fts` (no user text is ever FTS5
syntax), with stop words dropped. In an OR query a stop word matches almost every passage, so
FTS5 would score every one of those rows; and in short passages bm25 still gives "did" or "what"
enough weight to push real matches down (on the LoCoMo dev conversations, BM25 evidence
recall@10 goes from 0.581 with every word to 0.624 without stop words).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass

from ..store import pg_fulltext
from ..store.dialect import by_engine
from ..store.fts import fts_query, query_tokens
from ..store.fts_prune import pruned_head
from ..store.passage_fts import TOKENIZER, agent_fts_table
from ..store.protocol import Connection, Row
from . import passage_table
from .filters import PassageFilter
from .timestamps import to_epoch

__all__ = ["HEAD_FACTOR", "HEAD_SLACK", "KeywordMatch", "keyword_search"]

HEAD_FACTOR = 4
"""How much deeper than asked the FTS5 head is read when the filter names tags or dates (which
may leave out most rows)."""
HEAD_SLACK = 0.25
"""Without tags or dates only expired, superseded or hidden passages are left out, which are few:
the head is then `limit` plus this share (at least 5 rows). A shallower head is cheaper to check,
and its last score is higher, so pruning common words (`store.fts_prune`) proves exact more often:
at 100,000 passages, depth 50, 116 of 200 queries pruned against 86 with a head 4 times deeper.
When too many of the shallow head's rows are left out (many hidden or expired passages), the
head HEAD_FACTOR times deeper is read, then the joined query (exact either way)."""


@dataclass(frozen=True)
class KeywordMatch:
    passage_id: str
    score: float
    """-bm25 on SQLite, `pg_fulltext.RANKING`'s score on PostgreSQL: higher is a better match."""


def keyword_search(
    conn: Connection, text: str, where: PassageFilter, limit: int
) -> list[KeywordMatch]:
    """The `limit` best bm25 matches for `text` among the filtered passages, best first.

    FTS5 scores every row that shares a word with the query, and joining each of those rows to
    `passages` to check the filter costs as much again (a third of the time at 100,000 passages,
    where a common name can match 30,000 rows). So the FTS5 ranking alone is read first, somewhat
    deeper than needed (HEAD_FACTOR, HEAD_SLACK), and the filter is applied to that head. The
    answer is exact either way: if `limit` rows of the head pass, no row outside the head can
    outrank them; otherwise (a selective tag or date filter) the joined query runs instead. The
    head itself skips scoring the rows of very common words when that provably changes nothing
    (`store.fts_prune`).
    """
    search: Callable[[Connection, str, PassageFilter, int], list[KeywordMatch]] = by_engine(
        conn, sqlite=_fts5, postgresql=_postgres
    )
    return search(conn, text, where, limit)


def _fts5(conn: Connection, text: str, where: PassageFilter, limit: int) -> list[KeywordMatch]:
    """SQLite's FTS5 with bm25, on the agent's own table (see `keyword_search`)."""
    match = fts_query(text, drop_stop_words=True)
    table = agent_fts_table(conn, where.agent_id)
    if match is None or limit <= 0 or table is None:
        return []
    narrowed = bool(where.tags) or where.start is not None or where.end is not None
    deep = limit * HEAD_FACTOR
    shallow = limit + max(5, math.ceil(limit * HEAD_SLACK))
    tokens = query_tokens(text, drop_stop_words=True)
    for depth in (deep,) if narrowed or shallow >= deep else (shallow, deep):
        head = pruned_head(conn, table, TOKENIZER, tokens, depth)
        if head is None:  # no very common word in the query, or its rows might reach the head
            head = conn.execute(
                f"SELECT rowid, bm25({table}) AS rank FROM {table} WHERE {table} MATCH ? ORDER BY "
                "rank, rowid LIMIT ?",
                (match, depth),
            ).fetchall()
        kept = _passing(conn, head, where)
        if len(kept) >= limit or len(head) < depth:
            return kept[:limit]
    return _joined(conn, table, match, where, limit)


def _passing(conn: Connection, head: list[Row], where: PassageFilter) -> list[KeywordMatch]:
    """The head's rows that pass the filter, in the head's order.

    Rows are fetched by rowid alone and filtered here: with an `agent_id = ?` condition in the
    same query, SQLite's planner (without statistics) walks the agent index instead.
    """
    if not head:
        return []
    marks = ", ".join("?" for _ in head)
    rows = conn.execute(
        "SELECT passage_rowid, passage_id, agent_id, tags, created_at, expires_at, superseded_by, "
        "sensitivity"
        " FROM passages"
        f" WHERE passage_rowid IN ({marks})",
        [row[0] for row in head],
    ).fetchall()
    superseded = _superseded(conn, where, [row[1] for row in rows if row[6] is not None])
    # Tags and dates are parsed only when the filter names some: parsing every row's tags and
    # timestamp took 1.3 of 3.5 s in a profile of 200 searches with 200-row heads (100,000 rows).
    tagged, dated = bool(where.tags), where.start is not None or where.end is not None
    passing = {
        row[0]: row[1]
        for row in rows
        if where.accepts(
            row[2], json.loads(row[3]) if tagged else (), to_epoch(row[4]) if dated else 0.0
        )
        and where.admits(row[5], row[1] in superseded, row[7])
    }
    return [KeywordMatch(passing[row[0]], -float(row[1])) for row in head if row[0] in passing]


def _superseded(conn: Connection, where: PassageFilter, named: list[str]) -> set[str]:
    """Of the ids that name a successor, those superseded now (one indexed lookup, only when the
    filter leaves superseded passages out)."""
    if where.include_superseded or not named or where.live_at is None:
        return set(named)
    return passage_table.superseded_now(conn, named, where.live_at)


def _joined(
    conn: Connection, table: str, match: str, where: PassageFilter, limit: int
) -> list[KeywordMatch]:
    clause, params = where.sql("p")
    rows = conn.execute(
        f"SELECT p.passage_id, bm25({table}) AS rank FROM {table}"
        f" JOIN passages p ON p.passage_rowid = {table}.rowid"
        f" WHERE {table} MATCH ? AND {clause}"
        " ORDER BY rank, p.passage_rowid LIMIT ?",
        (match, *params, limit),
    ).fetchall()
    return [KeywordMatch(row[0], -float(row[1])) for row in rows]


def _postgres(conn: Connection, text: str, where: PassageFilter, limit: int) -> list[KeywordMatch]:
    """PostgreSQL's full-text ranking (see `store.pg_fulltext`); the filter is part of the query,
    whose planner has statistics to choose between the GIN index and the agent's rows."""
    clause, params = where.sql("p")
    return [
        KeywordMatch(passage_id, rank)
        for passage_id, rank in pg_fulltext.passage_search(conn, text, clause, list(params), limit)
    ]
