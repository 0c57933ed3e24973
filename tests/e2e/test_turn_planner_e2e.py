"""The turn planner through real turns (real SDK and CLI, scripted model): what a turn reads.

A turn on memory that needs no compaction and no rebuilt prompt reads the newest summary once and
the compactor's budget once, also the turn after the model edited its own block (memory changed,
the prompt kept under the default `announce` policy). Counted by wrapping the store's summary
read and the compactor's budget on the agent's real objects.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions

from compaction import CompactionOutcome, CompactionSettings
from memory_agent import MemoryAwareAgent, MemoryManager
from memory_agent.testing import ScriptedMessagesServer, text_response, tool_use_response

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("backend")]

APPEND = "mcp__memory__core_memory_append"


def _count_calls(owner: Any, name: str, key: str, counts: Counter[str]) -> None:
    """Shadow `owner.name` with a wrapper that counts its calls under `key`."""
    original: Callable[..., Any] = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        counts[key] += 1
        return original(*args, **kwargs)

    setattr(owner, name, counted)


async def test_a_turn_reads_the_summary_and_the_budget_once(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    # A summary exists, so the budget and the fingerprint both have one to read.
    for number in range(6):
        agent_memory.store_message(
            "user" if number % 2 == 0 else "assistant", f"Earlier message {number}."
        )
    server.enqueue(text_response("Earlier: six short messages."), model="haiku")
    assert (await agent_memory.acompact_history()).status == "compacted"
    assert agent_memory.get_summary() == "Earlier: six short messages."

    server.enqueue(text_response("Hello."), text_response("Fine."))
    server.enqueue(tool_use_response(APPEND, {"label": "human", "content": "Name: Ada"}))
    server.enqueue(text_response("Noted."), text_response("You are Ada."))
    counts: Counter[str] = Counter()
    per_turn: list[Counter[str]] = []
    async with MemoryAwareAgent(options, memory=agent_memory) as agent:
        _count_calls(agent_memory.recall, "latest_summary", "summary", counts)
        _count_calls(agent.compactor, "budget", "budget", counts)
        for prompt in ("Hi.", "How are you?", "I am Ada.", "Who am I?"):
            counts.clear()
            await agent.process_turn(prompt)
            per_turn.append(Counter(counts))
        assert agent.reconnects == 1 and agent.live_refreshes == 0  # no turn rebuilt the prompt
        assert (
            agent.planner.policy.deferred_turns == 1
        )  # the last turn ran on a prompt lagging the edit
    # The first turn's prompt was built on connecting; every turn, the edited one and the one
    # after it included, reads the summary once and the budget once.
    assert per_turn == [Counter(summary=1, budget=1)] * 4
    assert agent_memory.get_block("human").value.endswith("Name: Ada")


async def test_every_automatic_compaction_follows_the_planners_decision(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, agent_memory: MemoryManager
) -> None:
    """The agent compacts on its own only after the planner asked the compactor's one decision
    function and got yes; and nothing but the planner sets the flag."""
    settings = CompactionSettings(
        model="claude-haiku-4-5",
        context_window=6_000,
        trigger_threshold=0.8,
        window_percentage=0.5,
        min_kept_messages=2,
        retry_initial_wait=0.01,
        retry_max_wait=0.05,
    )
    server.enqueue(text_response("SUMMARY: travel plans."), model="haiku")
    events: list[str] = []
    async with MemoryAwareAgent(
        options, memory=agent_memory, compaction_settings=settings
    ) as agent:
        decide, compact = agent.compactor.compaction_due, agent.compactor.compact

        def recorded_decision(*args: Any, **kwargs: Any) -> bool:
            answer = decide(*args, **kwargs)
            events.append(f"due:{answer}")
            return answer

        async def recorded_compaction(*args: Any, **kwargs: Any) -> CompactionOutcome:
            events.append("compact")
            return await compact(*args, **kwargs)

        agent.compactor.compaction_due = recorded_decision  # type: ignore[method-assign]  # a spy
        agent.compactor.compact = recorded_compaction  # type: ignore[method-assign]  # a spy
        for number in range(1, 13):
            await agent.process_turn(
                f"MARKER-{number:02d} " + "Here are more details about my plans. " * 60
            )
            if agent.last_compaction is not None and agent.last_compaction.changed:
                break
        assert agent.last_compaction is not None and agent.last_compaction.changed
        with pytest.raises(AttributeError):
            agent.planner.compaction_due = True  # type: ignore[misc]  # read-only: the planner sets it
    assert events.count("compact") == 1
    assert events[events.index("compact") - 1] == "due:True"
    assert events[:2] == ["due:False", "due:False"]  # turn 1: before it (its prompt) and after it
