"""Where to cut a conversation: the pure planning half of compaction.

A cut splits the messages into an evicted prefix (to be summarised) and a kept suffix. A cut is
valid only at a turn boundary (the kept part starts with a user message that is a real prompt)
and only where no ``tool_use`` is separated from its ``tool_result``. When no valid cut exists
the plan is empty: an empty plan is always better than a cut that breaks the conversation.

``sliding_window`` picks the earliest valid cut that evicts at least ``window_percentage`` of
the conversation's tokens *and* brings the request (fixed part + summary + kept) under the
target, less the caller's ``headroom`` (what the next turn is expected to add), keeping at least
``min_kept_messages``; if no cut fits, the latest allowed cut (the most relief). ``all`` evicts
everything before the last turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

from .records import MessageRecord
from .settings import CompactionSettings
from .tokens import TokenCounter, default_counter, message_tokens

__all__ = ["CompactionPlan", "plan_compaction", "valid_cuts"]


@dataclass(frozen=True)
class CompactionPlan:
    """The split of a conversation into messages to summarise and messages to keep.

    Attributes:
        evicted: Oldest messages, to be summarised and taken out of context (empty: no cut).
        kept: The remaining messages, starting at a turn boundary.
        evicted_tokens: Tokens of ``evicted``.
        kept_tokens: Tokens of ``kept``.
        fits: Whether fixed part + summary + kept (+ headroom) is under the settings' target.
        reason: Why the plan is empty, or how the cut was chosen.
    """

    evicted: tuple[MessageRecord, ...]
    kept: tuple[MessageRecord, ...]
    evicted_tokens: int = 0
    kept_tokens: int = 0
    fits: bool = True
    reason: str = ""

    @property
    def is_empty(self) -> bool:
        """True when there is nothing to evict."""
        return not self.evicted


def valid_cuts(messages: Sequence[MessageRecord]) -> list[int]:
    """Indices ``c`` (1 ≤ c < len) where ``messages[:c]`` / ``messages[c:]`` is a legal split."""
    spanned = _cuts_inside_tool_pairs(messages)
    return [
        index
        for index in range(1, len(messages))
        if messages[index].is_turn_start and not spanned[index]
    ]


def _cuts_inside_tool_pairs(messages: Sequence[MessageRecord]) -> list[bool]:
    """``spanned[c]`` is True when a cut at c would split some tool_use from its result."""
    opened_at: dict[str, int] = {}
    depth_change = [0] * (len(messages) + 1)
    for index, message in enumerate(messages):
        for tool_id in message.tool_result_ids:
            start = opened_at.get(tool_id)
            if start is not None and start < index:
                # Cuts at start+1 .. index would put the use before and the result after.
                depth_change[start + 1] += 1
                depth_change[index + 1] -= 1
        for tool_id in message.tool_use_ids:
            opened_at[tool_id] = index
    return [depth > 0 for depth in accumulate(depth_change)]


def plan_compaction(
    messages: Sequence[MessageRecord],
    settings: CompactionSettings,
    fixed_tokens: int = 0,
    summary_tokens: int | None = None,
    *,
    counter: TokenCounter | None = None,
    headroom: int = 0,
) -> CompactionPlan:
    """Choose which messages to evict.

    Args:
        messages: The conversation still in context, oldest first.
        settings: Mode, window share, minimum kept and the target size.
        fixed_tokens: Tokens of the request outside the messages and the summary (system
            prompt, tool definitions).
        summary_tokens: Tokens to reserve for the new summary; default
            ``settings.summary_reserve_tokens``.
        counter: Estimates tokens of messages whose ``tokens`` is None.
        headroom: Tokens to leave free under the target for what the next request adds (the
            next prompt, the next turn's tool results). A caller that checks "request plus
            headroom over the trigger?" before each turn passes the same headroom here, so the
            turn after a compaction does not find another one due.
    """
    counter = counter if counter is not None else default_counter()
    reserve = settings.summary_reserve_tokens if summary_tokens is None else summary_tokens
    reserve += max(headroom, 0)
    sizes = [message_tokens(message, counter) for message in messages]
    prefix = [0, *accumulate(sizes)]
    cuts = valid_cuts(messages)
    if settings.mode == "all":
        return _plan_all(messages, prefix, cuts, settings.target_tokens - fixed_tokens - reserve)
    return _plan_sliding(messages, prefix, cuts, settings, fixed_tokens + reserve)


def _plan_all(
    messages: Sequence[MessageRecord], prefix: list[int], cuts: list[int], room: int
) -> CompactionPlan:
    if not cuts:
        return _empty(messages, prefix, room, "no turn boundary before the last turn")
    return _split(messages, prefix, cuts[-1], room, "everything before the last turn")


def _plan_sliding(
    messages: Sequence[MessageRecord],
    prefix: list[int],
    cuts: list[int],
    settings: CompactionSettings,
    overhead: int,
) -> CompactionPlan:
    total = prefix[-1]
    room = settings.target_tokens - overhead
    allowed = [cut for cut in cuts if len(messages) - cut >= settings.min_kept_messages]
    if not allowed:
        return _empty(
            messages,
            prefix,
            room,
            f"no turn boundary leaves the {settings.min_kept_messages} most recent messages "
            "in context without splitting a tool call from its result",
        )
    least_evicted = settings.window_percentage * total
    for cut in allowed:
        if prefix[cut] >= least_evicted and total - prefix[cut] <= room:
            return _split(messages, prefix, cut, room, "earliest cut evicting the share that fits")
    return _split(messages, prefix, allowed[-1], room, "latest allowed cut; none fits the target")


def _split(
    messages: Sequence[MessageRecord], prefix: list[int], cut: int, room: int, reason: str
) -> CompactionPlan:
    kept_tokens = prefix[-1] - prefix[cut]
    return CompactionPlan(
        evicted=tuple(messages[:cut]),
        kept=tuple(messages[cut:]),
        evicted_tokens=prefix[cut],
        kept_tokens=kept_tokens,
        fits=kept_tokens <= room,
        reason=reason,
    )


def _empty(
    messages: Sequence[MessageRecord], prefix: list[int], room: int, reason: str
) -> CompactionPlan:
    return CompactionPlan(
        evicted=(),
        kept=tuple(messages),
        kept_tokens=prefix[-1],
        fits=prefix[-1] <= room,
        reason=reason,
    )
