"""Reply links: a passage whose context is another stored passage's text answers it, and a search
hit on the passage it answers lifts it.

A conversation turn stored with the turn it answers as its ranking-only context ("Yes, twice!" with
context "Caroline: Have you been to the Grand Canyon? 8 May 2023") names that turn by its whole
text. When the insert finds it (a stored passage of the same agent whose whole text begins the
context and makes up at least half of it), the reply records the passage's id (`context_of`).
Hybrid and scored searches then raise each reply's fused score to at least a share
(`FusionConfig.reply_share`, 0.7) of the fused score of the passage it answers, and add replies
of the candidates that neither index found: a question about the Grand Canyon finds the turn that
asks about it, and through it the answer.

The link is read from the texts alone, never from the order passages were stored in; a reply
stored before the passage it answers is not linked (the link is looked up when the reply is
written).

Chosen leave-one-conversation-out on the LoCoMo dev conversations (`bench/ranking_candidates.py`,
docs/ranking.md): with sentence vectors (`sentences.py`) every fold chose "at least 0.7 of the
answered passage's score" among adding 0.2-1.0 of it or raising to 0.5-0.9 of it, in either
direction or both. Without the replies that neither index found, the gain over the plain fusion
fell from +0.041 / +0.020 to +0.016 / +0.011 at k = 5 / 10.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ..store.protocol import Connection
from .filters import PassageFilter
from .passages import content_hash

__all__ = ["MAX_LINKED_CONTEXT", "context_heads", "find_link", "lift_replies", "replies_of"]

MAX_LINKED_CONTEXT = 4_000
"""Longest context (characters) looked up for a link: a context is a few turns, and each candidate
prefix is hashed."""
_SPACE = re.compile(r"\s+")


def context_heads(context: str) -> list[str]:
    """The texts a context could name: the whole context and each prefix of it that ends before a
    space and is at least half of it, longest first ([] for no context or one too long)."""
    if not context or len(context) > MAX_LINKED_CONTEXT:
        return []
    heads = [context] + [
        context[: match.start()]
        for match in _SPACE.finditer(context)
        if 2 * match.start() >= len(context)
    ]
    return sorted(set(heads), key=len, reverse=True)


def find_link(conn: Connection, agent_id: str, context: str) -> str | None:
    """The id of the agent's passage that the context names (its longest such), or None."""
    heads = context_heads(context)
    if not heads:
        return None
    hashes = [content_hash(head) for head in heads]
    rows = conn.execute(
        "SELECT passage_id, content FROM passages WHERE agent_id = ? AND content_hash IN"
        f" ({', '.join('?' for _ in hashes)})",
        (agent_id, *hashes),
    ).fetchall()
    return str(max(rows, key=lambda row: len(row[1]))[0]) if rows else None


def replies_of(
    conn: Connection, where: PassageFilter, passage_ids: Sequence[str]
) -> dict[str, str]:
    """Reply id -> the id it answers, for the passages the filter admits whose context names one of
    `passage_ids` (one indexed lookup; expiry and supersession are checked when hits are read)."""
    if not passage_ids:
        return {}
    clause, params = where.sql("p")
    # The replies are found through the context_of index first, then each is read by its rowid
    # and filtered. Written as one WHERE, SQLite chose the agent's index (an equality looks more
    # selective than an IN list without statistics) and read every passage of the agent: 37 ms a
    # search at 100,000 passages, against 0.05 ms in this order (CROSS JOIN keeps SQLite's loop
    # order; PostgreSQL plans it as the inner join it is).
    rows = conn.execute(
        "SELECT p.passage_id, p.context_of FROM passages r CROSS JOIN passages p"
        " WHERE r.context_of IS NOT NULL AND r.context_of IN"
        f" ({', '.join('?' for _ in passage_ids)}) AND p.passage_rowid = r.passage_rowid"
        f" AND {clause}",
        (*passage_ids, *params),
    ).fetchall()
    return {str(row[0]): str(row[1]) for row in rows}


def lift_replies(
    ranked: Sequence[tuple[str, float]], replies: Mapping[str, str], share: float
) -> list[tuple[str, float]]:
    """`ranked` (passage id, fused score; best first) with each reply's score raised to `share` of
    the passage it answers when that is higher, replies not ranked yet added; best first, ties in
    the order they had (added replies after every ranked passage)."""
    scores = dict(ranked)
    position = {passage_id: number for number, (passage_id, _) in enumerate(ranked)}
    lifted = dict(scores)
    for reply, answered in replies.items():
        floor = share * scores.get(answered, 0.0)
        if floor > 0 and floor > lifted.get(reply, float("-inf")):
            lifted[reply] = floor
            position.setdefault(reply, len(position))
    return sorted(lifted.items(), key=lambda item: (-item[1], position[item[0]]))
