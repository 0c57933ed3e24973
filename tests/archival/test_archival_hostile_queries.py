"""Any string is a safe query: never an exception, always a sensible (possibly empty) answer."""

from __future__ import annotations

import pytest

from memory_agent.archival import ArchivalMemory

HOSTILE = [
    "",
    " ",
    "\n\t",
    '"',
    '""',
    "'",
    '"unbalanced quote',
    "AND",
    "OR",
    "NOT",
    "NEAR",
    "a AND b OR NOT c",
    "NEAR(coffee tea, 2)",
    "coffee*",
    "*",
    "^coffee",
    "content:coffee",
    "passages_fts:coffee",
    "col1 : col2",
    "(((",
    ")",
    "{coffee tea}",
    "coffee -tea +milk",
    "'; DROP TABLE passages; --",
    "%_%",
    "\\",
    "\x00",
    "🎉☕🚀",
    "coffee ☕ please",
    "日本語のテキスト",
    "Ünïcödé çoffée",
    "a" * 10_000,
    "coffee " * 1500,
    " ".join(f"word{n}" for n in range(2000)),
]

pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture
def seeded(hashed: ArchivalMemory) -> ArchivalMemory:
    hashed.insert_many(
        "alice", ["Alice drinks coffee with milk every morning.", "Tea is for the afternoon."]
    )
    return hashed


@pytest.mark.parametrize("mode", ["hybrid", "vector", "keyword"])
def test_hostile_query_never_raises(seeded: ArchivalMemory, mode: str) -> None:
    """Every hostile query against one seeded store (a store per query made this file a sixth of
    the suite's store setups); each one that raises or answers wrongly is named."""
    wrong: dict[str, str] = {}
    for query in HOSTILE:
        try:
            hits = seeded.search("alice", query, limit=5, mode=mode)  # type: ignore[arg-type]
        except Exception as error:  # noqa: BLE001 - every query must answer: collected, reported
            wrong[repr(query[:20])] = f"raised {error!r}"
            continue
        if len(hits) > 5 or any(hit.passage.agent_id != "alice" for hit in hits):
            wrong[repr(query[:20])] = f"answered {[(h.passage.agent_id, h.content) for h in hits]}"
    assert wrong == {}


@pytest.mark.parametrize(
    "query", ["coffee*", '"coffee"', "content:coffee", "NEAR(coffee)", "coffee ☕ please"]
)
def test_syntax_around_a_word_still_finds_the_word(seeded: ArchivalMemory, query: str) -> None:
    hits = seeded.search("alice", query, mode="keyword")
    assert hits and "coffee" in hits[0].content


def test_stop_words_alone_still_match(seeded: ArchivalMemory) -> None:
    assert seeded.search("alice", "is for the", mode="keyword")[0].content.startswith("Tea")
