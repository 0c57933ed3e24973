"""When to try a failed summariser again.

A summariser that fails (no API key, the cheap model down) leaves compaction deferred: nothing
is evicted and the conversation goes on. Asking again on every turn would repeat the failure
(with its retries and a warning) on every turn. So after a failure the next attempt waits for
a number of turns that doubles with each failure in a row, or for the context to grow by a
share of the room between the trigger and the overflow line, whichever comes first. At the
overflow line there is no waiting: that is where a marked truncation replaces the summary, so
the attempt must happen.
"""

from __future__ import annotations

from .settings import CompactionSettings

__all__ = ["FIRST_WAIT_TURNS", "GROWTH_SHARE", "MAX_WAIT_TURNS", "SummarizerBackoff"]

FIRST_WAIT_TURNS = 2
"""Turns to wait after the first failure; doubled after each further failure in a row."""
MAX_WAIT_TURNS = 32
"""Longest wait, in turns."""
GROWTH_SHARE = 1 / 3
"""Growth since the failure that earns an early attempt, as a share of the tokens between the
trigger and the overflow line (10,000 tokens at the defaults)."""


class SummarizerBackoff:
    """The back-off of one agent's compaction attempts after summariser failures."""

    def __init__(self, settings: CompactionSettings) -> None:
        self.settings = settings
        self.failures = 0
        self._turns_waited = 0
        self._tokens_at_failure = 0

    @property
    def wait_turns(self) -> int:
        """Turns to wait after the latest failure (0 when the last attempt did not fail)."""
        if not self.failures:
            return 0
        return min(FIRST_WAIT_TURNS * 2 ** (self.failures - 1), MAX_WAIT_TURNS)

    @property
    def growth_tokens(self) -> int:
        """Growth since the failure after which the next attempt need not wait."""
        room = self.settings.overflow_tokens - self.settings.trigger_tokens
        return max(int(room * GROWTH_SHARE), 1)

    def failed(self, tokens: int) -> None:
        """The summariser failed with the request at `tokens`."""
        self.failures += 1
        self._turns_waited = 0
        self._tokens_at_failure = tokens

    def succeeded(self) -> None:
        self.failures = 0
        self._turns_waited = 0

    def turn_passed(self) -> None:
        if self.failures:
            self._turns_waited += 1

    def allows(self, tokens: int) -> bool:
        """Whether a compaction may be attempted now, with the next request at `tokens`."""
        if not self.failures or tokens >= self.settings.overflow_tokens:
            return True
        return (
            self._turns_waited >= self.wait_turns
            or tokens - self._tokens_at_failure >= self.growth_tokens
        )
