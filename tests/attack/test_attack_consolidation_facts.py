"""Attack reproducers: consolidation must never lose a fact nor merge two different facts.

Each test fails today; see the lead's attack report for the likely cause."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memory_agent import MemoryManager

pytestmark = pytest.mark.usefixtures("backend")

DIFFERENT_FACTS = [
    ("The freezer is kept at -18 degrees.", "The freezer is kept at 18 degrees."),
    ("Standup is at 7am every day.", "Standup is at 7pm every day."),
    ("Berth 4a was repainted green in May.", "Berth 4b was repainted green in May."),
    ("The invoice is due in 20 days.", "The invoice is due in 20 weeks."),
    ("The harbour crane lifts up to 40 tonnes.", "The harbour crane lifts up to 40 kilograms."),
    ("Ada arrives before noon.", "Ada arrives after noon."),
    ("The warehouse is on the left of the gate.", "The warehouse is on the right of the gate."),
    ("Ines prefers the morning shift.", "Ines prefers the evening shift."),
    ("The contract was signed by the buyer.", "The contract was signed by the seller."),
    ("The wifi password is Hunter2Blue.", "The wifi password is hunter2blue."),
]


def _soon(seconds: float = 3600) -> str:
    return (datetime.now(timezone.utc) + timedelta(seconds=seconds)).isoformat()


@pytest.mark.parametrize(
    ("first", "second"), DIFFERENT_FACTS, ids=[a[:24] for a, _ in DIFFERENT_FACTS]
)
def test_rules_consolidation_keeps_different_facts_apart(
    memory: MemoryManager, first: str, second: str
) -> None:
    """Like 'Berth 4' vs 'Berth 5': two facts worded alike are not one fact; neither may be
    superseded by the other (each would vanish from default search)."""
    a = memory.archival_memory_insert(first)
    b = memory.archival_memory_insert(second)
    memory.consolidate(consolidator="rules")
    for passage_id in (a, b):
        passage = memory.archival_memory_get(passage_id)
        assert passage is not None and passage.superseded_by is None, (
            f"{passage.content!r} was merged into a different fact"
        )


def test_overflow_line_moved_into_an_expiring_duplicate_is_lost(memory: MemoryManager) -> None:
    """A permanent block line whose text an expiring passage already holds is moved out of the
    block; the insert dedups onto the expiring passage, so the fact dies with its expiry."""
    lines = [f"Fact {n}: the crane on pier {n} was serviced." for n in range(8)]
    memory.archival_memory_insert(lines[0], expires_at=_soon())
    memory.create_block("notes", "\n".join(lines), limit=400)

    memory.consolidate(consolidator="rules")

    holders = [p for p in memory.archival_memory_list(limit=100) if p.content == lines[0]]
    assert lines[0] in memory.get_block("notes").value or any(
        p.superseded_by is None and p.expires_at is None for p in holders
    ), "the line left the block, and its only holder expires: the fact will be lost"


def test_merge_keeps_a_permanent_fact_inside_an_expiring_survivor(memory: MemoryManager) -> None:
    """Same text (case aside): the older, expiring passage survives and the permanent one is
    superseded by it; once the survivor expires no search finds the fact."""
    expiring = memory.archival_memory_insert(
        "Ines Duarte is the harbour master.", expires_at=_soon()
    )
    permanent = memory.archival_memory_insert("ines duarte is the harbour master")

    memory.consolidate(consolidator="rules")

    live_forever = [
        pid
        for pid in (expiring, permanent)
        if (p := memory.archival_memory_get(pid)) is not None
        and p.superseded_by is None
        and p.expires_at is None
    ]
    assert live_forever, "the only live holder of a permanent fact now expires"


def test_trimming_a_shared_block_moves_the_other_agents_facts_out_of_its_reach(
    memory: MemoryManager,
) -> None:
    """agent-a's run trims a block shared with bob and archives the lines as agent-a's own
    passages: bob's block loses three facts and bob's archival search cannot find them."""
    lines = [f"Fact {n}: the crane on pier {n} was serviced." for n in range(8)]
    shared = memory.create_block("team", "\n".join(lines), limit=400, is_shared=True)
    memory.ensure_agent("bob")
    memory.attach_block("bob", shared.block_id)

    memory.consolidate(consolidator="rules")

    in_block = memory.get_block("team", agent_id="bob").value
    found = " ".join(
        hit.passage.content
        for hit in memory.archival_memory_search("crane pier serviced", limit=20, agent_id="bob")
    )
    lost = [line for line in lines if line not in in_block and line not in found]
    assert not lost, f"bob lost {lost}"
