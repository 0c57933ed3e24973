"""Agents sharing a storage dir never see each other's passages, in any index or operation."""

from __future__ import annotations

import pytest

from memory_agent.archival import ArchivalMemory
from memory_agent.errors import ArchivalError

pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture
def two_agents(archival: ArchivalMemory) -> dict[str, str]:
    return {
        "alice": archival.insert(
            "alice", "Alice's secret recipe uses saffron and cardamom.", tags=["food"]
        ),
        "bob": archival.insert(
            "bob", "Bob's secret recipe uses saffron and smoked paprika.", tags=["food"]
        ),
    }


@pytest.mark.parametrize("mode", ["hybrid", "vector", "keyword"])
def test_searches_see_only_the_agents_own_passages(
    archival: ArchivalMemory, two_agents: dict[str, str], mode: str
) -> None:
    for agent in ("alice", "bob"):
        hits = archival.search(agent, "secret saffron recipe", limit=10, tags=["food"], mode=mode)  # type: ignore[arg-type]
        assert [hit.passage_id for hit in hits] == [two_agents[agent]]
    paprika = archival.search("alice", "Bob smoked paprika", limit=10, mode=mode)  # type: ignore[arg-type]
    assert two_agents["bob"] not in {hit.passage_id for hit in paprika}


def test_get_list_count_and_delete_are_per_agent(
    archival: ArchivalMemory, two_agents: dict[str, str]
) -> None:
    assert archival.get("alice", two_agents["bob"]) is None
    assert [p.passage_id for p in archival.list("alice")] == [two_agents["alice"]]
    assert archival.count("alice") == archival.count("bob") == 1
    with pytest.raises(ArchivalError):
        archival.delete("alice", two_agents["bob"])
    assert archival.get("bob", two_agents["bob"]) is not None


def test_blank_query_lists_only_own_passages(
    archival: ArchivalMemory, two_agents: dict[str, str]
) -> None:
    assert [hit.passage_id for hit in archival.search("bob", "")] == [two_agents["bob"]]


def test_reconcile_of_one_agent_leaves_the_other_alone(
    archival: ArchivalMemory, two_agents: dict[str, str]
) -> None:
    archival.index.store.delete("alice", [two_agents["alice"]])
    archival.index.store.delete("bob", [two_agents["bob"]])
    report = archival.reconcile("alice")
    assert report.missing_vectors == 1 and report.embedded == 1
    assert archival.index.store.ids("alice") == {two_agents["alice"]}
    assert archival.index.store.ids("bob") == set()
    assert archival.reconcile().missing_vectors == 1
    assert archival.index.store.ids("bob") == {two_agents["bob"]}


def test_another_agents_many_better_matches_do_not_hide_ones_own(hashed: ArchivalMemory) -> None:
    # Bob's passages outrank Alice's for the query and fill the head of the FTS5 ranking.
    hashed.insert_many("bob", [f"saffron saffron saffron note {n}" for n in range(60)])
    mine = hashed.insert(
        "alice", "a long note that mentions saffron once among many other words here"
    )
    for mode in ("keyword", "hybrid", "vector"):
        hits = hashed.search("alice", "saffron", limit=5, mode=mode)  # type: ignore[arg-type]
        assert [hit.passage_id for hit in hits] == [mine]
