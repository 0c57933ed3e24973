"""Fusing the keyword and vector rankings of a hybrid search into one ranking.

Three fusion functions are available; the default is the score fusion.

`"score"` (default): each list's scores are min-max normalised over its candidates (bm25 over the
keyword top 50, cosine similarity over the vector top 50), and a passage's fused score is the
weighted sum of its two normalised scores (0 for a list it is not in): 0.6 keyword, 0.4 vector.
`"zscore"`: the same with standardised scores (mean 0, standard deviation 1 per list; a passage
missing from a list counts as that list's worst candidate).
`"rrf"`: Reciprocal Rank Fusion, sum of weight / (k + rank) with k = 60.

Why the score fusion: RRF throws away how strongly each index matched (with k = 60 the rank term
differs by only a quarter between rank 1 and rank 20), so agreement between two mediocre matches
beats one decisive BM25 match, and on LoCoMo it loses to BM25 alone. Normalised scores keep that
margin (Bruch et al. 2022, "An Analysis of Fusion Functions for Hybrid Retrieval").

How the default was chosen: leave-one-conversation-out on the three LoCoMo dev conversations
(`bench/archival_locomo.py`; min-max or z-score, keyword weight 0.3-0.7, depth 20/50/100, RRF k
10/60). Choosing on two conversations and scoring on the third gives evidence recall 0.596/0.701/
0.781 at k = 5/10/20 on plain turns, against 0.539/0.620/0.695 for BM25 alone; the setting chosen
on all three is min-max, keyword weight 0.6, top 50. With context at index time
(docs/context-at-index-time.md) the folds chose top 100 instead (+0.014 at k = 20 there), but on
plain passages top 100 loses about 0.018 at k = 5, and most passages carry no context, so the
depth stays 50. Every other idea tried (calibration, dynamic weights, feedback from the keyword
leg, reordering only keyword candidates, a learned fusion) is in docs/ranking.md: none beat it
at k = 10 by more than 0.012 held out. What did move hybrid search is on the candidates' side:
sentence vectors (`sentences.py`) and lifting the replies of candidates (`links.py`,
`reply_share`), applied after this fusion.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ..errors import ConfigurationError

__all__ = [
    "DEFAULT_DEPTH",
    "FusedCandidate",
    "FusionConfig",
    "fuse",
    "min_max",
    "reciprocal_rank",
    "z_score",
]

DEFAULT_DEPTH = 50
"""Candidates read from each index by default (chosen leave-one-out; see the module docstring)."""

Ranking = Sequence[tuple[str, float]]
"""(passage id, score) pairs, best first; higher scores are better."""


@dataclass(frozen=True)
class FusionConfig:
    """How hybrid search combines its two candidate lists."""

    method: Literal["score", "zscore", "rrf"] = "score"
    """'score': weighted sum of min-max normalised scores; 'zscore': of standardised scores (a
    passage missing from a list counts as that list's worst candidate); 'rrf': Reciprocal Rank
    Fusion."""
    keyword_weight: float = 0.6
    vector_weight: float = 0.4
    keyword_depth: int = DEFAULT_DEPTH
    """Keyword candidates fetched per search (at least the search's limit)."""
    vector_depth: int = DEFAULT_DEPTH
    """Vector candidates fetched per search (at least the search's limit)."""
    k: int = 60
    """The RRF constant (method 'rrf' only)."""
    reply_share: float = 0.7
    """A reply's fused score is raised to at least this share of the fused score of the passage
    its context names, and replies of the candidates join them (`links.py`; 0 turns it off).
    Chosen leave-one-out on LoCoMo (docs/ranking.md)."""

    def __post_init__(self) -> None:
        if self.method not in ("score", "zscore", "rrf"):
            raise ConfigurationError(
                f"Fusion method must be 'score', 'zscore' or 'rrf', got '{self.method}'."
            )
        if (
            min(self.keyword_weight, self.vector_weight) < 0
            or self.keyword_weight + self.vector_weight <= 0
        ):
            raise ConfigurationError("Fusion weights must be non-negative and not both zero.")
        if min(self.keyword_depth, self.vector_depth) < 1 or self.k < 1:
            raise ConfigurationError("Fusion depths and k must be at least 1.")
        if not 0 <= self.reply_share <= 1:
            raise ConfigurationError("The reply share must be from 0 to 1.")


@dataclass(frozen=True)
class FusedCandidate:
    passage_id: str
    score: float
    keyword_rank: int | None
    vector_rank: int | None


def fuse(keyword: Ranking, vector: Ranking, config: FusionConfig) -> list[FusedCandidate]:
    """One ranking from both lists, best first; ties go to the better single-list rank."""
    if config.method == "rrf":
        keyword_part, vector_part = (
            reciprocal_rank(keyword, config.k),
            reciprocal_rank(vector, config.k),
        )
    elif config.method == "zscore":
        keyword_part, vector_part = z_score(keyword), z_score(vector)
    else:
        keyword_part, vector_part = min_max(keyword), min_max(vector)
    keyword_rank = {passage_id: rank for rank, (passage_id, _) in enumerate(keyword, start=1)}
    vector_rank = {passage_id: rank for rank, (passage_id, _) in enumerate(vector, start=1)}
    keyword_floor = min(keyword_part.values(), default=0.0) if config.method == "zscore" else 0.0
    vector_floor = min(vector_part.values(), default=0.0) if config.method == "zscore" else 0.0
    scores = {
        passage_id: config.keyword_weight * keyword_part.get(passage_id, keyword_floor)
        + config.vector_weight * vector_part.get(passage_id, vector_floor)
        for passage_id in keyword_rank.keys() | vector_rank.keys()
    }

    def order(passage_id: str) -> tuple[float, int, str]:
        best = min(keyword_rank.get(passage_id, 1 << 30), vector_rank.get(passage_id, 1 << 30))
        return (-scores[passage_id], best, passage_id)

    return [
        FusedCandidate(
            passage_id,
            scores[passage_id],
            keyword_rank.get(passage_id),
            vector_rank.get(passage_id),
        )
        for passage_id in sorted(scores, key=order)
    ]


def min_max(ranking: Ranking) -> Mapping[str, float]:
    """Scores mapped onto [0, 1] within the list (all 1.0 when they are equal)."""
    if not ranking:
        return {}
    values = [score for _, score in ranking]
    low, high = min(values), max(values)
    span = high - low
    return {passage_id: (score - low) / span if span > 0 else 1.0 for passage_id, score in ranking}


def z_score(ranking: Ranking) -> Mapping[str, float]:
    """(score - mean) / standard deviation within the list (all 0.0 when they are equal)."""
    if not ranking:
        return {}
    values = [score for _, score in ranking]
    mean = sum(values) / len(values)
    spread = (sum((value - mean) ** 2 for value in values) / len(values)) ** 0.5
    return {
        passage_id: (score - mean) / spread if spread > 0 else 0.0 for passage_id, score in ranking
    }


def reciprocal_rank(ranking: Ranking, k: int) -> Mapping[str, float]:
    """1 / (k + rank), rank counted from 1."""
    return {passage_id: 1.0 / (k + rank) for rank, (passage_id, _) in enumerate(ranking, start=1)}
