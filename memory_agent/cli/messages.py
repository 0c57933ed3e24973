"""`memory-agent messages`, `summary` and `compact`: the agent's recall memory."""

from __future__ import annotations

import click

from .app import open_memory, shared_options, state
from .output import console, emit, emit_json, make_table, preview, say, timestamp

__all__ = ["compact", "messages", "summary"]


@click.command()
@shared_options
@click.option(
    "--search", "query", metavar="QUERY", help="Search every message (evicted ones included)."
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="How many messages to show.",
)
@click.option(
    "--mode",
    type=click.Choice(["keyword", "vector", "hybrid"]),
    default="keyword",
    show_default=True,
    help="How --search ranks: exact words, meaning (loads the embedding model), or both.",
)
@click.option("--full", is_flag=True, help="Print whole messages instead of one-line previews.")
def messages(query: str | None, limit: int, mode: str, full: bool) -> None:
    """List the newest stored messages, or search them all.

    Messages compacted out of the context window are kept and shown with ctx '-'.
    """
    with open_memory() as memory:
        if query is not None:
            found = memory.search_messages(query, limit=limit, mode=mode)  # type: ignore[arg-type]  # a Choice of the modes
        else:
            found = memory.get_recent_messages(limit, in_context_only=False)
    rows = [
        (
            m.message_id,
            timestamp(m.created_at),
            m.message_type,
            "yes" if m.in_context else "-",
            m.text if full else preview(m.text, 70),
        )
        for m in found
    ]
    title = f"messages matching {query!r}" if query is not None else "newest messages"

    def render() -> None:
        if not found:
            say(
                f"No stored message matches {query!r}."
                if query is not None
                else "No messages yet: they are stored as the agent talks ('memory-agent chat', or "
                "MemoryAwareAgent in your own code)."
            )
            return
        console().print(make_table(("id", "time", "type", "ctx", "text"), rows, title=title))

    emit(found, render)


@click.command()
@shared_options
def summary() -> None:
    """Show the conversation summary that replaced the oldest messages."""
    with open_memory() as memory:
        record = memory.get_summary_record()

    def render() -> None:
        if record is None:
            say("No summary yet: nothing has been compacted.")
            return
        say(
            f"Summary {record.summary_id} of messages "
            f"{record.first_message_id}-{record.last_message_id} "
            f"({timestamp(record.created_at)}, model {record.model or 'none'}"
            f"{', truncation fallback' if record.is_fallback else ''}):"
        )
        console().print(record.summary, markup=False)

    emit(record, render)


@click.command()
@shared_options
def compact() -> None:
    """Summarise the oldest messages now (the manual compaction trigger).

    Needs the summariser's model (ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL). If the summariser
    fails nothing is lost; the command says why and exits with status 1.
    """
    with open_memory() as memory:
        in_context = memory.count_messages(in_context_only=True)
        keep = memory.settings.compaction.min_kept_messages
        if in_context <= keep:
            emit(
                {
                    "status": "skipped",
                    "evicted": 0,
                    "kept": in_context,
                    "reason": "too few messages",
                },
                lambda: say(
                    f"Nothing to compact: {in_context} message(s) in context, and compaction "
                    f"always keeps the newest {keep} (COMPACTION_MIN_KEPT_MESSAGES)."
                ),
            )
            return
        if not (memory.settings.anthropic_api_key or memory.settings.anthropic_base_url):
            raise click.ClickException(
                "compact needs the summariser's model: set ANTHROPIC_API_KEY (or "
                "ANTHROPIC_BASE_URL for "
                "a compatible server), in the environment or in .env."
            )
        outcome = memory.compact_history()
    data = {
        "status": outcome.status,
        "evicted": len(outcome.evicted),
        "kept": len(outcome.kept),
        "model": outcome.model,
        "tokens_before": outcome.tokens_before,
        "tokens_after": outcome.tokens_after,
        "reason": outcome.reason,
        "error": outcome.error,
    }
    if outcome.deferred:
        if state().json:
            emit_json(data)
        raise click.ClickException(
            f"The summariser failed, nothing was compacted: {outcome.error or outcome.reason}"
        )
    emit(
        data,
        lambda: say(
            f"Compaction {outcome.status}: {len(outcome.evicted)} messages summarised, "
            f"{len(outcome.kept)} kept; ~{outcome.tokens_before} -> ~{outcome.tokens_after} "
            f"tokens. {outcome.reason}".strip()
        ),
    )
