"""The manager's snapshot API: a whole agent out in one read, back in as a new agent in one write,
with export's clearance rule, and a refused restore changing nothing (both backends)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from backends import OtherEnviron, backend_environ

from memory_agent import (
    AgentNotFoundError,
    ConfigurationError,
    ImportFormatError,
    ImportReport,
    MemoryManager,
    Settings,
    Snapshot,
)
from memory_agent.maintenance.admin import default_agent_id, restore_into
from memory_agent.portability import export_memory, project_json
from memory_agent.snapshots.records import JournalRecord
from memory_agent.store.backend import open_store
from memory_agent.store.snapshot import store_snapshot

pytestmark = pytest.mark.usefixtures("backend")


def _settings(environ: dict[str, str]) -> Settings:
    return Settings.from_env(environ, env_file=None)


def _filled(memory: MemoryManager) -> None:
    memory.core_memory_append("human", "Name: Ada.")
    memory.create_block("diary", "A secret entry.", sensitivity="secret")
    memory.store_message("user", "Hello, I am Ada.")
    memory.store_message("assistant", [{"type": "text", "text": "Hello Ada."}])
    memory.archival_memory_insert("Ada's cat is called Pixel.")


def test_a_snapshot_restored_elsewhere_gives_back_the_same_memory(
    tmp_path: Path, other_store_environ: OtherEnviron
) -> None:
    with MemoryManager(
        tmp_path / "a", agent_id="ada", settings=_settings(backend_environ({}))
    ) as memory:
        _filled(memory)
        snapshot = memory.snapshot(allow_secret=True)
        assert isinstance(snapshot, Snapshot)
        assert [agent.agent_id for agent in snapshot.agents] == ["ada"]
        assert {block.label for block in snapshot.blocks} == {"persona", "human", "diary"}
        assert [message.content for message in snapshot.messages][0] == "Hello, I am Ada."
        assert [passage.content for passage in snapshot.passages] == ["Ada's cat is called Pixel."]
        exported = project_json.stable_form(export_memory(memory, allow_secret=True))
    target = _settings(other_store_environ({}))
    with MemoryManager(tmp_path / "b", agent_id="setup", settings=target) as other:
        report = other.restore(snapshot)
        assert isinstance(report, ImportReport)
        assert (report.agent_ids, report.blocks, report.messages, report.passages) == (
            ["ada"],
            3,
            2,
            1,
        )
        assert (
            other.get_block("diary", agent_id="ada", allow_secret=True).value == "A secret entry."
        )
        again = project_json.stable_form(export_memory(other, agent_ids=["ada"], allow_secret=True))
        assert other.archival_memory_search("cat", agent_id="ada")[0].content == (
            "Ada's cat is called Pixel."
        )
    assert again == exported  # read before the search, which counts an access


def test_a_snapshot_carries_what_export_may_carry(tmp_path: Path) -> None:
    with MemoryManager(tmp_path, agent_id="ada", settings=_settings(backend_environ({}))) as memory:
        _filled(memory)
        memory.set_block_sensitivity("human", "public", agent_id="ada")
        default = memory.snapshot()
        public = memory.snapshot(max_sensitivity="public")
        everything = memory.snapshot(allow_secret=True)
        with pytest.raises(AgentNotFoundError):
            memory.snapshot(["ada", "nobody"])
        with pytest.raises(ConfigurationError):
            memory.snapshot(max_sensitivity="top-secret")
    assert {b.label for b in everything.blocks} == {"persona", "human", "diary"}
    assert {b.label for b in default.blocks} == {"persona", "human"}
    assert {b.label for b in public.blocks} == {"human"}
    assert not public.passages  # a passage is private unless said otherwise
    diary = next(b.block_id for b in everything.blocks if b.label == "diary")
    for cut in (default, public):
        assert all(entry.target_id != diary for entry in cut.journal)
        assert all(version.block_id != diary for version in cut.block_history)
    # Conversation messages have no level: every cut has them all.
    assert len(default.messages) == len(public.messages) == len(everything.messages) == 2


def test_a_refused_restore_writes_nothing_even_when_refused_at_its_last_step(
    tmp_path: Path,
) -> None:
    settings = _settings(backend_environ({}))
    with MemoryManager(tmp_path, agent_id="ada", settings=settings) as memory:
        _filled(memory)
        snapshot = memory.snapshot()
        memory.consolidate()  # a consolidation session this storage holds
        session = memory.list_consolidations()[0].session_id
        forged = JournalRecord(
            agent_id="ada",
            action="edit_block",
            target_type="block",
            target_id=None,
            label="human",
            old_value=None,
            new_value="forged",
            detail={},
            created_at="2026-01-01T00:00:00+00:00",
            author_kind="consolidator",
            author=f"{session}:rules",
        )
        bad = dataclasses.replace(snapshot, journal=[*snapshot.journal, forged])
        with open_store(tmp_path, settings.database_url) as observer:
            before = store_snapshot(observer)
            # The journal is written last, inside the same transaction as every other row.
            with pytest.raises(ImportFormatError, match="consolidation session"):
                memory.restore(bad, agent_id="ada-copy")
            with pytest.raises(ConfigurationError, match="already exists"):
                memory.restore(snapshot)  # "ada" is here already
            with pytest.raises(ConfigurationError, match="takes a Snapshot"):
                memory.restore({"agents": []})  # type: ignore[arg-type]  # the wrong type, on purpose
            assert store_snapshot(observer) == before
        report = memory.restore(snapshot, agent_id="ada-copy")
        assert report.agent_ids == ["ada-copy"]
        assert memory.get_block("human", agent_id="ada-copy").value.endswith("Name: Ada.")


def test_restore_into_an_empty_storage_dir_makes_the_first_agent_its_default(
    tmp_path: Path, other_store_environ: OtherEnviron
) -> None:
    with MemoryManager(
        tmp_path / "a", agent_id="ada", settings=_settings(backend_environ({}))
    ) as memory:
        _filled(memory)
        snapshot = memory.snapshot()
    target = _settings(other_store_environ({}))
    report = restore_into(snapshot, tmp_path / "b", settings=target)
    assert report.agent_ids == ["ada"] and report.vectors_pending == 0
    with open_store(tmp_path / "b", target.database_url) as db:
        assert default_agent_id(db) == "ada"
    with MemoryManager(tmp_path / "b", settings=target) as memory:
        assert memory.agent_id == "ada"
        assert memory.list_agents() == ["ada"]  # no agent of the manager's own
