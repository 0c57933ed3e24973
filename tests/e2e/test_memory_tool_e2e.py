"""The `memory` tool end to end: the real SDK and its bundled CLI call `mcp__memory__memory`.

The scripted model creates, views and edits files; the store (SQLite or PostgreSQL) holds the
result, and the next turn's system prompt renders the in-prompt file and only lists the
on-demand one.
"""

from __future__ import annotations

from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions

from memory_agent import ConfigurationError, MemoryAwareAgent, MemoryManager
from memory_agent.testing import (
    ScriptedMessagesServer,
    text_response,
    tool_use_response,
)

pytestmark = pytest.mark.e2e

MEMORY = "mcp__memory__memory"
NOTES = "/memories/project/notes.md"
STYLE = "/memories/system/style.md"


def _result(request: Any) -> tuple[str, bool]:
    result = request.tool_results[-1]
    content = result["content"]
    text = (
        content if isinstance(content, str) else "".join(block.get("text", "") for block in content)
    )
    return text, bool(result.get("is_error"))


@pytest.mark.usefixtures("backend")  # the tool-set choice (below) stores nothing: SQLite alone
async def test_create_view_str_replace_reach_the_store_and_the_next_turn(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    server.enqueue(
        tool_use_response(
            MEMORY, {"command": "create", "path": STYLE, "file_text": "Answer in haiku."}
        ),
        tool_use_response(
            MEMORY,
            {"command": "create", "path": NOTES, "file_text": "Launch: Friday\nOwner: Ada\n"},
        ),
        tool_use_response(MEMORY, {"command": "view", "path": NOTES}),
        tool_use_response(
            MEMORY,
            {"command": "str_replace", "path": NOTES, "old_str": "Friday", "new_str": "Monday"},
        ),
        text_response("Noted."),
        text_response("Launch is Monday."),
    )
    async with MemoryAwareAgent(options, memory=agent_memory) as agent:
        first = await agent.process_turn("Plan the launch, and answer in haiku from now on.")
        assert first.text == "Noted." and [call.name for call in first.tool_calls] == [MEMORY] * 4
        await agent.process_turn("When is the launch?")

    turns = server.message_requests()
    assert MEMORY in turns[0].tools and "mcp__memory__core_memory_append" in turns[0].tools
    assert _result(turns[1]) == (f"File created successfully at: {STYLE}", False)
    assert _result(turns[3]) == (
        f"Here's the content of {NOTES} with line numbers:\n     1\tLaunch: Friday\n     2\tOwner: "
        "Ada\n     3\t",
        False,
    )
    assert _result(turns[4])[0].startswith("The memory file has been edited.")
    assert "     1\tLaunch: Monday" in _result(turns[4])[0]

    # Stored: read back through a manager of its own, as another process would see it.
    with MemoryManager(agent_id="e2e-agent", settings=agent_memory.settings) as reader:
        rows = {block.label: (block.value, block.in_prompt) for block in reader.list_blocks()}
    assert rows["project/notes.md"] == ("Launch: Monday\nOwner: Ada\n", False)
    assert rows["system/style.md"] == ("Answer in haiku.", True)

    # The next turn: the in-prompt file is rendered, the on-demand one only listed with its size.
    following = turns[5].system_text
    assert "Answer in haiku." in following and '<block label="system/style.md">' in following
    assert f"26B\t{NOTES}" in following and "Launch: Monday" not in following
    assert "Launch: Friday" not in following


@pytest.mark.sqlite_only(
    reason="pins which tool definitions reach the model; decided before any store is read"
)
async def test_the_tool_set_option_chooses_what_the_model_gets(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    for tool_set in ("anthropic", "letta"):
        async with MemoryAwareAgent(options, memory=agent_memory, memory_tools=tool_set) as agent:
            await agent.process_turn("hello")
    anthropic_only, letta_only = (request.tools for request in server.message_requests()[-2:])
    assert MEMORY in anthropic_only and "mcp__memory__core_memory_append" not in anthropic_only
    assert MEMORY not in letta_only and "mcp__memory__core_memory_append" in letta_only
    assert "mcp__memory__archival_memory_search" in anthropic_only
    with pytest.raises(ConfigurationError, match="Unknown memory tool set"):
        MemoryAwareAgent(options, memory=agent_memory, memory_tools="everything")  # type: ignore[arg-type]
