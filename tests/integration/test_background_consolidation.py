"""The agent's background consolidation: its schedule, its thread, stale-write retries, failures
and closing, on a real store (both backends) and the real engine; no SDK process is started.

A `GatedConsolidator` holds a run between reading memory and writing it until the test lets it
go, so the test can act while a run is in progress exactly where it wants to.
"""

from __future__ import annotations

import logging
import threading

import anyio
import pytest

from memory_agent import (
    ConfigurationError,
    ConsolidationSchedule,
    MemoryAwareAgent,
    MemoryManager,
    RulesConsolidator,
)
from memory_agent.agent.background_consolidation import BackgroundConsolidation
from memory_agent.agent.consolidation_schedule import schedule_from
from memory_agent.agent.refresh_policy import PromptRefreshPolicy
from memory_agent.consolidation import MemoryView, Plan
from memory_agent.consolidation.protocol import Embed

pytestmark = pytest.mark.usefixtures("backend")

WAIT_SECONDS = 60.0
"""Upper bound for a gate or a run in a loaded machine; never reached when things work."""


class GatedConsolidator:
    """The rules consolidator, stopped after memory was read until `release()`."""

    name = "gated-rules"

    def __init__(self) -> None:
        self.rules = RulesConsolidator()
        self.entered = threading.Event()
        self._gate = threading.Event()

    def release(self) -> None:
        self._gate.set()

    async def plan(self, view: MemoryView, embed: Embed) -> Plan:
        self.entered.set()
        assert self._gate.wait(WAIT_SECONDS), "the test never released the run"
        return await self.rules.plan(view, embed)


class FailingConsolidator:
    name = "failing"

    async def plan(self, view: MemoryView, embed: Embed) -> Plan:
        raise RuntimeError("the planner broke on purpose")


def _overfill(memory: MemoryManager, label: str = "human") -> str:
    """Lines past 80 % of the block's limit, so the rules move the oldest ones out."""
    limit = memory.get_block(label).limit
    lines = [
        f"Line {n:03d}: a detail the user mentioned about their week, number {n}."
        for n in range(1, 400)
    ]
    value = ""
    for line in lines:
        if len(value) > 0.9 * limit:
            break
        value = f"{value}\n{line}" if value else line
    memory.update_block(label, value=value)
    return value


async def _wait_until(event: threading.Event) -> None:
    assert await anyio.to_thread.run_sync(event.wait, WAIT_SECONDS)


# ----- the setting ----------------------------------------------------------------------------


@pytest.mark.parametrize("setting", ["sometimes", "", None, 5, ConsolidationSchedule])
def test_a_setting_that_is_not_a_schedule_is_refused(
    setting: object, memory: MemoryManager
) -> None:
    with pytest.raises(ConfigurationError, match="consolidation must be 'off', 'after_compaction'"):
        schedule_from(setting)
    with pytest.raises(ConfigurationError, match="consolidation must be"):
        MemoryAwareAgent(memory=memory, consolidation=setting)  # type: ignore[arg-type]  # the wrong type is the test


@pytest.mark.parametrize(
    "bad",
    [
        {"every_turns": 0},
        {"every_turns": -3},
        {"every_turns": True},
        {"every_turns": 2.5},
        {"after_compaction": "yes"},
        {"consolidator": object()},
    ],
)
def test_a_schedule_with_bad_values_is_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError, match="ConsolidationSchedule"):
        ConsolidationSchedule(**bad)  # type: ignore[arg-type]  # the wrong types are the test


def test_the_settings_mean_what_they_say(memory: MemoryManager) -> None:
    assert schedule_from("off").enabled is False
    assert (
        schedule_from("after_compaction").on_compaction
        and schedule_from("after_compaction").every_turns is None
    )
    by_count = ConsolidationSchedule(every_turns=3)
    assert not by_count.on_compaction and by_count.enabled
    assert ConsolidationSchedule(every_turns=3, after_compaction=True).on_compaction
    agent = MemoryAwareAgent(memory=memory)
    assert agent.consolidation.schedule == schedule_from("after_compaction")  # the default


# ----- runs in the background -----------------------------------------------------------------


async def test_a_compaction_starts_a_run_in_its_own_thread_that_nobody_awaits(
    memory: MemoryManager,
) -> None:
    before = _overfill(memory)
    gated = GatedConsolidator()
    trigger = BackgroundConsolidation(memory, "agent-a", ConsolidationSchedule(consolidator=gated))
    assert not trigger.compaction_finished(False)  # nothing was compacted: nothing to do
    assert trigger.compaction_finished(True)
    await _wait_until(gated.entered)
    # The trigger returned while the run is held mid-way: the caller (a turn) did not wait for it.
    assert trigger.running and trigger.finished == 0
    assert memory.get_block("human").value == before
    gated.release()
    await trigger.wait()
    assert not trigger.running and trigger.finished == 1 and trigger.failures == 0
    report = trigger.last_report
    assert (
        report is not None and report.status == "completed" and report.counts["blocks_changed"] == 1
    )
    after = memory.get_block("human").value
    assert len(after) < len(before) and before.endswith(after)
    assert [s.status for s in memory.list_consolidations(agent_id="agent-a")] == ["completed"]


async def test_every_n_turns_starts_a_run_on_the_nth_turn(memory: MemoryManager) -> None:
    trigger = BackgroundConsolidation(memory, "agent-a", ConsolidationSchedule(every_turns=3))
    assert not trigger.compaction_finished(True)  # counting turns only
    assert [trigger.turn_finished() for _ in range(2)] == [False, False]
    assert trigger.turn_finished()
    await trigger.wait()
    assert trigger.finished == 1 and trigger.last_report is not None and trigger.last_report.ok
    assert not trigger.turn_finished()


async def test_off_never_runs(memory: MemoryManager) -> None:
    trigger = BackgroundConsolidation(memory, "agent-a", schedule_from("off"))
    assert not trigger.compaction_finished(True)
    assert not any(trigger.turn_finished() for _ in range(50))
    assert trigger.started == 0 and memory.list_consolidations(agent_id="agent-a") == []


async def test_a_block_edited_during_a_run_is_retried_on_the_next_turn_on_fresh_text(
    memory: MemoryManager,
) -> None:
    _overfill(memory)
    gated = GatedConsolidator()
    trigger = BackgroundConsolidation(memory, "agent-a", ConsolidationSchedule(consolidator=gated))
    assert trigger.compaction_finished(True)
    await _wait_until(gated.entered)
    memory.core_memory_append(
        "human", "Fresh: the user moved to Porto."
    )  # the live agent, meanwhile
    gated.release()
    await trigger.wait()
    first = trigger.last_report
    assert first is not None and first.status == "completed" and first.retry_later
    assert "retry later" in first.retry_later[0] and first.counts["blocks_changed"] == 0
    assert memory.get_block("human").value.endswith(
        "Fresh: the user moved to Porto."
    )  # the edit stands
    assert trigger.retry_due

    gated.release()  # the retry runs straight through
    assert trigger.turn_finished()
    await trigger.wait()
    second = trigger.last_report
    assert second is not None and second.counts["blocks_changed"] == 1 and not second.retry_later
    assert memory.get_block("human").value.endswith("Fresh: the user moved to Porto.")
    assert not trigger.retry_due and not trigger.turn_finished()


async def test_a_trigger_during_a_run_is_run_after_the_next_turn(memory: MemoryManager) -> None:
    gated = GatedConsolidator()
    trigger = BackgroundConsolidation(memory, "agent-a", ConsolidationSchedule(consolidator=gated))
    assert trigger.compaction_finished(True)
    await _wait_until(gated.entered)
    assert not trigger.compaction_finished(True)  # one run at a time
    assert trigger.started == 1 and trigger.retry_due
    gated.release()
    await trigger.wait()
    assert trigger.turn_finished()
    await trigger.wait()
    assert trigger.started == trigger.finished == 2


async def test_a_failed_run_is_logged_recorded_and_the_agent_goes_on(
    memory: MemoryManager, caplog: pytest.LogCaptureFixture
) -> None:
    trigger = BackgroundConsolidation(
        memory, "agent-a", ConsolidationSchedule(consolidator=FailingConsolidator())
    )
    with caplog.at_level(logging.WARNING, logger="memory_agent"):
        assert trigger.compaction_finished(True)
        await trigger.wait()
    assert (
        trigger.failures == 1
        and trigger.last_error is not None
        and "broke on purpose" in trigger.last_error
    )
    report = trigger.last_report
    assert report is not None and report.status == "failed"
    [session] = memory.list_consolidations(agent_id="agent-a")
    assert session.status == "failed" and "broke on purpose" in (session.failure or "")
    assert any(
        r.name == "memory_agent.agent.background_consolidation"
        and r.levelno == logging.WARNING
        and "broke on purpose" in r.getMessage()
        for r in caplog.records
    )
    assert trigger.compaction_finished(True)  # the next trigger tries again
    await trigger.wait()
    assert trigger.failures == 2


async def test_closing_waits_for_the_run_and_starts_no_other(memory: MemoryManager) -> None:
    _overfill(memory)
    gated = GatedConsolidator()
    trigger = BackgroundConsolidation(memory, "agent-a", ConsolidationSchedule(consolidator=gated))
    assert trigger.compaction_finished(True)
    await _wait_until(gated.entered)
    closed = anyio.Event()

    async def close() -> None:
        await trigger.aclose()
        closed.set()

    async with anyio.create_task_group() as group:
        group.start_soon(close)
        await anyio.sleep(0.3)
        assert not closed.is_set() and trigger.running  # still waiting for the run
        gated.release()
    assert closed.is_set() and not trigger.running and trigger.finished == 1
    assert not trigger.compaction_finished(True) and not trigger.turn_finished()
    assert not any(t.name.startswith("memory-agent-consolidation") for t in threading.enumerate())


async def test_the_agents_disconnect_waits_for_a_running_consolidation(
    memory: MemoryManager,
) -> None:
    _overfill(memory)
    gated = GatedConsolidator()
    agent = MemoryAwareAgent(memory=memory, consolidation=ConsolidationSchedule(consolidator=gated))
    assert agent.consolidation.compaction_finished(True)
    await _wait_until(gated.entered)
    threading.Timer(0.3, gated.release).start()
    await agent.disconnect()
    assert not agent.consolidation.running and agent.consolidation.finished == 1


# ----- the model's view of the result ---------------------------------------------------------


@pytest.mark.parametrize("finished", ["between turns", "during a turn"])
async def test_a_consolidated_block_is_announced_on_the_next_turn(
    memory: MemoryManager, finished: str
) -> None:
    """Under the default policy the block comes with the next turn, whether the run ended
    between turns or while one ran (the end of a turn then already counts its version)."""
    _overfill(memory)
    policy = PromptRefreshPolicy("announce")
    policy.rebuilt(memory, "agent-a")
    if finished == "between turns":
        policy.turn_ended(memory, "agent-a")
    trigger = BackgroundConsolidation(memory, "agent-a", ConsolidationSchedule())
    assert trigger.compaction_finished(True)
    await trigger.wait()
    if finished == "during a turn":
        policy.turn_ended(memory, "agent-a")
    assert not policy.must_rebuild(memory, "agent-a")
    announced = policy.announcement(memory, "agent-a")
    assert memory.get_block("human").value in announced
    assert policy.announcement(memory, "agent-a") == ""  # once


async def test_a_block_changed_while_the_prompt_was_built_is_not_taken_as_shown(
    memory: MemoryManager,
) -> None:
    """The agent reads block versions before it builds a prompt: a consolidation landing in
    between is still announced on the next turn rather than counted as seen."""
    _overfill(memory)
    policy = PromptRefreshPolicy("announce")
    versions = memory.block_versions(agent_id="agent-a")
    trigger = BackgroundConsolidation(memory, "agent-a", ConsolidationSchedule())
    assert trigger.compaction_finished(True)
    await (
        trigger.wait()
    )  # lands after the versions were read, before the policy hears of the prompt
    policy.rebuilt(memory, "agent-a", versions=versions)
    policy.turn_ended(memory, "agent-a")
    assert not policy.must_rebuild(memory, "agent-a")
    assert memory.get_block("human").value in policy.announcement(memory, "agent-a")
