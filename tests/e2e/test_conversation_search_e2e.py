"""Conversation search end to end: a message compacted out of the context window is found by a
paraphrase the model sends to `conversation_search`, through the real SDK and its bundled CLI."""

from __future__ import annotations

import pytest
from claude_agent_sdk import ClaudeAgentOptions

from compaction import CompactionSettings
from memory_agent import MemoryAwareAgent, MemoryManager
from memory_agent.testing import ScriptedMessagesServer, text_response, tool_use_response

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("backend")]

FACT = "My grandmother's sailboat is called Albatross and it is moored at Pier 9."
PARAPHRASE = "where does granny keep her yacht"
"""Shares no word with FACT: keyword search cannot find it, meaning can."""


def _filler(number: int) -> str:
    return f"Note {number}: " + ("Here are more details about my travel plans for March. " * 30)


async def test_the_model_finds_a_compacted_message_by_meaning(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    settings = CompactionSettings(
        model="claude-haiku-4-5",
        context_window=3_500,
        trigger_threshold=0.8,
        window_percentage=0.5,
        min_kept_messages=2,
        retry_initial_wait=0.01,
        retry_max_wait=0.05,
    )
    server.enqueue(text_response("The user described a boat and travel plans."), model="haiku")
    async with MemoryAwareAgent(
        options, memory=agent_memory, compaction_settings=settings
    ) as agent:
        await agent.process_turn(FACT)
        # A search by meaning puts message vectors in use: from now on the agent writes each
        # turn's vectors after it, off the turn's path.
        agent_memory.search_messages("boat", mode="vector")
        number = 0
        while agent.last_compaction is None or not agent.last_compaction.changed:
            number += 1
            assert number <= 12, "the agent never compacted"
            await agent.process_turn(_filler(number))
        fact = next(m for m in agent_memory.all_messages() if m.text == FACT)
        assert not fact.in_context
        assert fact.message_id not in {
            m.message_id for m in agent_memory.search_messages(PARAPHRASE, mode="keyword")
        }
        # Should the planner compact again before the question, its summariser has a reply.
        server.enqueue(text_response("The user described a boat and travel."), model="haiku")
        server.enqueue(tool_use_response("mcp__memory__conversation_search", {"query": PARAPHRASE}))
        server.enqueue(text_response("It is at Pier 9."))
        result = await agent.process_turn("Remind me where that boat is kept?")
    assert result.text == "It is at Pier 9."
    turn = server.message_requests()[-1]
    found = str(turn.tool_results[-1]["content"])
    assert "Albatross" in found and "Pier 9" in found
    assert "summarised out of context" in found
    before_tool = server.message_requests()[-2]
    assert "Albatross" not in str(before_tool.messages)  # evicted: only the search brought it back
    # After that turn the agent writes the new messages' vectors off the turn's path.
    await agent.message_indexing.wait()
    assert agent.message_indexing.written >= 1  # the turn's own messages, stored after the search
    assert agent_memory.index_message_vectors() == 0
