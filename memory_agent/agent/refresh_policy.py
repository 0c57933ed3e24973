"""When a changed memory is rebuilt into the system prompt: after every edit, or only when it must.

The system prompt sits before the whole conversation, so rebuilding it makes the next request a
prompt-cache write of everything (1.25x the base price, against 0.1x for a cache read). Two
policies:

* `live`: rebuild before the next turn whenever memory changed. The prompt always shows the
  current memory; every memory edit costs a cache write of the whole context.
* `deferred` (the default): the model's own edits do not rebuild it, because the edit tools'
  results already show the model the block's new value in the conversation (and the memory
  layer records that the agent has seen that version, so later edits are not refused as stale).
  It rebuilds only when it must: a change the model did not make, a compaction (which starts a
  new session anyway), or after `max_stale_turns` turns on a prompt that lags its own edits.

A change counts as the model's own when this agent's model-facing edit wrote it during one of
the agent's turns. Anything else is rebuilt before the next turn: any change between turns
(another agent, another process, the application, `memory-agent blocks set`), another agent's
write or the owner's update, undo or restore even during a turn, and a block attached, detached,
renamed or moved in or out of the prompt. So a change the model did not make reaches it by its
next turn under both policies. Known limit: another process writing as this same agent id with
a model-facing edit while a turn runs is taken for the model's own edit, and shows at the next
rebuild.
"""

from __future__ import annotations

from typing import Literal

from ..errors import ConfigurationError
from ..manager import MemoryManager

__all__ = ["DEFAULT_MAX_STALE_TURNS", "PromptRefresh", "PromptRefreshPolicy", "make_policy"]

PromptRefresh = Literal["live", "deferred"]

DEFAULT_MAX_STALE_TURNS = 25
"""Turns a deferred prompt may lag the model's own edits (chosen by bench/cache_cost_bench.py)."""


class PromptRefreshPolicy:
    """Decides before each turn whether changed memory is rebuilt into the system prompt."""

    def __init__(self, mode: PromptRefresh = "deferred", *, max_stale_turns: int = DEFAULT_MAX_STALE_TURNS) -> None:
        if mode not in ("live", "deferred"):
            raise ConfigurationError(f"prompt_refresh must be 'live' or 'deferred', got {mode!r}.")
        if max_stale_turns < 0:
            raise ConfigurationError(f"max_stale_turns must be 0 or more, got {max_stale_turns}.")
        self.mode: PromptRefresh = mode
        self.max_stale_turns = max_stale_turns
        self.deferred_turns = 0
        """Turns run so far on a prompt that lagged the model's own edits (for benches)."""
        self._versions: dict[str, int] = {}
        self._versions_after_turn: dict[str, int] = {}
        self._layout: tuple[object, ...] = ()
        self._stale_turns = 0

    def rebuilt(self, memory: MemoryManager, agent_id: str) -> None:
        """Remember what the prompt just built shows."""
        self._versions = memory.core.versions(agent_id)
        self._versions_after_turn = self._versions
        self._layout = _layout(memory, agent_id)
        self._stale_turns = 0

    def turn_ended(self, memory: MemoryManager, agent_id: str) -> None:
        """Remember the versions at the end of a turn: whatever changes before the next one, the
        model did not do."""
        self._versions_after_turn = memory.core.versions(agent_id)

    def must_rebuild(self, memory: MemoryManager, agent_id: str) -> bool:
        """Whether memory that changed since the last build must be rebuilt before this turn."""
        if self.mode == "live" or self._stale_turns >= self.max_stale_turns:
            return True
        if (memory.core.versions(agent_id) != self._versions_after_turn
                or _layout(memory, agent_id) != self._layout
                or memory.core.changed_by_others(agent_id, self._versions)):
            return True
        self._stale_turns += 1
        self.deferred_turns += 1
        return False


def _layout(memory: MemoryManager, agent_id: str) -> tuple[object, ...]:
    """Which blocks the prompt shows and how (leaving out their values), and which summary."""
    summary = memory.recall.latest_summary(agent_id)
    blocks = sorted((b.block_id, b.label, b.in_prompt, b.read_only) for b in memory.core.list_blocks(agent_id))
    return (summary.summary_id if summary else 0, *blocks)


def make_policy(policy: PromptRefresh | PromptRefreshPolicy) -> PromptRefreshPolicy:
    """A policy from its name, or the given one."""
    return policy if isinstance(policy, PromptRefreshPolicy) else PromptRefreshPolicy(policy)
