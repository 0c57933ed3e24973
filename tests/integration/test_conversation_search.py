"""Conversation search by keyword, by meaning and both, on both backends with real Chroma.

Messages are stored without vectors (the turn's write stays one short transaction); vectors are
written after it (`index_message_vectors`, a search's catch-up, reconcile). Filters (roles,
dates, the agent) hold in every mode; a forgotten message's vectors go with it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest

from memory_agent import MemoryManager, Settings
from memory_agent.archival.memory_store import InMemoryVectorStore
from memory_agent.errors import ConfigurationError
from memory_agent.store.snapshot import store_snapshot

pytestmark = pytest.mark.usefixtures("backend")

MODES = ("keyword", "vector", "hybrid")
TALK = [
    ("user", "My sister Clara just adopted a golden retriever puppy called Biscuit."),
    ("assistant", "How lovely! Golden retrievers are gentle family dogs."),
    ("user", "I am flying to Lisbon on the 14th for a conference about compilers."),
    ("assistant", "Safe travels; Lisbon is beautiful in spring."),
    ("user", "Remind me that the quarterly tax filing is due at the end of the month."),
    ("assistant", "Noted: the quarterly tax filing is due at the end of the month."),
]


def _set_time(memory: MemoryManager, message_id: int, when: datetime) -> None:
    """Back-date a message (a test stands in for a conversation held on that day)."""
    with memory.database.transaction() as conn:
        conn.execute(
            "UPDATE messages SET created_at = ? WHERE message_id = ?",
            (when.astimezone(timezone.utc).isoformat(timespec="microseconds"), message_id),
        )


@pytest.fixture
def talk(memory: MemoryManager) -> Iterator[dict[str, int]]:
    ids = {}
    for number, (role, text) in enumerate(TALK):
        stored = memory.store_message(role, text, session_id="s1")
        assert stored is not None
        ids[f"m{number}"] = stored.message_id
    yield ids


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_finds_a_message_that_names_its_words(
    memory: MemoryManager, talk: dict[str, int], mode: str
) -> None:
    found = memory.search_messages("Lisbon conference", mode=mode, limit=3)  # type: ignore[arg-type]  # a mode or bad argument on purpose
    assert found and found[0].message_id == talk["m2"]


def test_meaning_finds_what_keywords_cannot(memory: MemoryManager, talk: dict[str, int]) -> None:
    query = "sibling household animal"
    assert memory.search_messages(query, mode="keyword") == []
    assert memory.search_messages(query, mode="vector", limit=2)[0].message_id == talk["m0"]
    assert memory.search_messages(query, mode="hybrid", limit=2)[0].message_id == talk["m0"]


def test_a_compacted_message_is_found_by_meaning(
    memory: MemoryManager, talk: dict[str, int]
) -> None:
    memory.recall.add_summary(
        memory.agent_id,
        "The user talked about family, travel and taxes.",
        first_message_id=talk["m0"],
        last_message_id=talk["m5"],
        model=None,
        tokens_before=100,
        tokens_after=10,
    )
    assert memory.in_context_messages() == []
    query = "revenue agency paperwork deadline"  # no word of the message
    assert memory.search_messages(query, mode="keyword") == []
    found = memory.search_messages(query, limit=2)
    assert found[0].message_id in (talk["m4"], talk["m5"])
    assert not found[0].in_context


def test_vectors_are_written_after_the_message_not_with_it(
    memory: MemoryManager, talk: dict[str, int]
) -> None:
    assert memory.message_vectors_in_use is False
    assert memory.index_message_vectors(limit=2) == 2  # the newest two, first
    assert memory.index_message_vectors() == len(TALK) - 2
    assert memory.index_message_vectors() == 0
    report = memory.reconcile_message_vectors(full=True)
    assert report.ok and report.embedded == 0 and report.removed_vectors == 0


@pytest.mark.parametrize("mode", MODES)
def test_date_filters_hold_in_every_mode(
    memory: MemoryManager, talk: dict[str, int], mode: str
) -> None:
    old = memory.store_message("user", "Clara's puppy Biscuit chewed my shoes.", session_id="s0")
    assert old is not None
    _set_time(memory, old.message_id, datetime(2023, 5, 10, 15, tzinfo=timezone.utc))
    query = "Biscuit the puppy"
    within = memory.search_messages(
        query,
        mode=mode,  # type: ignore[arg-type]  # a mode or bad argument on purpose
        start_date="2023-05-10",
        end_date="2023-05-10",  # a bare end date covers its whole day
    )
    assert [m.message_id for m in within] == [old.message_id]
    after = memory.search_messages(query, mode=mode, start_date="2024-01-01")  # type: ignore[arg-type]  # a mode or bad argument on purpose
    assert old.message_id not in {m.message_id for m in after}
    assert talk["m0"] in {m.message_id for m in after}


@pytest.mark.parametrize("mode", MODES)
def test_roles_filter_in_every_mode(memory: MemoryManager, talk: dict[str, int], mode: str) -> None:
    found = memory.search_messages("quarterly tax filing", mode=mode, roles=["assistant"])  # type: ignore[arg-type]  # a mode or bad argument on purpose
    assert found and {m.role for m in found} == {"assistant"}


def test_a_question_naming_a_time_raises_messages_of_that_window(
    memory: MemoryManager, talk: dict[str, int]
) -> None:
    now = datetime.now(timezone.utc)
    kayak = memory.store_message("user", "We bought a red kayak for the lake.", session_id="y")
    canoe = memory.store_message("user", "We bought a green canoe for the river.", session_id="z")
    assert kayak is not None and canoe is not None
    _set_time(memory, kayak.message_id, now - timedelta(days=1))
    _set_time(memory, canoe.message_id, now - timedelta(days=30))
    for mode in MODES:
        recent = memory.search_messages(
            "which boat we bought yesterday", mode=mode, time_aware=True
        )  # type: ignore[arg-type]  # a mode or bad argument on purpose
        older = memory.search_messages(
            "which boat we bought a month ago", mode=mode, time_aware=True
        )  # type: ignore[arg-type]  # a mode or bad argument on purpose
        assert recent[0].message_id == kayak.message_id, mode
        assert older[0].message_id == canoe.message_id, mode
        # A boost, not a filter: the other boat is still found.
        assert canoe.message_id in {m.message_id for m in recent}


def test_agents_never_see_each_others_messages(memory: MemoryManager, talk: dict[str, int]) -> None:
    memory.ensure_agent("agent-b")
    other = memory.store_message(
        "user", "Agent b's owner keeps bees and sells honey.", agent_id="agent-b"
    )
    assert other is not None
    for mode in MODES:
        mine = memory.search_messages("beekeeping and honey", mode=mode, limit=50)  # type: ignore[arg-type]  # a mode or bad argument on purpose
        assert other.message_id not in {m.message_id for m in mine}
        theirs = memory.search_messages("beekeeping and honey", mode=mode, agent_id="agent-b")  # type: ignore[arg-type]  # a mode or bad argument on purpose
        assert [m.message_id for m in theirs] == [other.message_id]


def test_forgetting_a_message_removes_its_vectors(
    memory: MemoryManager, talk: dict[str, int]
) -> None:
    assert memory.index_message_vectors() == len(TALK)
    memory.forget_message(talk["m0"])
    found = memory.search_messages("sibling household animal", mode="vector", limit=10)
    assert talk["m0"] not in {m.message_id for m in found}
    # Had the forget left a vector behind, reconcile would find and remove it now.
    report = memory.reconcile_message_vectors(full=True)
    assert report.ok and report.removed_vectors == 0 and report.embedded == 0


def test_reconcile_writes_lost_vectors_again(settings: Settings) -> None:
    store = InMemoryVectorStore()
    memory = MemoryManager(agent_id="agent-a", settings=settings, message_vector_store=store)
    try:
        first = memory.store_message("user", "The boiler was serviced on Tuesday.")
        assert first is not None
        assert memory.index_message_vectors() == 1
        store.delete("agent-a", list(store.ids("agent-a")))
        store.upsert([])
        report = memory.reconcile_message_vectors()
        assert report.missing_vectors == 1 and report.embedded == 1 and report.ok
        assert memory.search_messages("heating maintenance", mode="vector")[0].message_id == (
            first.message_id
        )
    finally:
        memory.close()


class _BrokenStore(InMemoryVectorStore):
    def query(self, *args: object, **kwargs: object) -> list:  # type: ignore[type-arg,override]  # fails on purpose
        raise RuntimeError("the vector store is down")


def test_a_failed_vector_side_answers_from_keywords_and_says_so(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    memory = MemoryManager(
        agent_id="agent-a", settings=settings, message_vector_store=_BrokenStore()
    )
    try:
        stored = memory.store_message("user", "The Lisbon conference is about compilers.")
        assert stored is not None
        with caplog.at_level(logging.WARNING):
            found = memory.search_messages("Lisbon compilers", mode="hybrid")
        assert [m.message_id for m in found] == [stored.message_id]
        assert "answering from keyword search only" in caplog.text
    finally:
        memory.close()


@pytest.mark.parametrize(
    "arguments",
    [
        {"mode": "semantic"},
        {"start_date": "not a date"},
        {"start_date": "2024-02-01", "end_date": "2024-01-01"},
    ],
)
def test_bad_arguments_are_refused_and_change_nothing(
    memory: MemoryManager, talk: dict[str, int], arguments: dict[str, str]
) -> None:
    before = store_snapshot(memory.database)
    with pytest.raises(ConfigurationError, match="mode|date|nothing can match"):
        memory.search_messages("Lisbon", **arguments)  # type: ignore[arg-type]  # a mode or bad argument on purpose
    assert store_snapshot(memory.database) == before
