"""What the summariser is asked, in one place so the wording can be reviewed and tested.

The new summary is written from the previous summary plus the evicted messages, so facts from
earlier compactions survive later ones (rolling summary).
"""

from __future__ import annotations

from collections.abc import Sequence

from .records import MessageRecord
from .transcript import render_transcript

__all__ = ["SUMMARY_SYSTEM_PROMPT", "TRUNCATION_MARKER", "summary_request_text"]

TRUNCATION_MARKER = "[TRUNCATED — summariser unavailable]"
"""First line of a summary made without the summariser, so nobody mistakes it for one."""

SUMMARY_SYSTEM_PROMPT = """\
You keep the long-term record of a conversation between a user and an AI agent. Older \
messages are leaving the agent's context window; your summary is all the agent will still \
have of them, so write it for the agent to continue the work without asking again.

Merge the earlier summary (if any) with the new messages into one updated summary:
- keep facts about the user and the world, and every decision taken and why;
- keep open tasks, promises and unanswered questions, and say which are done;
- keep names, dates, times, numbers, identifiers, file paths and URLs exactly;
- keep what tools were used for and what they found, not their raw output;
- drop greetings, repetition and small talk; prefer newer information when they conflict.

Write plain prose or terse bullet points in the third person, no preamble, no closing remark."""


def summary_request_text(
    previous_summary: str | None,
    messages: Sequence[MessageRecord],
    *,
    limit_chars: int,
    max_message_chars: int | None = None,
) -> str:
    """The user message of a summariser request: earlier summary, transcript, instruction."""
    earlier = previous_summary.strip() if previous_summary else ""
    transcript = render_transcript(messages, max_message_chars=max_message_chars)
    return (
        "<earlier_summary>\n"
        f"{earlier or '(none: this is the start of the conversation)'}\n"
        "</earlier_summary>\n\n"
        "<messages>\n"
        f"{transcript}\n"
        "</messages>\n\n"
        "Write the updated summary now. It replaces the earlier summary, so carry over "
        f"everything from it that still matters. Use at most {limit_chars} characters."
    )
