"""Search with the shipped model on real Chroma: keyword, vector and hybrid; tags and dates."""

from __future__ import annotations

import pytest

from memory_agent.archival import ArchivalMemory, NewPassage
from memory_agent.errors import ArchivalError

FACTS = {
    "hike": (
        "Alice hiked the Pacific Crest Trail in July 2023 with her brother Tom.",
        ["travel"],
        "2023-07-20",
    ),
    "cat": ("Alice adopted a grey cat named Miso from the shelter.", ["home"], "2023-02-11"),
    "job": ("Alice started a new job as a data engineer at Globex.", ["work"], "2023-03-01"),
    "allergy": ("Alice is allergic to peanuts and carries an EpiPen.", ["health"], "2022-11-05"),
    "paris": (
        "Alice visited Paris and loved the paintings at the Musee d'Orsay.",
        ["travel", "art"],
        "2024-04-02",
    ),
    "guitar": (
        "Alice is learning to play the classical guitar on weekends.",
        ["hobby"],
        "2024-01-15",
    ),
}

pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture
def ids(archival: ArchivalMemory) -> dict[str, str]:
    items = [
        NewPassage(text, tags, {"key": key}, f"{day}T12:00:00Z")
        for key, (text, tags, day) in FACTS.items()
    ]
    return dict(zip(FACTS, archival.insert_many("alice", items)))


def top(archival: ArchivalMemory, query: str, **options: object) -> list[str]:
    return [hit.passage.metadata["key"] for hit in archival.search("alice", query, **options)]  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["hybrid", "vector", "keyword"])
def test_each_mode_finds_a_named_fact_first(
    archival: ArchivalMemory, ids: dict[str, str], mode: str
) -> None:
    assert top(archival, "Where does Alice work? Globex", mode=mode)[0] == "job"


def test_vector_and_hybrid_find_meaning_without_shared_words(
    archival: ArchivalMemory, ids: dict[str, str]
) -> None:
    query = "Which pet does she own?"
    assert top(archival, query, mode="keyword") == []
    assert top(archival, query, mode="vector")[0] == "cat"
    assert top(archival, query, mode="hybrid")[0] == "cat"
    assert top(archival, "food she must never eat", mode="hybrid")[0] == "allergy"


def test_hits_carry_scores_and_both_ranks(archival: ArchivalMemory, ids: dict[str, str]) -> None:
    hits = archival.search("alice", "guitar lessons", limit=3)
    assert hits[0].passage_id == ids["guitar"]
    assert hits[0].keyword_rank == 1 and hits[0].vector_rank == 1
    assert hits[0].keyword_score is not None and hits[0].keyword_score > 0
    assert hits[0].vector_similarity is not None and 0 < hits[0].vector_similarity <= 1
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    assert len(hits) == 3


def test_limit_caps_results(archival: ArchivalMemory, ids: dict[str, str]) -> None:
    assert len(archival.search("alice", "Alice", limit=2)) == 2
    assert len(archival.search("alice", "Alice", limit=50)) == len(FACTS)


@pytest.mark.parametrize("mode", ["hybrid", "vector", "keyword"])
def test_tag_filter(archival: ArchivalMemory, ids: dict[str, str], mode: str) -> None:
    assert set(top(archival, "Alice", limit=10, tags=["travel"], mode=mode)) == {"hike", "paris"}
    assert set(top(archival, "Alice", limit=10, tags=["art", "hobby"], mode=mode)) == {
        "paris",
        "guitar",
    }
    all_of = archival.search(
        "alice", "Alice", limit=10, tags=["travel", "art"], mode=mode, tag_mode="all"
    )
    assert [hit.passage_id for hit in all_of] == [ids["paris"]]
    assert top(archival, "Alice", tags=["no-such-tag"], mode=mode) == []


@pytest.mark.parametrize("mode", ["hybrid", "vector", "keyword"])
def test_date_filter(archival: ArchivalMemory, ids: dict[str, str], mode: str) -> None:
    in_2023 = top(
        archival, "Alice", limit=10, start_date="2023-01-01", end_date="2023-12-31", mode=mode
    )
    assert set(in_2023) == {"hike", "cat", "job"}
    # A bare end date includes its whole day; datetimes and 'Z' are accepted.
    assert set(top(archival, "Alice", limit=10, end_date="2022-11-05", mode=mode)) == {"allergy"}
    assert set(top(archival, "Alice", limit=10, start_date="2024-04-02T11:59:59Z", mode=mode)) == {
        "paris"
    }


def test_tags_and_dates_combine(archival: ArchivalMemory, ids: dict[str, str]) -> None:
    assert top(archival, "trip", tags=["travel"], start_date="2024-01-01") == ["paris"]


def test_blank_query_lists_newest_first(archival: ArchivalMemory, ids: dict[str, str]) -> None:
    assert top(archival, "   ", limit=3) == ["paris", "guitar", "hike"]
    assert top(archival, "", tags=["travel"]) == ["paris", "hike"]


def test_bad_arguments_are_refused_with_a_reason(
    archival: ArchivalMemory, ids: dict[str, str]
) -> None:
    with pytest.raises(ArchivalError, match="mode"):
        archival.search("alice", "x", mode="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(ArchivalError, match="limit"):
        archival.search("alice", "x", limit=0)
    with pytest.raises(ArchivalError, match="not a date"):
        archival.search("alice", "x", start_date="last tuesday")
    with pytest.raises(ArchivalError, match="after end_date"):
        archival.search("alice", "x", start_date="2024-02-01", end_date="2024-01-01")
