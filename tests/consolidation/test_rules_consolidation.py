"""The rules consolidator through MemoryManager.consolidate: merges, expiry, block overflow, dry
run, rollback and stale writes, on both backends."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import pytest
from consolidation_helpers import BERTHS, HARBOUR, block_columns, fill_notes, memory_content
from store_clock import StoreClock

from memory_agent import (
    ConsolidationError,
    MemoryManager,
    Passage,
    RollbackRefusedError,
    RulesConsolidator,
)
from memory_agent.consolidation import MemoryView, Plan
from memory_agent.consolidation.protocol import Embed
from memory_agent.store.snapshot import Snapshot

pytestmark = pytest.mark.usefixtures("backend")


def _get(memory: MemoryManager, passage_id: str) -> Passage:
    passage = memory.archival_memory_get(passage_id)
    assert passage is not None
    return passage


def _live(memory: MemoryManager, passage_id: str) -> bool:
    return _get(memory, passage_id).superseded_by is None


def test_near_duplicates_merge_into_the_oldest_and_different_facts_stay(
    memory: MemoryManager,
) -> None:
    ids = [
        memory.archival_memory_insert(
            text, tags=[f"t{n}"], metadata={f"k{n}": n}, provenance={"messages": [n]}
        )
        for n, text in enumerate(HARBOUR)
    ]
    berths = [memory.archival_memory_insert(text) for text in BERTHS]

    report = memory.consolidate(consolidator="rules")

    assert report.status == "completed" and report.session_id
    assert report.counts["passages_merged"] == 2
    survivor = memory.archival_memory_get(ids[0])
    assert survivor is not None and survivor.superseded_by is None
    assert [_get(memory, i).superseded_by for i in ids[1:]] == [ids[0], ids[0]]
    assert set(survivor.tags) == {"t0", "t1", "t2"}
    assert survivor.metadata == {"k0": 0, "k1": 1, "k2": 2}
    assert survivor.provenance["merged_from"] == ids[1:]
    assert sorted(survivor.provenance["messages"]) == [0, 1, 2]
    assert all(
        _live(memory, passage_id) for passage_id in berths
    )  # 0.939 alike, but berth 4 is not berth 5
    found = {
        hit.passage.passage_id for hit in memory.archival_memory_search("harbour master", limit=10)
    }
    assert ids[0] in found and not found & set(ids[1:])
    everything = {
        hit.passage.passage_id
        for hit in memory.archival_memory_search(
            "harbour master", limit=10, include_superseded=True
        )
    }
    assert set(ids) <= everything


def test_the_same_text_in_other_case_and_spacing_merges(memory: MemoryManager) -> None:
    first = memory.archival_memory_insert("The user likes green tea.")
    second = memory.archival_memory_insert("the user  likes green tea")
    report = memory.consolidate(consolidator="rules")
    assert report.counts["passages_merged"] == 1
    assert _get(memory, second).superseded_by == first


def test_an_over_full_block_moves_its_oldest_lines_to_archival(memory: MemoryManager) -> None:
    lines = fill_notes(memory)
    block_before = memory.get_block("notes")

    report = memory.consolidate(consolidator="rules")

    block = memory.get_block("notes")
    assert len(block.value) <= 0.6 * block.limit < len(block_before.value)
    archived = [p for p in memory.archival_memory_list(limit=100) if "from_block" in p.tags]
    assert (
        report.counts["blocks_changed"] == 1
        and report.counts["passages_archived"] == len(archived) > 0
    )
    for passage in archived:
        assert passage.provenance["block"] == "notes"
        assert passage.provenance["block_id"] == block.block_id
        assert passage.provenance["block_version"] == block_before.version
    # Every fact is still somewhere: in the block or in a passage.
    assert all(line in block.value or any(p.content == line for p in archived) for line in lines)
    assert block.value.endswith(lines[-1])  # the newest lines stay


def test_expired_passages_are_counted_and_never_merged(
    memory: MemoryManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = StoreClock(monkeypatch)  # the store's clock moved on, not slept through
    expiring = memory.archival_memory_insert(
        HARBOUR[0], expires_at=clock.instant + timedelta(seconds=1)
    )
    kept = memory.archival_memory_insert(HARBOUR[1])
    clock.advance(1.2)
    report = memory.consolidate(consolidator="rules")
    assert report.counts["passages_expired"] == 1
    assert report.counts["passages_merged"] == 0
    assert _live(memory, kept) and memory.archival_memory_get(expiring) is not None


def test_a_dry_run_reports_the_plan_and_writes_nothing(
    memory: MemoryManager, snapshot: Callable[[], Snapshot]
) -> None:
    fill_notes(memory)
    for text in HARBOUR:
        memory.archival_memory_insert(text)
    before = snapshot()

    planned = memory.consolidate(consolidator="rules", dry_run=True)

    assert snapshot() == before
    assert planned.status == "dry_run" and planned.session_id is None and planned.dry_run
    assert planned.counts["passages_merged"] == 2 and planned.counts["blocks_changed"] == 1
    assert memory.list_consolidations() == []
    done = memory.consolidate(consolidator="rules")
    assert done.counts == planned.counts


def test_rollback_restores_every_block_and_passage_byte_for_byte(
    memory: MemoryManager, snapshot: Callable[[], Snapshot]
) -> None:
    fill_notes(memory)
    for n, text in enumerate(HARBOUR):
        memory.archival_memory_insert(text, tags=[f"t{n}"], metadata={"n": n, "ü": "ß"})
    memory.archival_memory_insert("The user likes green tea.")
    memory.archival_memory_insert("the user likes green tea")
    columns = block_columns(memory)
    before = snapshot()

    report = memory.consolidate(consolidator="rules")
    assert report.counts["passages_merged"] == 3 and report.counts["blocks_changed"] == 1
    assert memory_content(snapshot(), columns) != memory_content(before, columns)

    session = memory.rollback_consolidation(report.session_id or "")

    after = snapshot()
    assert memory_content(after, columns) == memory_content(before, columns)
    assert len(after["journal"]) > len(before["journal"])  # history only grows
    assert (
        session.status == "rolled_back"
        and memory.get_consolidation(session.session_id).status == "rolled_back"
    )
    with pytest.raises(ConsolidationError, match="already rolled back"):
        memory.rollback_consolidation(session.session_id)
    assert snapshot() == after


def test_rollback_over_a_later_edit_is_refused_and_changes_nothing(
    memory: MemoryManager, snapshot: Callable[[], Snapshot]
) -> None:
    fill_notes(memory)
    ids = [memory.archival_memory_insert(text) for text in HARBOUR]
    report = memory.consolidate(consolidator="rules")
    memory.core_memory_append("notes", "A later fact the agent wrote.")
    before = snapshot()

    with pytest.raises(RollbackRefusedError, match="block 'notes'") as refused:
        memory.rollback_consolidation(report.session_id or "")

    assert "core_memory_append" in str(refused.value)
    assert snapshot() == before
    assert memory.get_consolidation(report.session_id or "").status == "completed"
    assert ids


def test_rollback_over_a_later_passage_edit_names_the_passage(
    memory: MemoryManager, snapshot: Callable[[], Snapshot]
) -> None:
    ids = [memory.archival_memory_insert(text) for text in HARBOUR]
    report = memory.consolidate(consolidator="rules")
    memory.restore_passage(ids[2])  # a person brings one merged passage back
    before = snapshot()
    with pytest.raises(RollbackRefusedError, match=ids[2]):
        memory.rollback_consolidation(report.session_id or "")
    assert snapshot() == before


class _AgentWritesMeanwhile:
    """The rules consolidator, and between its read and its write another process edits the
    block."""

    def __init__(self, other: MemoryManager) -> None:
        self.rules = RulesConsolidator()
        self.other = other

    @property
    def name(self) -> str:
        return "rules"

    async def plan(self, view: MemoryView, embed: Embed) -> Plan:
        plan = await self.rules.plan(view, embed)
        self.other.core_memory_append("notes", "Written by the agent meanwhile.")
        return plan


def test_a_block_edited_between_read_and_write_is_a_stale_write_to_retry(
    memory: MemoryManager,
) -> None:
    fill_notes(memory)
    with MemoryManager(agent_id="ada", settings=memory.settings) as other_process:
        report = memory.consolidate(consolidator=_AgentWritesMeanwhile(other_process))

    block = memory.get_block("notes")
    assert block.value.endswith("Written by the agent meanwhile.")
    assert "Fact 0" in block.value  # nothing was moved out
    assert report.counts["blocks_changed"] == 0 and report.counts["passages_archived"] == 0
    assert [p for p in memory.archival_memory_list(limit=100) if "from_block" in p.tags] == []
    assert (
        len(report.retry_later) == 1
        and "notes" in report.retry_later[0]
        and "retry later" in report.retry_later[0]
    )
    assert report.status == "completed"
    again = memory.consolidate(consolidator="rules")  # the retry, on the fresh text
    assert (
        again.counts["blocks_changed"] == 1
        and "Written by the agent meanwhile." in memory.get_block("notes").value
    )


class _Broken:
    @property
    def name(self) -> str:
        return "broken"

    async def plan(self, view: MemoryView, embed: Embed) -> Plan:
        raise RuntimeError("the disk is on fire")


def test_a_failed_run_is_recorded_with_its_reason_and_a_warning(
    memory: MemoryManager, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="memory_agent"):
        report = memory.consolidate(consolidator=_Broken())
    assert report.status == "failed" and report.failure and "disk is on fire" in report.failure
    assert any("disk is on fire" in record.getMessage() for record in caplog.records)
    (session,) = memory.list_consolidations()
    assert session.status == "failed" and "disk is on fire" in (session.failure or "")
    assert session.finished_at is not None


def test_sessions_are_listed_newest_first_with_counts_and_summary(memory: MemoryManager) -> None:
    for text in HARBOUR:
        memory.archival_memory_insert(text)
    first = memory.consolidate(consolidator="rules")
    second = memory.consolidate(consolidator="rules")
    sessions = memory.list_consolidations()
    assert [s.session_id for s in sessions] == [second.session_id, first.session_id]
    assert sessions[1].counts["passages_merged"] == 2 and sessions[0].counts["passages_merged"] == 0
    assert sessions[1].consolidator == "rules" and "2 merged" in sessions[1].summary
    assert sessions[1].input_tokens is None  # no model was used
    with pytest.raises(ConsolidationError, match="No consolidation session"):
        memory.get_consolidation("consolidation-nope")
    with pytest.raises(ConsolidationError, match="No consolidation session"):
        memory.rollback_consolidation("consolidation-nope")


def test_every_change_is_journalled_as_the_session(memory: MemoryManager) -> None:
    fill_notes(memory)
    for text in HARBOUR:
        memory.archival_memory_insert(text)
    report = memory.consolidate(consolidator="rules")
    entries = [entry for entry in memory.journal(limit=500) if entry.author_kind == "consolidator"]
    assert entries and {entry.author for entry in entries} == {report.session_id}
    assert {entry.action for entry in entries} >= {
        "consolidate_block",
        "insert_passage",
        "supersede_passage",
        "update_passage",
    }


class _CountingEmbedding:
    """The default embedding function, counting the texts it embeds."""

    def __init__(self) -> None:
        from memory_agent.archival.embeddings import MiniLMEmbeddingFunction

        self.inner = MiniLMEmbeddingFunction()
        self.texts = 0

    def __call__(self, input: list[str]) -> list[list[float]]:  # noqa: A002  # Chroma's parameter name
        self.texts += len(input)
        return self.inner(input)

    def name(self) -> str:
        return self.inner.name()


def test_a_run_compares_stored_vectors_instead_of_embedding_again(memory: MemoryManager) -> None:
    counting = _CountingEmbedding()
    with MemoryManager(
        agent_id="ada", settings=memory.settings, embedding_function=counting
    ) as counted:
        for text in HARBOUR:
            counted.archival_memory_insert(text)
        embedded = counting.texts
        report = counted.consolidate(consolidator="rules")
    assert embedded >= len(HARBOUR) and counting.texts == embedded  # nothing embedded by the run
    assert report.counts["passages_merged"] == 2


def test_archived_lines_name_the_turn_that_wrote_them(memory: MemoryManager) -> None:
    memory.create_block("notes", "")
    turns = {}
    for number in range(8):
        prompt = memory.store_message("user", f"Please remember pier {number}.")
        assert prompt is not None
        line = f"Fact {number}: the crane on pier {number} was serviced."
        assert not memory.execute_tool(
            "core_memory_append", {"label": "notes", "content": line}
        ).is_error
        turns[line] = prompt.message_id
    memory.core_memory_append("notes", "A fact a person added.")  # the Python API: no turn

    memory.consolidate(consolidator="rules")

    archived = [p for p in memory.archival_memory_list(limit=100) if "from_block" in p.tags]
    assert archived
    for passage in archived:
        assert passage.provenance["written_by"] == "model:ada"
        assert passage.provenance["messages"] == [turns[passage.content]]
        assert passage.provenance["written_in_version"] >= 2


class _Slow:
    """A consolidator that says when it started planning, then plans for 30 s."""

    def __init__(self) -> None:
        self.planning = asyncio.Event()

    @property
    def name(self) -> str:
        return "slow"

    async def plan(self, view: MemoryView, embed: Embed) -> Plan:
        self.planning.set()
        await asyncio.sleep(30)
        return Plan()


def test_a_cancelled_background_run_is_recorded_as_failed(memory: MemoryManager) -> None:
    async def cancel_it() -> None:
        slow = _Slow()
        task = asyncio.create_task(memory.aconsolidate(consolidator=slow))
        await asyncio.wait_for(slow.planning.wait(), timeout=30)  # the session is under way
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_it())
    (session,) = memory.list_consolidations()
    assert session.status == "failed" and "interrupted" in (session.failure or "")


def test_an_entry_only_claiming_the_session_as_author_is_not_rolled_back(
    memory: MemoryManager,
) -> None:
    """An entry written after the run under the session's author name (here straight into the
    journal, past every entry point's refusal) is outside the session's start/finish markers: the
    rollback treats it as a later edit of the block and refuses, instead of counting it as the
    session's
    own."""
    from memory_agent.authors import Author
    from memory_agent.store import journal
    from memory_agent.store.database import utc_now

    fill_notes(memory)
    report = memory.consolidate(consolidator="rules")
    assert report.session_id and report.counts["blocks_changed"] == 1
    block = memory.get_block("notes")
    human = memory.get_block("human")
    with memory.database.transaction() as conn:
        journal.record(
            conn,
            author=Author.consolidator(report.session_id),
            agent_id=memory.agent_id,
            action="core_memory_replace",
            target_type="block",
            target_id=human.block_id,
            label="human",
            old_value="FORGED OLD TEXT",
            new_value=human.value,
            created_at=utc_now(),
        )
    memory.rollback_consolidation(report.session_id)
    assert memory.get_block("human").value == human.value  # the claimed entry was not the session's
    assert memory.get_block("notes").value != block.value  # its real change was undone


def test_a_shared_block_is_skipped_with_the_reason(memory: MemoryManager) -> None:
    lines = [f"Fact {n}: the crane on pier {n} was serviced." for n in range(8)]
    shared = memory.create_block("team", "\n".join(lines), limit=400, is_shared=True)
    report = memory.consolidate(consolidator="rules")
    assert report.counts["blocks_changed"] == 0 and memory.get_block("team").value == shared.value
    assert any("'team' skipped" in warning and "shared" in warning for warning in report.warnings)


def test_a_merge_survivor_lives_as_long_as_its_longest_lived_member(memory: MemoryManager) -> None:
    soon = datetime.now(timezone.utc) + timedelta(hours=1)
    later = soon + timedelta(days=1)
    first = memory.archival_memory_insert("The user likes green tea.", expires_at=soon)
    second = memory.archival_memory_insert("the user  likes green tea", expires_at=later)
    report = memory.consolidate(consolidator="rules")
    assert report.counts["passages_merged"] == 1 and _get(memory, second).superseded_by == first
    assert _get(memory, first).expires_at == _get(memory, second).expires_at
    memory.rollback_consolidation(report.session_id or "")
    assert (
        _get(memory, first).expires_at != _get(memory, second).expires_at
    )  # the expiry came back too


def test_consolidation_never_reads_a_secret_and_a_merge_takes_the_strictest_level(
    memory: MemoryManager,
) -> None:
    """Secret passages are left out of what a consolidator reads (a model consolidator would send
    them to a model); a public and a private copy of one fact merge into a private passage."""
    public = memory.archival_memory_insert("The user likes green tea.", sensitivity="public")
    private = memory.archival_memory_insert("the user  likes green tea")
    secret = memory.archival_memory_insert("THE USER LIKES GREEN TEA", sensitivity="secret")
    report = memory.consolidate(consolidator="rules")
    assert report.counts["passages_merged"] == 1
    assert _get(memory, private).superseded_by == public
    assert _get(memory, public).sensitivity == "private"
    kept = memory.archival_memory_get(secret, allow_secret=True)
    assert kept is not None and kept.superseded_by is None and kept.sensitivity == "secret"
    assert secret not in _get(memory, public).provenance.get("merged_from", [])
    memory.rollback_consolidation(report.session_id)
    assert (
        _get(memory, public).sensitivity == "public" and _get(memory, private).superseded_by is None
    )
