"""`remember`, `recall`, `forget` and `passages`: the agent's archival memory."""

from __future__ import annotations

import dataclasses
from typing import get_args

import click
from rich.text import Text

from ..archival.passages import Passage, SearchHit
from ..archival.search import SearchMode
from ..manager import MemoryManager
from ..tools.archival import format_explanation
from .app import one_line, open_memory, shared_options
from .output import console, emit, preview, say, timestamp

__all__ = ["forget", "passage_sensitivity", "passages", "recall", "remember"]


def _passage_data(passage: Passage) -> dict[str, object]:
    return {
        "id": passage.passage_id,
        "content": passage.content,
        "tags": list(passage.tags),
        "metadata": passage.metadata,
        "created_at": passage.created_at,
        "vector_state": passage.vector_state,
        "expires_at": passage.expires_at,
        "superseded_by": passage.superseded_by,
        "importance": passage.importance,
        "access_count": passage.access_count,
        "last_accessed_at": passage.last_accessed_at,
        "provenance": passage.provenance,
        "sensitivity": passage.sensitivity,
    }


def _hit_data(hit: SearchHit) -> dict[str, object]:
    data = {
        **_passage_data(hit.passage),
        "score": hit.score,
        "keyword_rank": hit.keyword_rank,
        "vector_rank": hit.vector_rank,
        "keyword_score": hit.keyword_score,
        "vector_similarity": hit.vector_similarity,
        "degraded": hit.degraded,
    }
    if hit.explanation is not None:
        data["explanation"] = dataclasses.asdict(hit.explanation)
    return data


@click.command()
@shared_options
@click.argument("text")
@click.option("--tag", "tags", multiple=True, help="A tag for the passage (repeat for several).")
@click.option(
    "--sensitivity",
    metavar="LEVEL",
    help="public, private (the default) or secret: who may read it (secret: only with "
    "--allow-secret).",
)
@click.option(
    "--context",
    help="Words that help find TEXT but are not part of it (searched, never shown), "
    "e.g. the question it answers.",
)
def remember(
    text: str, tags: tuple[str, ...], sensitivity: str | None, context: str | None
) -> None:
    """Store TEXT in archival memory; prints the passage id."""
    with open_memory(create=True, take_back=True) as memory:
        passage_id = memory.archival_memory_insert(
            text, tags=list(tags) or None, sensitivity=sensitivity, context=context
        )
        stored = memory.archival_memory_get(passage_id, allow_secret=True)
        # A failed embedding leaves the passage pending by design; the person typing should hear
        # why.
        problem = (
            None if stored is None or stored.vector_state != "pending" else _why_pending(memory)
        )
    emit({"id": passage_id, "vector_error": problem}, lambda: say(f"Remembered as {passage_id}"))
    if problem:
        click.echo(
            f"Warning: not embedded yet, so only keyword search finds it: {problem}.", err=True
        )


@click.command()
@shared_options
@click.argument("query")
@click.option(
    "--mode",
    type=click.Choice(get_args(SearchMode)),
    help="Words (keyword), meaning (vector), both fused (hybrid; the default unless "
    "MEMORY_HYBRID_SEARCH=false), or fused plus recency and importance (scored).",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1, max=1000),
    default=5,
    show_default=True,
    help="How many passages to show.",
)
@click.option(
    "--tag", "tags", multiple=True, help="Only passages with this tag (repeat for any of several)."
)
@click.option(
    "--explain",
    is_flag=True,
    help="Print every signal behind each hit (ranks, similarity, recency, "
    "importance, access count, fused and final score).",
)
@click.option(
    "--include-superseded", is_flag=True, help="Also show passages a newer passage replaced."
)
def recall(
    query: str,
    mode: SearchMode | None,
    limit: int,
    tags: tuple[str, ...],
    explain: bool,
    include_superseded: bool,
) -> None:
    """Search archival memory, best first, with each passage's score."""
    with open_memory() as memory:
        hits = memory.archival_memory_search(
            query,
            limit=limit,
            tags=list(tags) or None,
            mode=mode,
            include_superseded=include_superseded,
            explain=explain,
        )

    def render() -> None:
        if not hits:
            say("Nothing found.")
        elif any(hit.degraded for hit in hits):
            say(
                "Search by meaning failed, so these results matched keywords only; "
                "'memory-agent doctor' says why.",
                style="yellow",
            )
        for rank, hit in enumerate(hits, 1):
            console().print(
                Text.assemble((f"#{rank}  score {hit.score:.3g}", "bold"), f"  ({_ranks(hit)})")
            )
            _print_passage(hit.passage)
            if hit.explanation is not None:
                console().print(Text("    " + format_explanation(hit.explanation), style="cyan"))

    emit([_hit_data(hit) for hit in hits], render)


def _why_pending(memory: MemoryManager) -> str | None:
    """The vector side's error, from one more try (cheap when the model or Chroma is missing);
    None if that try embedded it after all."""
    report = memory.reconcile_archival(agent_id=memory.agent_id)
    return one_line(report.errors[0]) if report.errors else None


def _ranks(hit: SearchHit) -> str:
    """Where each index that found the hit placed it: the reason for its score."""
    parts = []
    if hit.keyword_rank:
        parts.append(f"words #{hit.keyword_rank}")
    if hit.vector_rank:
        similarity = (
            "" if hit.vector_similarity is None else f", similarity {hit.vector_similarity:.3f}"
        )
        parts.append(f"meaning #{hit.vector_rank}{similarity}")
    return "; ".join(parts) or "newest first"


def _print_passage(passage: Passage, indent: str = "    ") -> None:
    """A passage as two lines: its text, then its id, tags and time."""
    status = [f"superseded by {passage.superseded_by}"] if passage.superseded_by else []
    status += [f"expires {timestamp(passage.expires_at)}"] if passage.expires_at else []
    details = " · ".join(
        part
        for part in (
            passage.passage_id,
            ", ".join(passage.tags),
            timestamp(passage.created_at),
            *status,
        )
        if part
    )
    console().print(Text(indent + preview(passage.content, 300)))
    console().print(Text(indent + details, style="dim"))


@click.command()
@shared_options
@click.argument("passage_id", required=False)
@click.option(
    "--purge",
    is_flag=True,
    help="Forget for real: the item, its linked memories, the journal's values about it, copies of "
    "its "
    "text, vectors, and the freed bytes of the files. The journal keeps only that it was "
    "forgotten.",
)
@click.option(
    "--message", "message_id", type=int, metavar="ID", help="With --purge: forget this message."
)
@click.option(
    "--block",
    "label",
    metavar="LABEL",
    help="With --purge: forget this block and all its versions.",
)
@click.option(
    "--whole-agent",
    "whole_agent",
    metavar="AGENT_ID",
    help="With --purge: forget this agent and everything held under its id.",
)
@click.option("--yes", "-y", is_flag=True, help="With --purge: do not ask for confirmation.")
def forget(
    passage_id: str | None,
    purge: bool,
    message_id: int | None,
    label: str | None,
    whole_agent: str | None,
    yes: bool,
) -> None:
    """Delete passage PASSAGE_ID (journalled with its content), or with --purge forget it (or a
    --message, a --block, a --whole-agent) for real."""
    chosen = [
        (kind, value)
        for kind, value in (
            ("passage", passage_id),
            ("message", message_id),
            ("block", label),
            ("agent", whole_agent),
        )
        if value is not None
    ]
    if len(chosen) != 1:
        raise click.UsageError(
            "Name exactly one thing to forget: PASSAGE_ID, --message ID, --block LABEL or "
            "--whole-agent AGENT_ID."
        )
    kind, value = chosen[0]
    if not purge:
        if kind != "passage":
            raise click.UsageError(f"A {kind} can only be forgotten for real: add --purge.")
        with open_memory() as memory:
            memory.archival_memory_delete(str(value))
        emit({"deleted": value}, lambda: say(f"Forgot {value}"))
        return
    if not yes:
        click.confirm(
            f"Forget {kind} '{value}' for real? Nothing of it can be restored afterwards.",
            abort=True,
            err=True,
        )
    with open_memory() as memory:
        if kind == "passage":
            report = memory.forget_passage(str(value))
        elif kind == "message":
            report = memory.forget_message(int(str(value)))
        elif kind == "block":
            report = memory.forget_block(str(value))
        else:
            report = memory.forget_agent(str(value))

    def render() -> None:
        done = (
            "for real" if report.complete else "(not finished: bytes may remain, see the warnings)"
        )
        say(
            f"Forgot {kind} '{value}' {done} in {report.seconds:.2f} s: {report.passages} "
            "passage(s), "
            f"{report.messages} message(s), {report.blocks} block(s) with {report.block_versions} "
            "version(s), "
            f"{report.journal_entries_redacted} journal entr(ies) redacted, "
            f"{report.copies_redacted} copies "
            f"replaced, {report.session_rows} session row(s), {report.summaries_rewritten} "
            "summar(ies) rewritten."
        )
        for warning in report.warnings:
            say(f"warning: {warning}", style="yellow")

    emit(report, render)
    if not report.complete:  # the rows are gone, their bytes may not be: never a silent success
        click.get_current_context().exit(1)


@click.command("passage-sensitivity")
@shared_options
@click.argument("passage_id")
@click.argument("level")
def passage_sensitivity(passage_id: str, level: str) -> None:
    """Make a passage public, private or secret (journalled). Changing a secret one takes
    --allow-secret."""
    with open_memory() as memory:
        passage = memory.set_passage_sensitivity(passage_id, level)
    emit(_passage_data(passage), lambda: say(f"Passage {passage_id} is now {passage.sensitivity}."))


@click.command()
@shared_options
@click.option(
    "--limit", type=click.IntRange(min=1), default=20, show_default=True, help="How many to show."
)
@click.option(
    "--tag", "tags", multiple=True, help="Only passages with this tag (repeat for any of several)."
)
def passages(limit: int, tags: tuple[str, ...]) -> None:
    """List archival passages, newest first."""
    with open_memory() as memory:
        found = memory.archival_memory_list(limit=limit, tags=list(tags) or None)

    def render() -> None:
        if not found:
            say("No passages.")
        for passage in found:
            _print_passage(passage, indent="")

    emit([_passage_data(p) for p in found], render)
