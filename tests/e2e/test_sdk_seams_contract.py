"""Contract tests of `memory_agent.sdk_seams`: the SDK and CLI behaviour we rely on that their
public API does not promise. Each failure names the seam that moved; run these first on a new
claude-agent-sdk (the pytest header prints the version that ran)."""

from __future__ import annotations

import dataclasses

import pytest
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient

from memory_agent import MemoryAwareAgent, MemoryManager, Settings
from memory_agent.sdk_seams import can_send_system_prompt, sdk_version, send_system_prompt
from memory_agent.testing import ScriptedMessagesServer, text_response

pytestmark = pytest.mark.e2e


async def test_the_system_prompt_control_request_reaches_the_next_request(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions
) -> None:
    file_prompt = dataclasses.replace(options, system_prompt="before the refresh",
                                      extra_args={"system-prompt-snapshot": "off"})
    server.enqueue(text_response("one"))
    server.enqueue(text_response("two"))
    async with ClaudeSDKClient(file_prompt) as client:
        assert can_send_system_prompt(client), (
            f"claude-agent-sdk {sdk_version()} has no Query._send_control_request: memory refreshes "
            "fall back to a new CLI process; update sdk_seams.send_system_prompt")
        await client.query("first")
        _ = [message async for message in client.receive_response()]
        assert await send_system_prompt(client, model=None, system_prompt="SEAM-MARKER after the refresh")
        await client.query("second")
        _ = [message async for message in client.receive_response()]
    first, second = server.message_requests()[:2]
    assert "before the refresh" in first.system_text
    assert "SEAM-MARKER after the refresh" in second.system_text, (
        f"claude-agent-sdk {sdk_version()}: the CLI accepted set_model's system_prompt but did not use "
        "it on the next request; live refresh no longer works (sdk_seams.send_system_prompt)")


async def test_a_live_refresh_keeps_the_process_and_shows_the_new_memory(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager,
    storage_settings: Settings,
) -> None:
    async with MemoryAwareAgent(options, memory=agent_memory) as agent:
        await agent.process_turn("first")
        with MemoryManager(agent_id="e2e-agent", settings=storage_settings) as other:
            other.core_memory_append("human", "Seam check: likes Haskell")
        await agent.process_turn("second")
        assert (agent.reconnects, agent.live_refreshes, agent.refresh_mode) == (1, 1, "live"), (
            f"claude-agent-sdk {sdk_version()}: the live refresh was refused and the agent reconnected")
    assert "likes Haskell" in server.message_requests()[1].system_text


async def test_always_load_puts_the_memory_tools_in_every_request(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    with_builtin_tools = dataclasses.replace(options, tools=None)  # the CLI's tool search is on
    async with MemoryAwareAgent(with_builtin_tools, memory=agent_memory) as agent:
        await agent.process_turn("hello")
    tools = server.message_requests()[0].tools
    assert "mcp__memory__core_memory_append" in tools and "mcp__memory__archival_memory_search" in tools, (
        f"claude-agent-sdk {sdk_version()}: the memory tools were deferred; the CLI ignores the "
        "alwaysLoad key (sdk_seams.always_loaded)")


async def test_a_resumed_session_is_built_with_the_current_memory(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    """SNAPSHOT_OFF: a new process resuming the session rebuilds the prompt, not replays it."""
    async with MemoryAwareAgent(options, memory=agent_memory, refresh_mode="reconnect") as agent:
        await agent.process_turn("first")
        agent_memory.core_memory_append("human", "Seam check: drinks mate")
        await agent.process_turn("second")
        assert agent.reconnects == 2
    second = server.message_requests()[1]
    assert "drinks mate" in second.system_text and "first" in str(second.messages), (
        f"claude-agent-sdk {sdk_version()}: the resumed session replayed its first system prompt "
        "(sdk_seams.SNAPSHOT_OFF)")
