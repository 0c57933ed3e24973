"""Which memory changes the model made itself, and what a turn tells it (both backends, no SDK)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from memory_agent import ConfigurationError, MemoryManager, Settings
from memory_agent.agent.refresh_policy import PromptRefreshPolicy
from memory_agent.prompt.turn_context import (
    TurnContext,
    render_memory_changes,
    render_turn_context,
    with_turn_context,
)

pytestmark = pytest.mark.usefixtures("backend")


def test_only_the_agents_own_model_edits_are_not_changes_by_others(
    memory: MemoryManager, settings: Settings
) -> None:
    memory.join_shared_block("team", value="start")
    since = memory.core.versions("agent-a")
    memory.core_memory_append("human", "own edit")
    memory.core_memory_append("team", "own note")
    assert memory.core.changed_by_others("agent-a", since) == []
    with MemoryManager(agent_id="agent-b", settings=settings) as other:
        other.join_shared_block("team")
        other.core_memory_append("team", "their note")
    team = memory.get_block("team")
    assert memory.core.changed_by_others("agent-a", since) == [team.block_id]
    since = memory.core.versions("agent-a")
    memory.update_block("human", value="set by the owner")  # not a model edit
    assert memory.core.changed_by_others("agent-a", since) == [memory.get_block("human").block_id]
    since = memory.core.versions("agent-a")
    # The memory tool's str_replace answers with a snippet, not the whole value.
    memory.edit_block("persona", lambda block: block.value + " More.", action="memory_str_replace")
    assert memory.core.changed_by_others("agent-a", since) == [memory.get_block("persona").block_id]


def test_a_model_edit_between_turns_is_not_the_models_own(memory: MemoryManager) -> None:
    policy = PromptRefreshPolicy("deferred")
    policy.rebuilt(memory, "agent-a")
    memory.core_memory_append("human", "during the turn")
    policy.turn_ended(memory, "agent-a")
    assert not policy.must_rebuild(memory, "agent-a")  # the tool result showed it
    policy.turn_ended(memory, "agent-a")
    memory.core_memory_append("human", "between turns, e.g. the application")
    assert policy.must_rebuild(memory, "agent-a")


def test_announce_shows_changes_once_and_marks_them_seen(
    memory: MemoryManager, settings: Settings
) -> None:
    policy = PromptRefreshPolicy("announce", max_stale_turns=5)
    policy.rebuilt(memory, "agent-a")
    policy.turn_ended(memory, "agent-a")
    memory.update_block("human", value="Likes <b>bold</b> tea")
    assert not policy.must_rebuild(memory, "agent-a")
    text = policy.announcement(memory, "agent-a")
    assert (
        "<memory_changes>" in text
        and "<human>\nLikes &lt;b&gt;bold&lt;/b&gt; tea\n</human>" in text
    )
    assert policy.announcement(memory, "agent-a") == ""
    policy.turn_ended(memory, "agent-a")
    assert (
        not policy.must_rebuild(memory, "agent-a") and policy.announcement(memory, "agent-a") == ""
    )
    memory.core_memory_replace("human", "tea", "coffee")  # seen, so not refused as stale


def test_stale_turns_and_layout_changes_force_a_rebuild(memory: MemoryManager) -> None:
    policy = PromptRefreshPolicy("deferred", max_stale_turns=1)
    policy.rebuilt(memory, "agent-a")
    memory.core_memory_append("human", "x")
    policy.turn_ended(memory, "agent-a")
    assert not policy.must_rebuild(memory, "agent-a")
    assert policy.must_rebuild(memory, "agent-a")  # one stale turn allowed
    policy.rebuilt(memory, "agent-a")
    memory.create_block("notes", "new block")
    policy.turn_ended(memory, "agent-a")
    assert policy.must_rebuild(memory, "agent-a")
    with pytest.raises(ConfigurationError, match="'live', 'deferred' or 'announce'"):
        PromptRefreshPolicy("sometimes")  # type: ignore[arg-type]


def test_turn_context_text() -> None:
    moment = datetime(2026, 11, 23, 10, 16, 3, tzinfo=timezone.utc)
    text = render_turn_context(TurnContext(now=moment, recall_messages=1, archival_passages=2))
    assert text.splitlines() == [
        "<turn_context>",
        "Current time: 2026-11-23 10:16:03 UTC (Monday)",
        "1 message is stored in recall memory (conversation_search finds them)",
        "2 passages are stored in archival memory (archival_memory_search finds them)",
        "</turn_context>",
    ]
    assert with_turn_context("hi", "ctx") == [
        {"type": "text", "text": "ctx"},
        {"type": "text", "text": "hi"},
    ]
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "AA=="},
    }
    assert with_turn_context([image], "ctx")[1] is image
    assert render_memory_changes([]) == ""
