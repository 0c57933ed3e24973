"""Why a passage was found, and the "scored" ranking that adds recency and importance to the match.

Every search can explain its hits (`explain=True`): each signal's value, side by side. The scored
mode ranks by

    fused match + recency_weight * recency + importance_weight * importance

where the fused match is hybrid search's fused score (in [0, 1] with the default score fusion),
recency is 0.5 ** (age / half_life_days), the age counted back from the newest passage among the
search's candidates (so a store replayed later, or an agent idle for a month, ranks the same), and
importance is the passage's own value in [0, 1]. Access counts are explained but not scored: a
passage found often would be found more often still.

How the weights were chosen, and why hybrid stays the default: see DEFAULT_SCORING below and the
page docs/concepts/archival.md (leave-one-conversation-out on the LoCoMo dev conversations).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from ..errors import ConfigurationError

__all__ = ["DEFAULT_SCORING", "ScoringConfig", "SearchExplanation", "recency", "scored"]


@dataclass(frozen=True)
class SearchExplanation:
    """Each signal behind one hit. Ranks are 1-based among the passages the search could return;
    None: that index did not return it (or the mode does not use it)."""

    mode: str
    keyword_rank: int | None
    keyword_score: float | None
    """-bm25 on SQLite, the full-text rank on PostgreSQL: higher is a better match."""
    vector_rank: int | None
    vector_similarity: float | None
    fused: float
    """The match alone: hybrid's fused score; the index's own score in keyword or vector mode."""
    recency: float
    """0.5 ** (days older than the newest candidate / half-life): 1.0 for the newest."""
    importance: float
    access_count: int
    """Searches that returned it before this one."""
    score: float
    """What the hits are ordered by: `fused` in every mode but 'scored', which adds the weighted
    recency and importance."""


@dataclass(frozen=True)
class ScoringConfig:
    """Weights of the scored mode (the fused match has weight 1)."""

    recency_weight: float = 0.02
    half_life_days: float = 1.0
    importance_weight: float = 0.1

    def __post_init__(self) -> None:
        if min(self.recency_weight, self.importance_weight) < 0:
            raise ConfigurationError("Scoring weights must not be negative.")
        if not self.half_life_days > 0:
            raise ConfigurationError("The recency half-life must be more than 0 days.")


DEFAULT_SCORING = ScoringConfig()
"""The recency weight and half-life chosen on all three LoCoMo dev conversations by
`bench/archival_locomo.py` (24 settings: weight 0-0.4, half-life 1-180 days). Chosen on two and
scored on the third, the scored mode did not beat hybrid (recall@10 -0.005, 95% CI [-0.014,
+0.001]; @5 and @20 equal), so it is a mode, not the default. LoCoMo passages all have the same
importance, so that weight could not be measured there: 0.1 is a design choice (importance 1
against 0 is worth a tenth of the match's range), not a finding."""


def recency(created_at: str, newest: str, half_life_days: float) -> float:
    """0.5 ** (days `created_at` is older than `newest` / half-life); 1.0 when not older."""
    age = (
        datetime.fromisoformat(newest) - datetime.fromisoformat(created_at)
    ).total_seconds() / 86400
    return 0.5 ** (max(age, 0.0) / half_life_days)


def scored(fused: float, recency_value: float, importance: float, config: ScoringConfig) -> float:
    return fused + config.recency_weight * recency_value + config.importance_weight * importance


def newest(times: Sequence[str]) -> str | None:
    """The latest of canonical UTC ISO times (they sort as text)."""
    return max(times, default=None)
