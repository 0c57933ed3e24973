"""The turn planner on a real store, without the SDK: its plans and the state it keeps (both
backends)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from backends import backend_environ

from compaction import CompactionOutcome, CompactionSettings, MessageRecord, message_tokens
from memory_agent import MemoryManager, Settings
from memory_agent.agent.auto_recall import AutoRecall, AutoRecallSettings
from memory_agent.agent.refresh_policy import PromptRefreshPolicy
from memory_agent.agent.turn_planner import TurnPlan, TurnPlanner
from memory_agent.testing import ScriptedMessagesServer, text_response

pytestmark = pytest.mark.usefixtures("backend")

SMALL = CompactionSettings(
    model="claude-haiku-4-5",
    context_window=6_000,
    trigger_threshold=0.8,
    window_percentage=0.5,
    min_kept_messages=2,
)


def _planner(memory: MemoryManager, mode: str = "announce") -> TurnPlanner:
    policy = PromptRefreshPolicy(mode)  # type: ignore[arg-type]  # a literal given as str
    return TurnPlanner(
        memory, memory.agent_id, memory.compactor, policy, count_fixed=memory.memory_tokens
    )


def _connected(planner: TurnPlanner, prompt: str | None = "Hi.") -> TurnPlan:
    return planner.before_turn(prompt, connected=True, can_refresh_live=True)


def test_connecting_builds_the_prompt_and_unchanged_memory_keeps_it(memory: MemoryManager) -> None:
    planner = _planner(memory)
    first = planner.before_turn(None, connected=False, can_refresh_live=False)
    assert first.rebuild and not first.compact and first.versions == memory.block_versions()
    assert first.recalled == () and planner.recall(first) == first  # recall is off
    planner.prompt_built(first)
    assert planner.fixed_tokens == memory.memory_tokens()
    again = _connected(planner)
    assert not again.rebuild and again.fingerprint == first.fingerprint
    # A process that stopped has no prompt, current or not.
    assert planner.before_turn(None, connected=False, can_refresh_live=False).rebuild


def test_another_writers_change_is_announced_or_rebuilt_by_the_policy(
    memory: MemoryManager,
) -> None:
    for mode, rebuilds in (("announce", False), ("deferred", True), ("live", True)):
        planner = _planner(memory, mode)
        planner.prompt_built(planner.before_turn(None, connected=False, can_refresh_live=False))
        planner.turn_started()
        planner.after_turn(None, through_id=None)
        memory.update_block("human", value=f"Set by the owner under {mode}.")
        plan = _connected(planner)
        assert plan.rebuild is rebuilds, mode
        if not rebuilds:
            assert plan.announce == (memory.get_block("human").block_id,)
            assert f"Set by the owner under {mode}." in planner.announcement()


def test_a_history_over_the_trigger_compacts_before_the_first_request(settings: Settings) -> None:
    with MemoryManager(agent_id="planned", settings=settings, compaction_settings=SMALL) as memory:
        planner = _planner(memory)
        for number in range(12):
            memory.store_message("user", f"Message {number}: " + "details of the plan " * 60)
        plan = planner.before_turn(None, connected=False, can_refresh_live=False)
        assert plan == TurnPlan(compact=True) and not planner.compaction_due  # the plan carries it
        # The summariser failed: nothing changed, and the prompt is built as it stands.
        planner.compacted(
            CompactionOutcome(
                status="deferred",
                summary=None,
                evicted=(),
                kept=(),
                model=None,
                tokens_before=5_000,
                tokens_after=5_000,
            )
        )
        assert planner.replan(connected=False, can_refresh_live=False).rebuild


def test_a_turn_over_the_trigger_makes_the_next_one_compact(settings: Settings) -> None:
    with MemoryManager(agent_id="planned", settings=settings, compaction_settings=SMALL) as memory:
        planner = _planner(memory)
        planner.prompt_built(planner.before_turn(None, connected=False, can_refresh_live=False))
        planner.turn_started()
        for number in range(12):
            memory.store_message("user", f"Message {number}: " + "details of the plan " * 60)
        planner.after_turn(None, through_id=None)
        assert planner.compaction_due
        assert _connected(planner, None).compact


def test_a_large_prompt_makes_the_turn_compact_first(settings: Settings) -> None:
    with MemoryManager(agent_id="planned", settings=settings, compaction_settings=SMALL) as memory:
        planner = _planner(memory)
        planner.prompt_built(planner.before_turn(None, connected=False, can_refresh_live=False))
        assert not _connected(planner, "Short.").compact
        assert _connected(planner, "A long paste. " * 2_000).compact


ROOMY = dataclasses.replace(SMALL, context_window=20_000, window_percentage=0.1, max_attempts=1)
"""Trigger at 16,000; a small window share, so a cut evicts no more than it must."""


def _store_turns(memory: MemoryManager, agent_id: str) -> None:
    """40 short turns and one paste (turn 37) that sets the headroom: about 15,600 tokens."""
    for number in range(40):
        text = "the details of the plan for the spring release " * (300 if number == 37 else 15)
        for role, content in (("user", f"Question {number}: {text}"), ("assistant", "Noted.")):
            record = MessageRecord(id=0, role=role, content=content)
            memory.store_message(
                role,
                content,
                agent_id=agent_id,
                turn_id=f"turn-{number}",
                token_count=message_tokens(record, memory.compactor.counter),
            )


async def test_one_compaction_leaves_room_for_the_next_turn(tmp_path: Path) -> None:
    """Reopened just under the trigger, with a paste among its recent turns: the agent compacts
    before its process starts, and leaves the headroom free, so its first prompt does not
    compact again. Cut to the bare target instead, the next check finds another one due."""
    with ScriptedMessagesServer() as server:
        environ = {
            "PERSIST_DIRECTORY": str(tmp_path),
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "k",
        }
        settings = Settings.from_env(backend_environ(environ), env_file=None)
        with MemoryManager(agent_id="a", settings=settings, compaction_settings=ROOMY) as memory:
            server.enqueue(*[text_response("Summary of the plan.")] * 2, model="haiku")
            memory.ensure_agent("bare")
            for agent_id in ("a", "bare"):
                _store_turns(memory, agent_id)
            planner = TurnPlanner(
                memory,
                "a",
                memory.compactor,
                PromptRefreshPolicy("announce"),
                count_fixed=memory.memory_tokens,
            )
            fixed = memory.memory_tokens()
            budget = memory.compactor.budget("a", fixed)
            assert budget.total_tokens < ROOMY.trigger_tokens  # under it, but not with a turn more
            assert budget.total_tokens + planner.headroom >= ROOMY.trigger_tokens

            plan = planner.before_turn(None, connected=False, can_refresh_live=False)
            assert plan.compact and plan.headroom == planner.headroom > 0
            outcome = await memory.compactor.compact("a", fixed, force=True, headroom=plan.headroom)
            assert outcome.status == "compacted"
            assert outcome.tokens_after + plan.headroom < ROOMY.trigger_tokens
            planner.compacted(outcome)
            planner.prompt_built(planner.replan(connected=False, can_refresh_live=False))
            assert not _connected(planner, "And now?").compact
            assert len(server.message_requests(model="haiku")) == 1

            # The contrast: the same history cut to the bare target is due again at once.
            bare = await memory.compactor.compact("bare", fixed, force=True)
            assert bare.status == "compacted" and bare.tokens_after < ROOMY.trigger_tokens
            again = TurnPlanner(
                memory,
                "bare",
                memory.compactor,
                PromptRefreshPolicy("announce"),
                count_fixed=memory.memory_tokens,
            )
            assert again.before_turn(None, connected=False, can_refresh_live=False).compact


def _recalling_planner(memory: MemoryManager) -> TurnPlanner:
    recall = AutoRecall(
        memory, memory.agent_id, AutoRecallSettings(), count_text=memory.compactor.count_text
    )
    return TurnPlanner(
        memory,
        memory.agent_id,
        memory.compactor,
        PromptRefreshPolicy("announce"),
        count_fixed=memory.memory_tokens,
        auto_recall=recall,
    )


def test_recall_fills_the_plan_once_for_the_turns_prompt(memory: MemoryManager) -> None:
    passage = memory.archival_memory_insert("The lighthouse keeper is called Ines.")
    planner = _recalling_planner(memory)
    planner.prompt_built(planner.before_turn(None, connected=False, can_refresh_live=False))
    assert planner.recall(_connected(planner, None)).recalled == ()  # no prompt, nothing to find
    plan = planner.recall(_connected(planner, "Who keeps the lighthouse?"))
    assert [item.item_id for item in plan.recalled] == [passage]
    assert planner.last_recall is not None and planner.last_recall.items == plan.recalled
    assert planner.recall(plan) == plan  # the prompt is spent: asked again, nothing changes


def test_a_recall_that_raises_leaves_the_turn_a_plan_and_a_note(
    memory: MemoryManager, caplog: pytest.LogCaptureFixture
) -> None:
    planner = _recalling_planner(memory)
    assert planner.auto_recall is not None
    planner.auto_recall._count = lambda text: 1 // 0  # a counter that breaks
    plan = planner.recall(_connected(planner, "Who keeps the lighthouse?"))
    assert plan.recalled == () and plan.recall_notes[0].startswith("automatic recall failed")
    assert "auto-recall of agent" in caplog.text
