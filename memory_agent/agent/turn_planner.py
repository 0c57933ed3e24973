"""The turn planner: what happens around each turn, decided in one place from one read of memory.

Before a turn the agent asks `before_turn(prompt)` for a `TurnPlan`: compact first? build the
system prompt again (a live refresh or a new process)? which changed blocks travel with the
prompt? After the turn's result it calls `after_turn(usage)`, which counts the turn into the
token budget and decides whether the next turn compacts first. The planner holds everything those
answers rest on: the token budget (read from the compactor once per turn, with the newest summary
read once per turn), how much recent turns grew the context (`TurnGrowth`), the fixed part of the
request, whether a compaction is due, and the refresh policy, which also records what the running
prompt was built from (the memory fingerprint): the one answer to "is the prompt current?".
With automatic recall on (`auto_recall.AutoRecall`), `recall(plan)` adds to the plan what was
found in memory for the turn's prompt, for its `<turn_context>`.

A turn that compacts or rebuilds its prompt reads more (the compaction and the rendering read the
new summary themselves); a turn on unchanged memory reads the summary and the budget once each.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from compaction import CompactionOutcome, ContextBudget, MessageRecord, message_tokens

from ..conversation.compactor import Compactor, Unread
from ..conversation.recall import StoredSummary
from ..manager import MemoryManager
from ..prompt.turn_context import RecalledItem
from .auto_recall import AutoRecall, RecallReport
from .refresh_policy import PromptRefreshPolicy
from .turn_growth import TurnGrowth

__all__ = ["TurnPlan", "TurnPlanner"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TurnPlan:
    """What the agent does before sending a turn's prompt."""

    compact: bool = False
    """Compact first: the request would reach the compaction trigger. The agent compacts, tells
    the planner (`compacted`) and asks again (`replan`) for the prompt with the new summary."""
    headroom: int = 0
    """With `compact`: the tokens the decision added to the request (the next turn's expected
    growth, or the known prompt if larger). The compaction leaves them free under the target
    too, so one compaction is enough for the turn."""
    rebuild: bool = False
    """Build the system prompt from memory again (a live refresh, else a new process)."""
    fingerprint: str = ""
    """The memory the prompt shows once built (`MemoryManager.memory_fingerprint`)."""
    versions: Mapping[str, int] | None = None
    """Block versions read before the prompt is built: a block that changes while it is built
    then still counts as unseen, and reaches the model next turn."""
    announce: tuple[str, ...] = ()
    """Ids of blocks whose new values travel in this turn's `<turn_context>` (`announce` policy)."""
    recalled: tuple[RecalledItem, ...] = field(default=())
    """Memories recalled for this turn's `<turn_context>` (automatic recall; empty when off)."""
    recall_notes: tuple[str, ...] = ()
    """What recall could not do this turn (a failed search, a fallback), told to the model."""


class TurnPlanner:
    """One agent's turn state, and the decisions made from it.

    `count_fixed` counts the request outside the conversation (the user's system prompt, rendered
    memory, tool definitions), the summary left out: the budget adds it.
    """

    def __init__(
        self,
        memory: MemoryManager,
        agent_id: str,
        compactor: Compactor,
        policy: PromptRefreshPolicy,
        *,
        count_fixed: Callable[[], int],
        auto_recall: AutoRecall | None = None,
    ) -> None:
        self.memory = memory
        self.auto_recall = auto_recall
        """Automatic recall, run before each turn with a known prompt (None: off)."""
        self.last_recall: RecallReport | None = None
        """What recall did for the latest turn (its items, tokens, time and notes)."""
        self._recall_prompt: str | None = None
        self.agent_id = agent_id
        self.compactor = compactor
        self.policy = policy
        self._count_fixed = count_fixed
        self._growth = TurnGrowth()
        self._growth.seed(self._recent_turn_sizes(), scale=compactor.scale(agent_id))
        self._fixed_tokens = 0
        self._due = False
        self._summary: StoredSummary | None = None
        self._budget: ContextBudget | None = None
        self._budget_fresh = False

    # ----- questions ----------------------------------------------------------------------

    @property
    def compaction_due(self) -> bool:
        """Whether the next turn compacts before its request (set by the planner alone)."""
        return self._due

    @property
    def fixed_tokens(self) -> int:
        """The request outside the conversation, as counted when the prompt was last built."""
        return self._fixed_tokens

    @property
    def headroom(self) -> int:
        """Tokens kept free for the next turn (`TurnGrowth.headroom`)."""
        return self._growth.headroom

    # ----- before a turn ------------------------------------------------------------------

    def before_turn(
        self, prompt: str | None, *, connected: bool, can_refresh_live: bool
    ) -> TurnPlan:
        """The plan for the next turn (or for connecting, with no prompt).

        Reads the newest summary once and the budget once. A known prompt that, with the turn's
        expected growth, would carry the request over the trigger makes the turn compact first;
        so does a history that would, when no process runs yet (an import, a restart, a
        long-closed agent): compacted before the process starts, not by a second one at the
        first prompt. The plan's `headroom` is what was added, for the compaction to leave free.
        """
        self._summary = self.memory.get_summary_record(agent_id=self.agent_id)
        self._recall_prompt = prompt
        fixed = self._fixed_tokens if connected else self._count_fixed()
        budget = self._read_budget(fixed)
        headroom = self._growth.headroom
        if prompt is not None:
            # Kept in context, the prompt is sent after the compaction.
            estimate = message_tokens(
                MessageRecord(id=0, role="user", content=prompt), self.compactor.counter
            )
            headroom = max(headroom, self.compactor.scaled(self.agent_id, estimate))
        if not self._due and (not connected or prompt is not None):
            self._due = self.compactor.compaction_due(self.agent_id, budget, headroom)
        if self._due:
            self._due = False  # spent by this plan: a summariser failure is not retried this turn
            return TurnPlan(compact=True, headroom=headroom)
        return self.replan(connected=connected, can_refresh_live=can_refresh_live)

    def compacted(self, outcome: CompactionOutcome) -> None:
        """A compaction ran (planned or manual). When it changed the context, nothing is due any
        more, and the summary and the budget are read again."""
        if outcome.changed:
            self._due = False
            self._summary = self.memory.get_summary_record(agent_id=self.agent_id)
            self._budget = None

    def replan(self, *, connected: bool, can_refresh_live: bool) -> TurnPlan:
        """Whether the prompt must be built again, on the summary already read this turn."""
        return self._prompt_plan(connected=connected, can_refresh_live=can_refresh_live)

    def recall(self, plan: TurnPlan) -> TurnPlan:
        """`plan` with what automatic recall finds for the prompt given to `before_turn` (once:
        the prompt is then spent). Asked after any compaction, so messages it evicted can be
        found, and before the prompt is stored, so the prompt cannot find itself. Unchanged when
        recall is off or the turn's prompt is not known (a streamed prompt, connecting)."""
        prompt, self._recall_prompt = self._recall_prompt, None
        if self.auto_recall is None or prompt is None:
            return plan
        try:
            report = self.auto_recall.recall(prompt)
        except Exception as error:  # recall is a help: the turn goes on without it, and says so
            logger.warning("auto-recall of agent %s failed", self.agent_id, exc_info=True)
            report = RecallReport(
                notes=(f"automatic recall failed ({type(error).__name__}); nothing was recalled",)
            )
        self.last_recall = report
        return replace(plan, recalled=report.items, recall_notes=report.notes)

    def _prompt_plan(self, *, connected: bool, can_refresh_live: bool) -> TurnPlan:
        summary_id = self._summary.summary_id if self._summary else 0
        fingerprint = self.memory.memory_fingerprint(agent_id=self.agent_id, summary_id=summary_id)
        if connected and self.policy.is_current(fingerprint):
            return TurnPlan(fingerprint=fingerprint)
        versions = self.memory.block_versions(agent_id=self.agent_id)
        if (
            connected
            and can_refresh_live
            and not self.policy.must_rebuild(self.memory, self.agent_id, summary_id=summary_id)
        ):
            # The tool results showed the model its own edits; the prompt catches up later.
            return TurnPlan(fingerprint=fingerprint, announce=self.policy.pending_announcement)
        return TurnPlan(rebuild=True, fingerprint=fingerprint, versions=versions)

    def prompt_built(self, plan: TurnPlan) -> None:
        """The prompt of `plan` now runs: remember what it shows, and count its fixed part."""
        summary_id = self._summary.summary_id if self._summary else 0
        self.policy.rebuilt(
            self.memory,
            self.agent_id,
            versions=dict(plan.versions or {}),
            fingerprint=plan.fingerprint,
            summary_id=summary_id,
        )
        self._fixed_tokens = self._count_fixed()
        self._read_budget(self._fixed_tokens)

    def announcement(self) -> str:
        """The `<memory_changes>` text for this turn's message (empty when nothing is pending)."""
        return self.policy.announcement(self.memory, self.agent_id)

    # ----- the turn -----------------------------------------------------------------------

    def turn_started(self) -> None:
        """The prompt is about to be stored: the context's size before it, for measuring growth.

        Sizes for growth are the budget's scaled estimates throughout, so the first turn after
        opening does not count the calibration's correction as growth."""
        budget = (
            self._budget
            if self._budget_fresh and self._budget is not None
            else self._read_budget(self._fixed_tokens)
        )
        self._budget_fresh = False
        self._growth.start(budget.scaled_estimate)

    def after_turn(self, usage: Mapping[str, object] | None, *, through_id: int | None) -> None:
        """The turn's result arrived: count the turn (calibrated on the API's `usage` of the request
        that carried messages up to `through_id`) and decide whether the next turn compacts
        first."""
        budget = self._budget
        if budget is None or not self.compactor.holds(self.agent_id, budget):
            # Dropped by a compaction outside the planner (the manager's, the CLI's): read afresh.
            budget = self._read_budget(self._fixed_tokens, summary=Unread.READ_IT)
        self.compactor.observe_turn(self.agent_id, budget, usage=usage, through_id=through_id)
        self._growth.finish(budget.scaled_estimate)
        self.policy.turn_ended(self.memory, self.agent_id)
        self._due = self.compactor.compaction_due(self.agent_id, budget, self._growth.headroom)
        self._budget_fresh = False

    # ----- helpers ------------------------------------------------------------------------

    def _read_budget(
        self, fixed_tokens: int, *, summary: StoredSummary | None | Unread = None
    ) -> ContextBudget:
        """The compactor's budget, on the summary read this turn unless told to read it."""
        self._budget = self.compactor.budget(
            self.agent_id, fixed_tokens, summary=self._summary if summary is None else summary
        )
        self._budget_fresh = True
        return self._budget

    def _recent_turn_sizes(self, messages: int = 200) -> list[int]:
        """Estimated tokens of each of the last turns still in context (by stored turn id)."""
        sizes: dict[str, int] = {}
        for message in self.memory.get_recent_messages(messages, agent_id=self.agent_id):
            if message.turn_id:
                sizes[message.turn_id] = sizes.get(message.turn_id, 0) + (message.token_count or 0)
        return list(sizes.values())
