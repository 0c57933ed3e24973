"""Search that says why, on both backends: each mode's explanation carries the signals it used and
agrees with the hit's score; the scored mode adds recency and importance; searches count access;
the model's tool shows superseded and expiring passages and the explanation."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from archival_helpers import HashEmbedding
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_agent import MemoryManager, Settings
from memory_agent.archival.scoring import DEFAULT_SCORING, recency
from memory_agent.errors import MemoryAgentError
from memory_agent.store.snapshot import store_snapshot

pytestmark = pytest.mark.usefixtures("backend")

FACTS = [
    ("Ines Duarte is the harbour master of Porto.", "2024-01-01T09:00:00Z"),
    ("The harbour master Ines Duarte moved to the Aveiro office.", "2024-03-01T09:00:00Z"),
    ("Berth 4 at the harbour was repainted green.", "2024-02-01T09:00:00Z"),
    ("The cafe near the harbour sells custard tarts.", "2023-06-01T09:00:00Z"),
]


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[MemoryManager]:
    settings_ = Settings(
        persist_directory=tmp_path / "store", database_url=os.environ.get("MEMORY_DATABASE_URL")
    )
    manager = MemoryManager(
        agent_id="alice", settings=settings_, embedding_function=HashEmbedding()
    )
    yield manager
    manager.close()


@pytest.fixture
def ids(memory: MemoryManager) -> list[str]:
    return memory.archival_memory_insert_many(
        [{"content": text, "created_at": when} for text, when in FACTS]
    )


@pytest.mark.parametrize("mode", ["keyword", "vector", "hybrid", "scored"])
def test_each_mode_explains_every_hit_consistently(
    memory: MemoryManager, ids: list[str], mode: str
) -> None:
    hits = memory.archival_memory_search("harbour master Ines", limit=4, mode=mode, explain=True)  # type: ignore[arg-type]
    assert len(hits) >= 2
    newest = max(hit.passage.created_at for hit in hits)
    for hit in hits:
        why = hit.explanation
        assert why is not None and why.mode == mode and why.score == hit.score
        assert (why.keyword_rank, why.keyword_score) == (hit.keyword_rank, hit.keyword_score)
        assert (why.vector_rank, why.vector_similarity) == (hit.vector_rank, hit.vector_similarity)
        assert why.importance == hit.passage.importance and 0 < why.recency <= 1
        if mode == "keyword":
            assert (
                why.vector_rank is None
                and why.keyword_rank is not None
                and why.fused == why.keyword_score
            )
        if mode == "vector":
            assert (
                why.keyword_rank is None
                and why.vector_rank is not None
                and why.fused == why.vector_similarity
            )
        if mode == "scored":
            assert why.score == pytest.approx(
                why.fused
                + DEFAULT_SCORING.recency_weight * why.recency
                + DEFAULT_SCORING.importance_weight * why.importance
            )
        else:
            assert why.fused == why.score
            assert why.recency == pytest.approx(
                recency(hit.passage.created_at, newest, DEFAULT_SCORING.half_life_days)
            )
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    assert all(
        hit.explanation is None for hit in memory.archival_memory_search("harbour", mode=mode)
    )  # type: ignore[arg-type]


def test_scored_mode_lets_importance_and_recency_break_a_close_match(memory: MemoryManager) -> None:
    same = "The harbour ferry timetable changed."
    low = memory.archival_memory_insert(same + " (note a)", importance=0.0)
    high = memory.archival_memory_insert(same + " (note b)", importance=1.0)
    hybrid = [
        hit.passage_id
        for hit in memory.archival_memory_search("harbour ferry timetable", mode="hybrid")
    ]
    scored = memory.archival_memory_search("harbour ferry timetable", mode="scored", explain=True)
    assert set(hybrid[:2]) == {low, high}
    assert [hit.passage_id for hit in scored][:2] == [high, low]
    assert scored[0].fused_score == pytest.approx(
        scored[1].fused_score
    )  # the match alone cannot tell them apart


def test_searches_count_access_and_explain_the_count_before(
    memory: MemoryManager, ids: list[str]
) -> None:
    for _ in range(3):
        memory.archival_memory_search("Berth repainted green", limit=1, mode="keyword")
    passage = memory.archival_memory_get(ids[2])
    assert (
        passage is not None and passage.access_count == 3 and passage.last_accessed_at is not None
    )
    assert memory.archival_memory_get(ids[3]).access_count == 0  # type: ignore[union-attr]
    hit = memory.archival_memory_search(
        "Berth repainted green", limit=1, mode="keyword", explain=True
    )[0]
    assert hit.explanation is not None and hit.explanation.access_count == 3
    assert not any(
        entry.action.startswith("access") for entry in memory.journal()
    )  # use is not journalled


def test_the_tool_names_superseded_and_expiring_passages_and_explains(
    memory: MemoryManager, ids: list[str]
) -> None:
    memory.supersede_passage(ids[0], ids[1])
    soon = (datetime.now(timezone.utc) + timedelta(days=3)).isoformat()
    note = memory.archival_memory_insert(
        "Harbour master office closes early on Friday.", expires_at=soon
    )
    plain = memory.execute_tool("archival_memory_search", {"query": "harbour master"}).text
    assert ids[0] not in plain and ids[1] in plain and "SUPERSEDED" not in plain
    assert f"[{note}]" in plain and "expires" in plain
    wide = memory.execute_tool(
        "archival_memory_search",
        {"query": "harbour master", "include_superseded": True, "explain": True},
    ).text
    line = next(text for text in wide.splitlines() if f"[{ids[0]}]" in text)
    assert f"SUPERSEDED by {ids[1]}" in line
    assert wide.count("why: keyword") >= 2 and "hybrid score" in wide
    refused = memory.execute_tool("archival_memory_search", {"query": "harbour", "explain": "yes"})
    assert refused.is_error


INSERT_ARGUMENTS = st.fixed_dictionaries(
    {},
    optional={
        "ttl_days": st.one_of(
            st.none(),
            st.floats(allow_nan=True, allow_infinity=True),
            st.integers(-5, 5),
            st.booleans(),
            st.text(max_size=3),
        ),
        "importance": st.one_of(
            st.none(),
            st.floats(allow_nan=True, allow_infinity=True),
            st.integers(-2, 2),
            st.booleans(),
        ),
        "expires_at": st.one_of(
            st.none(),
            st.text(max_size=30),
            st.datetimes(timezones=st.none()),
            st.datetimes(timezones=st.just(timezone.utc)),
            st.dates().map(str),
        ),
        "provenance": st.one_of(
            st.none(),
            st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
            st.lists(st.integers(), max_size=2),
            st.text(max_size=3),
        ),
    },
)


def _acceptable(arguments: dict[str, object]) -> bool:
    """The rule the API promises, written independently of its code."""
    ttl, importance, expires = (
        arguments.get("ttl_days"),
        arguments.get("importance"),
        arguments.get("expires_at"),
    )
    provenance = arguments.get("provenance")
    if ttl is not None and expires is not None:
        return False
    if ttl is not None and (
        isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not 0 < ttl <= 36_500
    ):
        return False
    if importance is not None and (
        isinstance(importance, bool)
        or not isinstance(importance, (int, float))
        or not 0 <= importance <= 1
    ):
        return False
    if isinstance(expires, datetime) and expires.tzinfo is None:
        return False
    if isinstance(expires, str):
        try:
            parsed = datetime.fromisoformat(
                expires.strip().replace("Z", "+00:00").replace("z", "+00:00")
            )
        except ValueError:
            return False
        if parsed.tzinfo is None or len(expires.strip()) == 10:
            return False
    if isinstance(provenance, dict):  # a number in it must fit SQLite's 64-bit integer
        return all(-(2**63) <= value < 2**63 for value in provenance.values())
    return provenance is None


def test_insert_accepts_exactly_the_valid_lifecycle_arguments(memory: MemoryManager) -> None:
    outcomes: list[bool] = []

    @settings(
        max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(arguments=INSERT_ARGUMENTS)
    def insert(arguments: dict[str, object]) -> None:
        before = store_snapshot(memory.database)
        try:
            passage_id = memory.archival_memory_insert(
                f"fact {len(before['passages'])}", **arguments
            )  # type: ignore[arg-type]
        except MemoryAgentError:
            assert not _acceptable(arguments), arguments
            assert store_snapshot(memory.database) == before
            outcomes.append(False)
            return
        assert _acceptable(arguments), arguments
        stored = memory.archival_memory_get(passage_id)
        assert stored is not None
        if arguments.get("importance") is not None:
            assert stored.importance == float(arguments["importance"])  # type: ignore[arg-type]
        outcomes.append(True)

    insert()
    assert True in outcomes and False in outcomes, (
        "the strategy no longer reaches both sides of the rule"
    )
