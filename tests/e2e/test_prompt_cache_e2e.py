"""The prompt cache is kept: a truthful clock per turn, a byte-identical system prompt, and the
`deferred` refresh policy (real SDK and CLI; the scripted server bills like the API).

Every test runs on both backends: the blocks rendered, the edits made by the agent or by another
agent between turns, and how the agent learns of them are all reads and writes of the store."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from backends import backend_environ
from claude_agent_sdk import ClaudeAgentOptions

from compaction import default_counter
from memory_agent import MemoryAwareAgent, MemoryManager, Settings
from memory_agent.agent.refresh_policy import PromptRefreshPolicy
from memory_agent.testing import (
    RecordedRequest,
    ScriptedMessagesServer,
    text_response,
    tool_use_response,
)

pytestmark = pytest.mark.e2e

APPEND = "mcp__memory__core_memory_append"
BUILT = datetime(2026, 11, 23, 9, 14, 3, tzinfo=timezone.utc)


class Clock:
    """The agent's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = BUILT

    def __call__(self) -> datetime:
        return self.now


def system_json(request: RecordedRequest) -> str:
    return json.dumps(request.body.get("system"), sort_keys=True)


def last_user_text(request: RecordedRequest) -> str:
    return json.dumps(request.last_user_message, ensure_ascii=False)


def _match(pattern: str, text: str) -> str:
    found = re.search(pattern, text)
    assert found is not None, f"{pattern!r} not in {text!r}"
    return found.group(1)


@pytest.fixture
def billing_server() -> Any:
    with ScriptedMessagesServer(count_tokens=default_counter().count_text) as running:
        yield running


@pytest.fixture
def billed_options(
    billing_server: ScriptedMessagesServer, options: ClaudeAgentOptions
) -> ClaudeAgentOptions:
    options.env = billing_server.env()
    return options


@pytest.fixture
def billed_memory(billing_server: ScriptedMessagesServer, tmp_path: Any) -> Any:
    settings = Settings.from_env(
        backend_environ(
            {
                "PERSIST_DIRECTORY": str(tmp_path / "billed"),
                "ANTHROPIC_BASE_URL": billing_server.url,
                "ANTHROPIC_API_KEY": "test-key",
            }
        ),
        env_file=None,
    )
    with MemoryManager(agent_id="clocked", settings=settings) as memory:
        yield memory


@pytest.mark.usefixtures("backend")
async def test_the_model_sees_the_time_an_hour_later_and_the_system_prompt_stays_byte_identical(
    billing_server: ScriptedMessagesServer,
    billed_options: ClaudeAgentOptions,
    billed_memory: MemoryManager,
) -> None:
    clock = Clock()
    async with MemoryAwareAgent(billed_options, memory=billed_memory, clock=clock) as agent:
        await agent.process_turn("What time is it?")
        clock.now = BUILT + timedelta(hours=1, minutes=2)
        await agent.process_turn("And now?")
        clock.now += timedelta(seconds=30)
        await agent.process_turn("One more question.")
        assert agent.reconnects == 1 and agent.live_refreshes == 0
    turns = billing_server.turn_requests()
    assert len(turns) == 3
    assert "Current time: 2026-11-23 09:14:03 UTC" in last_user_text(turns[0])
    assert "Current time: 2026-11-23 10:16:03 UTC" in last_user_text(turns[1])
    assert "Current time: 2026-11-23 10:16:33 UTC" in last_user_text(turns[2])
    counts = [
        int(_match(r"(\d+) messages? (?:is|are) stored in recall", last_user_text(t)))
        for t in turns
    ]
    assert counts[0] < counts[1] < counts[2]  # the count is of this turn, not of the prompt's build
    assert "And now?" in last_user_text(turns[1])
    # Not frozen anywhere in the system prompt, which does not change at all.
    assert "Current time" not in turns[0].system_text and "09:14" not in turns[2].system_text
    assert system_json(turns[0]) == system_json(turns[1]) == system_json(turns[2])
    # An earlier turn's context is repeated verbatim, so the cache reads it back.
    assert "Current time: 2026-11-23 09:14:03 UTC" in json.dumps(turns[2].messages)
    billed = [request.cache_usage for request in turns]
    assert all(usage is not None for usage in billed)
    assert billed[2] is not None and billed[2].read > 0.9 * billed[2].total


@pytest.mark.usefixtures("backend")
async def test_deferred_own_edit_shows_in_the_tool_result_and_keeps_the_prompt(
    billing_server: ScriptedMessagesServer,
    billed_options: ClaudeAgentOptions,
    billed_memory: MemoryManager,
) -> None:
    billing_server.enqueue(tool_use_response(APPEND, {"label": "human", "content": "Name: Ada"}))
    billing_server.enqueue(text_response("Noted."), text_response("You are Ada."))
    async with MemoryAwareAgent(billed_options, memory=billed_memory) as agent:
        await agent.process_turn("I am Ada.")
        await agent.process_turn("Who am I?")
        assert agent.prompt_refresh.deferred_turns == 1 and agent.live_refreshes == 0
    first, tool_request, second = billing_server.turn_requests()
    # The model sees its own edit: the tool result holds the block's new value ...
    result = tool_request.tool_results[-1]
    assert not result.get("is_error") and "Its value is now:" in str(result["content"])
    assert "Name: Ada" in str(result["content"])
    # ... and the next turn repeats that result, under the unchanged system prompt.
    assert "Name: Ada" in json.dumps(second.messages) and "Name: Ada" not in second.system_text
    assert system_json(first) == system_json(second)
    assert (
        second.cache_usage is not None and second.cache_usage.read > 0.9 * second.cache_usage.total
    )


@pytest.mark.usefixtures("backend")
async def test_deferred_rebuilds_for_another_agents_shared_edit_by_the_next_turn(
    billing_server: ScriptedMessagesServer,
    billed_options: ClaudeAgentOptions,
    billed_memory: MemoryManager,
    tmp_path: Any,
) -> None:
    billed_memory.join_shared_block("project", value="Goal: ship v2.")
    billing_server.enqueue(tool_use_response(APPEND, {"label": "project", "content": "Own note."}))
    billing_server.enqueue(text_response("Noted."))
    settings = billed_memory.settings
    async with MemoryAwareAgent(
        billed_options, memory=billed_memory, prompt_refresh="deferred"
    ) as agent:
        await agent.process_turn("Note something.")
        with MemoryManager(agent_id="colleague", settings=settings) as colleague:
            colleague.join_shared_block("project")
            colleague.core_memory_append("project", "Colleague: v2 is blocked on review.")
        await agent.process_turn("Any news?")
        # Same agent id, another process, between turns: not the model's doing either.
        with MemoryManager(agent_id="clocked", settings=settings) as elsewhere:
            elsewhere.core_memory_append("human", "Edited elsewhere: likes Rust.")
        await agent.process_turn("Anything else?")
        assert agent.prompt_refresh.deferred_turns == 0 and agent.live_refreshes == 2
    turns = billing_server.turn_requests()
    assert "v2 is blocked on review" in turns[2].system_text and "Own note." in turns[2].system_text
    assert "likes Rust" in turns[3].system_text


@pytest.mark.usefixtures("backend")
async def test_announce_brings_another_agents_edit_with_the_next_turn_and_keeps_the_prompt(
    billing_server: ScriptedMessagesServer,
    billed_options: ClaudeAgentOptions,
    billed_memory: MemoryManager,
) -> None:
    billed_memory.join_shared_block("project", value="Goal: ship v2.")
    billing_server.enqueue(text_response("Hello."), text_response("Seen it."))
    replace = {"label": "project", "old_content": "blocked", "new_content": "unblocked"}
    billing_server.enqueue(tool_use_response("mcp__memory__core_memory_replace", replace))
    billing_server.enqueue(text_response("Updated."))
    async with MemoryAwareAgent(
        billed_options, memory=billed_memory, prompt_refresh="announce"
    ) as agent:
        await agent.process_turn("Hi.")
        with MemoryManager(agent_id="colleague", settings=billed_memory.settings) as colleague:
            colleague.join_shared_block("project")
            colleague.core_memory_append("project", "Colleague: v2 is blocked on review.")
        await agent.process_turn("Any news?")
        await agent.process_turn("It got reviewed, please update the project.")
        assert agent.live_refreshes == 0 and agent.prompt_refresh.announced_blocks == 1
    first, news, _, replace = billing_server.turn_requests()  # the last: the tool call's result
    assert system_json(first) == system_json(news) and "blocked on review" not in news.system_text
    told = last_user_text(news)
    assert "<memory_changes>" in told and "Colleague: v2 is blocked on review." in told
    # Shown in the turn, the version counts as seen: the model's own edit is not refused as stale.
    result = replace.tool_results[-1]
    assert not result.get("is_error") and "v2 is unblocked on review" in str(result["content"])
    assert billed_memory.get_block("project").value.endswith(
        "Colleague: v2 is unblocked on review."
    )


@pytest.mark.usefixtures("backend")
async def test_deferred_catches_up_after_max_stale_turns(
    billing_server: ScriptedMessagesServer,
    billed_options: ClaudeAgentOptions,
    billed_memory: MemoryManager,
) -> None:
    billing_server.enqueue(tool_use_response(APPEND, {"label": "human", "content": "Likes tea."}))
    policy = PromptRefreshPolicy("deferred", max_stale_turns=2)
    async with MemoryAwareAgent(
        billed_options, memory=billed_memory, prompt_refresh=policy
    ) as agent:
        for number in range(4):
            await agent.process_turn(f"turn {number}")
        assert (policy.deferred_turns, agent.live_refreshes) == (2, 1)
    turns = (
        billing_server.turn_requests()
    )  # turn 0 has two requests (the tool call, then the answer)
    assert ["Likes tea." in request.system_text for request in turns] == [
        False,
        False,
        False,
        False,
        True,
    ]
