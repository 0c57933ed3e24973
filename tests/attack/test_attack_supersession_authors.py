"""Attack reproducers: supersession by an expiring passage, and journal authors that a rollback
trusts (each fails today)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from click.testing import CliRunner
from store_clock import StoreClock

from memory_agent import MemoryManager
from memory_agent.cli import cli
from memory_agent.errors import MemoryAgentError
from memory_agent.tools.dispatch import execute_tool

pytestmark = pytest.mark.usefixtures("backend")

LINES = [f"Fact {n}: the crane on pier {n} was serviced." for n in range(8)]


def test_an_expired_successor_hides_its_predecessor_until_a_purge(
    memory: MemoryManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A temporary note ('this week') supersedes the standing fact. Once the note has expired,
    search hides the note (expired) and the fact (superseded): neither is found until someone
    calls purge_expired(), which then makes the fact current again. Expiry should count as the
    successor's end at search time as it does at purge time.

    (Amended by the fix: superseding by a note that has *already* expired is now refused, so the
    note expires a moment after the supersession, as a real 'this week' note would.)"""
    standing = memory.archival_memory_insert("Standup is at 09:30 every day.")
    stale = memory.archival_memory_insert(
        "Standup moved to 08:00 last year.", expires_at="2001-01-01T00:00:00Z"
    )
    with pytest.raises(MemoryAgentError, match="expired"):
        memory.supersede_passage(standing, stale)
    clock = StoreClock(monkeypatch)
    ends = clock.instant + timedelta(seconds=1)
    note = memory.archival_memory_insert(
        "Standup moved to 10:00 this week.", expires_at=ends.isoformat()
    )
    memory.supersede_passage(standing, note)
    assert standing not in [
        hit.passage.passage_id for hit in memory.archival_memory_search("standup", limit=10)
    ]
    clock.advance(1.05)

    found = [hit.passage.passage_id for hit in memory.archival_memory_search("standup", limit=10)]
    tool = execute_tool(memory, "archival_memory_search", {"query": "standup"}).text

    assert standing in found and standing in tool, (
        "no search finds the standing fact before a purge"
    )
    assert note not in found


def test_cli_author_posing_as_the_consolidator_makes_rollback_erase_a_later_edit(
    memory: MemoryManager,
) -> None:
    """`--author consolidator:<session>` is accepted from a person; the rollback then counts that
    later edit as the session's own and silently restores the block over it."""
    memory.create_block("notes", "\n".join(LINES), limit=400)
    report = memory.consolidate(consolidator="rules")
    assert report.session_id

    result = CliRunner().invoke(
        cli,
        [
            "--storage-dir",
            str(memory.storage_dir),
            "--agent",
            memory.agent_id,
            "--author",
            f"consolidator:{report.session_id}",
            "blocks",
            "append",
            "notes",
            "Later: the crane on pier 9 was replaced.",
        ],
    )
    if result.exit_code != 0:
        return  # refusing to let a person pose as the consolidator keeps the promise
    assert "pier 9" in memory.get_block("notes").value

    try:
        memory.rollback_consolidation(report.session_id)
    except MemoryAgentError:
        return  # refused: the later edit is kept
    assert "pier 9" in memory.get_block("notes").value, (
        "the rollback erased an edit made after the run"
    )


def test_tool_search_page_allowed_by_the_schema_gets_a_confusing_refusal(
    memory: MemoryManager,
) -> None:
    """The tool's schema allows page up to 10,000 and limit up to 50; page 20 with limit 50 is
    refused with 'limit ... got 1050', a limit the model never sent."""
    memory.archival_memory_insert("Ada lives in Lisbon.")
    outcome = execute_tool(
        memory, "archival_memory_search", {"query": "Ada", "limit": 50, "page": 20}
    )
    assert not outcome.is_error, outcome.text


def test_cli_author_name_with_a_line_break_forges_a_second_author(memory: MemoryManager) -> None:
    """`--author $'person:ada\\nmodel:evil'` is accepted: the journal table then reads
    'person ada model:evil', a person's edit dressed up as another kind of author."""
    result = CliRunner().invoke(
        cli,
        [
            "--storage-dir",
            str(memory.storage_dir),
            "--agent",
            memory.agent_id,
            "--author",
            "person:ada\nmodel:evil",
            "blocks",
            "append",
            "human",
            "x",
        ],
    )
    if result.exit_code != 0:
        return  # refused: no forged author
    authors = [entry.author or "" for entry in memory.journal(limit=5)]
    assert not any("\n" in author for author in authors), (
        f"journal author with a line break: {authors!r}"
    )
