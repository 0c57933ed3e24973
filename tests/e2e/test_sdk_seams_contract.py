"""Contract tests of `memory_agent.sdk_seams`: the SDK and CLI behaviour we rely on that their
public API does not promise. Each failure names the seam that moved; run these first on a new
claude-agent-sdk (the pytest header prints the version that ran).

The other seams are checked through the agent in `test_agent_e2e.py`: `SNAPSHOT_OFF` by
`test_reconnect_mode_resumes_the_session_with_the_new_prompt`, the transcript format by
`test_a_restart_from_another_directory_carries_the_conversation`.

These run on SQLite alone: they pin the SDK's and CLI's behaviour, which stores nothing of ours
(the memory server is only listed); the agent tests built on these seams run on both backends.
"""

from __future__ import annotations

import dataclasses

import pytest
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient

from memory_agent import MemoryManager
from memory_agent.sdk_seams import can_send_system_prompt, sdk_version, send_system_prompt
from memory_agent.testing import ScriptedMessagesServer, text_response
from memory_agent.tools import MEMORY_SERVER_NAME, build_memory_server

pytestmark = pytest.mark.e2e


async def test_the_system_prompt_control_request_reaches_the_next_request(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions
) -> None:
    file_prompt = dataclasses.replace(
        options, system_prompt="before the refresh", extra_args={"system-prompt-snapshot": "off"}
    )
    server.enqueue(text_response("one"))
    server.enqueue(text_response("two"))
    async with ClaudeSDKClient(file_prompt) as client:
        assert can_send_system_prompt(client), (
            f"claude-agent-sdk {sdk_version()} has no Query._send_control_request: memory "
            "refreshes "
            "fall back to a new CLI process; update sdk_seams.send_system_prompt"
        )
        await client.query("first")
        _ = [message async for message in client.receive_response()]
        assert await send_system_prompt(
            client, model=None, system_prompt="SEAM-MARKER after the refresh"
        )
        await client.query("second")
        _ = [message async for message in client.receive_response()]
    first, second = server.message_requests()[:2]
    assert "before the refresh" in first.system_text
    assert "SEAM-MARKER after the refresh" in second.system_text, (
        f"claude-agent-sdk {sdk_version()}: the CLI accepted set_model's system_prompt but did not "
        "use "
        "it on the next request; live refresh no longer works (sdk_seams.send_system_prompt)"
    )


@pytest.mark.sqlite_only(
    reason="pins the SDK's and CLI's behaviour (tool loading), which stores nothing of ours"
)
async def test_always_load_puts_the_memory_tools_in_every_request(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    """The SDK client alone, with the CLI's tool search on: the `memory` server's tools must be
    in the first request, not deferred behind the search."""
    server.enqueue(text_response("hello"))
    with_search = dataclasses.replace(
        options,
        tools=None,
        mcp_servers={MEMORY_SERVER_NAME: build_memory_server(agent_memory, agent_memory.agent_id)},
    )
    async with ClaudeSDKClient(with_search) as client:
        await client.query("hello")
        _ = [message async for message in client.receive_response()]
    tools = server.message_requests()[0].tools
    assert (
        "mcp__memory__core_memory_append" in tools
        and "mcp__memory__archival_memory_search" in tools
    ), (
        f"claude-agent-sdk {sdk_version()}: the memory tools were deferred; the CLI ignores the "
        "alwaysLoad key (sdk_seams.always_loaded)"
    )
