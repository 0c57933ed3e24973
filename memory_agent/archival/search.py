"""Searching archival memory: keyword, vector, or both fused.

Both indexes are filtered the same way (agent, tags, dates), then the candidates are read back from
SQLite, so a hit is always a passage that exists and belongs to the searching agent; a vector
whose passage was deleted is simply dropped. The vector side may fail (Chroma down, model
missing): the search then answers from the keyword index alone and logs a warning, because a
search must not fail because one index is behind.

A query with no text lists the newest passages (score 0), like `conversation_search` does.

The 'scored' mode is hybrid's fused match plus weighted recency and importance (`scoring`): every
fused candidate is read back and re-ranked. With `explain`, each hit carries a `SearchExplanation`
of every signal.

Expired passages are never returned, superseded ones only when the filter includes them, and
passages above the caller's clearance never (`memory_agent.privacy.sensitivity`): the keyword side
filters them in SQL; the vector store does not know them (they change after a vector is written), so
its candidates are checked against SQLite and, when too many were left out, asked for again deeper
(MAX_VECTOR_DEPTH at most for expiry and supersession; for sensitivity until the store runs out, so
hidden passages never make a search answer fewer hits than the allowed ones could fill).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from concurrent.futures import Executor
from typing import Literal

from ..errors import ArchivalError
from ..store.protocol import Store
from . import passage_table
from .failures import vector_failure_text
from .filters import PassageFilter
from .fusion import FusionConfig, fuse
from .keyword import KeywordMatch, keyword_search
from .links import lift_replies, replies_of
from .passages import Passage, SearchHit
from .query_text import vector_query_text
from .rerank import Reranker, apply_order
from .scoring import DEFAULT_SCORING, ScoringConfig, SearchExplanation, newest, recency, scored
from .vector_index import VectorIndex
from .vector_store import VectorMatch

__all__ = ["MAX_SEARCH_LIMIT", "MODES", "SearchMode", "search_passages"]

log = logging.getLogger(__name__)

SearchMode = Literal["hybrid", "vector", "keyword", "scored"]
MODES: tuple[str, ...] = ("hybrid", "vector", "keyword", "scored")
MAX_SEARCH_LIMIT = 1000
ORPHAN_SLACK = 10
MAX_VECTOR_DEPTH = 4000
"""How deep the vector side looks for live candidates when expired or superseded ones crowd it."""


def search_passages(
    db: Store,
    index: VectorIndex,
    query: str,
    where: PassageFilter,
    limit: int,
    mode: SearchMode,
    fusion: FusionConfig,
    executor: Executor | None = None,
    reranker: Reranker | None = None,
    *,
    scoring: ScoringConfig = DEFAULT_SCORING,
    explain: bool = False,
) -> list[SearchHit]:
    """The best `limit` passages for `query` in `mode`, best first (explained when `explain`)."""
    hits, newest_candidate = _search(
        db, index, query, where, limit, mode, fusion, executor, reranker, scoring
    )
    if explain:
        return _explained(hits, mode, newest_candidate, scoring)
    return hits


def _search(
    db: Store,
    index: VectorIndex,
    query: str,
    where: PassageFilter,
    limit: int,
    mode: SearchMode,
    fusion: FusionConfig,
    executor: Executor | None,
    reranker: Reranker | None,
    scoring: ScoringConfig,
) -> tuple[list[SearchHit], str | None]:
    """The hits, and the newest creation time among the candidates recency was measured against.

    In hybrid and scored modes the two legs run concurrently on `executor` (when given, see
    `_both_legs`): the indexes are independent, so the search takes about the longer of the two,
    not the sum. A `reranker` (hybrid mode only) reorders the fused head before it is cut to
    `limit`.
    """
    _check(query, limit, mode)
    if not query.strip():
        return _with_newest(_newest(db, where, limit))
    # Candidates beyond `limit` leave room for vectors whose passage was deleted (dropped on read).
    wanted = limit + ORPHAN_SLACK
    if mode == "keyword":
        return _with_newest(
            _keyword_only(_keyword_matches(db, query, where, limit), db, where, limit)
        )
    if mode == "vector":
        vector = _vector_matches(index, vector_query_text(query, mode), where, wanted, db)
        if vector is None:
            return _with_newest(
                _degraded(
                    _keyword_only(_keyword_matches(db, query, where, limit), db, where, limit)
                )
            )
        return _with_newest(
            _hydrate(db, where, [(m.passage_id, m.similarity) for m in vector], [], vector)[:limit]
        )
    depth = max(wanted, fusion.vector_depth)
    keyword, vector = _both_legs(
        db, index, query, where, max(limit, fusion.keyword_depth), depth, executor
    )
    if vector is None:
        return _with_newest(_degraded(_keyword_only(keyword, db, where, limit)))
    fused = _with_replies(
        db,
        where,
        [
            (candidate.passage_id, candidate.score)
            for candidate in fuse(
                [(m.passage_id, m.score) for m in keyword],
                [(m.passage_id, m.similarity) for m in vector],
                fusion,
            )
        ],
        fusion.reply_share,
    )
    if mode == "scored":
        every = _hydrate(db, where, fused, keyword, vector)
        return _rescored(every, scoring)[:limit], newest([hit.passage.created_at for hit in every])
    head_size = wanted if reranker is None else max(wanted, reranker.depth + ORPHAN_SLACK)
    hits = _hydrate(db, where, fused[:head_size], keyword, vector)
    if reranker is not None:
        hits = apply_order(reranker, query, hits, [hit.content for hit in hits])
    return _with_newest(hits[:limit])


def _both_legs(
    db: Store,
    index: VectorIndex,
    query: str,
    where: PassageFilter,
    keyword_depth: int,
    vector_depth: int,
    executor: Executor | None,
) -> tuple[list[KeywordMatch], list[VectorMatch] | None]:
    """Both legs' candidates: concurrently on `executor`, each leg on its own thread and reading
    connection (`Database.parallel_reading`), or one after the other on the calling thread when
    there is no executor or the caller is inside a write transaction (its reads must see its own
    uncommitted writes, which only the main connection does).

    A keyword failure is raised (after the vector leg has finished, so nothing still runs on the
    pool for this search); a vector failure is None, and the caller answers from keywords alone.
    """
    if executor is None or db.writing_here():
        keyword = _keyword_matches(db, query, where, keyword_depth)
        return keyword, _vector_matches(index, query, where, vector_depth, db)
    vector_future = executor.submit(
        _vector_matches, index, query, where, vector_depth, db, parallel=True
    )
    keyword_future = executor.submit(
        _keyword_matches, db, query, where, keyword_depth, parallel=True
    )
    try:
        keyword = keyword_future.result()
    finally:
        vector = vector_future.result()
    return keyword, vector


def _with_replies(
    db: Store, where: PassageFilter, ranked: list[tuple[str, float]], share: float
) -> list[tuple[str, float]]:
    """The fused ranking with the candidates' replies lifted towards them (`links.py`)."""
    if share <= 0 or not ranked:
        return ranked
    with db.reading() as conn:
        replies = replies_of(conn, where, [passage_id for passage_id, _ in ranked])
    return lift_replies(ranked, replies, share) if replies else ranked


def _with_newest(hits: list[SearchHit]) -> tuple[list[SearchHit], str | None]:
    return hits, newest([hit.passage.created_at for hit in hits])


def _rescored(hits: Sequence[SearchHit], scoring: ScoringConfig) -> list[SearchHit]:
    """Fused match plus weighted recency and importance, best first (ties keep the fused order)."""
    reference = newest([hit.passage.created_at for hit in hits])
    if reference is None:
        return []
    rescored = [
        (
            scored(
                hit.score,
                recency(hit.passage.created_at, reference, scoring.half_life_days),
                hit.passage.importance,
                scoring,
            ),
            position,
            hit,
        )
        for position, hit in enumerate(hits)
    ]
    rescored.sort(key=lambda item: (-item[0], item[1]))
    return [
        dataclasses.replace(hit, score=value, fused_score=hit.score) for value, _, hit in rescored
    ]


def _explained(
    hits: Sequence[SearchHit], mode: str, reference: str | None, scoring: ScoringConfig
) -> list[SearchHit]:
    """Each hit with its signals; recency against the newest candidate of the search."""
    explained = []
    for hit in hits:
        passage = hit.passage
        fused = hit.score if hit.fused_score is None else hit.fused_score
        explanation = SearchExplanation(
            mode="keyword" if hit.degraded else mode,
            keyword_rank=hit.keyword_rank,
            keyword_score=hit.keyword_score,
            vector_rank=hit.vector_rank,
            vector_similarity=hit.vector_similarity,
            fused=fused,
            recency=recency(
                passage.created_at, reference or passage.created_at, scoring.half_life_days
            ),
            importance=passage.importance,
            access_count=passage.access_count,
            score=hit.score,
        )
        explained.append(dataclasses.replace(hit, explanation=explanation))
    return explained


def _keyword_only(
    keyword: Sequence[KeywordMatch], db: Store, where: PassageFilter, limit: int
) -> list[SearchHit]:
    return _hydrate(db, where, [(m.passage_id, m.score) for m in keyword[:limit]], keyword, [])


def _degraded(hits: list[SearchHit]) -> list[SearchHit]:
    """Mark keyword-only answers to a vector or hybrid search, so callers can say so."""
    return [dataclasses.replace(hit, degraded=True) for hit in hits]


def _check(query: object, limit: object, mode: object) -> None:
    if not isinstance(query, str):
        raise ArchivalError(f"A search query must be text, got {type(query).__name__}.")
    if mode not in MODES:
        raise ArchivalError(f"Unknown search mode '{mode}'; use one of {', '.join(MODES)}.")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise ArchivalError(
            f"limit must be a whole number from 1 to {MAX_SEARCH_LIMIT}, got {limit!r}."
        )


def _keyword_matches(
    db: Store, query: str, where: PassageFilter, depth: int, *, parallel: bool = False
) -> list[KeywordMatch]:
    """The keyword leg (on a worker's own connection when `parallel`)."""
    with db.parallel_reading() if parallel else db.reading() as conn:
        return keyword_search(conn, query, where, depth)


def _vector_matches(
    index: VectorIndex,
    query: str,
    where: PassageFilter,
    depth: int,
    db: Store | None = None,
    *,
    parallel: bool = False,
) -> list[VectorMatch] | None:
    """Live vector candidates, or None when the vector side failed (the caller falls back); the
    lifecycle check reads on a worker's own connection when `parallel`."""
    try:
        asked = depth
        while True:
            matches = index.query(query, where, asked)
            if db is None or not where.checks_lifecycle:
                return matches
            live = _live(db, where, matches, parallel)
            if len(live) >= depth or len(matches) < asked:
                return live[:depth]
            if asked >= MAX_VECTOR_DEPTH and not where.hides_levels:
                return live[:depth]
            # Passages the clearance hides are never a reason to answer short: look until the
            # store has no more (expiry and supersession keep their bound, MAX_VECTOR_DEPTH).
            asked = asked * 4 if where.hides_levels else min(asked * 4, MAX_VECTOR_DEPTH)
    except Exception as error:  # any model or store failure: answer from keywords instead
        log.warning(
            "Vector search failed, answering from keyword search only: %s",
            vector_failure_text(error),
        )
        return None


def _live(
    db: Store, where: PassageFilter, matches: Sequence[VectorMatch], parallel: bool = False
) -> list[VectorMatch]:
    """The matches whose passages the filter's lifecycle rules admit (one indexed lookup)."""
    if not matches:
        return []
    with db.parallel_reading() if parallel else db.reading() as conn:
        excluded = passage_table.excluded_ids(
            conn,
            [m.passage_id for m in matches],
            where.live_at or "",
            include_superseded=where.include_superseded,
            clearance=where.clearance,
        )
    return [match for match in matches if match.passage_id not in excluded]


def _newest(db: Store, where: PassageFilter, limit: int) -> list[SearchHit]:
    with db.reading() as conn:
        return [
            SearchHit(passage, 0.0) for passage in passage_table.list_rows(conn, where, limit, 0)
        ]


def _hydrate(
    db: Store,
    where: PassageFilter,
    ranked: Sequence[tuple[str, float]],
    keyword: Sequence[KeywordMatch],
    vector: Sequence[VectorMatch],
) -> list[SearchHit]:
    """SearchHits for the ranked ids that still exist, with both indexes' ranks and scores."""
    keyword_at = {m.passage_id: (rank, m.score) for rank, m in enumerate(keyword, start=1)}
    vector_at = {m.passage_id: (rank, m.similarity) for rank, m in enumerate(vector, start=1)}
    with db.reading() as conn:
        passages: dict[str, Passage] = passage_table.fetch_by_ids(
            conn, where.agent_id, [pid for pid, _ in ranked]
        )
        named = [p.passage_id for p in passages.values() if p.superseded_by is not None]
        superseded = (
            passage_table.superseded_now(conn, named, where.live_at)
            if named and where.live_at is not None and not where.include_superseded
            else set(named)
        )
    hits = []
    for passage_id, score in ranked:
        passage = passages.get(passage_id)
        if passage is None or not where.admits(
            passage.expires_at, passage_id in superseded, passage.sensitivity
        ):
            continue
        keyword_rank, keyword_score = keyword_at.get(passage_id, (None, None))
        vector_rank, similarity = vector_at.get(passage_id, (None, None))
        hits.append(
            SearchHit(
                passages[passage_id], score, keyword_rank, vector_rank, keyword_score, similarity
            )
        )
    return hits
