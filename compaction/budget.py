"""The context budget: a running total of the next request's size, updated in O(new messages).

Recounting a long history every turn is wasteful, so `ContextBudget` keeps a total and a
watermark (the id of the last message it has counted). When the API reports the usage of a
request, the total is reset to that exact figure (``input_tokens`` +
``cache_creation_input_tokens`` + ``cache_read_input_tokens``); messages added after that
request are then estimated one by one. The per-turn check therefore costs a tokenizer call per
new message, not per message in history.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .records import MessageRecord
from .settings import CompactionSettings
from .tokens import TokenCounter, default_counter, message_tokens

__all__ = ["ContextBudget", "reported_input_tokens", "should_compact"]

_USAGE_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def should_compact(tokens: int, settings: CompactionSettings) -> bool:
    """Whether a request of ``tokens`` reaches the trigger (always False when disabled)."""
    return settings.enabled and tokens >= settings.trigger_tokens


def reported_input_tokens(usage: Mapping[str, Any] | Any) -> int:
    """Whole prompt size of one request from its reported usage (a mapping or an object).

    Cached tokens are still in the context window, so they count; missing fields count as 0.
    """
    total = 0
    for name in _USAGE_FIELDS:
        value = usage.get(name) if isinstance(usage, Mapping) else getattr(usage, name, None)
        total += int(value or 0)
    return total


class ContextBudget:
    """Running estimate of the next request's input tokens.

    Invariant: ``total_tokens`` covers the fixed part (system prompt, tools, summary) and every
    message with an id up to ``through_id``; messages are counted once, in id order.
    """

    def __init__(
        self,
        settings: CompactionSettings,
        counter: TokenCounter | None = None,
        *,
        fixed_tokens: int = 0,
    ) -> None:
        self.settings = settings
        self.counter = counter if counter is not None else default_counter()
        self._fixed = fixed_tokens
        self._total = fixed_tokens
        self._through_id: int | None = None
        self._calibrated = False

    @property
    def total_tokens(self) -> int:
        return self._total

    @property
    def fixed_tokens(self) -> int:
        return self._fixed

    @property
    def through_id(self) -> int | None:
        """Id of the last message counted (None before any)."""
        return self._through_id

    @property
    def calibrated(self) -> bool:
        """Whether the total rests on usage the API reported (plus estimates since)."""
        return self._calibrated

    def add(self, messages: Iterable[MessageRecord]) -> int:
        """Count messages newer than the watermark; returns the tokens added.

        Messages already counted (id at or below the watermark) are skipped, so adding the
        same message twice is harmless.
        """
        added = 0
        for message in messages:
            if self._through_id is not None and message.id <= self._through_id:
                continue
            added += message_tokens(message, self.counter)
            self._through_id = message.id
        self._total += added
        return added

    def observe(self, history: Sequence[MessageRecord]) -> int:
        """Count the tail of ``history`` not yet seen, scanning back from the end only."""
        start = len(history)
        while start > 0 and (self._through_id is None or history[start - 1].id > self._through_id):
            start -= 1
        return self.add(history[start:])

    def calibrate(self, usage: Mapping[str, Any] | Any, *, through_id: int | None) -> None:
        """Take the API's usage of one request as the exact total.

        Args:
            usage: The ``usage`` of a single request (not a sum over several requests).
            through_id: Id of the last message that request carried; later messages are
                estimated when added. None when the request carried no stored message.
        """
        self._total = reported_input_tokens(usage)
        self._through_id = through_id
        self._calibrated = True

    def set_fixed_tokens(self, tokens: int) -> None:
        """The system prompt, tools or summary changed size; shift the total by the difference."""
        self._total += tokens - self._fixed
        self._fixed = tokens

    def reset(self, total_tokens: int, *, through_id: int | None, fixed_tokens: int) -> None:
        """Start again from a known total, e.g. a compaction outcome's ``tokens_after``."""
        self._total = total_tokens
        self._fixed = fixed_tokens
        self._through_id = through_id
        self._calibrated = False

    def recount(self, messages: Iterable[MessageRecord], *, fixed_tokens: int) -> int:
        """Count from scratch (once, e.g. when an agent is opened); O(history)."""
        self.reset(fixed_tokens, through_id=None, fixed_tokens=fixed_tokens)
        self.add(messages)
        return self._total

    def should_compact(self, headroom: int = 0) -> bool:
        """Whether the next request reaches the compaction trigger, if the conversation grows by
        ``headroom`` tokens before it is sent (the next prompt, the next turn's tool results)."""
        return should_compact(self._total + max(headroom, 0), self.settings)

    def would_overflow(self) -> bool:
        """Whether the next request is past the overflow threshold (deferring is unsafe)."""
        return self._total >= self.settings.overflow_tokens
