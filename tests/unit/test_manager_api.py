"""The MemoryManager surface: identity, rendering, tool schemas, settings and public names."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from backends import backend_environ

import memory_agent
from memory_agent import ConfigurationError, MemoryManager, MessageNotFoundError, Settings

pytestmark = pytest.mark.usefixtures("backend")


def test_generated_agent_id_is_persisted_for_the_storage_dir(tmp_path: Path) -> None:
    with MemoryManager(storage_dir=tmp_path) as first:
        first.core_memory_append("human", "Remember me")
        agent_id = first.agent_id
    with MemoryManager(storage_dir=tmp_path) as second:
        assert second.agent_id == agent_id
        assert second.get_block("human").value.endswith("Remember me")


def test_agent_id_falls_back_to_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_ID", "from-env")
    with MemoryManager(storage_dir=tmp_path) as memory:
        assert memory.agent_id == "from-env"


def test_persist_directory_sets_the_default_storage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    monkeypatch.setenv("PERSIST_DIRECTORY", str(tmp_path / "elsewhere"))
    with MemoryManager() as memory:
        assert memory.storage_dir == tmp_path / "elsewhere"
    # On PostgreSQL the server holds the data: no database file appears in the storage dir.
    assert (tmp_path / "elsewhere" / "memory.db").is_file() == (backend == "sqlite")


def test_database_pragmas(memory: MemoryManager, backend: str) -> None:
    if backend == "postgres":
        pytest.skip(
            "PRAGMAs are SQLite's; the PostgreSQL store's settings are tested in "
            "test_postgres_store.py"
        )
    with memory.db.reading() as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000


def test_xml_layout_matches_letta(memory: MemoryManager) -> None:
    memory.memory_rethink("persona", "I am Sam.")
    text = memory.get_system_prompt_addition()
    assert text.startswith(
        "<memory_blocks>\nThe following memory blocks are currently engaged in your core memory "
        "unit:\n\n<persona>\n"
    )
    assert (
        "<metadata>\n- chars_current=9\n- chars_limit=5000\n</metadata>\n<value>\nI am "
        "Sam.\n</value>\n"
        "</persona>"
    ) in text
    assert "<memory_metadata>" in text and "- Memory last modified:" in text
    assert "Current time" not in text and "messages are stored" not in text  # per turn, not here
    assert text.index("</memory_blocks>") < text.index("<memory_metadata>")


def test_markdown_layout(memory: MemoryManager) -> None:
    text = memory.get_system_prompt_addition(use_xml_format=False)
    assert "## [PERSONA]" in text and "## [HUMAN]" in text and "<memory_blocks>" not in text


def test_tool_definitions_are_anthropic_schemas(memory: MemoryManager) -> None:
    definitions = {tool["name"]: tool for tool in memory.get_tools_definitions()}
    assert {"core_memory_append", "core_memory_replace", "memory_insert", "memory_rethink"} <= set(
        definitions
    )
    for tool in definitions.values():
        assert tool["description"]
        assert tool["input_schema"]["type"] == "object"
        assert set(tool["input_schema"]["required"]) <= set(tool["input_schema"]["properties"])


def test_execute_tool_reports_bad_calls_as_errors(memory: MemoryManager) -> None:
    assert memory.execute_tool("no_such_tool", {}).is_error
    missing = memory.execute_tool("core_memory_append", {"label": "human"})
    assert missing.is_error and "content" in missing.text
    wrong_type = memory.execute_tool("core_memory_append", {"label": "human", "content": 42})
    assert wrong_type.is_error and "string" in wrong_type.text
    ok = memory.execute_tool("core_memory_append", {"label": "human", "content": "Likes tea"})
    assert not ok.is_error and "Likes tea" in ok.text


def test_settings_read_environment_over_env_file(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text(
        "# comment\nDEFAULT_BLOCK_LIMIT=1234\nAGENT_ID='from-file'\n"
        "MEMORY_CHARACTER_LIMITS=persona=100,human=200\nMEMORY_SHARED_BLOCKS=team, notes\n"
    )
    settings = Settings.from_env({"AGENT_ID": "from-env"}, env_file=env_file)
    assert settings.agent_id == "from-env"
    assert settings.default_block_limit == 1234
    assert settings.block_limit_for("persona") == 100 and settings.block_limit_for("other") == 1234
    assert settings.memory_shared_blocks == ("team", "notes")


@pytest.mark.parametrize(
    "environ, needle",
    [
        ({"DEFAULT_BLOCK_LIMIT": "-5"}, "DEFAULT_BLOCK_LIMIT"),
        ({"DEFAULT_BLOCK_LIMIT": "lots"}, "DEFAULT_BLOCK_LIMIT"),
        ({"MEMORY_CHARACTER_LIMITS": "persona"}, "MEMORY_CHARACTER_LIMITS"),
        ({"MEMORY_HYBRID_SEARCH": "maybe"}, "MEMORY_HYBRID_SEARCH"),
        ({"CHROMA_PORT": "99999"}, "CHROMA_PORT"),
    ],
)
def test_bad_settings_are_refused_clearly(environ: dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigurationError, match=needle):
        Settings.from_env(environ, env_file=None)


def test_character_limits_apply_to_default_blocks(tmp_path: Path) -> None:
    settings = Settings.from_env(
        backend_environ(
            {
                "PERSIST_DIRECTORY": str(tmp_path),
                "MEMORY_CHARACTER_LIMITS": "persona=300",
                "MEMORY_PERSONA": "I am Kit.",
            }
        ),
        env_file=None,
    )
    with MemoryManager(agent_id="kit", settings=settings) as memory:
        assert memory.get_block("persona").limit == 300
        assert memory.get_block("persona").value == "I am Kit."


def test_shared_block_labels_from_settings_join_one_block(tmp_path: Path) -> None:
    settings = Settings.from_env(
        backend_environ({"PERSIST_DIRECTORY": str(tmp_path), "MEMORY_SHARED_BLOCKS": "team"}),
        env_file=None,
    )
    with (
        MemoryManager(agent_id="one", settings=settings) as one,
        MemoryManager(agent_id="two", settings=settings) as two,
    ):
        assert one.get_block("team").block_id == two.get_block("team").block_id
        one.core_memory_append("team", "hello from one")
        assert "hello from one" in two.get_block("team").value


def test_public_names_are_pinned() -> None:
    expected = [
        "AgentNotFoundError",
        "AmbiguousContentError",
        "ArchivalError",
        "Author",
        "AutoRecallSettings",
        "Block",
        "BlockError",
        "BlockExistsError",
        "BlockLimitExceededError",
        "BlockNotAttachedError",
        "BlockNotFoundError",
        "BlockVersion",
        "CollegeSession",
        "CompactionOutcome",
        "CompactionSettings",
        "ConfigurationError",
        "ConsolidationError",
        "ConsolidationReport",
        "ConsolidationSchedule",
        "ConsolidationSession",
        "Consolidator",
        "ContentNotFoundError",
        "EncryptionKey",
        "EncryptionKeyError",
        "ForgetReport",
        "ImportFormatError",
        "ImportReport",
        "InvalidLabelError",
        "JournalEntry",
        "LabelConflictError",
        "MemoryAgentError",
        "MemoryAwareAgent",
        "MemoryManager",
        "MemoryToolError",
        "MessageNotFoundError",
        "MessageReconcileReport",
        "ModelAuthenticationError",
        "ModelConsolidator",
        "NewPassage",
        "NothingToUndoError",
        "Passage",
        "ReadOnlyBlockError",
        "RebuildReport",
        "ReconcileReport",
        "RollbackRefusedError",
        "RulesConsolidator",
        "SQLiteSessionStore",
        "SearchExplanation",
        "SearchHit",
        "Sensitivity",
        "SensitivityError",
        "Settings",
        "Snapshot",
        "StaleBlockError",
        "StorageError",
        "StoredMessage",
        "StoredSummary",
        "ToolOutcome",
        "ToolSpec",
        "TurnResult",
        "WriteOutcomeUnknownError",
    ]
    assert sorted(memory_agent.__all__) == expected
    for name in memory_agent.__all__:
        assert hasattr(memory_agent, name), name
    for name in ("MemoryAgentError", "BlockLimitExceededError", "StaleBlockError"):
        assert issubclass(getattr(memory_agent, name), Exception)


def test_memory_tool_public_names_are_pinned() -> None:
    from memory_agent.core import memory_paths
    from memory_agent.integrations import anthropic_memory
    from memory_agent.tools import memory_tool

    assert set(anthropic_memory.__all__) == {"AsyncManagedMemoryTool", "ManagedMemoryTool"}
    assert set(memory_tool.__all__) == {
        "COMMANDS",
        "DEFAULT_TOOL_SET",
        "MEMORY_TOOL",
        "MEMORY_TOOL_NAME",
        "TOOL_SETS",
        "MemoryFiles",
        "ToolSet",
        "check_tool_set",
        "specs_for_tool_set",
    }
    assert set(memory_paths.__all__) == {
        "MAX_PATH_LENGTH",
        "MEMORY_ROOT",
        "MemoryPath",
        "default_in_prompt",
        "format_size",
        "memory_path",
        "parse_memory_path",
        "path_preview",
    }
    for module in (anthropic_memory, memory_paths, memory_tool):
        for name in module.__all__:
            assert hasattr(module, name), name


def test_a_message_is_found_by_its_id_for_its_own_agent_only(tmp_path: Path) -> None:
    settings = Settings.from_env({"PERSIST_DIRECTORY": str(tmp_path)}, env_file=None)
    with MemoryManager(agent_id="one", settings=settings) as memory:
        stored = memory.store_message("user", "the launch is on Friday")
        assert stored is not None
        assert memory.get_message(stored.message_id).text == "the launch is on Friday"
        memory.ensure_agent("two")
        with pytest.raises(MessageNotFoundError, match=str(stored.message_id)):
            memory.get_message(stored.message_id, agent_id="two")
        with pytest.raises(MessageNotFoundError):
            memory.get_message(stored.message_id + 1000)


def test_every_public_method_has_a_docstring_and_agent_id_is_keyword_only() -> None:
    """`agent_id=` chooses which agent acts and is keyword-only; where the agent is the subject of
    the call (attach, detach, ensure, another agent's block) it is the first positional argument."""
    subject_first = {
        "attach_block",
        "detach_block",
        "ensure_agent",
        "get_agent_block",
        "forget_agent",
    }
    for name, member in inspect.getmembers(MemoryManager):
        if name.startswith("_"):
            continue
        function = member.fget if isinstance(member, property) else member
        assert function.__doc__, name
        if isinstance(member, property) or not callable(function):
            continue
        parameters = inspect.signature(function).parameters
        if "agent_id" in parameters:
            kind = parameters["agent_id"].kind
            if name in subject_first:
                assert list(parameters)[1] == "agent_id", name
            else:
                assert kind is inspect.Parameter.KEYWORD_ONLY, name


def test_tools_layer_public_names_are_pinned() -> None:
    from memory_agent import sdk_seams, tools

    assert sorted(tools.__all__) == [
        "ALL_TOOLS",
        "ARCHIVAL_TOOLS",
        "CORE_MEMORY_TOOLS",
        "DEFAULT_TOOL_SET",
        "MEMORY_SERVER_NAME",
        "MEMORY_TOOL",
        "MemoryFiles",
        "TOOL_SETS",
        "ToolArgumentError",
        "ToolOutcome",
        "ToolSet",
        "ToolSpec",
        "aexecute_tool",
        "build_memory_server",
        "check_tool_set",
        "execute_tool",
        "find_tool",
        "get_tools_definitions",
        "memory_tool_names",
        "validate_arguments",
    ]
    assert sorted(sdk_seams.__all__) == [
        "APPEND_PROMPT_FILE_FLAG",
        "CLI_COMPACTION_ENV",
        "SNAPSHOT_OFF",
        "always_loaded",
        "can_send_system_prompt",
        "sdk_version",
        "send_system_prompt",
    ]
    for module in (tools, sdk_seams):
        for name in module.__all__:
            assert hasattr(module, name), name
    assert [spec.name for spec in tools.ALL_TOOLS] == [
        "core_memory_append",
        "core_memory_replace",
        "memory_insert",
        "memory_rethink",
        "memory",
        "archival_memory_insert",
        "archival_memory_search",
        "conversation_search",
    ]
