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


def sized(first_id: int, *tokens: int) -> list[MessageRecord]:
    return [MessageRecord(first_id + i, "user", "x", tokens=size) for i, size in enumerate(tokens)]


def test_calibration_measures_the_scale_and_later_estimates_use_it() -> None:
    budget = ContextBudget(CompactionSettings(), fixed_tokens=2_000)  # trigger 160,000
    budget.add(sized(1, 30_000, 30_000, 500))

    budget.calibrate({"input_tokens": 31_000}, through_id=2)  # the request before message 3
    budget.add(sized(1, 30_000, 30_000, 500))

    assert budget.scale == 0.5 and budget.scale_measured
    assert budget.total_tokens == 31_000 + 250  # message 3 counted at the measured scale
    budget.add(sized(4, 1_000))
    assert budget.total_tokens == 31_750


def test_a_small_request_does_not_measure_the_scale() -> None:
    """Under a quarter of the trigger the client's own text dominates the ratio."""
    budget = ContextBudget(CompactionSettings(), fixed_tokens=1_000, scale=1.25)
    budget.add(sized(1, 9_000))

    budget.calibrate({"input_tokens": 20_000}, through_id=1)

    assert budget.scale == 1.25 and not budget.scale_measured
    assert budget.total_tokens == 20_000  # the usage itself is still taken as exact


def test_an_unmeasured_budget_scales_the_whole_estimate() -> None:
    budget = ContextBudget(CompactionSettings(), fixed_tokens=1_000, scale=1.25)
    budget.add(sized(1, 3_000))

    assert budget.total_tokens == 5_000 and not budget.calibrated
    assert ContextBudget(CompactionSettings(), scale=1_000.0).scale == 5.0  # clamped


def test_the_scaled_estimate_moves_by_what_was_added_not_by_corrections() -> None:
    budget = ContextBudget(CompactionSettings(), fixed_tokens=2_000, scale=1.25)
    budget.add(sized(1, 60_000))
    before = budget.scaled_estimate

    budget.add(sized(2, 4_000))
    budget.calibrate({"input_tokens": 40_000}, through_id=2)  # scale now 40/66 ≈ 0.61
    budget.add(sized(1, 60_000, 4_000))

    assert budget.total_tokens == 40_000
    assert budget.scaled_estimate - before == 5_000  # the 4,000 added, at the scale then in force
