"""When a changed memory is rebuilt into the system prompt: after every edit, or only when it must.

The system prompt sits before the whole conversation, so rebuilding it makes the next request a
prompt-cache write of everything (1.25x the base price, against 0.1x for a cache read). Two
policies:

* `live`: rebuild before the next turn whenever memory changed. The prompt always shows the
  current memory; every memory edit costs a cache write of the whole context.
* `deferred`: the model's own edits do not rebuild it, because the edit tools'
  results already show the model the block's new value in the conversation (and the memory
  layer records that the agent has seen that version, so later edits are not refused as stale).
  It rebuilds only when it must: a change the model did not make, a compaction (which starts a
  new session anyway), or after `max_stale_turns` turns on a prompt that lags its own edits.

* `announce` (the default): as `deferred`, but a change the model did not make does not rebuild the
  prompt either: the block's new value comes with the model's next user message, in a
  `<memory_changes>` section of its `<turn_context>` (so it too stays a cached part of the
  conversation). Only a compaction, a change of which blocks the prompt shows, or `max_stale_turns`
  rebuild it.

A change counts as the model's own when this agent's model wrote it during one of the agent's
turns with a block tool whose result shows the whole new value (`core_memory_append`,
`core_memory_replace`, `memory_insert`, `memory_rethink`). The `memory` tool's `str_replace` and
`insert` answer with a snippet, as Anthropic's tool does, so their edits are treated like
anyone else's. Anything else reaches the model before its next turn (rebuilt into the prompt,
or with `announce` in the turn's message): any change between turns
(another agent, another process, the application, `memory-agent blocks set`), another agent's
write or the owner's update, undo or restore even during a turn, and a block attached, detached,
renamed or moved in or out of the prompt. So a change the model did not make reaches it by its
next turn under every policy. Known limit: another process writing as this same agent id with
a model-facing edit while a turn runs is taken for the model's own edit, and shows at the next
rebuild.
"""

from __future__ import annotations

from typing import Literal

from ..errors import ConfigurationError
from ..manager import MemoryManager
from ..prompt.turn_context import render_memory_changes

__all__ = [
    "DEFAULT_MAX_STALE_TURNS",
    "DEFAULT_PROMPT_REFRESH",
    "PromptRefresh",
    "PromptRefreshPolicy",
    "make_policy",
]

PromptRefresh = Literal["live", "deferred", "announce"]

DEFAULT_PROMPT_REFRESH: PromptRefresh = "announce"
"""Chosen by bench/cache_cost_bench.py: 0.48 of `live`'s cost, against 0.56 for `deferred`."""

DEFAULT_MAX_STALE_TURNS = 25
"""Turns a prompt may lag memory before it is rebuilt anyway. On the bench, 10 cost 0.58 of
`live` and 25 cost 0.46, 50 cost 0.45: past the compaction interval it seldom fires, and a
lower bound keeps the prompt and the conversation from disagreeing for long."""


class PromptRefreshPolicy:
    """Decides before each turn whether changed memory is rebuilt into the system prompt."""

    def __init__(
        self,
        mode: PromptRefresh = DEFAULT_PROMPT_REFRESH,
        *,
        max_stale_turns: int = DEFAULT_MAX_STALE_TURNS,
    ) -> None:
        if mode not in ("live", "deferred", "announce"):
            raise ConfigurationError(
                f"prompt_refresh must be 'live', 'deferred' or 'announce', got {mode!r}."
            )
        if max_stale_turns < 0:
            raise ConfigurationError(f"max_stale_turns must be 0 or more, got {max_stale_turns}.")
        self.mode: PromptRefresh = mode
        self.max_stale_turns = max_stale_turns
        self.deferred_turns = 0
        """Turns run so far on a prompt that lagged memory (for benches)."""
        self.announced_blocks = 0
        """Blocks shown in a turn's `<memory_changes>` instead of a rebuilt prompt (for benches)."""
        self._known: dict[str, int] = {}
        self._versions_after_turn: dict[str, int] = {}
        self._to_announce: list[str] = []
        self._layout: tuple[object, ...] = ()
        self._stale_turns = 0
        self.allow_secret = False
        """The agent's clearance (`MemoryAwareAgent(allow_secret=...)`): whether its secret blocks
        are announced to the model like the others."""
        self._built_from: str | None = None

    def rebuilt(
        self,
        memory: MemoryManager,
        agent_id: str,
        *,
        versions: dict[str, int] | None = None,
        fingerprint: str | None = None,
        summary_id: int | None = None,
    ) -> None:
        """Remember what the prompt just built shows: `versions`, read before it was built (a
        block changed while it was built then still counts as changed), else the current ones;
        `fingerprint`, the memory it was built from (`is_current`); `summary_id`, the newest
        summary's id as the caller read it (0: none), read here when not given."""
        self._known = (
            dict(versions) if versions is not None else memory.block_versions(agent_id=agent_id)
        )
        self._versions_after_turn = dict(self._known)
        self._layout = _layout(memory, agent_id, summary_id)
        self._stale_turns = 0
        self._to_announce = []
        self._built_from = fingerprint

    def is_current(self, fingerprint: str) -> bool:
        """Whether the prompt last built shows the memory with this fingerprint (the agent's one
        record of it: nothing to decide while it holds)."""
        return self._built_from is not None and fingerprint == self._built_from

    @property
    def pending_announcement(self) -> tuple[str, ...]:
        """Ids of the blocks the next turn's message will announce."""
        return tuple(self._to_announce)

    def turn_ended(self, memory: MemoryManager, agent_id: str) -> None:
        """Remember the versions at the end of a turn: whatever changes before the next one, the
        model did not do."""
        self._versions_after_turn = memory.block_versions(agent_id=agent_id)

    def must_rebuild(
        self, memory: MemoryManager, agent_id: str, *, summary_id: int | None = None
    ) -> bool:
        """Whether memory that changed since the last build must be rebuilt before this turn
        (`summary_id` as in `rebuilt`)."""
        if self.mode == "live" or self._stale_turns >= self.max_stale_turns:
            return True
        if _layout(memory, agent_id, summary_id) != self._layout:
            return True
        foreign = self._foreign_changes(memory, agent_id)
        if foreign and self.mode == "deferred":
            return True
        self._to_announce = foreign
        self._stale_turns += 1
        self.deferred_turns += 1
        return False

    def _foreign_changes(self, memory: MemoryManager, agent_id: str) -> list[str]:
        """Ids of blocks changed by anything but the model's own edits since it last saw them."""
        current = memory.block_versions(agent_id=agent_id)
        between_turns = {
            block_id
            for block_id, version in current.items()
            if self._versions_after_turn.get(block_id) != version
        }
        return sorted(
            between_turns | set(memory.blocks_changed_by_others(self._known, agent_id=agent_id))
        )

    def announcement(self, memory: MemoryManager, agent_id: str) -> str:
        """The `<memory_changes>` text for this turn's message (empty when nothing is pending),
        after which those versions count as seen by the model."""
        if not self._to_announce:
            return ""
        wanted = set(self._to_announce)
        blocks = [
            block
            for block in memory.list_blocks(agent_id=agent_id, allow_secret=self.allow_secret)
            if block.block_id in wanted and block.in_prompt
        ]
        self._to_announce = []
        memory.mark_blocks_seen(blocks, agent_id=agent_id)
        for block in blocks:
            self._known[block.block_id] = block.version
        self.announced_blocks += len(blocks)
        return render_memory_changes(blocks)


def _layout(memory: MemoryManager, agent_id: str, summary_id: int | None) -> tuple[object, ...]:
    """Which blocks the prompt may show and how (leaving out their values), and which summary.
    Every block counts, at every level: a block changing level (a secret leaving the prompt of an
    agent not allowed it) changes the layout, and the prompt is rebuilt at the agent's clearance."""
    if summary_id is None:
        summary = memory.get_summary_record(agent_id=agent_id)
        summary_id = summary.summary_id if summary else 0
    blocks = sorted(
        (b.block_id, b.label, b.in_prompt, b.read_only, b.sensitivity)
        for b in memory.list_blocks(agent_id=agent_id, allow_secret=True)
    )
    return (summary_id, *blocks)


def make_policy(policy: PromptRefresh | PromptRefreshPolicy) -> PromptRefreshPolicy:
    """A policy from its name, or the given one."""
    return policy if isinstance(policy, PromptRefreshPolicy) else PromptRefreshPolicy(policy)
