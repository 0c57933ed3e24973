"""compact(): plan a cut, summarise what leaves the context, and never lose a message.

Outcomes (`CompactionOutcome.status`):
- ``compacted``: the summariser wrote the new summary; ``evicted`` may leave the context.
- ``deferred``: the summariser failed (after its retries) and the context can still take the
  next request: nothing is evicted, the caller simply tries again on a later turn.
- ``truncated``: the summariser failed and the request is past ``overflow_threshold``: the
  evicted messages leave the context behind a clearly marked stand-in summary (the previous
  summary plus the tail of the evicted text), because the next request would not fit.
- ``skipped``: nothing to do (disabled, under the trigger, or no valid cut).

Evicted messages are only ever taken *out of context*; keeping them is the caller's business.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .prompts import TRUNCATION_MARKER
from .records import MessageRecord
from .settings import CompactionSettings
from .summarizer import Summarizer
from .tokens import BLOCK_OVERHEAD, TokenCounter, default_counter
from .transcript import clip_text, render_transcript, tail_text
from .window import CompactionPlan, plan_compaction

__all__ = [
    "CompactionOutcome",
    "CompactionStatus",
    "compact",
    "summary_tokens",
    "truncation_summary",
]

logger = logging.getLogger(__name__)

CompactionStatus = Literal["compacted", "truncated", "deferred", "skipped"]


@dataclass(frozen=True)
class CompactionOutcome:
    """What one call of `compact` did.

    Attributes:
        status: ``compacted``, ``truncated``, ``deferred`` or ``skipped`` (see the module doc).
        summary: The summary to use from now on (the previous one unless ``changed``).
        evicted: Messages taken out of context, oldest first (empty unless ``changed``).
        kept: Messages still in context, with their token counts filled in.
        model: The model that wrote the new summary (None when no model did).
        tokens_before: Estimated request size before: fixed part + summary + messages.
        tokens_after: Estimated request size after, on the same terms.
        summarizer_calls: Successful summariser requests made (one per chunk of messages).
        reason: Why this status, in words, for logs.
        error: The summariser's failure, when there was one.
    """

    status: CompactionStatus
    summary: str | None
    evicted: tuple[MessageRecord, ...]
    kept: tuple[MessageRecord, ...]
    model: str | None
    tokens_before: int
    tokens_after: int
    summarizer_calls: int = 0
    reason: str = ""
    error: str | None = None

    @property
    def changed(self) -> bool:
        """Whether messages left the context (a new summary must be stored)."""
        return self.status in ("compacted", "truncated")

    @property
    def deferred(self) -> bool:
        return self.status == "deferred"

    @property
    def fallback(self) -> bool:
        """Whether the summary is a truncation stand-in rather than a model's summary."""
        return self.status == "truncated"

    @property
    def evicted_ids(self) -> tuple[int, ...]:
        return tuple(message.id for message in self.evicted)

    @property
    def first_evicted_id(self) -> int | None:
        return self.evicted[0].id if self.evicted else None

    @property
    def last_evicted_id(self) -> int | None:
        return self.evicted[-1].id if self.evicted else None


def summary_tokens(summary: str | None, counter: TokenCounter) -> int:
    """Tokens a summary adds to the request."""
    return BLOCK_OVERHEAD + counter.count_text(summary) if summary else 0


async def compact(
    messages: Sequence[MessageRecord],
    *,
    previous_summary: str | None,
    summarizer: Summarizer,
    settings: CompactionSettings,
    fixed_tokens: int,
    counter: TokenCounter | None = None,
    force: bool = False,
    headroom: int = 0,
) -> CompactionOutcome:
    """Compact ``messages`` if needed; never raises because the summariser failed.

    Args:
        messages: The conversation in context, oldest first.
        previous_summary: The current summary, folded into the new one.
        summarizer: Writes the new summary.
        settings: Thresholds, mode and limits.
        fixed_tokens: Tokens of the request outside the messages and the summary (system
            prompt, tool definitions).
        counter: Estimates tokens where a record has no count; default tiktoken.
        force: Compact even when disabled or under the trigger.
        headroom: Tokens the cut leaves free under the target for the next turn's growth
            (`plan_compaction`); the trigger check that decides whether to compact is not
            changed by it.
    """
    counter = counter if counter is not None else default_counter()
    records = tuple(_with_tokens(message, counter) for message in messages)
    before = fixed_tokens + summary_tokens(previous_summary, counter) + _total(records)
    waived = _skip_reason(settings, before, force)
    if waived:
        return _unchanged("skipped", previous_summary, records, before, waived)
    plan = plan_compaction(records, settings, fixed_tokens, counter=counter, headroom=headroom)
    if plan.is_empty:
        return _unchanged("skipped", previous_summary, records, before, plan.reason)
    try:
        summary, calls = await _summarise(previous_summary, plan, summarizer, settings)
    except Exception as exc:  # the turn must go on: defer or truncate, never raise
        return _after_failure(
            exc, previous_summary, records, plan, settings, before, fixed_tokens, counter
        )
    after = fixed_tokens + summary_tokens(summary, counter) + plan.kept_tokens
    return CompactionOutcome(
        status="compacted",
        summary=summary,
        evicted=plan.evicted,
        kept=plan.kept,
        model=summarizer.model,
        tokens_before=before,
        tokens_after=after,
        summarizer_calls=calls,
        reason=plan.reason,
    )


def _with_tokens(message: MessageRecord, counter: TokenCounter) -> MessageRecord:
    if message.tokens is not None:
        return message
    return message.with_tokens(counter.count_message(message))


def _total(records: Sequence[MessageRecord]) -> int:
    return sum(record.tokens or 0 for record in records)


def _skip_reason(settings: CompactionSettings, tokens: int, force: bool) -> str | None:
    if force:
        return None
    if not settings.enabled:
        return "compaction is disabled"
    if tokens < settings.trigger_tokens:
        return f"{tokens} tokens is under the trigger of {settings.trigger_tokens}"
    return None


def _unchanged(
    status: CompactionStatus,
    summary: str | None,
    records: tuple[MessageRecord, ...],
    tokens: int,
    reason: str,
    error: str | None = None,
) -> CompactionOutcome:
    return CompactionOutcome(
        status=status,
        summary=summary,
        evicted=(),
        kept=records,
        model=None,
        tokens_before=tokens,
        tokens_after=tokens,
        reason=reason,
        error=error,
    )


def _chunks(records: Sequence[MessageRecord], limit: int) -> list[list[MessageRecord]]:
    """Consecutive groups of at most ``limit`` tokens (a bigger message goes alone)."""
    chunks: list[list[MessageRecord]] = []
    current: list[MessageRecord] = []
    size = 0
    for record in records:
        tokens = record.tokens or 0
        if current and size + tokens > limit:
            chunks.append(current)
            current, size = [], 0
        current.append(record)
        size += tokens
    if current:
        chunks.append(current)
    return chunks


async def _summarise(
    previous_summary: str | None,
    plan: CompactionPlan,
    summarizer: Summarizer,
    settings: CompactionSettings,
) -> tuple[str, int]:
    """Fold the evicted messages into the summary, one summariser request per chunk."""
    summary = previous_summary
    calls = 0
    for chunk in _chunks(plan.evicted, settings.summary_chunk_tokens):
        text = (await summarizer.summarize(summary, chunk)).strip()
        if not text:
            raise ValueError("the summariser returned an empty summary")
        summary = clip_text(text, settings.clip_chars)
        calls += 1
    assert summary is not None  # a non-empty plan has at least one chunk
    return summary, calls


def _after_failure(
    exc: Exception,
    previous_summary: str | None,
    records: tuple[MessageRecord, ...],
    plan: CompactionPlan,
    settings: CompactionSettings,
    before: int,
    fixed_tokens: int,
    counter: TokenCounter,
) -> CompactionOutcome:
    error = f"{type(exc).__name__}: {exc}"
    if before < settings.overflow_tokens:
        logger.warning("Compaction deferred, the summariser failed: %s", error)
        reason = "summariser failed; nothing evicted, retry on a later turn"
        return _unchanged("deferred", previous_summary, records, before, reason, error)
    logger.warning("Context about to overflow and the summariser failed; truncating: %s", error)
    summary = truncation_summary(previous_summary, plan.evicted, settings.clip_chars)
    return CompactionOutcome(
        status="truncated",
        summary=summary,
        evicted=plan.evicted,
        kept=plan.kept,
        model=None,
        tokens_before=before,
        tokens_after=fixed_tokens + summary_tokens(summary, counter) + plan.kept_tokens,
        reason=f"summariser failed at {before} tokens (overflow at {settings.overflow_tokens})",
        error=error,
    )


def truncation_summary(
    previous_summary: str | None, evicted: Sequence[MessageRecord], clip_chars: int
) -> str:
    """A stand-in summary made without a model: marker, previous summary, tail of the text.

    At most ``clip_chars`` characters. The previous summary gets up to half the room (all it
    needs when the tail is short); a marker line from an earlier truncation is not repeated.
    """
    header = f"{TRUNCATION_MARKER} {len(evicted)} older messages left the context unsummarised."
    earlier = (previous_summary or "").strip()
    if earlier.startswith(TRUNCATION_MARKER):
        earlier = earlier.split("\n", 1)[1].strip() if "\n" in earlier else ""
    transcript = render_transcript(evicted)
    labels = ("\nEarlier summary:\n", "\nEnd of the dropped messages:\n")
    room = max(clip_chars - len(header) - sum(len(label) for label in labels), 0)
    earlier_room = min(len(earlier), max(room // 2, room - len(transcript)))
    parts = [header]
    if earlier:
        parts += [labels[0], clip_text(earlier, earlier_room)]
    parts += [labels[1], tail_text(transcript, room - earlier_room)]
    return clip_text("".join(parts), clip_chars)
