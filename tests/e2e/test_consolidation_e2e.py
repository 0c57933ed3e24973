"""Background consolidation end to end: a compaction starts it, no turn waits for it, and the
model sees the consolidated block on its first turn after the run finished.

The real SDK and CLI talk to the scripted server. The model consolidator's rewrite request is
held unanswered until the test lets it go: a turn that ends while it is held did not wait for
the consolidation, however long either takes on a loaded machine.
"""

from __future__ import annotations

import json
import threading
import time

import pytest
from backends import POSTGRES_SLOW
from claude_agent_sdk import ClaudeAgentOptions

from compaction import CompactionSettings
from memory_agent import ConsolidationSchedule, MemoryAwareAgent, MemoryManager
from memory_agent.consolidation import ModelConsolidator
from memory_agent.testing import ScriptedMessagesServer, text_response
from memory_agent.testing.recorded import RecordedRequest
from memory_agent.testing.responses import ScriptedResponse

pytestmark = pytest.mark.e2e

SUMMARY = "SUMMARY-4410: the user described their harbour work."
CONSOLIDATED = (
    "CONSOLIDATED-5521: Ana Duarte, harbour pilot in Porto since 2019; drinks green tea; two cats."
)
HOLD_SECONDS = 120.0
"""The longest the consolidator's request is held; the test lets it go long before."""


def _prompt(number: int) -> str:
    return f"MARKER-{number:02d} " + ("Here is more about my week at the harbour. " * 60)


def _human_lines(limit: int) -> str:
    """Distinct facts filling the block past the consolidator's threshold (80 % of its limit)."""
    lines: list[str] = []
    number = 0
    while sum(len(line) + 1 for line in lines) < int(0.9 * limit):
        number += 1
        lines.append(f"Fact {number:03d}: Ana mentioned detail number {number} about the harbour.")
    return "\n".join(lines)


def _main_turns(server: ScriptedMessagesServer) -> list[RecordedRequest]:
    """The agent's turn requests (the summariser and the consolidator use the cheap model)."""
    return [r for r in server.turn_requests() if "haiku" not in r.model]


def _rewrite_requests(server: ScriptedMessagesServer) -> list[RecordedRequest]:
    return [r for r in server.message_requests("haiku") if "memory block" in r.system_text]


@pytest.mark.usefixtures("backend")
# about 20 s a run; tests/integration/test_background_consolidation.py covers PostgreSQL by default
@POSTGRES_SLOW
async def test_a_compaction_consolidates_in_the_background_and_the_next_turn_shows_the_result(
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
    limit = agent_memory.get_block("human").limit
    before = _human_lines(limit)
    agent_memory.update_block("human", value=before)
    server.enqueue(text_response(SUMMARY), model="haiku")
    release = threading.Event()

    def slow_model(request: RecordedRequest) -> ScriptedResponse | None:
        """The consolidator's rewrite, answered only when the test says so."""
        if "haiku" not in request.model or "memory block" not in request.system_text:
            return None
        release.wait(HOLD_SECONDS)
        return text_response(json.dumps({"text": CONSOLIDATED}))

    server.responder = slow_model
    schedule = ConsolidationSchedule(
        consolidator=ModelConsolidator(settings, api_key="test-key", base_url=server.url)
    )

    async with MemoryAwareAgent(
        options, memory=agent_memory, compaction_settings=settings, consolidation=schedule
    ) as agent:
        try:
            number = 0
            while agent.last_compaction is None or not agent.last_compaction.changed:
                number += 1
                assert number <= 12, "the agent never compacted"
                assert agent.consolidation.started == 0  # nothing before the compaction
                await agent.process_turn(_prompt(number))

            # The compaction ran before this turn's request and started the consolidation, whose
            # model request was still held when the turn had ended: the turn did not wait for it.
            assert agent.consolidation.started == 1
            rewrites = _rewrite_requests(server)
            assert len(rewrites) == 1 and not rewrites[0].completed
            assert agent.consolidation.running
            turn_during_run = _main_turns(server)[-1]
            assert CONSOLIDATED not in turn_during_run.system_text + str(turn_during_run.messages)
            assert "Fact 001" in turn_during_run.system_text  # the block as it still is
            # And one more turn, the run still held.
            started = time.monotonic()
            await agent.process_turn("A short question while memory is being tidied.")
            assert agent.consolidation.running and not rewrites[0].completed, (
                time.monotonic() - started
            )

            release.set()
            await agent.consolidation.wait()
            assert not agent.consolidation.running and rewrites[0].completed
            report = agent.consolidation.last_report
            assert report is not None and report.status == "completed" and report.session_id, report
            assert agent_memory.get_block("human").value == CONSOLIDATED
            turns_before = len(_main_turns(server))
            await agent.process_turn("What do you remember about me?")
        finally:
            # a failed assertion must not leave the request held while the agent closes
            release.set()

    # The first turn after the run finished shows the consolidated block: announced in its
    # <turn_context> under the default policy (or in a rebuilt system prompt under another).
    first_after = _main_turns(server)[turns_before]
    shown = first_after.system_text + first_after.last_user_text
    assert CONSOLIDATED in shown
    # The rewrite request carried the block as it was, as JSON text.
    assert "Fact 001" in rewrites[0].last_user_text
    # The session is on record with the model's tokens, and the old text was archived, not lost.
    session = agent_memory.get_consolidation(report.session_id)
    assert session.status == "completed" and session.consolidator.startswith("model:")
    assert (session.input_tokens or 0) > 0 and (session.output_tokens or 0) > 0
    archived = agent_memory.archival_memory_search("Fact 001 Ana mentioned detail", 5)
    assert any("Fact 001:" in hit.content for hit in archived)
