"""How much a turn adds to the context, so compaction can come before a request crosses the trigger.

Checking "is the context over the trigger?" after a turn lets the next turn's request cross it:
the next prompt (a 20 kB paste) and the next tool results (a large log) arrive before any check
can run, and nothing can be compacted in the middle of a turn. So the agent remembers how much
each of the last turns grew the context and compacts as soon as one more turn like the largest
of them would reach the trigger.
"""

from __future__ import annotations

from collections import deque

__all__ = ["TurnGrowth"]


class TurnGrowth:
    """The growth in tokens of the last `window` turns."""

    def __init__(self, window: int = 20) -> None:
        self._recent: deque[int] = deque(maxlen=window)
        self._start: int | None = None

    def seed(self, turn_sizes: list[int]) -> None:
        """Recent turns' sizes from storage, so a reopened agent keeps its headroom."""
        self._recent.extend(max(size, 0) for size in turn_sizes)

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
        """Tokens to keep free for the next turn: the largest recent growth."""
        return max(self._recent, default=0)
