"""Attack reproducers: imported lifecycle fields and journal rows (each fails today)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_agent import MemoryManager
from memory_agent.errors import MemoryAgentError
from memory_agent.portability.files import export_memory, import_file

pytestmark = pytest.mark.usefixtures("backend")


def _passage(template: dict, passage_id: str, content: str, superseded_by: str | None) -> dict:
    return {
        **template,
        "passage_id": passage_id,
        "content": content,
        "superseded_by": superseded_by,
    }


def test_import_dedup_turns_a_supersession_chain_into_a_cycle(
    memory: MemoryManager, tmp_path: Path
) -> None:
    """p1 -> p3 -> p2 is no cycle in the file, but p1 and p2 hold identical text and are stored as
    one passage: the store then holds p1 <-> p3, both superseded, and no search finds either."""
    memory.archival_memory_insert("Ada lives in Lisbon.")
    document = export_memory(memory)
    template = document["passages"][0]
    document["passages"] = [
        _passage(template, "p1", "Ada lives in Lisbon.", "p3"),
        _passage(template, "p2", "Ada lives in Lisbon.", None),
        _passage(template, "p3", "Ada lives in Lisbon now.", "p2"),
    ]
    document["journal"] = []
    path = tmp_path / "chain.json"
    path.write_text(json.dumps(document))

    try:
        report = import_file(
            path, memory.storage_dir, agent_id="imported", settings=memory.settings
        )
    except MemoryAgentError:
        return  # refusing the file keeps the promise
    imported = MemoryManager(agent_id=report.agent_ids[0], settings=memory.settings)
    try:
        found = imported.archival_memory_search("Ada Lisbon", limit=10)
        assert found, (
            "after the import no current passage states where Ada lives (a supersession cycle)"
        )
    finally:
        imported.close()


def test_imported_journal_rows_steer_a_later_rollback_into_another_agents_block(
    memory: MemoryManager, tmp_path: Path
) -> None:
    """Imported journal rows keep their author. A row claiming `consolidator:<local session>` for a
    block id the file does not hold keeps that id, so rolling the local session back writes the
    file's text into agent-a's 'human' block, which the session never touched."""
    memory.archival_memory_insert("Ines Duarte is the harbour master.")
    memory.archival_memory_insert("ines duarte is the harbour master")
    report = memory.consolidate(consolidator="rules")
    assert report.session_id and report.counts["passages_merged"] == 1
    human = memory.get_block("human")

    document = export_memory(memory)
    document["agents"][0]["agent_id"] = "visitor"
    for section in ("blocks", "block_history", "attachments", "messages", "summaries", "passages"):
        document[section] = []
    document["journal"] = [
        {
            "agent_id": "visitor",
            "action": "core_memory_replace",
            "target_type": "block",
            "target_id": human.block_id,
            "label": "human",
            "old_value": "INJECTED BY A FILE",
            "new_value": "x",
            "created_at": "2020-01-01T00:00:00+00:00",
            "author_kind": "consolidator",
            "author": report.session_id,
            "detail": {},
        }
    ]
    path = tmp_path / "visitor.json"
    path.write_text(json.dumps(document))
    try:
        import_file(path, memory.storage_dir, settings=memory.settings)
    except MemoryAgentError:
        return  # refusing a journal row about a block outside the file keeps the promise

    try:
        memory.rollback_consolidation(report.session_id)
    except MemoryAgentError:
        pass
    assert memory.get_block("human").value == human.value, (
        "a rollback wrote an imported file's text into a block"
    )
