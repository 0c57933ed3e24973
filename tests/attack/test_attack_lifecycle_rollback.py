"""Attack reproducers: passage lifecycle and consolidation rollback (each fails today)."""

from __future__ import annotations

import pytest

from memory_agent import MemoryManager
from memory_agent.errors import MemoryAgentError

pytestmark = pytest.mark.usefixtures("backend")

LINES = [f"Fact {n}: the crane on pier {n} was serviced." for n in range(8)]


def test_reinserting_a_fact_without_expiry_still_lets_it_expire(memory: MemoryManager) -> None:
    """The second insert is acknowledged (same id) but keeps the first one's expiry: a fact the
    caller stored for good vanishes from search when the old note's TTL runs out."""
    note = memory.archival_memory_insert("Standup is at 10:00.", ttl_days=1)
    again = memory.archival_memory_insert("Standup is at 10:00.")
    stored = memory.archival_memory_get(again)
    assert again == note and stored is not None
    assert stored.expires_at is None, f"stored for good, yet it expires at {stored.expires_at}"


def test_rollback_is_refused_forever_after_a_run_revived_an_expired_passage(
    memory: MemoryManager,
) -> None:
    """An overflow line whose text an expired passage holds revives it (journalled with
    expires_at); the rollback then refuses: expires_at is not restorable."""
    memory.archival_memory_insert(LINES[0], expires_at="2000-01-01T00:00:00Z")
    memory.create_block("notes", "\n".join(LINES), limit=400)
    report = memory.consolidate(consolidator="rules")
    assert report.status == "completed" and report.session_id

    try:
        memory.rollback_consolidation(report.session_id)
    except MemoryAgentError as error:
        pytest.fail(f"nothing edited after the run, yet its rollback is refused: {error}")
    assert memory.get_block("notes").value == "\n".join(LINES)


def test_rollback_deletes_a_passage_written_after_the_run(memory: MemoryManager) -> None:
    """After the run, the user stores a passage (acknowledged with an id). Its text equals one the
    run archived, so the insert dedups without a journal entry, and the rollback deletes the
    passage: an acknowledged later write is lost instead of the rollback being refused."""
    memory.create_block("notes", "\n".join(LINES), limit=400)
    report = memory.consolidate(consolidator="rules")
    assert report.session_id and LINES[1] not in memory.get_block("notes").value

    mine = memory.archival_memory_insert(LINES[1], tags=["mine"])

    try:
        memory.rollback_consolidation(report.session_id)
    except MemoryAgentError:
        return  # refusing (a later write touched the passage) keeps the promise
    assert memory.archival_memory_get(mine) is not None, (
        "the acknowledged insert was deleted by the rollback"
    )
