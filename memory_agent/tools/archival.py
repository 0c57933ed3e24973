"""The model-facing tools for long-term memory: archival insert/search and conversation search.

Each tool is a `ToolSpec` (the same class as the core-memory tools) whose `run` calls one
MemoryManager method, so the model and the Python API share one code path. The functions that
turn results into text live here too: the model reads these strings, so they carry ids, dates
and tags, say how to page, and clip very long passages instead of flooding the context.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..archival.search import MAX_SEARCH_LIMIT
from ..archival.timestamps import to_utc_iso
from ..privacy.sensitivity import DEFAULT_LEVEL, LEVELS
from .spec import ToolSpec

if TYPE_CHECKING:
    from ..archival.passages import Passage, SearchHit
    from ..archival.scoring import SearchExplanation
    from ..conversation.recall import StoredMessage
    from ..manager import MemoryManager

__all__ = [
    "ARCHIVAL_TOOLS",
    "MAX_TOOL_RESULTS",
    "format_archival_hits",
    "format_explanation",
    "format_inserted",
    "format_messages",
]

MAX_TOOL_RESULTS = 50
MAX_SHOWN_CHARS = 2000
"""A passage or message longer than this is clipped in tool results (the stored text is whole)."""

_DATE = {
    "type": "string",
    "description": "ISO-8601 date or time in UTC, e.g. '2024-05-01' or '2024-05-01T13:30:00Z'. "
    "A bare end date includes that whole day.",
}
_LIMIT = {
    "type": "integer",
    "description": f"Results per page, 1-{MAX_TOOL_RESULTS} (default 5).",
    "minimum": 1,
    "maximum": MAX_TOOL_RESULTS,
}
MAX_PAGE = 10_000
_PAGE = {
    "type": "integer",
    "description": "Page of results, starting at 0 (default 0).",
    "minimum": 0,
    "maximum": MAX_PAGE,
}
_TAGS = {"type": "array", "items": {"type": "string"}}


def _paging(arguments: Mapping[str, Any], default_limit: int) -> tuple[int, int]:
    """Limit and page with their defaults; `validate_arguments` has checked their bounds."""
    return int(arguments.get("limit", default_limit)), int(arguments.get("page", 0))


def _when(value: str | None, *, end: bool = False) -> str | None:
    return None if not value else to_utc_iso(value, end_of_day=end)


def _run_insert(memory: MemoryManager, arguments: Mapping[str, Any], agent_id: str) -> str:
    passage_id = memory.archival_memory_insert(
        arguments["content"],
        arguments.get("tags"),
        agent_id=agent_id,
        sensitivity=arguments.get("sensitivity"),
        context=arguments.get("context"),
    )
    return format_inserted(passage_id, arguments.get("tags"))


def _run_archival_search(memory: MemoryManager, arguments: Mapping[str, Any], agent_id: str) -> str:
    limit, page = _paging(arguments, 5)
    if limit * page >= MAX_SEARCH_LIMIT:  # the schema allows it: answer plainly rather than refuse
        return (
            f"No passages on page {page} (limit {limit}) for {_quoted(arguments['query'])}: search "
            "ranks only the "
            f"best {MAX_SEARCH_LIMIT} matches and this page starts at result {limit * page + 1}. "
            "Narrow the "
            "query, tags or dates to reach other passages."
        )
    hits = memory.archival_memory_search(
        arguments["query"],
        limit=min(limit * (page + 1), MAX_SEARCH_LIMIT),
        tags=arguments.get("tags"),
        start_date=arguments.get("start_date"),
        end_date=arguments.get("end_date"),
        agent_id=agent_id,
        include_superseded=bool(arguments.get("include_superseded", False)),
        explain=bool(arguments.get("explain", False)),
    )
    text = format_archival_hits(arguments["query"], hits[limit * page :], page=page, limit=limit)
    if limit * (page + 1) >= MAX_SEARCH_LIMIT and hits[limit * page :]:
        text = text.replace(
            f"More may match: call again with page={page + 1}.",
            f"Search ranks only the best {MAX_SEARCH_LIMIT} matches; this is the last page of "
            "them.",
        )
    return text


def _run_conversation_search(
    memory: MemoryManager, arguments: Mapping[str, Any], agent_id: str
) -> str:
    limit, page = _paging(arguments, 10)
    messages = memory.search_messages(
        arguments["query"],
        agent_id=agent_id,
        roles=arguments.get("roles") or None,
        start_date=_when(arguments.get("start_date")),
        end_date=_when(arguments.get("end_date"), end=True),
        limit=limit,
        offset=limit * page,
        mode=arguments.get("mode") or "hybrid",
    )
    return format_messages(arguments["query"], messages, page=page, limit=limit)


ARCHIVAL_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="archival_memory_insert",
        description=(
            "Save a passage to your archival memory, a long-term store outside your context that "
            "you search with archival_memory_search. Use it for facts, events, documents and "
            "reflections worth keeping but not needed in every turn. Write self-contained text "
            "(who, what, when) so it makes sense when found later. Saving identical text twice "
            "keeps one copy."
        ),
        properties={
            "content": {"type": "string", "description": "The text to remember."},
            "tags": {
                **_TAGS,
                "description": "Optional labels to filter by later, e.g. ['project-x', "
                "'preference'].",
            },
            "sensitivity": {
                "type": "string",
                "enum": list(LEVELS),
                "description": "Who may read it later: 'public' (may be shared), "
                f"'{DEFAULT_LEVEL}' "
                "(the default) or "
                "'secret' (passwords, health, anything the user asked to keep secret: left out of "
                "searches, "
                "exports and prompts that are not allowed secrets).",
            },
            "context": {
                "type": "string",
                "description": (
                    "Optional words that help find the passage but are not part of it, e.g. the "
                    "question it "
                    "answers or the date it was said. Searches match them; results show only the "
                    "content."
                ),
            },
        },
        required=("content",),
        run=_run_insert,
    ),
    ToolSpec(
        name="archival_memory_search",
        description=(
            "Search your archival memory by meaning and by keywords together. Returns the best "
            "matching passages with their ids, dates and tags. Narrow with tags and a date range; "
            "ask for the next page when the answer may be further down."
        ),
        properties={
            "query": {"type": "string", "description": "What you are looking for, in plain words."},
            "limit": _LIMIT,
            "tags": {**_TAGS, "description": "Only passages carrying at least one of these tags."},
            "start_date": {
                **_DATE,
                "description": "Only passages saved at or after this time. " + _DATE["description"],
            },
            "end_date": {
                **_DATE,
                "description": "Only passages saved at or before this time. "
                + _DATE["description"],
            },
            "page": _PAGE,
            "include_superseded": {
                "type": "boolean",
                "description": "Also return passages a newer passage replaced (marked as "
                "superseded), e.g. to "
                "see what was believed before (default false).",
            },
            "explain": {
                "type": "boolean",
                "description": "Show why each passage was found: keyword and meaning ranks and "
                "scores, "
                "recency, importance, how often it was found before (default false).",
            },
        },
        required=("query",),
        run=_run_archival_search,
    ),
    ToolSpec(
        name="conversation_search",
        description=(
            "Search every message of your past conversations by meaning and by keywords together, "
            "including ones that were summarised out of your context window. Use it to recall "
            "exact wording, earlier requests or details the summary left out. An empty query lists "
            "the newest messages."
        ),
        properties={
            "query": {"type": "string", "description": "What you are looking for, in plain words."},
            "mode": {
                "type": "string",
                "enum": ["hybrid", "keyword", "vector"],
                "description": "'hybrid' (default): meaning and keywords together; 'keyword': "
                "exact "
                "words only; 'vector': meaning only.",
            },
            "roles": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Only messages with these roles: 'user' (the user's messages and "
                "tool "
                "results) or 'assistant' (your own replies and tool calls), e.g. ['user'].",
            },
            "start_date": {
                **_DATE,
                "description": "Only messages sent at or after this time. " + _DATE["description"],
            },
            "end_date": {
                **_DATE,
                "description": "Only messages sent at or before this time. " + _DATE["description"],
            },
            "limit": {
                **_LIMIT,
                "description": f"Results per page, 1-{MAX_TOOL_RESULTS} (default 10).",
            },
            "page": _PAGE,
        },
        required=("query",),
        run=_run_conversation_search,
    ),
)


# ----- result text ---------------------------------------------------------------------------


def format_inserted(passage_id: str, tags: Sequence[str] | None = None) -> str:
    tagged = f" with tags {', '.join(tags)}" if tags else ""
    return (
        f"Saved to archival memory as {passage_id}{tagged}. Find it again with "
        "archival_memory_search."
    )


def format_archival_hits(
    query: str, hits: Sequence[SearchHit], *, page: int = 0, limit: int = 5
) -> str:
    """Numbered passages with id, date and tags; says how to get more when the page is full."""
    if not hits:
        where = "on this page" if page else "in archival memory"
        return f"No passages {where} match {_quoted(query)}."
    first = page * limit + 1
    lines = [
        f"Archival memory results for {_quoted(query)} ({first}-{first + len(hits) - 1}, page "
        f"{page}):"
    ]
    if any(hit.degraded for hit in hits):
        lines.append(
            "(Search by meaning is unavailable right now: these results matched keywords only.)"
        )
    for number, hit in enumerate(hits, start=first):
        passage = hit.passage
        tags = f", tags: {', '.join(passage.tags)}" if passage.tags else ""
        lines.append(
            f"{number}. [{passage.passage_id}] "
            f"{_display_time(passage.created_at)}{tags}{_status(passage)}"
        )
        lines.append(_indent(_clip(passage.content)))
        if hit.explanation is not None:
            lines.append(_indent(format_explanation(hit.explanation)))
    if len(hits) >= limit:
        lines.append(f"More may match: call again with page={page + 1}.")
    return "\n".join(lines)


def _status(passage: Passage) -> str:
    """What makes a passage other than plainly current: replaced by a newer one, or expiring."""
    parts = []
    if passage.superseded_by is not None:
        parts.append(f"SUPERSEDED by {passage.superseded_by}, no longer current")
    if passage.expires_at is not None:
        parts.append(f"expires {_display_time(passage.expires_at)}")
    return f" ({'; '.join(parts)})" if parts else ""


def format_explanation(explanation: SearchExplanation) -> str:
    """One line of signals: what each index and each other signal contributed."""

    def rank(value: int | None, score: float | None, name: str) -> str:
        return f"{name} -" if value is None else f"{name} #{value} ({score:.3f})"

    return (
        f"why: {rank(explanation.keyword_rank, explanation.keyword_score, 'keyword')}, "
        f"{rank(explanation.vector_rank, explanation.vector_similarity, 'meaning')}, "
        f"match {explanation.fused:.3f}, recency {explanation.recency:.2f}, "
        f"importance {explanation.importance:.2f}, found {explanation.access_count} time(s) "
        "before; "
        f"{explanation.mode} score {explanation.score:.3f}"
    )


def format_messages(
    query: str, messages: Sequence[StoredMessage], *, page: int = 0, limit: int = 10
) -> str:
    """Numbered messages with id, time and role; compacted ones are marked."""
    if not messages:
        where = "on this page" if page else "in your conversation history"
        return (
            f"No messages {where} match {_quoted(query)}."
            if query.strip()
            else f"No messages {where}."
        )
    first = page * limit + 1
    heading = f"matching {_quoted(query)}" if query.strip() else "(newest first)"
    lines = [f"Messages {heading} ({first}-{first + len(messages) - 1}, page {page}):"]
    for number, message in enumerate(messages, start=first):
        evicted = "" if message.in_context else " (summarised out of context)"
        lines.append(
            f"{number}. [message {message.message_id}] {_display_time(message.created_at)} "
            f"{message.role}{evicted}:"
        )
        lines.append(_indent(_clip(message.text or "(no text)")))
    if len(messages) >= limit:
        lines.append(f"More may match: call again with page={page + 1}.")
    return "\n".join(lines)


def _display_time(iso: str) -> str:
    """'2024-05-01T13:30:05.123456+00:00' -> '2024-05-01 13:30:05 UTC'."""
    return f"{iso[:10]} {iso[11:19]} UTC" if len(iso) >= 19 else iso


def _clip(text: str) -> str:
    if len(text) <= MAX_SHOWN_CHARS:
        return text
    return f"{text[:MAX_SHOWN_CHARS]}... [clipped, {len(text)} characters in all]"


def _indent(text: str) -> str:
    return "\n".join(f"   {line}" for line in text.splitlines() or [""])


def _quoted(query: str) -> str:
    shown = query if len(query) <= 80 else query[:77] + "..."
    return f'"{shown}"'
