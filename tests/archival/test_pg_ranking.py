"""PostgreSQL's keyword ranking variants (`store.pg_fulltext.PgRanking`), on a real server.

Every variant must find the same passages (any query word), return scores that only grow with
rank (fusion normalises them), and do what its flag says; the benchmark chooses among them.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from archival_helpers import HashEmbedding

from memory_agent import MemoryManager, Settings
from memory_agent.archival import ArchivalMemory, InMemoryVectorStore
from memory_agent.archival.filters import PassageFilter
from memory_agent.store import pg_fulltext
from memory_agent.store.pg_fulltext import PgRanking

pytestmark = pytest.mark.postgres

AGENT = "ranker"
NOTES = [
    "Caroline went camping with the kids and camping was fun",  # common word twice
    "Caroline talked about camping near the lake",
    "Melanie bought a telescope for astronomy club",  # the rare word
    "Melanie went camping and looked at the stars through her telescope",  # both words
    "Jon painted the fence",
] + [f"camping trip number {n} in the forest" for n in range(20)]

VARIANTS = [
    PgRanking(function, norm, first, prefix, idf)  # type: ignore[arg-type]
    for function, norm, first, prefix, idf in itertools.product(
        ("ts_rank", "ts_rank_cd"), (0, 1, 2, 32), (False, True), (False, True), (False, True)
    )
]


@dataclass
class Store:
    memory: MemoryManager
    text_of: dict[str, str]


@pytest.fixture
def store(tmp_path: Path, postgres_url: str) -> Iterator[Store]:
    with MemoryManager(
        agent_id=AGENT, settings=Settings(persist_directory=tmp_path), database_url=postgres_url
    ) as memory:
        archival = ArchivalMemory(
            memory.db, embedding_function=HashEmbedding(), vector_store=InMemoryVectorStore()
        )
        ids = archival.insert_many(AGENT, NOTES)
        yield Store(memory, dict(zip(ids, NOTES, strict=True)))


def _search(
    store: Store, text: str, ranking: PgRanking, limit: int = 50
) -> list[tuple[str, float]]:
    clause, params = PassageFilter(AGENT).sql("p")
    with store.memory.db.reading() as conn:
        return pg_fulltext.passage_search(conn, text, clause, list(params), limit, ranking)


def _texts(store: Store, found: list[tuple[str, float]]) -> list[str]:
    return [store.text_of[passage_id] for passage_id, _ in found]


def test_every_variant_finds_the_same_passages_with_scores_in_rank_order(store: Store) -> None:
    query = "Did Melanie use her telescope when camping?"
    expected = {pid for pid, _ in _search(store, query, PgRanking())}
    assert len(expected) == len(NOTES) - 1  # every note but Jon's fence
    for ranking in VARIANTS:
        found = _search(store, query, ranking)
        assert {pid for pid, _ in found} == expected, ranking.label
        scores = [score for _, score in found]
        assert scores == sorted(scores, reverse=True), ranking.label


def test_idf_lifts_the_rare_word_over_the_common_one(store: Store) -> None:
    query = "camping telescope"
    plain = _texts(store, _search(store, query, PgRanking()))
    weighted = _texts(store, _search(store, query, PgRanking(idf=True)))
    # Without idf the note saying "camping" twice outranks the one with the rare "telescope".
    assert plain.index(NOTES[0]) < plain.index(NOTES[2])
    assert weighted.index(NOTES[2]) < weighted.index(NOTES[0])


def test_all_words_first_puts_full_matches_on_top(store: Store) -> None:
    found = _texts(store, _search(store, "camping telescope", PgRanking(all_words_first=True)))
    assert found[0] == NOTES[3]


def test_prefix_matches_words_a_query_word_begins(store: Store) -> None:
    assert _search(store, "astro", PgRanking()) == []
    assert _texts(store, _search(store, "astro", PgRanking(prefix=True))) == [NOTES[2]]


def test_any_string_is_a_safe_query(store: Store) -> None:
    for ranking in (PgRanking(idf=True, all_words_first=True, prefix=True), PgRanking()):
        for text in (
            "'; DROP TABLE passages; --",
            "camp:* & !telescope | (",
            "what is it",
            "\\'' \"\" ::",
            "   ",
        ):
            found = _search(store, text, ranking)
            assert all(isinstance(score, float) for _, score in found), (ranking.label, text)
    assert len(_search(store, "camping", PgRanking())) == 23  # the table is still there
