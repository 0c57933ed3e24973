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

__all__ = ["forget", "passages", "recall", "remember"]

def _passage_data(passage: Passage) -> dict[str, object]:
    return {"id": passage.passage_id, "content": passage.content, "tags": list(passage.tags),
            "metadata": passage.metadata, "created_at": passage.created_at, "vector_state": passage.vector_state,
            "expires_at": passage.expires_at, "superseded_by": passage.superseded_by,
            "importance": passage.importance, "access_count": passage.access_count,
            "last_accessed_at": passage.last_accessed_at, "provenance": passage.provenance}


def _hit_data(hit: SearchHit) -> dict[str, object]:
    data = {**_passage_data(hit.passage), "score": hit.score, "keyword_rank": hit.keyword_rank,
            "vector_rank": hit.vector_rank, "keyword_score": hit.keyword_score,
            "vector_similarity": hit.vector_similarity, "degraded": hit.degraded}
    if hit.explanation is not None:
        data["explanation"] = dataclasses.asdict(hit.explanation)
    return data


@click.command()
@shared_options
@click.argument("text")
@click.option("--tag", "tags", multiple=True, help="A tag for the passage (repeat for several).")
@click.option("--context", help="Words that help find TEXT but are not part of it (searched, never shown), "
                                "e.g. the question it answers.")
def remember(text: str, tags: tuple[str, ...], context: str | None) -> None:
    """Store TEXT in archival memory; prints the passage id."""
    with open_memory() as memory:
        passage_id = memory.archival_memory_insert(text, tags=list(tags) or None, context=context)
        stored = memory.archival_memory_get(passage_id)
        # A failed embedding leaves the passage pending by design; the person typing should hear why.
        problem = None if stored is None or stored.vector_state != "pending" else _why_pending(memory)
    emit({"id": passage_id, "vector_error": problem}, lambda: say(f"Remembered as {passage_id}"))
    if problem:
        click.echo(f"Warning: not embedded yet, so only keyword search finds it: {problem}.", err=True)


@click.command()
@shared_options
@click.argument("query")
@click.option("--mode", type=click.Choice(get_args(SearchMode)),
              help="Words (keyword), meaning (vector), both fused (hybrid; the default unless "
                   "MEMORY_HYBRID_SEARCH=false), or fused plus recency and importance (scored).")
@click.option("--limit", type=click.IntRange(min=1, max=1000), default=5, show_default=True,
              help="How many passages to show.")
@click.option("--tag", "tags", multiple=True, help="Only passages with this tag (repeat for any of several).")
@click.option("--explain", is_flag=True, help="Print every signal behind each hit (ranks, similarity, recency, "
              "importance, access count, fused and final score).")
@click.option("--include-superseded", is_flag=True, help="Also show passages a newer passage replaced.")
def recall(query: str, mode: SearchMode | None, limit: int, tags: tuple[str, ...], explain: bool,
           include_superseded: bool) -> None:
    """Search archival memory, best first, with each passage's score."""
    with open_memory() as memory:
        hits = memory.archival_memory_search(query, limit=limit, tags=list(tags) or None, mode=mode,
                                             include_superseded=include_superseded, explain=explain)

    def render() -> None:
        if not hits:
            say("Nothing found.")
        elif any(hit.degraded for hit in hits):
            say("Search by meaning failed, so these results matched keywords only; "
                "'memory-agent doctor' says why.", style="yellow")
        for rank, hit in enumerate(hits, 1):
            console().print(Text.assemble((f"#{rank}  score {hit.score:.3g}", "bold"), f"  ({_ranks(hit)})"))
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
        similarity = "" if hit.vector_similarity is None else f", similarity {hit.vector_similarity:.3f}"
        parts.append(f"meaning #{hit.vector_rank}{similarity}")
    return "; ".join(parts) or "newest first"


def _print_passage(passage: Passage, indent: str = "    ") -> None:
    """A passage as two lines: its text, then its id, tags and time."""
    status = [f"superseded by {passage.superseded_by}"] if passage.superseded_by else []
    status += [f"expires {timestamp(passage.expires_at)}"] if passage.expires_at else []
    details = " · ".join(part for part in (passage.passage_id, ", ".join(passage.tags),
                                           timestamp(passage.created_at), *status) if part)
    console().print(Text(indent + preview(passage.content, 300)))
    console().print(Text(indent + details, style="dim"))


@click.command()
@shared_options
@click.argument("passage_id")
def forget(passage_id: str) -> None:
    """Delete a passage from archival memory (journalled with its content)."""
    with open_memory() as memory:
        memory.archival_memory_delete(passage_id)
    emit({"deleted": passage_id}, lambda: say(f"Forgot {passage_id}"))


@click.command()
@shared_options
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="How many to show.")
@click.option("--tag", "tags", multiple=True, help="Only passages with this tag (repeat for any of several).")
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
