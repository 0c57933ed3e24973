"""Searching conversation messages: keyword, vector, or both fused, as archival search does.

Every message the agent stored is searchable, those still in the context window and those a
compaction evicted. 'keyword' is the full-text index (`RecallMemory.keyword_ranked`); 'vector'
the messages' own vectors (`message_vectors`); 'hybrid' fuses the two rankings with archival's
fusion (`archival.fusion.fuse`, the same settings). The filters (agent, roles, an inclusive
window of dates) apply in every mode: in SQL for the keyword side, in the vector store's filter
and again in SQL for the vector side, so a hit is always a message of the searching agent.

A vector or hybrid search first spends up to about a second embedding the agent's messages still
without vectors (the newest first), so a message stored moments ago is found by meaning. When the
vector side fails (model or store), the search answers from keywords alone and logs a warning.

`time_aware` reads a time the query names ("yesterday", "last May": `time_phrases`) and raises
the messages of that window in the ranking (when the caller gave no dates): a boost, not a filter,
which lost recall on LoCoMo; see docs/conversation-search.md for what was measured.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Literal

from ..archival.failures import vector_failure_text
from ..archival.filters import PassageFilter
from ..archival.fusion import FusionConfig, fuse, min_max
from ..errors import ArchivalError, ConfigurationError, preview
from ..store.protocol import Store
from .message_vectors import CATCH_UP_BATCH, SEARCH_BUDGET_SECONDS, MessageVectors
from .recall import RecallMemory, StoredMessage, message_filter, messages_by_ids
from .time_phrases import TimeWindow, time_window

__all__ = ["MESSAGE_MODES", "MessageSearchMode", "search_messages"]

log = logging.getLogger(__name__)

MessageSearchMode = Literal["keyword", "vector", "hybrid"]
MESSAGE_MODES: tuple[str, ...] = ("keyword", "vector", "hybrid")
SLACK = 10
"""Vector candidates beyond the page asked for, for vectors whose message was forgotten."""
TIME_BOOST = 0.25
"""What a message from the time the query names gains on its score (fused or normalised, in
[0, 1]). Boosting beat filtering on LoCoMo's questions naming a time (docs/conversation-search.md):
their time is often the event's, told in a later session, which a filter drops."""


def search_messages(
    db: Store,
    recall: RecallMemory,
    vectors: MessageVectors | None,
    agent_id: str,
    query: str,
    *,
    mode: str,
    roles: Sequence[str] | None,
    start_date: str | None,
    end_date: str | None,
    limit: int,
    offset: int,
    fusion: FusionConfig,
    time_aware: bool = False,
    now: datetime | None = None,
) -> list[StoredMessage]:
    """The messages best matching `query` in `mode`, best first, `offset` then `limit` of them."""
    if mode not in MESSAGE_MODES:
        raise ConfigurationError(
            f"Unknown conversation search mode '{preview(str(mode))}'; use one of "
            f"{', '.join(MESSAGE_MODES)}."
        )
    if not isinstance(query, str):
        raise ConfigurationError(f"A search query must be text, got {type(query).__name__}.")
    window = _window(agent_id, roles, start_date, end_date)
    start, end = window.start, window.end
    named = (
        time_window(query, now)
        if time_aware and start is None and end is None and query.strip()
        else None
    )

    def keyword(depth: int, skip: int) -> list[tuple[StoredMessage, float]]:
        return recall.keyword_ranked(
            agent_id, query, roles=roles, start_date=start, end_date=end, limit=depth, offset=skip
        )

    if not query.strip() or (mode == "keyword" and named is None):
        return [message for message, _ in keyword(limit, offset)]
    wanted = offset + limit
    vector = (
        None
        if vectors is None or mode == "keyword"
        else _vector_candidates(vectors, query, window, max(wanted + SLACK, fusion.vector_depth))
    )
    if vector is None and mode != "keyword":
        if vectors is None:
            log.warning("No vector store for messages: answering from keyword search only")
        if named is None:
            return [message for message, _ in keyword(limit, offset)]
    if vector is None:  # keyword alone, its candidates to be re-ranked by the named time
        ranking = [
            (str(m.message_id), score) for m, score in keyword(max(wanted, fusion.keyword_depth), 0)
        ]
        scores = dict(min_max(ranking))
    elif mode == "vector":
        scores = dict(min_max([(str(message_id), sim) for message_id, sim in vector]))
    else:
        fused = fuse(
            [
                (str(m.message_id), score)
                for m, score in keyword(max(wanted, fusion.keyword_depth), 0)
            ],
            [(str(message_id), similarity) for message_id, similarity in vector],
            fusion,
        )
        scores = {candidate.passage_id: candidate.score for candidate in fused}
    # Best first: min_max and fuse both keep their ranking's order.
    order = [int(message_id) for message_id in scores]
    where, params = message_filter(agent_id, roles, start, end)
    with db.reading() as conn:
        found = messages_by_ids(conn, where, params, order)
    ranked = [found[i] for i in order if i in found]
    if named is not None:
        ranked = _boosted(ranked, scores, named)
    return ranked[offset:wanted]


def _boosted(
    ranked: list[StoredMessage], scores: dict[str, float], named: TimeWindow
) -> list[StoredMessage]:
    """The ranking with messages from the window the query names raised by TIME_BOOST (their
    normalised or fused score plus it); ties keep the order they had."""

    def inside(message: StoredMessage) -> bool:
        try:
            moment = datetime.fromisoformat(message.created_at)
        except ValueError:
            return False
        return named.contains(moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc))

    keyed = [
        (scores[str(m.message_id)] + (TIME_BOOST if inside(m) else 0.0), -position, m)
        for position, m in enumerate(ranked)
    ]
    keyed.sort(key=lambda item: (item[0], item[1]), reverse=True)
    return [m for _, _, m in keyed]


def _window(
    agent_id: str, roles: Sequence[str] | None, start: str | None, end: str | None
) -> PassageFilter:
    """The vector store's filter (roles are stored as tags), its dates in canonical UTC text
    (a bare end date covers its day); bad dates are refused before anything is read."""
    try:
        return PassageFilter.build(agent_id, roles or (), "any", start, end)
    except ArchivalError as error:
        raise ConfigurationError(f"{error} Nothing was searched.") from None


def _vector_candidates(
    vectors: MessageVectors, query: str, where: PassageFilter, depth: int
) -> list[tuple[int, float]] | None:
    """The nearest messages, or None when the vector side failed (the caller falls back)."""
    try:
        vectors.write_pending(where.agent_id, limit=CATCH_UP_BATCH, budget=SEARCH_BUDGET_SECONDS)
        return vectors.query(query, where, depth)
    except Exception as error:  # any model or store failure: answer from keywords instead
        log.warning(
            "Message vector search failed, answering from keyword search only: %s",
            vector_failure_text(error),
        )
        return None
