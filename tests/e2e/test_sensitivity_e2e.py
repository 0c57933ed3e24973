"""Sensitivity through the agent (issue 26, item 4): the real SDK and CLI, the scripted model. A
secret block is not in the system prompt the API receives and a secret passage is not in the
model's search results, unless the agent is built with `allow_secret=True`."""

from __future__ import annotations

import pytest
from claude_agent_sdk import ClaudeAgentOptions

from memory_agent import MemoryAwareAgent, MemoryManager
from memory_agent.errors import ConfigurationError
from memory_agent.testing import ScriptedMessagesServer, text_response, tool_use_response

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("backend")]

MARK = "Quokka-5528"
SEARCH = "mcp__memory__archival_memory_search"


@pytest.mark.parametrize("allow_secret", [False, True])
async def test_the_prompt_and_the_tools_follow_the_agents_clearance(
    server: ScriptedMessagesServer,
    options: ClaudeAgentOptions,
    agent_memory: MemoryManager,
    allow_secret: bool,
) -> None:
    agent_memory.create_block(
        "door_code", f"The door code is {MARK}.", sensitivity="secret", agent_id="e2e-agent"
    )
    agent_memory.archival_memory_insert(
        f"The safe combination is {MARK}-safe.", sensitivity="secret", agent_id="e2e-agent"
    )
    agent_memory.archival_memory_insert("The safe is in the harbour office.", agent_id="e2e-agent")
    server.enqueue(tool_use_response(SEARCH, {"query": "safe combination harbour office"}))
    server.enqueue(text_response("Done."))
    async with MemoryAwareAgent(options, memory=agent_memory, allow_secret=allow_secret) as agent:
        await agent.process_turn("Where is the safe?")
    requests = server.message_requests()
    assert (MARK in requests[0].system_text) is allow_secret
    found = str(requests[-1].tool_results[-1]["content"])
    assert "harbour office" in found
    assert (f"{MARK}-safe" in found) is allow_secret


def test_allow_secret_must_be_a_bool(agent_memory: MemoryManager) -> None:
    with pytest.raises(ConfigurationError):
        MemoryAwareAgent(memory=agent_memory, allow_secret="yes")  # type: ignore[arg-type]


async def test_a_block_made_secret_between_turns_leaves_the_next_prompt(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    agent_memory.create_block("plans", f"Surprise party, code {MARK}.", agent_id="e2e-agent")
    server.enqueue(text_response("Noted."))
    server.enqueue(text_response("Noted again."))
    async with MemoryAwareAgent(
        options, memory=agent_memory
    ) as agent:  # the default refresh: announce
        await agent.process_turn("Hello.")
        agent_memory.set_block_sensitivity(
            "plans", "secret", agent_id="e2e-agent"
        )  # another process, say
        await agent.process_turn("Hello again.")
    first, second = server.message_requests()
    assert MARK in first.system_text
    assert MARK not in second.system_text and MARK not in str(second.messages[-1])
