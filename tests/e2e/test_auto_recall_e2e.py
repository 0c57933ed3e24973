"""Automatic recall through real turns (real SDK and CLI, scripted model): a stored fact reaches the
model in the next request's user message, inside `<turn_context>`, within the token budget; with
recall off (the default) nothing does. Asserted on the requests the scripted server received."""

from __future__ import annotations

import dataclasses
import logging
import socket
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions

from memory_agent import AutoRecallSettings, MemoryAwareAgent, MemoryManager, Settings
from memory_agent.testing import ScriptedMessagesServer, text_response
from memory_agent.testing.recorded import RecordedRequest

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("backend")]

FACT = "Maria's favourite tea is a smoky lapsang souchong from Fujian."
SAID = "By the way, Maria is allergic to bergamot, so no Earl Grey for her."
PROMPT = "Which tea should I buy for Maria's birthday?"


def context_block(request: RecordedRequest, prompt: str) -> str:
    """The `<turn_context>` text block of the user message that carried `prompt`."""
    for message in request.messages:
        content: Any = message["content"]
        if message["role"] != "user" or not isinstance(content, list):
            continue
        texts = [str(block.get("text", "")) for block in content if block.get("type") == "text"]
        if prompt in texts:
            first = texts[0]
            assert first.startswith("<turn_context>") and first.endswith("</turn_context>")
            return first
    raise AssertionError(f"no user message carried {prompt!r}")


async def _remember(memory: MemoryManager, server: ScriptedMessagesServer) -> None:
    """A passage, and a message that a compaction took out of the context window."""
    memory.archival_memory_insert(FACT)
    said = memory.store_message("user", SAID)
    memory.store_message("assistant", "Noted: no bergamot for Maria.")
    for number in range(6):
        memory.store_message("user" if number % 2 == 0 else "assistant", f"Small talk {number}.")
    server.enqueue(text_response("Earlier: notes about Maria and small talk."), model="haiku")
    assert (await memory.acompact_history()).status == "compacted"
    assert said is not None
    assert said.message_id not in {m.message_id for m in memory.in_context_messages()}


async def test_a_stored_fact_reaches_the_next_request_within_budget(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    await _remember(agent_memory, server)
    server.enqueue(text_response("Lapsang souchong, and no Earl Grey."))
    budget = 400
    async with MemoryAwareAgent(
        options, memory=agent_memory, auto_recall=AutoRecallSettings(token_budget=budget)
    ) as agent:
        await agent.process_turn(PROMPT)
        report = agent.planner.last_recall
    assert report is not None and report.notes == ()
    block = context_block(server.turn_requests()[-1], PROMPT)
    assert "<recalled_memories>" in block and block.count("</recalled_memories>") == 1
    section = block[block.index("<recalled_memories>") : block.index("</recalled_memories>")]
    section += "</recalled_memories>"
    assert section == report.section
    assert FACT in section and SAID in section
    assert 'source="archival"' in section and 'source="conversation" ' in section
    assert 0 < agent_memory.compactor.count_text(section) <= budget
    # The system prompt never carries it: the prompt cache keeps its prefix.
    assert "lapsang" not in server.turn_requests()[-1].system_text
    # What was stored is what the user wrote.
    stored = [m.text for m in agent_memory.get_recent_messages(10) if m.role == "user"]
    assert stored[-1] == PROMPT


async def test_nothing_is_recalled_when_auto_recall_is_off(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    await _remember(agent_memory, server)
    server.enqueue(text_response("Any tea she likes."))
    async with MemoryAwareAgent(options, memory=agent_memory) as agent:
        await agent.process_turn(PROMPT)
        assert agent.planner.last_recall is None
    block = context_block(server.turn_requests()[-1], PROMPT)
    assert "recalled_memories" not in block and "lapsang" not in block
    assert all("lapsang" not in str(request.body) for request in server.turn_requests())


async def test_a_vector_store_that_is_down_costs_the_turn_nothing_and_the_model_is_told(
    server: ScriptedMessagesServer,
    options: ClaudeAgentOptions,
    storage_settings: Settings,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as probe:  # a port nothing listens on: the Chroma server is down
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    down = dataclasses.replace(storage_settings, chroma_host="127.0.0.1", chroma_port=port)
    server.enqueue(text_response("Lapsang souchong."))
    with MemoryManager(agent_id="e2e-agent", settings=down) as memory:
        memory.archival_memory_insert(FACT)  # kept, its vector pending
        with caplog.at_level(logging.WARNING, logger="memory_agent.agent.auto_recall"):
            async with MemoryAwareAgent(options, memory=memory, auto_recall=True) as agent:
                result = await agent.process_turn(PROMPT)
                report = agent.planner.last_recall
        assert result.text == "Lapsang souchong."
        assert report is not None and any("keywords only" in note for note in report.notes)
        assert memory.get_agent_state()["auto_recall_warning"]["notes"] == list(report.notes)
    block = context_block(server.turn_requests()[-1], PROMPT)
    assert FACT in block  # found by its words all the same
    assert "Note: archival search fell back to keywords only" in block
    assert any("fell back to keywords" in record.getMessage() for record in caplog.records)
