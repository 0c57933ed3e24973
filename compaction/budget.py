"""The context budget: a running total of the next request's size, updated in O(new messages).

Recounting a long history every turn is wasteful, so `ContextBudget` keeps a total and a
watermark (the id of the last message it has counted). When the API reports the usage of a
request, the total is reset to that exact figure (``input_tokens`` +
``cache_creation_input_tokens`` + ``cache_read_input_tokens``); messages added after that
request are then estimated one by one. The per-turn check therefore costs a tokenizer call per
new message, not per message in history.

Estimates are tiktoken's, and the model's tokenizer can count the same text quite differently
(service logs: about half as many tokens; short chat in its JSON framing: more). So each
calibration also measures the *scale*, reported tokens over estimated tokens of the same
request, and every estimate made afterwards is multiplied by it. The scale outlives the process
when its owner stores it (`memory_agent.conversation.compactor` keeps it in the agent's state): a
reopened agent sizes its first request with it instead of by raw estimate. With no measurement at
all, `UNMEASURED_SCALE` errs on the large side, so the first request stays under the trigger.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .records import MessageRecord
from .settings import CompactionSettings
from .tokens import TokenCounter, default_counter, message_tokens

__all__ = ["UNMEASURED_SCALE", "ContextBudget", "reported_input_tokens", "should_compact"]

_USAGE_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")

UNMEASURED_SCALE = 1.25
"""Scale for an agent whose requests were never measured. Short chat messages in the API's JSON
framing run about 15% over the estimate, and the CLI adds its own system text and tool
definitions; a quarter more keeps a first request sized by estimate alone under the trigger."""
SCALE_LIMITS = (0.2, 5.0)
"""A measured scale outside these bounds is clamped: it can only come from a request that does
not match the estimate (e.g. a usage figure of another request)."""
MEASURED_SHARE = 0.25
"""The scale is measured only on requests of at least this share of the trigger: on a small one,
text the client adds and the estimate never sees (the CLI's own system prompt, tool definitions)
dominates, and the ratio would say little about the conversation it is applied to."""


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
    message with an id up to ``through_id``; messages are counted once, in id order. It is the
    last reported usage (0 before any) plus ``scale`` times the estimate of everything counted
    since.
    """

    def __init__(
        self,
        settings: CompactionSettings,
        counter: TokenCounter | None = None,
        *,
        fixed_tokens: int = 0,
        scale: float = 1.0,
    ) -> None:
        self.settings = settings
        self.counter = counter if counter is not None else default_counter()
        self._scale = _clamped(scale)
        self._fixed = fixed_tokens
        self._through_id: int | None = None
        self._calibrated = False
        self._measured = False
        self._grown = self._scale * fixed_tokens
        self._start(0, fixed_tokens)

    def _start(self, base: int, estimate: int) -> None:
        """`base` reported tokens; `estimate` is the whole request's estimate (fixed + messages)."""
        self._base = base
        self._estimate = estimate
        self._base_estimate = 0 if base == 0 else estimate
        # (message id, whole estimate once it was counted), since the last calibration: what a
        # later calibration divides by, whichever message its request ended with.
        self._marks: deque[tuple[int, int]] = deque()
        self._estimate_known = True

    @property
    def total_tokens(self) -> int:
        return self._base + round(self._scale * (self._estimate - self._base_estimate))

    @property
    def scaled_estimate(self) -> int:
        """The request by estimate, each part times the scale in force when it was counted.
        Unlike `total_tokens` it does not jump when a reported usage corrects the total or a
        new scale is measured, so the difference between two moments is what was added in
        between (how much a turn grew the context)."""
        return round(self._grown)

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

    @property
    def scale(self) -> float:
        """Reported tokens per estimated token, applied to every estimate."""
        return self._scale

    @property
    def scale_measured(self) -> bool:
        """Whether `scale` was measured on a reported usage by this budget."""
        return self._measured

    def add(self, messages: Iterable[MessageRecord]) -> int:
        """Count messages newer than the watermark; returns the tokens added (scaled).

        Messages already counted (id at or below the watermark) are skipped, so adding the
        same message twice is harmless.
        """
        before = self.total_tokens
        for message in messages:
            if self._through_id is not None and message.id <= self._through_id:
                continue
            tokens = message_tokens(message, self.counter)
            self._estimate += tokens
            self._grown += self._scale * tokens
            self._through_id = message.id
            self._marks.append((message.id, self._estimate))
        return self.total_tokens - before

    def observe(self, history: Sequence[MessageRecord]) -> int:
        """Count the tail of ``history`` not yet seen, scanning back from the end only."""
        start = len(history)
        while start > 0 and (self._through_id is None or history[start - 1].id > self._through_id):
            start -= 1
        return self.add(history[start:])

    def calibrate(self, usage: Mapping[str, Any] | Any, *, through_id: int | None) -> None:
        """Take the API's usage of one request as the exact total, and measure the scale.

        Args:
            usage: The ``usage`` of a single request (not a sum over several requests).
            through_id: Id of the last message that request carried; later messages are
                estimated when added. None when the request carried no stored message.
        """
        reported = reported_input_tokens(usage)
        estimate = self._estimate_through(through_id)
        if estimate is not None:
            self._grown -= self._scale * (self._estimate - estimate)  # recounted when added again
        if (
            estimate is not None
            and reported > 0
            and estimate >= MEASURED_SHARE * self.settings.trigger_tokens
        ):
            self._scale = _clamped(reported / estimate)
            self._measured = True
        self._start(reported, estimate if estimate is not None else self._estimate)
        self._estimate_known = estimate is not None
        if through_id is not None:
            self._marks.append((through_id, self._estimate))
        self._through_id = through_id
        self._calibrated = True

    def _estimate_through(self, through_id: int | None) -> int | None:
        """The whole estimate of a request that ended with message `through_id` (None: unknown)."""
        if not self._estimate_known:
            return None
        if through_id is None:
            return self._fixed
        for message_id, estimate in reversed(self._marks):
            if message_id == through_id:
                return estimate
            if message_id < through_id:
                break
        return None

    def set_fixed_tokens(self, tokens: int) -> None:
        """The system prompt, tools or summary changed size; shift the total by the difference."""
        self._estimate += tokens - self._fixed
        self._grown += self._scale * (tokens - self._fixed)
        self._marks = deque(
            (message_id, estimate + tokens - self._fixed) for message_id, estimate in self._marks
        )
        self._fixed = tokens

    def reset(self, total_tokens: int, *, through_id: int | None, fixed_tokens: int) -> None:
        """Start again from a known total, e.g. a compaction outcome's ``tokens_after``."""
        self._fixed = fixed_tokens
        self._grown = total_tokens
        self._start(0, fixed_tokens)
        self._base, self._base_estimate = total_tokens, fixed_tokens
        self._estimate_known = False
        self._through_id = through_id
        self._calibrated = False

    def recount(self, messages: Iterable[MessageRecord], *, fixed_tokens: int) -> int:
        """Count from scratch (once, e.g. when an agent is opened); O(history)."""
        self._fixed = fixed_tokens
        self._grown = self._scale * fixed_tokens
        self._start(0, fixed_tokens)
        self._through_id = None
        self._calibrated = False
        self.add(messages)
        return self.total_tokens

    def should_compact(self, headroom: int = 0) -> bool:
        """Whether the next request reaches the compaction trigger, if the conversation grows by
        ``headroom`` tokens before it is sent (the next prompt, the next turn's tool results)."""
        return should_compact(self.total_tokens + max(headroom, 0), self.settings)

    def would_overflow(self) -> bool:
        """Whether the next request is past the overflow threshold (deferring is unsafe)."""
        return self.total_tokens >= self.settings.overflow_tokens


def _clamped(scale: float) -> float:
    low, high = SCALE_LIMITS
    return min(max(float(scale), low), high)
