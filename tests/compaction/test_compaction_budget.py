"""The running context budget: calibration from reported usage, O(new messages) updates."""

from __future__ import annotations

from types import SimpleNamespace

from compaction import (
    CompactionSettings,
    ContextBudget,
    MessageRecord,
    TiktokenCounter,
    reported_input_tokens,
    should_compact,
)


class CountingCounter(TiktokenCounter):
    """A real counter that remembers how many messages it was asked to count."""

    def __init__(self) -> None:
        super().__init__()
        self.messages_counted = 0

    def count_message(self, message: MessageRecord) -> int:
        self.messages_counted += 1
        return super().count_message(message)


def history(count: int) -> list[MessageRecord]:
    return [
        MessageRecord(i, "user" if i % 2 else "assistant", f"message number {i} about cats")
        for i in range(1, count + 1)
    ]


def test_reported_usage_counts_cached_tokens_too() -> None:
    usage = {
        "input_tokens": 100,
        "cache_creation_input_tokens": 20,
        "cache_read_input_tokens": 5000,
    }
    as_object = SimpleNamespace(input_tokens=100, cache_creation_input_tokens=None, output_tokens=9)

    assert reported_input_tokens(usage) == 5120
    assert reported_input_tokens(as_object) == 100


def test_calibration_replaces_the_estimate_then_only_new_messages_are_counted() -> None:
    counter = CountingCounter()
    budget = ContextBudget(CompactionSettings(), counter, fixed_tokens=1000)
    messages = history(10_000)
    usage = {
        "input_tokens": 3,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 150_000,
    }

    budget.calibrate(usage, through_id=9_998)
    added = budget.observe(messages)

    assert counter.messages_counted == 2  # ids 9,999 and 10,000: not the whole history
    assert added == sum(counter.count_message(m) for m in messages[-2:])
    assert budget.total_tokens == 150_003 + added
    assert budget.through_id == 10_000 and budget.calibrated


def test_observing_or_adding_again_counts_nothing_twice() -> None:
    budget = ContextBudget(CompactionSettings())
    messages = history(5)

    first = budget.add(messages)
    assert budget.observe(messages) == 0
    assert budget.add(messages[-2:]) == 0
    assert budget.total_tokens == first
    assert budget.observe(messages + history(7)[5:]) > 0


def test_known_token_counts_are_used_as_they_are() -> None:
    budget = ContextBudget(CompactionSettings(), fixed_tokens=50)

    budget.add([MessageRecord(1, "user", "hi", tokens=1234)])

    assert budget.total_tokens == 1284


def test_should_compact_compares_with_the_trigger() -> None:
    settings = CompactionSettings(context_window=10_000, trigger_threshold=0.8)
    budget = ContextBudget(settings, fixed_tokens=7_999)

    assert not budget.should_compact()
    budget.add([MessageRecord(1, "user", "hi", tokens=1)])
    assert budget.should_compact()
    assert should_compact(8_000, settings) and not should_compact(7_999, settings)
    assert not should_compact(9_999, CompactionSettings(context_window=10_000, enabled=False))


def test_would_overflow_past_the_overflow_threshold() -> None:
    budget = ContextBudget(CompactionSettings(context_window=10_000), fixed_tokens=9_499)

    assert not budget.would_overflow()
    budget.set_fixed_tokens(9_500)
    assert budget.would_overflow()


def test_a_changed_system_prompt_shifts_the_total() -> None:
    budget = ContextBudget(CompactionSettings(), fixed_tokens=100)
    budget.add([MessageRecord(1, "user", "hi", tokens=10)])

    budget.set_fixed_tokens(250)

    assert budget.total_tokens == 260 and budget.fixed_tokens == 250


def test_reset_and_recount_after_compaction() -> None:
    budget = ContextBudget(CompactionSettings())
    messages = history(20)

    total = budget.recount(messages, fixed_tokens=500)
    budget.reset(900, through_id=20, fixed_tokens=600)

    assert total > 500 and budget.total_tokens == 900 and budget.through_id == 20
    assert not budget.calibrated
