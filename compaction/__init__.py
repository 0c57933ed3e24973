"""Compaction: token accounting and sliding-window summarisation of long conversations.

A standalone package (it never imports ``memory_agent``): it works on plain `MessageRecord`
values and a `Summarizer` protocol.

    settings = CompactionSettings.from_env()
    budget = ContextBudget(settings, fixed_tokens=count_request(counter, system=..., tools=...))
    budget.observe(history)                    # O(new messages) per turn
    if budget.should_compact(headroom):        # headroom: what the next turn may add
        outcome = await compact(history, previous_summary=summary,
                                summarizer=AnthropicSummarizer(settings),
                                settings=settings, fixed_tokens=fixed,
                                headroom=headroom)  # leave it free: one compaction is enough
"""

from .backoff import SummarizerBackoff
from .budget import (
    UNMEASURED_SCALE,
    ContextBudget,
    reported_input_tokens,
    should_compact,
)
from .engine import (
    CompactionOutcome,
    CompactionStatus,
    compact,
    summary_tokens,
    truncation_summary,
)
from .errors import CompactionError, CompactionSettingsError, SummarizerError
from .prompts import SUMMARY_SYSTEM_PROMPT, TRUNCATION_MARKER, summary_request_text
from .records import MessageRecord
from .settings import MODES, CompactionMode, CompactionSettings
from .summarizer import AnthropicSummarizer, RetryPolicy, Summarizer, is_retryable
from .tokens import (
    DEFAULT_ENCODING,
    TiktokenCounter,
    TokenCounter,
    count_messages,
    count_request,
    count_system,
    count_tools,
    default_counter,
    message_tokens,
)
from .transcript import clip_text, render_transcript
from .window import CompactionPlan, plan_compaction, valid_cuts

__all__ = [
    "DEFAULT_ENCODING",
    "MODES",
    "SUMMARY_SYSTEM_PROMPT",
    "TRUNCATION_MARKER",
    "UNMEASURED_SCALE",
    "AnthropicSummarizer",
    "CompactionError",
    "CompactionMode",
    "CompactionOutcome",
    "CompactionPlan",
    "CompactionSettings",
    "CompactionSettingsError",
    "CompactionStatus",
    "ContextBudget",
    "MessageRecord",
    "RetryPolicy",
    "Summarizer",
    "SummarizerBackoff",
    "SummarizerError",
    "TiktokenCounter",
    "TokenCounter",
    "clip_text",
    "compact",
    "count_messages",
    "count_request",
    "count_system",
    "count_tools",
    "default_counter",
    "is_retryable",
    "message_tokens",
    "plan_compaction",
    "render_transcript",
    "reported_input_tokens",
    "should_compact",
    "summary_request_text",
    "summary_tokens",
    "truncation_summary",
    "valid_cuts",
]
