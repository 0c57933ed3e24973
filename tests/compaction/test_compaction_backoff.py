"""The back-off of compaction attempts after summariser failures."""

from __future__ import annotations

from compaction import CompactionSettings, SummarizerBackoff

SETTINGS = CompactionSettings(context_window=100_000)  # trigger 80,000, overflow 95,000


def turns(backoff: SummarizerBackoff, count: int) -> None:
    for _ in range(count):
        backoff.turn_passed()


def test_no_failure_no_waiting() -> None:
    assert SummarizerBackoff(SETTINGS).allows(81_000)


def test_the_wait_doubles_with_each_failure_in_a_row_up_to_a_cap() -> None:
    backoff = SummarizerBackoff(SETTINGS)
    waits = []
    for _ in range(7):
        backoff.failed(81_000)
        waited = 0
        while not backoff.allows(81_000):
            backoff.turn_passed()
            waited += 1
        waits.append(waited)
    assert waits == [2, 4, 8, 16, 32, 32, 32]


def test_growth_since_the_failure_earns_an_early_attempt() -> None:
    backoff = SummarizerBackoff(SETTINGS)
    backoff.failed(81_000)
    assert backoff.growth_tokens == 5_000
    assert not backoff.allows(85_999)
    assert backoff.allows(86_000)


def test_at_the_overflow_line_an_attempt_is_always_allowed() -> None:
    backoff = SummarizerBackoff(SETTINGS)
    for _ in range(5):
        backoff.failed(91_000)
    assert not backoff.allows(94_999)
    assert backoff.allows(95_000)


def test_a_success_ends_the_back_off() -> None:
    backoff = SummarizerBackoff(SETTINGS)
    backoff.failed(81_000)
    turns(backoff, 1)
    backoff.succeeded()
    assert backoff.allows(81_000) and backoff.wait_turns == 0
