"""An imported Letta agent runs with its own system prompt and its path-labelled blocks."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from claude_agent_sdk import ClaudeAgentOptions

from memory_agent import MemoryAwareAgent, MemoryManager, Settings
from memory_agent.portability import import_file
from memory_agent.testing import ScriptedMessagesServer, text_response

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("backend")]

SYSTEM = "You are Juniper, imported from Letta. Always answer in haiku."


def _letta_file(tmp_path: Path) -> Path:
    document = {
        "agents": [
            {
                "id": "agent-0",
                "name": "juniper",
                "system": SYSTEM,
                "block_ids": ["block-0"],
                "messages": [],
                "in_context_message_ids": [],
            }
        ],
        "blocks": [
            {
                "id": "block-0",
                "label": "system/human/family",
                "value": "Two sisters: Ana and Bea.",
                "limit": 500,
            }
        ],
        "groups": [],
        "tools": [],
        "files": [],
        "sources": [],
        "mcp_servers": [],
    }
    path = tmp_path / "juniper.af"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


async def test_the_imported_system_prompt_is_used_unless_the_caller_sets_one(
    server: ScriptedMessagesServer,
    storage_settings: Settings,
    options: ClaudeAgentOptions,
    tmp_path: Path,
) -> None:
    import_file(_letta_file(tmp_path), settings=storage_settings)
    server.enqueue(text_response("Sisters two, I know."))
    server.enqueue(text_response("Careful, as asked."))
    no_prompt = dataclasses.replace(options, system_prompt=None)
    with MemoryManager(agent_id="juniper", settings=storage_settings) as memory:
        async with MemoryAwareAgent(no_prompt, memory=memory) as agent:
            await agent.process_turn("Who is in my family?")
        async with MemoryAwareAgent(
            options, memory=memory
        ) as agent:  # the caller's own prompt wins
            await agent.process_turn("Again?")
    first, second = server.message_requests()
    assert first.system_text.count(SYSTEM) == 1
    assert '<block label="system/human/family">' in first.system_text
    assert "Two sisters: Ana and Bea." in first.system_text
    assert SYSTEM not in second.system_text and "You are a careful assistant." in second.system_text
