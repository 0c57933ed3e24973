"""The passage lifecycle on both backends: expiry (before and after a purge), supersession in and
out of default search, importance, updates, and bad input refused with nothing changed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from archival_helpers import HashEmbedding
from store_clock import StoreClock

from memory_agent import MemoryManager, Settings
from memory_agent.errors import ArchivalError, MemoryAgentError
from memory_agent.store.snapshot import store_snapshot

MODES = ("keyword", "vector", "hybrid")


@pytest.fixture
def memory(tmp_path: Path, backend: str) -> MemoryManager:
    """A store of the test's own on each backend (PostgreSQL's URL is set by `backend`)."""
    import os

    settings = Settings(
        persist_directory=tmp_path / "store", database_url=os.environ.get("MEMORY_DATABASE_URL")
    )
    manager = MemoryManager(agent_id="alice", settings=settings, embedding_function=HashEmbedding())
    yield manager  # type: ignore[misc]  # a generator fixture
    manager.close()


def found(memory: MemoryManager, query: str, mode: str, **options: object) -> list[str]:
    return [
        hit.passage_id
        for hit in memory.archival_memory_search(query, limit=10, mode=mode, **options)
    ]  # type: ignore[arg-type]


def _past(seconds: float = 5) -> str:
    return (datetime.now(timezone.utc) - timedelta(seconds=seconds)).isoformat()


def test_new_fields_default_and_round_trip(memory: MemoryManager) -> None:
    plain = memory.archival_memory_get(
        memory.archival_memory_insert("The harbour master is Ines Duarte.")
    )
    assert plain is not None
    assert (
        plain.expires_at,
        plain.superseded_by,
        plain.importance,
        plain.access_count,
        plain.last_accessed_at,
        plain.provenance,
    ) == (None, None, 0.5, 0, None, {})
    later = datetime(2031, 5, 1, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    rich = memory.archival_memory_get(
        memory.archival_memory_insert(
            "Berth 4 was repainted green.",
            expires_at=later,
            importance=0.9,
            provenance={"block": "human", "messages": [3, 4]},
        )
    )
    assert rich is not None
    assert rich.expires_at == "2031-05-01T10:00:00.000000+00:00"
    assert rich.importance == 0.9 and rich.provenance == {"block": "human", "messages": [3, 4]}
    ttl = memory.archival_memory_get(
        memory.archival_memory_insert("A note for two days.", ttl_days=2)
    )
    assert ttl is not None and ttl.expires_at is not None
    left = datetime.fromisoformat(ttl.expires_at) - datetime.now(timezone.utc)
    assert timedelta(days=1, hours=23) < left <= timedelta(days=2)


@pytest.mark.parametrize("mode", MODES)
def test_expired_passages_are_never_found_even_before_a_purge(
    memory: MemoryManager, mode: str
) -> None:
    gone = memory.archival_memory_insert("The ferry to Ilhavo leaves at nine.", expires_at=_past())
    kept = memory.archival_memory_insert("The ferry to Aveiro leaves at ten.", ttl_days=1)
    assert found(memory, "ferry leaves", mode) == [kept]
    assert found(memory, "ferry leaves", mode, include_superseded=True) == [kept]
    assert [hit.passage_id for hit in memory.archival_memory_search("", limit=10)] == [kept]
    assert memory.archival_memory_get(gone) is not None  # stored until purged


def test_purge_deletes_expired_rows_keyword_index_and_vectors(memory: MemoryManager) -> None:
    gone = memory.archival_memory_insert("The ferry to Ilhavo leaves at nine.", expires_at=_past())
    kept = memory.archival_memory_insert("The ferry to Aveiro leaves at ten.")
    memory.ensure_agent("bob")
    bobs = memory.archival_memory_insert(
        "Bob's ferry left long ago.", expires_at=_past(), agent_id="bob"
    )
    store = memory.archival.index.store
    assert gone in store.ids("alice")
    assert memory.purge_expired() == 1
    assert memory.archival_memory_get(gone) is None
    assert gone not in store.ids("alice") and kept in store.ids("alice")
    assert (
        memory.archival_memory_get(bobs, agent_id="bob") is not None
    )  # another agent's are its own
    assert memory.purge_expired() == 0
    entry = next(e for e in memory.journal() if e.action == "purge_passage")
    assert entry.target_id == gone and entry.old_value == "The ferry to Ilhavo leaves at nine."
    assert memory.purge_expired(all_agents=True) == 1
    # The keyword index no longer holds the text: the same words can be stored and found afresh.
    again = memory.archival_memory_insert("The ferry to Ilhavo leaves at nine.")
    assert again != gone and found(memory, "Ilhavo", "keyword") == [again]


@pytest.mark.parametrize("mode", MODES)
def test_superseded_passages_leave_default_search_and_come_back_when_asked(
    memory: MemoryManager, mode: str
) -> None:
    old = memory.archival_memory_insert("Alice lives in Lisbon.")
    new = memory.archival_memory_insert("Alice moved from Lisbon to Porto.")
    assert set(found(memory, "Alice Lisbon", mode)) == {old, new}
    marked = memory.supersede_passage(old, new)
    assert marked.superseded_by == new and marked.is_superseded
    assert found(memory, "Alice Lisbon", mode) == [new]
    assert set(found(memory, "Alice Lisbon", mode, include_superseded=True)) == {old, new}
    restored = memory.restore_passage(old)
    assert restored.superseded_by is None
    assert set(found(memory, "Alice Lisbon", mode)) == {old, new}


def test_supersession_is_journalled_with_old_and_new_values(memory: MemoryManager) -> None:
    a, b, c = (
        memory.archival_memory_insert(text) for text in ("one fact", "two fact", "three fact")
    )
    memory.supersede_passage(a, b, journal_detail={"author": "consolidator", "session_id": "s-1"})
    memory.supersede_passage(a, c)
    entries = [e for e in memory.journal() if e.target_id == a and e.action == "supersede_passage"]
    assert [(json.loads(e.old_value or ""), json.loads(e.new_value or "")) for e in entries] == [
        ({"superseded_by": b}, {"superseded_by": c}),
        ({"superseded_by": None}, {"superseded_by": b}),
    ]
    assert (
        entries[1].detail["author"] == "consolidator" and entries[1].detail["session_id"] == "s-1"
    )


def test_supersede_refuses_itself_missing_ids_and_cycles(memory: MemoryManager) -> None:
    a, b, c = (
        memory.archival_memory_insert(text) for text in ("one fact", "two fact", "three fact")
    )
    memory.supersede_passage(a, b)
    memory.supersede_passage(b, c)
    memory.ensure_agent("bob")
    before = store_snapshot(memory.database)
    for old, new in ((a, a), (a, "passage-missing"), ("passage-missing", a), (c, a), (c, b)):
        with pytest.raises(ArchivalError):
            memory.supersede_passage(old, new)
    with pytest.raises(ArchivalError):
        memory.supersede_passage(
            a, c, agent_id="bob"
        )  # another agent's passages are missing to bob
    assert store_snapshot(memory.database) == before


def test_deleting_a_successor_hands_its_predecessors_on(memory: MemoryManager) -> None:
    a, b, c = (
        memory.archival_memory_insert(text) for text in ("one fact", "two fact", "three fact")
    )
    memory.supersede_passage(a, b)
    memory.supersede_passage(b, c)
    memory.archival_memory_delete(b)
    assert memory.archival_memory_get(a).superseded_by == c  # type: ignore[union-attr]
    memory.archival_memory_delete(c)
    assert memory.archival_memory_get(a).superseded_by is None  # type: ignore[union-attr]


def test_writing_a_hidden_passage_again_makes_it_current(memory: MemoryManager) -> None:
    old = memory.archival_memory_insert("Alice lives in Lisbon.")
    new = memory.archival_memory_insert("Alice lives in Porto.")
    memory.supersede_passage(old, new)
    assert memory.archival_memory_insert("Alice lives in Lisbon.") == old
    assert memory.archival_memory_get(old).superseded_by is None  # type: ignore[union-attr]
    expired = memory.archival_memory_insert("Standup at nine.", expires_at=_past())
    assert memory.archival_memory_insert("Standup at nine.", ttl_days=1) == expired
    assert found(memory, "standup", "keyword") == [expired]
    revivals = [e.target_id for e in memory.journal() if e.action == "revive_passage"]
    assert revivals == [expired, old]


def test_importance_and_update_are_journalled_and_restorable(memory: MemoryManager) -> None:
    pid = memory.archival_memory_insert("Ines runs the harbour.", ["people"], {"src": "chat"})
    assert memory.set_passage_importance(pid, 0.8).importance == 0.8
    updated = memory.update_passage(
        pid,
        tags=["harbour", "people"],
        metadata={"src": "merge"},
        provenance={"merged_from": ["passage-x"]},
    )
    assert updated.tags == ("harbour", "people") and updated.metadata == {"src": "merge"}
    assert updated.provenance == {"merged_from": ["passage-x"]}
    assert [
        hit.passage_id
        for hit in memory.archival_memory_search("Ines", tags=["harbour"], mode="vector")
    ] == [pid]
    assert [
        hit.passage_id
        for hit in memory.archival_memory_search("Ines", tags=["harbour"], mode="keyword")
    ] == [pid]
    entry = next(e for e in memory.journal() if e.action == "update_passage")
    assert json.loads(entry.old_value or "") == {
        "tags": '["people"]',
        "metadata": '{"src": "chat"}',
        "provenance": "{}",
    }
    assert json.loads(entry.new_value or "")["tags"] == '["harbour", "people"]'
    importance = next(e for e in memory.journal() if e.action == "set_passage_importance")
    assert json.loads(importance.old_value or "") == {"importance": 0.5}


BAD_INSERTS: list[dict[str, object]] = [
    {"expires_at": "2031-01-01T00:00:00Z", "ttl_days": 3},
    {"ttl_days": 0},
    {"ttl_days": -1},
    {"ttl_days": float("nan")},
    {"ttl_days": True},
    {"ttl_days": "3"},
    {"importance": 1.5},
    {"importance": -0.1},
    {"importance": float("nan")},
    {"expires_at": "2031-01-01T00:00:00"},
    {"expires_at": "2031-01-01"},
    {"expires_at": datetime(2031, 1, 1)},
    {"expires_at": "next tuesday"},
    {"expires_at": "2031-02-30T00:00:00Z"},
    {"provenance": ["not", "a", "mapping"]},
]


@pytest.fixture(scope="module")
def refusing_memory(module_store: dict[str, str]) -> Iterator[MemoryManager]:
    """One store per backend for the cases below: each is refused and asserts that it changed
    nothing, so a store each (a database copied and dropped per case on PostgreSQL) bought
    nothing."""
    settings = Settings.from_env(module_store, env_file=None)
    with MemoryManager(
        agent_id="alice", settings=settings, embedding_function=HashEmbedding()
    ) as manager:
        yield manager


@pytest.mark.parametrize("bad", BAD_INSERTS, ids=[json.dumps(b, default=str) for b in BAD_INSERTS])
def test_bad_lifecycle_values_are_refused_and_nothing_is_written(
    refusing_memory: MemoryManager, bad: dict[str, object]
) -> None:
    memory = refusing_memory
    memory.archival_memory_insert("Something already stored.")
    before = store_snapshot(memory.database)
    with pytest.raises(MemoryAgentError):
        memory.archival_memory_insert("A new fact.", **bad)  # type: ignore[arg-type]
    with pytest.raises(MemoryAgentError):
        memory.archival_memory_insert_many(["A fine one.", {"content": "A new fact.", **bad}])
    assert store_snapshot(memory.database) == before


def test_bad_lifecycle_changes_are_refused_and_nothing_is_written(memory: MemoryManager) -> None:
    pid = memory.archival_memory_insert("Something already stored.")
    before = store_snapshot(memory.database)
    for call in (
        lambda: memory.set_passage_importance(pid, 2.0),
        lambda: memory.set_passage_importance("passage-missing", 0.3),
        lambda: memory.update_passage(pid, metadata=["x"]),  # type: ignore[arg-type]
        lambda: memory.update_passage("passage-missing", tags=["x"]),
        lambda: memory.restore_passage("passage-missing"),
    ):
        with pytest.raises(MemoryAgentError):
            call()
    assert store_snapshot(memory.database) == before


@pytest.mark.parametrize("mode", ["keyword", "vector", "hybrid"])
def test_a_fact_is_current_again_once_every_successor_has_expired(
    memory: MemoryManager, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Supersession by a passage that later expires ends with it: a chain whose successors have all
    expired leaves its first passage current (as purge_expired would); one live successor anywhere
    along the chain keeps it superseded. Each index of search agrees."""
    clock = StoreClock(monkeypatch)
    ends = clock.instant + timedelta(seconds=2)
    standing = memory.archival_memory_insert("Standup is at 09:30 in the big room.")
    week = memory.archival_memory_insert(
        "Standup is at 10:00 in the big room this week.", expires_at=ends.isoformat()
    )
    day = memory.archival_memory_insert(
        "Standup is at 11:00 in the big room today.", expires_at=ends.isoformat()
    )
    memory.supersede_passage(standing, week)
    memory.supersede_passage(week, day)
    kept = memory.archival_memory_insert("Lunch is at 12:00 in the canteen.")
    moved = memory.archival_memory_insert(
        "Lunch is at 12:30 in the canteen this week.", expires_at=ends.isoformat()
    )
    settled = memory.archival_memory_insert("Lunch is at 13:00 in the canteen from now on.")
    memory.supersede_passage(kept, moved)
    memory.supersede_passage(moved, settled)
    before = found(memory, "standup big room", mode)
    assert standing not in before and day in before
    clock.advance(1.9)
    assert set(found(memory, "standup big room", mode)) == set(before)

    clock.advance(0.1)  # now == ends: a passage is expired at its expires_at
    standup = found(memory, "standup big room", mode)
    assert standing in standup and week not in standup and day not in standup
    lunch = found(memory, "lunch canteen", mode)
    assert settled in lunch and kept not in lunch and moved not in lunch
    every = found(memory, "lunch canteen", mode, include_superseded=True)
    assert kept in every


def test_an_expired_passage_cannot_supersede(memory: MemoryManager) -> None:
    standing = memory.archival_memory_insert("Standup is at 09:30.")
    stale = memory.archival_memory_insert(
        "Standup was at 08:00.", expires_at="2001-01-01T00:00:00Z"
    )
    with pytest.raises(ArchivalError, match="expired") as caught:
        memory.supersede_passage(standing, stale)
    assert "Nothing was changed" in str(caught.value)
    assert memory.archival_memory_get(standing).superseded_by is None  # type: ignore[union-attr]
