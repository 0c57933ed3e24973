"""Fusion of keyword and vector rankings: the default score fusion and plain RRF."""

from __future__ import annotations

import pytest

from memory_agent.archival.fusion import (
    FusionConfig,
    fuse,
    min_max,
    reciprocal_rank,
    z_score,
)
from memory_agent.errors import ConfigurationError


def test_min_max_maps_onto_the_unit_interval() -> None:
    assert min_max([("a", 12.0), ("b", 7.0), ("c", 2.0)]) == {"a": 1.0, "b": 0.5, "c": 0.0}
    assert min_max([("a", 3.0), ("b", 3.0)]) == {"a": 1.0, "b": 1.0}
    assert min_max([]) == {}


def test_reciprocal_rank_uses_k() -> None:
    assert reciprocal_rank([("a", 9.0), ("b", 1.0)], 60) == {"a": 1 / 61, "b": 1 / 62}


def test_a_decisive_match_beats_agreement_between_weak_ones_in_score_fusion() -> None:
    # BM25 is sure about "exact" (far ahead); "both" is mediocre in both lists.
    keyword = [("exact", 20.0), ("both", 4.0), ("k3", 3.9), ("k4", 1.0)]
    vector = [
        ("v1", 0.61),
        ("both", 0.60),
        ("v3", 0.59),
        ("v4", 0.55),
        ("exact", 0.50),
        ("v6", 0.30),
    ]
    score = [c.passage_id for c in fuse(keyword, vector, FusionConfig())]
    rrf = [c.passage_id for c in fuse(keyword, vector, FusionConfig(method="rrf"))]
    assert score[0] == "exact"
    assert rrf[0] == "both"


def test_fused_candidates_record_both_ranks() -> None:
    fused = fuse([("a", 2.0), ("b", 1.0)], [("b", 0.9), ("c", 0.1)], FusionConfig())
    by_id = {c.passage_id: c for c in fused}
    assert (by_id["a"].keyword_rank, by_id["a"].vector_rank) == (1, None)
    assert (by_id["b"].keyword_rank, by_id["b"].vector_rank) == (2, 1)
    assert (by_id["c"].keyword_rank, by_id["c"].vector_rank) == (None, 2)
    assert by_id["b"].score == pytest.approx(
        0.4
    )  # keyword weight 0.6 x its minimum 0 + vector 0.4 x 1


def test_one_empty_list_leaves_the_other_in_order() -> None:
    vector = [("a", 0.9), ("b", 0.5), ("c", 0.4)]
    assert [c.passage_id for c in fuse([], vector, FusionConfig())] == ["a", "b", "c"]
    assert fuse([], [], FusionConfig()) == []


def test_ties_go_to_the_better_single_rank() -> None:
    fused = fuse([("k", 5.0)], [("v", 0.7)], FusionConfig(keyword_weight=0.5, vector_weight=0.5))
    assert fused[0].score == fused[1].score
    assert [c.passage_id for c in fused] == ["k", "v"]


def test_z_score_fusion_standardises_and_floors_missing_candidates() -> None:
    assert z_score([("a", 3.0), ("b", 1.0)]) == {"a": 1.0, "b": -1.0}
    assert z_score([("a", 2.0), ("b", 2.0)]) == {"a": 0.0, "b": 0.0}
    config = FusionConfig(method="zscore", keyword_weight=0.5, vector_weight=0.5)
    fused = {
        c.passage_id: c.score
        for c in fuse([("a", 9.0), ("b", 1.0)], [("b", 0.8), ("c", 0.2)], config)
    }
    # a: keyword z 1, vector missing -> the vector list's worst (-1); c: the reverse of that.
    assert fused == {"a": pytest.approx(0.0), "b": pytest.approx(0.0), "c": pytest.approx(-1.0)}


@pytest.mark.parametrize(
    "options",
    [
        {"method": "borda"},
        {"keyword_weight": -1.0},
        {"keyword_weight": 0.0, "vector_weight": 0.0},
        {"vector_depth": 0},
        {"k": 0},
    ],
)
def test_invalid_configs_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        FusionConfig(**options)  # type: ignore[arg-type]
