"""The memory tool's commands on our store: what each does to the blocks, and the rules that hold.

Real SQLite files through `MemoryManager`; the commands are called as the model calls them
(`execute_tool("memory", ...)`) or through `MemoryFiles`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from backends import OtherEnviron

from memory_agent import MemoryManager, Settings
from memory_agent.core.memory_paths import (
    default_in_prompt,
    format_size,
    memory_path,
    parse_memory_path,
)
from memory_agent.errors import (
    BlockExistsError,
    BlockNotFoundError,
    ConfigurationError,
    MemoryToolError,
    StaleBlockError,
)
from memory_agent.prompt.rendering import MAX_LISTED_FILES
from memory_agent.tools import ALL_TOOLS
from memory_agent.tools.memory_tool import MemoryFiles, specs_for_tool_set

pytestmark = pytest.mark.usefixtures("backend")


def call(memory: MemoryManager, agent: str | None = None, **arguments: Any) -> tuple[str, bool]:
    outcome = memory.execute_tool("memory", arguments, agent_id=agent)
    return outcome.text, outcome.is_error


def test_create_makes_an_on_demand_block_outside_system(memory: MemoryManager) -> None:
    text, error = call(
        memory, command="create", path="/memories/project/notes.md", file_text="Deadline: May"
    )
    assert (text, error) == ("File created successfully at: /memories/project/notes.md", False)
    block = memory.get_block("project/notes.md")
    assert block.value == "Deadline: May" and not block.in_prompt
    call(memory, command="create", path="/memories/system/style.md", file_text="Be brief.")
    assert memory.get_block("system/style.md").in_prompt
    assert (
        default_in_prompt("persona")
        and default_in_prompt("human")
        and not default_in_prompt("systems/x")
    )


def test_on_demand_blocks_are_listed_not_rendered_and_not_marked_seen(
    memory: MemoryManager,
) -> None:
    memory.create_block("project/notes.md", "SECRET-PLAN " * 10, in_prompt=False)
    memory.create_block("system/rules", "Always cite sources.")
    prompt = memory.get_system_prompt_addition()
    assert "SECRET-PLAN" not in prompt
    assert f"{format_size(120)}\t/memories/project/notes.md" in prompt
    assert "Always cite sources." in prompt and "<memory_files>" in prompt
    markdown = memory.get_system_prompt_addition(use_xml_format=False)
    assert "## [MEMORY FILES]" in markdown and "SECRET-PLAN" not in markdown
    with memory.db.reading() as conn:
        seen = dict(
            conn.execute(
                "SELECT label, seen_version FROM agent_blocks WHERE agent_id = 'agent-a'"
            ).fetchall()
        )
    assert seen["project/notes.md"] is None and seen["system/rules"] == 1
    # Switching it into the prompt renders it, and changes the fingerprint the agent watches.
    before = memory.memory_fingerprint()
    memory.update_block("project/notes.md", in_prompt=True)
    assert memory.memory_fingerprint() != before
    assert "SECRET-PLAN" in memory.get_system_prompt_addition()


def test_the_listing_is_capped(memory: MemoryManager) -> None:
    for number in range(MAX_LISTED_FILES + 5):
        memory.create_block(f"notes/n{number:03d}", "x", in_prompt=False)
    prompt = memory.get_system_prompt_addition()
    assert "/memories/notes/n099" in prompt and "/memories/notes/n100" not in prompt
    assert "... and 5 more (view /memories lists them all)" in prompt


def test_view_lists_two_levels_with_sizes_and_hides_dot_names(memory: MemoryManager) -> None:
    files = MemoryFiles(memory)
    for label, value in {
        "a/b/c/deep.md": "1234",
        "a/top.md": "12",
        ".hidden": "h",
        "a/.secret": "s",
    }.items():
        memory.create_block(label, value, in_prompt=False)
    listing = files.view("/memories/a").splitlines()
    assert listing == [
        "Here're the files and directories up to 2 levels deep in /memories/a, excluding hidden "
        "items:",
        "7B\t/memories/a",
        "4B\t/memories/a/b/",
        "4B\t/memories/a/b/c/",
        "2B\t/memories/a/top.md",
    ]
    assert ".hidden" not in files.view("/memories")
    assert files.view("/memories/.hidden").endswith("     1\th")


def test_view_marks_the_block_seen_so_a_later_edit_is_not_stale(settings: Settings) -> None:
    with MemoryManager(agent_id="writer", settings=settings) as memory:
        memory.ensure_agent("reader")
        block = memory.create_block("shared/plan.md", "step one", is_shared=True, in_prompt=False)
        memory.attach_block("reader", block.block_id)
        reader = MemoryFiles(memory, "reader")
        # The reader never saw it: a line-number insert is refused as stale, and shows the value.
        with pytest.raises(StaleBlockError):
            reader.insert("/memories/shared/plan.md", 1, "step two")
        assert reader.insert("/memories/shared/plan.md", 1, "step two") == (
            "The file /memories/shared/plan.md has been edited."
        )
        MemoryFiles(memory, "writer").view("/memories/shared/plan.md")
        memory.core_memory_append("shared/plan.md", "step three", agent_id="writer")
        with pytest.raises(StaleBlockError):
            reader.str_replace("/memories/shared/plan.md", "step one", "step 1")
        reader.view("/memories/shared/plan.md")
        reader.str_replace("/memories/shared/plan.md", "step one", "step 1")
        assert memory.get_block("shared/plan.md").value == "step 1\nstep two\n\nstep three"


def test_every_write_is_journalled_with_history_and_undo(memory: MemoryManager) -> None:
    files = MemoryFiles(memory)
    files.create("/memories/log.md", "one\n")
    files.insert("/memories/log.md", 1, "two")
    files.str_replace("/memories/log.md", "two", "TWO")
    files.rename("/memories/log.md", "/memories/archive/log.md")
    assert [v.action for v in memory.block_history("archive/log.md")] == [
        "create",
        "memory_insert_line",
        "memory_str_replace",
    ]
    assert memory.undo_block("archive/log.md").value == "one\ntwo\n"
    files.delete("/memories/archive/log.md")
    actions = [entry.action for entry in memory.journal(agent_id="agent-a", limit=8)]
    assert actions[:6] == [
        "delete_block",
        "undo_to_v2",
        "rename_block",
        "memory_str_replace",
        "memory_insert_line",
        "create_block",
    ]
    deleted = memory.journal(agent_id="agent-a", limit=1)[0]
    assert deleted.old_value == "one\ntwo\n" and deleted.label == "archive/log.md"


def test_limits_and_read_only_hold_and_change_nothing(memory: MemoryManager) -> None:
    memory.create_block("tiny", "abc", limit=5, in_prompt=False)
    memory.create_block("rules/law.md", "Never lie.", read_only=True)
    memory.create_block("rules/tip.md", "Smile.")
    text, error = call(
        memory, command="insert", path="/memories/tiny", insert_line=1, insert_text="overflow"
    )
    assert error and "over its limit of 5" in text
    text, error = call(memory, command="create", path="/memories/big", file_text="x" * 6000)
    assert error and "limit" in text
    for arguments in (
        {
            "command": "str_replace",
            "path": "/memories/rules/law.md",
            "old_str": "Never",
            "new_str": "Always",
        },
        {"command": "delete", "path": "/memories/rules"},
        {"command": "rename", "old_path": "/memories/rules", "new_path": "/memories/laws"},
    ):
        text, error = call(memory, **arguments)
        assert error and "read-only" in text, arguments
    assert memory.get_block("tiny").value == "abc"
    assert {b.label for b in memory.list_blocks()} >= {"rules/law.md", "rules/tip.md"}
    assert memory.get_block("rules/law.md").value == "Never lie."


def test_directory_rename_and_delete_are_all_or_nothing(memory: MemoryManager) -> None:
    files = MemoryFiles(memory)
    for name in ("a", "b", "c"):
        files.create(f"/memories/proj/{name}.md", name)
    assert files.rename("/memories/proj", "/memories/done/proj") == (
        "Successfully renamed /memories/proj to /memories/done/proj"
    )
    assert sorted(b.label for b in memory.list_blocks() if b.label.startswith("done/")) == [
        "done/proj/a.md",
        "done/proj/b.md",
        "done/proj/c.md",
    ]
    with pytest.raises(MemoryToolError, match="too long or too deep"):
        files.rename("/memories/done", "/memories/" + "x" * 60 + "/" + "y" * 30)
    with pytest.raises(MemoryToolError, match="into itself"):
        files.rename("/memories/done", "/memories/done/inner")
    assert files.delete("/memories/done") == "Successfully deleted /memories/done"
    assert not [b for b in memory.list_blocks() if b.label.startswith("done/")]


def test_a_path_below_a_file_is_refused(memory: MemoryManager) -> None:
    files = MemoryFiles(memory)
    with pytest.raises(MemoryToolError, match="/memories/human is a file, not a directory"):
        files.create("/memories/human/extra.md", "x")
    with pytest.raises(MemoryToolError, match="is a file, not a directory"):
        files.rename("/memories/persona", "/memories/human/persona")


def test_one_agents_paths_never_reach_another_agents_blocks(settings: Settings) -> None:
    with MemoryManager(agent_id="alice", settings=settings) as memory:
        memory.ensure_agent("bob")
        memory.create_block("diary.md", "alice's secret", in_prompt=False)
        shared = memory.create_block("team/board.md", "todo", is_shared=True, in_prompt=False)
        memory.attach_block("bob", shared.block_id)
        bob = MemoryFiles(memory, "bob")
        assert "diary" not in bob.view("/memories")
        with pytest.raises(MemoryToolError, match="does not exist"):
            bob.view("/memories/diary.md")
        bob.create("/memories/diary.md", "bob's own")
        assert memory.get_block("diary.md").value == "alice's secret"
        assert memory.get_block("diary.md", agent_id="bob").value == "bob's own"
        bob.view("/memories/team/board.md")
        bob.str_replace("/memories/team/board.md", "todo", "done")
        assert memory.get_block("team/board.md").value == "done"
        # A shared block moves for everyone; deleting it only detaches it from bob.
        bob.rename("/memories/team/board.md", "/memories/team/archive.md")
        assert memory.get_block("team/archive.md").value == "done"
        bob.delete("/memories/team")
        assert memory.get_block("team/archive.md").value == "done"
        assert "team" not in bob.view("/memories")
        # A rename that would collide for another agent holding the block is refused.
        memory.attach_block("bob", shared.block_id)
        bob.create("/memories/team/taken.md", "bob's")
        with pytest.raises(BlockExistsError, match="already has a block 'team/taken.md'"):
            MemoryFiles(memory, "alice").rename(
                "/memories/team/archive.md", "/memories/team/taken.md"
            )
        assert memory.get_block("team/archive.md").value == "done"


def test_malformed_calls_get_clear_errors(memory: MemoryManager) -> None:
    for arguments, expected in [
        ({"command": "explode", "path": "/memories"}, "Unknown memory command"),
        ({"command": "create", "path": "/memories/x"}, "needs 'file_text'"),
        (
            {
                "command": "insert",
                "path": "/memories/human",
                "insert_line": "1",
                "insert_text": "x",
            },
            "integer",
        ),
        (
            {"command": "view", "path": "/memories/human", "view_range": ["1", 2]},
            "list of integers",
        ),
        ({"command": "view", "path": 7}, "string"),
        ({"path": "/memories"}, "missing required argument(s): command"),
    ]:
        text, error = call(memory, **arguments)
        assert error and expected in text, (arguments, text)


def test_tool_sets_choose_the_tools(memory: MemoryManager) -> None:
    names = {
        tool_set: [spec.name for spec in specs_for_tool_set(ALL_TOOLS, tool_set)]
        for tool_set in ("letta", "anthropic", "both")
    }
    assert "memory" not in names["letta"] and "core_memory_append" in names["letta"]
    assert "memory" in names["anthropic"] and "core_memory_append" not in names["anthropic"]
    assert (
        "archival_memory_search" in names["anthropic"]
        and "archival_memory_search" in names["letta"]
    )
    assert set(names["both"]) == set(names["letta"]) | set(names["anthropic"])
    with pytest.raises(ConfigurationError, match="Unknown memory tool set"):
        specs_for_tool_set(ALL_TOOLS, "all")


def test_paths_and_labels_map_both_ways() -> None:
    assert parse_memory_path("/memories/project/notes.md").label == "project/notes.md"
    assert parse_memory_path("/memories//project/notes.md/").label == "project/notes.md"
    assert parse_memory_path("/memories").is_root and parse_memory_path("/memories/").is_root
    assert memory_path("project/notes.md") == "/memories/project/notes.md"


def test_an_export_and_import_keep_on_demand_blocks_on_demand(
    memory: MemoryManager, tmp_path: Path, other_store_environ: OtherEnviron
) -> None:
    from memory_agent.portability import export_memory, import_file

    MemoryFiles(memory).create("/memories/project/notes.md", "on demand")
    document = export_memory(memory)
    (tmp_path / "export.json").write_text(json.dumps(document), encoding="utf-8")
    target = Settings.from_env(
        other_store_environ({"PERSIST_DIRECTORY": str(tmp_path / "other")}), env_file=None
    )
    import_file(tmp_path / "export.json", tmp_path / "other", settings=target)
    with MemoryManager(agent_id="agent-a", settings=target) as imported:
        assert not imported.get_block("project/notes.md").in_prompt
        assert imported.get_block("human").in_prompt


def test_undo_brings_back_what_delete_removed(settings: Settings) -> None:
    with MemoryManager(agent_id="alice", settings=settings) as memory:
        files = MemoryFiles(memory)
        files.create("/memories/proj/a.md", "alpha")
        files.insert("/memories/proj/a.md", 1, "more")
        memory.update_block("proj/a.md", limit=50, description="A file")
        files.create("/memories/proj/b.md", "beta")
        files.delete("/memories/proj")
        restored = memory.undo_block("proj/a.md")
        assert (restored.value, restored.limit, restored.description, restored.in_prompt) == (
            "alpha\nmore\n",
            50,
            "A file",
            False,
        )
        assert [v.action for v in memory.block_history("proj/a.md")] == ["restore"]
        assert "alpha" in files.view("/memories/proj/a.md") and "b.md" not in files.view(
            "/memories"
        )
        with pytest.raises(BlockExistsError):
            memory.core.restore_deleted("alice", "proj/a.md")
        # A shared block another agent still holds comes back as itself, history intact.
        memory.ensure_agent("bob")
        shared = memory.create_block("team.md", "v1", is_shared=True)
        memory.attach_block("bob", shared.block_id)
        memory.core_memory_append("team.md", "v2")
        files.delete("/memories/team.md")
        back = memory.undo_block("team.md")
        assert back.block_id == shared.block_id and len(memory.block_history("team.md")) == 2
        assert memory.journal(agent_id="alice", limit=1)[0].action == "restore_block"
        with pytest.raises(BlockNotFoundError, match="No block 'never.md'"):
            memory.undo_block("never.md")
