"""The conversation has two copies, and they never disagree (docs/snapshots.md says why both).

Recall (`messages`, the source of truth) and the SDK session mirror (the CLI's transcript in the
`SessionStore`) must carry the same turns in the session the agent resumes next: after ordinary
turns and a tool call, after a compaction (a new session seeded from recall), after a restart
(the session resumed from the store alone) and after an import (a new agent whose first session
is seeded from the imported messages). The real SDK and its bundled CLI run against the scripted
Messages API server, on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from backends import OtherEnviron
from claude_agent_sdk import ClaudeAgentOptions, SessionKey, project_key_for_directory

from compaction import CompactionSettings
from memory_agent import MemoryAwareAgent, MemoryManager, Settings
from memory_agent.portability import export_memory, import_snapshot, parse_document
from memory_agent.sdk_seams.transcript import (
    normal_conversation,
    seed_messages,
    transcript_conversation,
)
from memory_agent.testing import ScriptedMessagesServer, text_response, tool_use_response

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("backend")]

SUMMARY = "SUMMARY-4410: the user told of their garden and their travels."
SETTINGS = CompactionSettings(
    model="claude-haiku-4-5",
    context_window=6_000,
    trigger_threshold=0.8,
    window_percentage=0.5,
    min_kept_messages=2,
    retry_initial_wait=0.01,
    retry_max_wait=0.05,
)
ROOMY = CompactionSettings(model="claude-haiku-4-5", context_window=200_000)
"""After the compaction: room enough that the restart and the import compact nothing more."""


def _long(number: int) -> str:
    return f"GARDEN-{number:02d} " + (
        "The tomatoes and the beans are growing well this year. " * 50
    )


async def _assert_copies_agree(agent: MemoryAwareAgent, memory: MemoryManager, cwd: Path) -> int:
    """The session the agent resumes next carries exactly recall's in-context conversation;
    returns how many messages that is (so a caller can tell the check saw something)."""
    assert agent.session_id is not None
    key: SessionKey = {
        "project_key": project_key_for_directory(cwd),
        "session_id": agent.session_id,
    }
    entries = await agent.session_store.load(key)
    assert entries is not None, "the session is not in the mirror"
    mirrored = normal_conversation(transcript_conversation(entries))
    recalled = normal_conversation(
        seed_messages(memory.in_context_messages(agent_id=agent.agent_id))
    )
    assert mirrored == recalled
    return len(recalled)


async def test_recall_and_the_session_mirror_agree_after_compaction_restart_and_import(
    server: ScriptedMessagesServer,
    options: ClaudeAgentOptions,
    storage_settings: Settings,
    project_dir: Path,
    tmp_path: Path,
    other_store_environ: OtherEnviron,
) -> None:
    server.enqueue(text_response("Hello Ada, noted."))
    server.enqueue(
        tool_use_response(
            "mcp__memory__core_memory_append",
            {"label": "human", "content": "Grows tomatoes."},
            text="Saving that.",
        )
    )
    server.enqueue(text_response("Saved: you grow tomatoes."))
    server.enqueue(text_response(SUMMARY), model="haiku")

    # Ordinary turns, one with a tool call and its result.
    with MemoryManager(agent_id="gardener", settings=storage_settings) as memory:
        async with MemoryAwareAgent(options, memory=memory, compaction_settings=SETTINGS) as agent:
            await agent.process_turn("Hi, I am Ada.")
            await agent.process_turn("I grow tomatoes, remember that.")
            assert await _assert_copies_agree(agent, memory, project_dir) == 6
            first_session = agent.session_id

            # Compaction: a new session seeded from what recall keeps in context.
            number = 0
            while agent.last_compaction is None or not agent.last_compaction.changed:
                number += 1
                assert number <= 12, "the agent never compacted"
                await agent.process_turn(_long(number))
            assert agent.session_id != first_session
            kept = await _assert_copies_agree(agent, memory, project_dir)
            assert 0 < kept < memory.count_messages(agent_id="gardener")
            compacted_session = agent.session_id

    # Restart: the CLI's own transcripts are gone; the session resumes from the mirror alone.
    shutil.rmtree(Path.home() / ".claude" / "projects", ignore_errors=True)
    with MemoryManager(agent_id="gardener", settings=storage_settings) as memory:
        async with MemoryAwareAgent(options, memory=memory, compaction_settings=ROOMY) as agent:
            await agent.process_turn("Which vegetables did I mention?")
            assert agent.session_id == compacted_session  # resumed, not seeded anew
            assert await _assert_copies_agree(agent, memory, project_dir) == kept + 2

        # Import: the agent's export, as a new agent of another storage dir (on PostgreSQL another
        # database); its first session is seeded from the imported messages.
        document = export_memory(memory, agent_ids=["gardener"])
    elsewhere = Settings.from_env(
        other_store_environ(
            {
                "PERSIST_DIRECTORY": str(tmp_path / "elsewhere"),
                "ANTHROPIC_BASE_URL": server.url,
                "ANTHROPIC_API_KEY": "test-key",
            }
        ),
        env_file=None,
    )
    snapshot = parse_document(document, default_limit=elsewhere.default_block_limit)
    import_snapshot(snapshot, agent_id="gardener-copy", settings=elsewhere)
    with MemoryManager(agent_id="gardener-copy", settings=elsewhere) as memory:
        async with MemoryAwareAgent(options, memory=memory, compaction_settings=ROOMY) as agent:
            await agent.process_turn("Hello again, do you remember me?")
            assert agent.session_id not in (first_session, compacted_session)
            assert await _assert_copies_agree(agent, memory, project_dir) == kept + 4
    last = server.message_requests()[-1]
    assert "Which vegetables did I mention?" in str(last.messages)
    assert SUMMARY in last.system_text
