"""How much a turn adds to the context, so compaction can come before a request crosses the trigger.

Checking "is the context over the trigger?" after a turn lets the next turn's request cross it:
the next prompt (a 20 kB paste) and the next tool results (a large log) arrive before any check
can run, and nothing can be compacted in the middle of a turn. So the agent remembers how much
each of the last turns grew the context and compacts as soon as one more turn a quarter larger
than the largest of them would reach the trigger. The quarter is there because the next turn
can be the largest yet: with estimates scaled to the API's own count there is no other slack
(a 1,000-turn soak came within 0.3% of the trigger without it).
"""

from __future__ import annotations

from collections import deque

__all__ = ["HEADROOM_MARGIN", "TurnGrowth"]

HEADROOM_MARGIN = 1.25
"""The next turn is expected to grow the context by up to this times the largest recent growth."""


class TurnGrowth:
    """The growth in tokens of the last `window` turns."""

    def __init__(self, window: int = 20) -> None:
        self._recent: deque[int] = deque(maxlen=window)
        self._start: int | None = None

    def seed(self, turn_sizes: list[int], *, scale: float = 1.0) -> None:
        """Recent turns' sizes from storage, so a reopened agent keeps its headroom.

        Stored sizes are estimates; `scale` (the agent's reported tokens per estimated token)
        puts them in the terms of the growth measured live, which rests on reported usage.
        """
        self._recent.extend(max(round(size * scale), 0) for size in turn_sizes)

    def start(self, tokens: int) -> None:
        """The context's size before the turn's prompt is added."""
        self._start = tokens

    def finish(self, tokens: int) -> None:
        """The context's size after the turn (its prompt, tool calls and answers)."""
        if self._start is not None:
            self._recent.append(max(tokens - self._start, 0))
        self._start = None

    @property
    def headroom(self) -> int:
        """Tokens to keep free for the next turn: the largest recent growth, with a margin."""
        return round(max(self._recent, default=0) * HEADROOM_MARGIN)
