"""Agent College end to end: what the Critic writes with a tool reaches the Professor's next
request.

Real SDK, real CLI, in-process memory tools; the two agents run on one storage dir through two
MemoryManager instances (two database connections), as two processes would.
"""

from __future__ import annotations

from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions

from memory_agent import MemoryManager, Settings
from memory_agent.integrations.college import COLLEGE_BLOCK_LABEL, CollegeSession
from memory_agent.testing import (
    ScriptedMessagesServer,
    text_response,
    tool_use_response,
)

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("backend")]

APPEND = "mcp__memory__core_memory_append"
FINDING = "Critic: step 2 divides by n, which may be zero."


def _requests_of(server: ScriptedMessagesServer, role: str) -> list[Any]:
    return [r for r in server.turn_requests() if f"You are the {role}." in r.system_text]


async def test_the_critics_tool_write_is_in_the_professors_next_request(
    server: ScriptedMessagesServer, options: ClaudeAgentOptions, storage_settings: Settings
) -> None:
    server.enqueue(text_response("Professor: first I need the Critic's view."))
    server.enqueue(tool_use_response(APPEND, {"label": COLLEGE_BLOCK_LABEL, "content": FINDING}))
    server.enqueue(text_response("I recorded my finding in the shared state."))
    server.enqueue(text_response("Professor: guard step 2 with n > 0."))

    with (
        CollegeSession.open(instance_id="e2e", settings=storage_settings) as college,
        MemoryManager(agent_id=college.professor_id, settings=storage_settings) as professor_memory,
    ):
        critic = college.build_agent("critic", options)
        professor = college.build_agent("professor", options, memory=professor_memory)
        async with professor, critic:
            before = await professor.process_turn("Check the proof of the lemma.")
            critique = await critic.process_turn("Critique the proof of the lemma.")
            after = await professor.process_turn("The Critic has spoken; revise.")
            # The running Professor CLI was told in its next message (the default `announce`
            # policy), so its system prompt, and the prompt cache, stayed as they were.
            assert (professor.reconnects, professor.live_refreshes) == (1, 0)

        assert before.text.startswith("Professor: first")
        assert [call.name for call in critique.tool_calls] == [APPEND]
        assert critique.text == "I recorded my finding in the shared state."
        assert after.text == "Professor: guard step 2 with n > 0."
        assert college.shared_state() == FINDING
        authors = [v.agent_id for v in professor_memory.block_history(COLLEGE_BLOCK_LABEL)]
        assert authors == ["e2e_critic", "e2e_critic"]

    critic_requests, professor_requests = (
        _requests_of(server, "Critic"),
        _requests_of(server, "Professor"),
    )
    assert len(critic_requests) == 2 and len(professor_requests) == 2
    tool_result = critic_requests[1].tool_results[-1]
    assert not tool_result.get("is_error") and FINDING in str(tool_result["content"])
    assert FINDING not in professor_requests[0].system_text
    told = str(professor_requests[1].last_user_message)
    assert "<memory_changes>" in told and FINDING in told
    assert f"<{COLLEGE_BLOCK_LABEL}>" in professor_requests[1].system_text
    assert "You are a careful assistant." in professor_requests[1].system_text
    assert "Check the proof of the lemma." in str(professor_requests[1].messages)
