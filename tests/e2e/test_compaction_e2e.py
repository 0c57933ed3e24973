"""Compaction end to end: an agent pushed over the trigger summarises with the cheap model and
starts its next request with the summary and the recent messages, none of the evicted ones."""

from __future__ import annotations

import dataclasses

import pytest
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient

from compaction import CompactionSettings
from memory_agent import MemoryAwareAgent, MemoryManager
from memory_agent.testing import ScriptedMessagesServer, text_response
from memory_agent.testing.scripted_server import is_compaction_request

pytestmark = pytest.mark.e2e

SUMMARY = "SUMMARY-7731: the user listed their travel plans for March."


def _prompt(number: int) -> str:
    """A long prompt with a marker that tells later whether it was sent."""
    return f"MARKER-{number:02d} " + ("Here are more details about my travel plans. " * 60)


@pytest.mark.usefixtures("backend")  # the CLI's own compaction (below) stores nothing: SQLite alone
async def test_an_agent_over_the_threshold_compacts_and_drops_evicted_messages(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    settings = CompactionSettings(
        model="claude-haiku-4-5",
        context_window=6_000,
        trigger_threshold=0.8,
        window_percentage=0.5,
        min_kept_messages=2,
        retry_initial_wait=0.01,
        retry_max_wait=0.05,
    )
    server.enqueue(text_response(SUMMARY), model="haiku")
    async with MemoryAwareAgent(
        options, memory=agent_memory, compaction_settings=settings
    ) as agent:
        number = 0
        while agent.last_compaction is None or not agent.last_compaction.changed:
            number += 1
            assert number <= 12, "the agent never compacted"
            await agent.process_turn(_prompt(number))
        last_prompt = number

    requests = server.message_requests()
    summariser = [r for r in requests if "haiku" in r.model]
    assert len(summariser) == 1 and "MARKER-01" in str(summariser[0].messages)
    turn = requests[-1]
    assert requests.index(summariser[0]) == len(requests) - 2  # summarised, then the turn
    assert SUMMARY in turn.system_text
    outcome = agent.last_compaction
    evicted = {
        f"MARKER-{n:02d}"
        for n in range(1, last_prompt)
        if any(f"MARKER-{n:02d}" in str(m.content) for m in outcome.evicted)
    }
    kept = {
        f"MARKER-{n:02d}"
        for n in range(1, last_prompt)
        if any(f"MARKER-{n:02d}" in str(m.content) for m in outcome.kept)
    }
    assert evicted and kept and "MARKER-01" in evicted
    sent = turn.system_text + str(turn.messages)
    assert all(marker in sent for marker in kept)  # kept messages verbatim
    assert not any(marker in sent for marker in evicted)
    assert f"MARKER-{last_prompt:02d}" in str(turn.messages)
    assert turn.body["max_tokens"] > 1 and not is_compaction_request(turn)
    # Under the target after compaction: the size the server reported for the turn request.
    assert outcome.tokens_after <= settings.target_tokens

    # Nothing lost: evicted messages are still stored, out of context, and searchable. By their
    # words: a marker is a keyword, and a search by meaning would embed every message first
    # (tests/e2e/test_conversation_search_e2e.py finds an evicted message by meaning).
    stored = agent_memory.recall.all_messages("e2e-agent")
    first = next(m for m in stored if "MARKER-01" in m.text)
    assert not first.in_context
    found = agent_memory.search_messages("MARKER-01", mode="keyword")
    assert found[0].message_id == first.message_id
    record = agent_memory.get_summary_record()
    assert record.summary == SUMMARY and record.model == "claude-haiku-4-5"
    assert record.first_message_id == first.message_id
    assert record.tokens_before > record.tokens_after


@pytest.mark.sqlite_only(
    reason="pins the options given to the CLI (its own auto-compaction off); nothing is stored"
)
async def test_the_clis_own_auto_compaction_stays_off(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    """With the CLI told to auto-compact at 1% of its window, a plain client compacts; ours must
    not.

    Each reply reports 20,000 input tokens, past 1% of the CLI's window, far under our trigger.
    """
    eager = dataclasses.replace(
        options, env={**options.env, "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "1"}
    )
    for _ in range(8):
        server.enqueue(text_response("ok", input_tokens=20_000))
    plain = ClaudeSDKClient(eager)
    await plain.connect()
    try:
        for number in range(3):
            await plain.query(_prompt(number))
            async for _ in plain.receive_response():
                pass
    finally:
        await plain.disconnect()
    assert any(is_compaction_request(r) for r in server.requests), (
        "control: the CLI did not compact"
    )

    server.clear()
    for _ in range(3):
        server.enqueue(text_response("ok", input_tokens=20_000))
    async with MemoryAwareAgent(eager, memory=agent_memory) as agent:
        for number in range(3):
            await agent.process_turn(_prompt(number))
    assert server.message_requests()
    assert not any(is_compaction_request(r) for r in server.requests)
