"""Compaction of an agent's stored conversation, with nothing lost.

The `compaction` package decides and summarises on plain records; this module feeds it the
agent's in-context messages from SQLite and records the outcome: the summary with the range it
covers, the model and the token counts, and the evicted messages marked out of context (never
deleted). It keeps one running `ContextBudget` per agent, so the per-turn check reads only the
messages stored since the last check.

Two things outlive a turn. The budget's scale (reported tokens per estimated token) is kept in
the agent's state, so an agent reopened later sizes its first request with the scale its
requests showed rather than by raw estimate; an agent never measured starts at the cautious
`UNMEASURED_SCALE`. And after a summariser failure the automatic check backs off
(`SummarizerBackoff`) instead of failing, and warning, on every turn.
"""

from __future__ import annotations

import threading
from enum import Enum
from typing import Any

from compaction import (
    UNMEASURED_SCALE,
    AnthropicSummarizer,
    CompactionOutcome,
    CompactionSettings,
    ContextBudget,
    MessageRecord,
    Summarizer,
    SummarizerBackoff,
    TokenCounter,
    compact,
    default_counter,
    message_tokens,
    summary_tokens,
)

from ..store import agent_state
from ..store.protocol import Store
from .recall import RecallMemory, StoredMessage, StoredSummary

__all__ = ["Compactor", "Unread", "to_record"]

_SCALE_CHANGE = 0.01
"""A measured scale is stored again only when it moved by more than this share."""


class Unread(Enum):
    """The summary argument's default: not read yet by the caller, so read it here."""

    READ_IT = "read it"


def to_record(message: StoredMessage) -> MessageRecord:
    return MessageRecord(
        id=message.message_id,
        role=message.role,
        content=message.content,
        tokens=message.token_count,
    )


def _scaled(record: MessageRecord, scale: float, counter: TokenCounter) -> MessageRecord:
    return record.with_tokens(round(message_tokens(record, counter) * scale))


class Compactor:
    """Token accounting and compaction for the agents of one storage dir."""

    def __init__(
        self,
        recall: RecallMemory,
        settings: CompactionSettings,
        *,
        summarizer: Summarizer | None = None,
        counter: TokenCounter | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        state_db: Store | None = None,
    ) -> None:
        self.recall = recall
        self._state_db = state_db
        self._api_key = api_key
        self._base_url = base_url
        self.settings = settings
        self._summarizer = summarizer
        self._counter = counter
        self._budgets: dict[str, ContextBudget] = {}
        self._scales: dict[str, float | None] = {}
        self._backoffs: dict[str, SummarizerBackoff] = {}
        self._summary_cache: dict[int, int] = {}
        self._lock = threading.Lock()

    @property
    def counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = default_counter()
        return self._counter

    @property
    def summarizer(self) -> Summarizer:
        """The cheap model; built on first use so no API client exists until it is needed."""
        if self._summarizer is None:
            self._summarizer = AnthropicSummarizer(
                self.settings, api_key=self._api_key, base_url=self._base_url
            )
        return self._summarizer

    def count_text(self, text: str) -> int:
        return self.counter.count_text(text)

    def budget(
        self,
        agent_id: str,
        fixed_tokens: int,
        *,
        summary: StoredSummary | None | Unread = Unread.READ_IT,
    ) -> ContextBudget:
        """The agent's running budget, brought up to date with messages stored since last time.

        `fixed_tokens` is the request outside the conversation (system prompt, tools); the
        summary is added here, counted once per summary. A caller that has already read the
        newest summary this turn passes it as `summary`, so it is not read twice.
        """
        if summary is Unread.READ_IT:
            summary = self.recall.latest_summary(agent_id)
        fixed = fixed_tokens + self._summary_tokens(summary)
        with self._lock:
            budget = self._budgets.get(agent_id)
            if budget is None:
                budget = ContextBudget(
                    self.settings,
                    self.counter,
                    fixed_tokens=fixed,
                    scale=self._stored_scale(agent_id) or UNMEASURED_SCALE,
                )
                self._budgets[agent_id] = budget
            elif budget.fixed_tokens != fixed:
                budget.set_fixed_tokens(fixed)
            self._sync(agent_id, budget)
            return budget

    def holds(self, agent_id: str, budget: ContextBudget) -> bool:
        """Whether `budget` is still the agent's running budget (a compaction drops it)."""
        with self._lock:
            return self._budgets.get(agent_id) is budget

    def _sync(self, agent_id: str, budget: ContextBudget) -> None:
        """Count the in-context messages stored after the last one the budget holds."""
        budget.add(
            to_record(m) for m in self.recall.in_context(agent_id, after_id=budget.through_id or 0)
        )

    def _summary_tokens(self, summary: StoredSummary | None) -> int:
        if summary is None:
            return 0
        cached = self._summary_cache.get(summary.summary_id)
        if cached is None:
            cached = summary_tokens(summary.summary, self.counter)
            self._summary_cache = {summary.summary_id: cached}
        return cached

    def observe_turn(
        self, agent_id: str, budget: ContextBudget, *, usage: Any | None, through_id: int | None
    ) -> None:
        """After a turn: count the turn's messages into `budget` (the one read before the turn),
        take the API's usage of the last request as the exact size up to `through_id`, and keep
        a measured scale. Deciding whether to compact is `compaction_due`'s, asked once after
        this."""
        self._backoff(agent_id).turn_passed()
        self._sync(agent_id, budget)
        if usage:
            budget.calibrate(usage, through_id=through_id)
            self._sync(agent_id, budget)
            if budget.scale_measured:
                self._store_scale(agent_id, budget.scale)

    def should_compact(self, agent_id: str, fixed_tokens: int, *, headroom: int = 0) -> bool:
        """Whether an automatic compaction should run before the next request (`compaction_due`
        on the agent's budget brought up to date)."""
        return self.compaction_due(agent_id, self.budget(agent_id, fixed_tokens), headroom)

    def compaction_due(self, agent_id: str, budget: ContextBudget, headroom: int = 0) -> bool:
        """The one compaction decision: the next request, expected to add `headroom` tokens, would
        reach the trigger (not while backing off after a summariser failure, unless it would reach
        the overflow line). The agent's turn planner and `should_compact` both ask it."""
        return (
            self.settings.enabled
            and budget.should_compact(headroom)
            and self._backoff(agent_id).allows(budget.total_tokens + max(headroom, 0))
        )

    def _backoff(self, agent_id: str) -> SummarizerBackoff:
        with self._lock:
            return self._backoffs.setdefault(agent_id, SummarizerBackoff(self.settings))

    def scale(self, agent_id: str) -> float:
        """Reported tokens per estimated token for this agent: as measured, else cautious."""
        with self._lock:
            budget = self._budgets.get(agent_id)
        return (
            budget.scale if budget is not None else self._stored_scale(agent_id) or UNMEASURED_SCALE
        )

    def scaled(self, agent_id: str, estimate: int) -> int:
        """An estimate in the tokens the API will count for this agent."""
        return round(estimate * self.scale(agent_id))

    def _stored_scale(self, agent_id: str) -> float | None:
        """The scale measured on the agent's requests, in this process or an earlier one."""
        if agent_id not in self._scales:
            value = None
            if self._state_db is not None:
                with self._state_db.reading() as conn:
                    value = agent_state.read_state(conn, agent_id).get(agent_state.TOKEN_SCALE_KEY)
            self._scales[agent_id] = (
                float(value) if isinstance(value, (int, float)) and value > 0 else None
            )
        return self._scales[agent_id]

    def _store_scale(self, agent_id: str, scale: float) -> None:
        stored = self._stored_scale(agent_id)
        if stored is not None and abs(scale - stored) <= _SCALE_CHANGE * stored:
            return
        self._scales[agent_id] = scale
        if self._state_db is not None:
            with self._state_db.transaction() as conn:
                agent_state.write_state(
                    conn, agent_id, {agent_state.TOKEN_SCALE_KEY: round(scale, 4)}
                )

    async def compact(
        self, agent_id: str, fixed_tokens: int, *, force: bool = False, headroom: int = 0
    ) -> CompactionOutcome:
        """Summarise the oldest messages if needed (always, with `force`) and record it.

        The plan is made on scaled estimates (the agent's measured scale), so the kept window
        fits under the target in the tokens the API will count. `headroom` (in those tokens) is
        what `compaction_due` was asked with: the cut leaves it free as well, so the check
        before the next turn does not find another compaction due.
        """
        scale = self.budget(agent_id, fixed_tokens).scale
        messages = [
            _scaled(to_record(m), scale, self.counter) for m in self.recall.in_context(agent_id)
        ]
        previous = self.recall.latest_summary(agent_id)
        outcome = await compact(
            messages,
            previous_summary=previous.summary if previous else None,
            summarizer=self.summarizer,
            settings=self.settings,
            fixed_tokens=round(fixed_tokens * scale),
            counter=self.counter,
            force=force,
            headroom=headroom,
        )
        if outcome.deferred:
            self._backoff(agent_id).failed(outcome.tokens_before)
        elif outcome.changed:
            self._backoff(agent_id).succeeded()
            self._record(agent_id, outcome)
        return outcome

    def _record(self, agent_id: str, outcome: CompactionOutcome) -> StoredSummary:
        stored = self.recall.add_summary(
            agent_id,
            outcome.summary or "",
            first_message_id=outcome.first_evicted_id,
            last_message_id=outcome.last_evicted_id,
            model=outcome.model,
            tokens_before=outcome.tokens_before,
            tokens_after=outcome.tokens_after,
            is_fallback=outcome.fallback,
        )
        self.forget(agent_id)  # recounted from the kept messages on the next check
        return stored

    async def aclose(self) -> None:
        """Close the summariser's HTTP client, if it has one."""
        close = getattr(self._summarizer, "aclose", None)
        if close is not None:
            await close()

    def forget(self, agent_id: str) -> None:
        """Drop the running budget (it is rebuilt from the database on the next check)."""
        with self._lock:
            self._budgets.pop(agent_id, None)
