"""Compaction of an agent's stored conversation, with nothing lost.

The `compaction` package decides and summarises on plain records; this module feeds it the
agent's in-context messages from SQLite and records the outcome: the summary with the range it
covers, the model and the token counts, and the evicted messages marked out of context (never
deleted). It keeps one running `ContextBudget` per agent, so the per-turn check reads only the
messages stored since the last check.
"""

from __future__ import annotations

import threading
from typing import Any

from compaction import (
    AnthropicSummarizer,
    CompactionOutcome,
    CompactionSettings,
    ContextBudget,
    MessageRecord,
    Summarizer,
    TokenCounter,
    compact,
    default_counter,
    summary_tokens,
)

from .recall import RecallMemory, StoredMessage, StoredSummary

__all__ = ["Compactor", "to_record"]


def to_record(message: StoredMessage) -> MessageRecord:
    return MessageRecord(id=message.message_id, role=message.role, content=message.content,
                         tokens=message.token_count)


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
    ) -> None:
        self.recall = recall
        self._api_key = api_key
        self._base_url = base_url
        self.settings = settings
        self._summarizer = summarizer
        self._counter = counter
        self._budgets: dict[str, ContextBudget] = {}
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
            self._summarizer = AnthropicSummarizer(self.settings, api_key=self._api_key, base_url=self._base_url)
        return self._summarizer

    def count_text(self, text: str) -> int:
        return self.counter.count_text(text)

    def budget(self, agent_id: str, fixed_tokens: int) -> ContextBudget:
        """The agent's running budget, brought up to date with messages stored since last time.

        `fixed_tokens` is the request outside the conversation (system prompt, tools); the
        summary is added here, counted once per summary.
        """
        summary = self.recall.latest_summary(agent_id)
        fixed = fixed_tokens + self._summary_tokens(summary)
        with self._lock:
            budget = self._budgets.get(agent_id)
            if budget is None:
                budget = ContextBudget(self.settings, self.counter, fixed_tokens=fixed)
                self._budgets[agent_id] = budget
            elif budget.fixed_tokens != fixed:
                budget.set_fixed_tokens(fixed)
            budget.add(to_record(m) for m in self.recall.in_context(agent_id, after_id=budget.through_id or 0))
            return budget

    def _summary_tokens(self, summary: StoredSummary | None) -> int:
        if summary is None:
            return 0
        cached = self._summary_cache.get(summary.summary_id)
        if cached is None:
            cached = summary_tokens(summary.summary, self.counter)
            self._summary_cache = {summary.summary_id: cached}
        return cached

    def observe_turn(self, agent_id: str, fixed_tokens: int, *, usage: Any | None,
                     through_id: int | None, headroom: int = 0) -> bool:
        """After a turn: take the API's usage of the last request as the exact size up to
        `through_id`, count what came after, and say whether compaction is due before the next
        turn, which is expected to add `headroom` tokens."""
        budget = self.budget(agent_id, fixed_tokens)
        if usage:
            budget.calibrate(usage, through_id=through_id)
            budget.add(to_record(m) for m in self.recall.in_context(agent_id, after_id=through_id or 0))
        return self.settings.enabled and budget.should_compact(headroom)

    def should_compact(self, agent_id: str, fixed_tokens: int, *, headroom: int = 0) -> bool:
        return self.settings.enabled and self.budget(agent_id, fixed_tokens).should_compact(headroom)

    def context_tokens(self, agent_id: str, fixed_tokens: int) -> int:
        """The running estimate of the next request's size (fixed part, summary, messages)."""
        return self.budget(agent_id, fixed_tokens).total_tokens

    async def compact(self, agent_id: str, fixed_tokens: int, *, force: bool = False) -> CompactionOutcome:
        """Summarise the oldest messages if needed (always, with `force`) and record it."""
        messages = [to_record(m) for m in self.recall.in_context(agent_id)]
        previous = self.recall.latest_summary(agent_id)
        outcome = await compact(
            messages,
            previous_summary=previous.summary if previous else None,
            summarizer=self.summarizer,
            settings=self.settings,
            fixed_tokens=fixed_tokens,
            counter=self.counter,
            force=force,
        )
        if outcome.changed:
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
