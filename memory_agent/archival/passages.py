"""Passages: the records of archival memory, and the rules for what may be stored.

A passage is a piece of text an agent chose to keep (or that was imported for it), with tags,
free-form metadata and a UTC creation time. Its lifecycle fields say whether search may return it:
`expires_at` (a passage past it is never returned, and `purge_expired` deletes it) and
`superseded_by` (a newer passage replaced it: kept and linked, left out of default search).
`importance`, the access count and `provenance` (where it came from) describe it further.
`sensitivity` (public, private or secret; `memory_agent.privacy.sensitivity`) says who may read it.
SQLite holds the passage; the vector store holds only
its embedding under the same id. `vector_state` says whether that embedding is known to be
written ('indexed') or still owed ('pending').

A passage may carry ranking-only `context` (e.g. the turn a reply answers and its date): the
keyword and vector indexes see it, search results never show it (see `indexed_text` and
docs/context-at-index-time.md).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from ..errors import ArchivalError
from ..privacy.sensitivity import DEFAULT_LEVEL, Sensitivity, parse_level
from ..store.protocol import Row
from ..validation import check_json, check_text
from .scoring import SearchExplanation
from .timestamps import Timestamp, aware_utc_iso, to_utc_iso

__all__ = [
    "DEFAULT_IMPORTANCE",
    "NewPassage",
    "Passage",
    "PreparedPassage",
    "SearchHit",
    "check_importance",
    "content_hash",
    "encode_metadata",
    "encode_provenance",
    "indexed_text",
    "inserted_passage",
    "normalise_tags",
    "passage_from_row",
    "prepare",
]

MAX_TAG_LENGTH = 100
DEFAULT_IMPORTANCE = 0.5
MAX_TTL_DAYS = 36_500.0
"""A hundred years: a longer TTL is a mistake more likely than a plan (and would pass year 9999)."""
NEW_PASSAGE_KEYS = frozenset(
    {
        "content",
        "tags",
        "metadata",
        "created_at",
        "expires_at",
        "ttl_days",
        "importance",
        "provenance",
        "sensitivity",
        "context",
    }
)
MAX_CONTEXT_CHARS = 20_000
"""Ranking-only context is a few turns, not a document: a longer one is refused, not cut."""


@dataclass(frozen=True)
class Passage:
    """One stored passage."""

    passage_id: str
    agent_id: str
    content: str
    tags: tuple[str, ...]
    metadata: dict[str, Any]
    created_at: str
    """ISO-8601 UTC timestamp with microseconds."""
    vector_state: str
    """'indexed' when its embedding is in the vector store, 'pending' while it is owed."""
    expires_at: str | None = None
    """UTC ISO text after which search never returns it; None: it never expires."""
    superseded_by: str | None = None
    """The passage_id of the passage that replaced it; None: it is current."""
    importance: float = DEFAULT_IMPORTANCE
    """In [0, 1]: author-given (0.5 unless said), adjusted by consolidation."""
    access_count: int = 0
    """How many searches returned it."""
    last_accessed_at: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    """Where it came from, e.g. {"block": label, "block_id": id, "messages": [ids],
    "merged_from": [passage ids]}."""
    vector_chunks: int = 1
    """How many vectors (chunks) hold it in the vector store; 0 marks one vector embedded before
    chunking from the first window only (see `chunks.py`)."""
    sensitivity: str = DEFAULT_LEVEL
    """public, private or secret: who may read it (`memory_agent.privacy.sensitivity`)."""
    context: str = ""
    """Ranking-only context the indexes see and search results do not show ('' for none)."""

    def is_expired(self, now: str) -> bool:
        """Whether it has expired at `now` (canonical UTC ISO text, e.g. `store.utc_now()`)."""
        return self.expires_at is not None and self.expires_at <= now

    @property
    def is_superseded(self) -> bool:
        return self.superseded_by is not None


@dataclass(frozen=True)
class NewPassage:
    """A passage to insert; `created_at` defaults to now (imports pass the original time).

    `expires_at` (a timezone-aware time) or `ttl_days` (days from now), not both, make it expire;
    `importance` is in [0, 1] (default 0.5); `provenance` is a JSON object saying where it came
    from; `sensitivity` is public, private (the default) or secret. `context` is ranking-only text
    (searched by both indexes, never shown in hits).
    """

    content: str
    tags: Iterable[str] | None = None
    metadata: Mapping[str, Any] | None = None
    created_at: Timestamp | None = None
    expires_at: Timestamp | None = None
    ttl_days: float | None = None
    importance: float | None = None
    provenance: Mapping[str, Any] | None = None
    sensitivity: str | None = None
    context: str | None = None

    @classmethod
    def coerce(cls, item: str | NewPassage | Mapping[str, Any]) -> NewPassage:
        """Accept a bare string, a NewPassage, or a mapping with the same field names."""
        if isinstance(item, NewPassage):
            return item
        if isinstance(item, str):
            return cls(item)
        if isinstance(item, Mapping):
            unknown = set(item) - NEW_PASSAGE_KEYS
            if unknown or "content" not in item:
                optional = ", ".join(f"'{key}'" for key in sorted(NEW_PASSAGE_KEYS - {"content"}))
                raise ArchivalError(
                    "A passage to insert is a string or a mapping with 'content' and optional "
                    f"{optional}; "
                    f"got keys {sorted(item)}."
                )
            return cls(**item)
        raise ArchivalError(f"Cannot insert a {type(item).__name__} as a passage; pass a string.")


@dataclass(frozen=True)
class SearchHit:
    """A passage found by a search, its fused score, and where each index ranked it.

    `score` orders the hits of one search (higher is better) and is not comparable across
    searches or modes. Ranks are 1-based; None means that index did not return the passage.
    """

    passage: Passage
    score: float
    keyword_rank: int | None = None
    vector_rank: int | None = None
    keyword_score: float | None = None
    """-bm25 of the keyword match (higher is better)."""
    vector_similarity: float | None = None
    """Cosine similarity of the query and passage embeddings."""
    degraded: bool = False
    """True when a vector or hybrid search fell back to keywords only (the vector side failed;
    `memory-agent doctor` says why and `--repair` rebuilds it)."""
    fused_score: float | None = None
    """In the scored mode, the fused match before recency and importance were added."""
    explanation: SearchExplanation | None = None
    """Every signal behind the hit, when the search was asked to explain."""

    @property
    def passage_id(self) -> str:
        return self.passage.passage_id

    @property
    def content(self) -> str:
        return self.passage.content


def content_hash(content: str) -> str:
    """Identity of a passage's text for de-duplication (per agent)."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class PreparedPassage:
    """A NewPassage checked and converted to column values, before anything is written."""

    content: str
    content_hash: str
    tags: tuple[str, ...]
    metadata_json: str
    created_at: str | None
    """Canonical UTC text, or None for 'the time of the insert'."""
    expires_at: str | None = None
    """Canonical UTC text, or None: never expires."""
    importance: float = DEFAULT_IMPORTANCE
    provenance_json: str = "{}"
    access_count: int = 0
    """Set by imports only (a new passage has not been found yet)."""
    last_accessed_at: str | None = None
    sensitivity: Sensitivity = DEFAULT_LEVEL
    context: str = ""


def prepare(item: str | NewPassage | Mapping[str, Any]) -> PreparedPassage:
    """Validate one passage to insert; raises ArchivalError saying what is wrong with it."""
    passage = NewPassage.coerce(item)
    content = _check_content(passage.content)
    return PreparedPassage(
        content=content,
        content_hash=content_hash(content),
        tags=normalise_tags(passage.tags),
        metadata_json=encode_metadata(passage.metadata),
        created_at=None if passage.created_at is None else to_utc_iso(passage.created_at),
        expires_at=_expiry(passage.expires_at, passage.ttl_days),
        importance=DEFAULT_IMPORTANCE
        if passage.importance is None
        else check_importance(passage.importance),
        provenance_json=encode_provenance(passage.provenance),
        sensitivity=DEFAULT_LEVEL
        if passage.sensitivity is None
        else parse_level(passage.sensitivity),
        context=check_context(passage.context),
    )


def check_context(context: object) -> str:
    """Ranking-only context checked like content ('' for None or blank); ArchivalError otherwise."""
    if context is None:
        return ""
    if not isinstance(context, str):
        raise ArchivalError(
            f"Passage context must be text, got {type(context).__name__}; nothing was stored."
        )
    check_text("Passage context", context)
    if len(context) > MAX_CONTEXT_CHARS:
        raise ArchivalError(
            f"Passage context is {len(context)} characters, more than {MAX_CONTEXT_CHARS}; "
            "give the few turns around the passage, not a document. Nothing was stored."
        )
    return context.strip()


def indexed_text(content: str, context: str) -> str:
    """What the keyword index holds for a passage: its text, then its context (the text alone
    when there is none, so passages without context are indexed exactly as before)."""
    return f"{content} {context}" if context else content


def _expiry(expires_at: Timestamp | None, ttl_days: object) -> str | None:
    """When the passage expires: an explicit aware time, or now plus `ttl_days`; never both."""
    if expires_at is not None and ttl_days is not None:
        raise ArchivalError("Give expires_at or ttl_days, not both; nothing was stored.")
    if expires_at is not None:
        return aware_utc_iso("expires_at", expires_at)
    if ttl_days is None:
        return None
    if (
        isinstance(ttl_days, bool)
        or not isinstance(ttl_days, (int, float))
        or not math.isfinite(ttl_days)
    ):
        raise ArchivalError(
            f"ttl_days must be a number of days, got {ttl_days!r}; nothing was stored."
        )
    if not 0 < ttl_days <= MAX_TTL_DAYS:
        raise ArchivalError(
            f"ttl_days must be more than 0 and at most {MAX_TTL_DAYS:g}, got {ttl_days!r}; "
            "nothing was stored."
        )
    moment = datetime.now(timezone.utc) + timedelta(days=float(ttl_days))
    return moment.isoformat(timespec="microseconds")


def check_importance(importance: object) -> float:
    """`importance` as a float in [0, 1]; ArchivalError for anything else (bools, NaN, text)."""
    if (
        isinstance(importance, bool)
        or not isinstance(importance, (int, float))
        or not math.isfinite(importance)
    ):
        raise ArchivalError(
            f"importance must be a number from 0 to 1, got {importance!r}; nothing was changed."
        )
    if not 0.0 <= importance <= 1.0:
        raise ArchivalError(
            f"importance must be from 0 to 1, got {importance!r}; nothing was changed."
        )
    return float(importance)


def encode_provenance(provenance: Mapping[str, Any] | None) -> str:
    """Provenance as JSON text (an object); refused like metadata when JSON cannot hold it."""
    return _json_object_text("Passage provenance", provenance)


def _check_content(content: object) -> str:
    if not isinstance(content, str):
        raise ArchivalError(f"Passage content must be text, got {type(content).__name__}.")
    check_text("Passage content", content)
    if not content.strip():
        raise ArchivalError("Passage content is empty; there is nothing to archive.")
    return content


def normalise_tags(tags: Iterable[str] | str | None) -> tuple[str, ...]:
    """Distinct, stripped, non-empty tags in first-seen order; a bare string is one tag."""
    if tags is None:
        return ()
    if isinstance(tags, str):
        tags = [tags]
    if not isinstance(tags, Iterable) or isinstance(tags, (bytes, Mapping)):
        raise ArchivalError(f"Tags must be a list of strings, got {type(tags).__name__}.")
    clean: dict[str, None] = {}
    for tag in tags:
        if not isinstance(tag, str):
            raise ArchivalError(f"Tags must be strings, got {type(tag).__name__}.")
        check_text("A tag", tag)
        tag = tag.strip()
        if len(tag) > MAX_TAG_LENGTH:
            raise ArchivalError(f"Tag '{tag[:40]}...' is longer than {MAX_TAG_LENGTH} characters.")
        if tag:
            clean.setdefault(tag, None)
    return tuple(clean)


def encode_metadata(metadata: Mapping[str, Any] | None) -> str:
    """Metadata as JSON text; refuses what JSON cannot hold so a write never half-succeeds."""
    return _json_object_text("Passage metadata", metadata)


def _json_object_text(what: str, value: Mapping[str, Any] | None) -> str:
    """A mapping as sorted JSON text ("{}" for None); ArchivalError naming `what` otherwise."""
    if value is None:
        return "{}"
    if not isinstance(value, Mapping):
        raise ArchivalError(f"{what} must be a mapping, got {type(value).__name__}.")
    check_json(what, value)
    try:
        return json.dumps(dict(value), ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError) as error:
        raise ArchivalError(f"{what} must be JSON-serialisable: {error}") from error


def passage_from_row(row: Row) -> Passage:
    return Passage(
        passage_id=row["passage_id"],
        agent_id=row["agent_id"],
        content=row["content"],
        tags=tuple(json.loads(row["tags"])),
        metadata=json.loads(row["metadata"]),
        created_at=row["created_at"],
        vector_state=row["vector_state"],
        expires_at=row["expires_at"],
        superseded_by=row["superseded_by"],
        importance=float(row["importance"]),
        access_count=int(row["access_count"]),
        last_accessed_at=row["last_accessed_at"],
        provenance=json.loads(row["provenance"]),
        vector_chunks=int(row["vector_chunks"]),
        sensitivity=row["sensitivity"],
        context=row["index_context"],
    )


def inserted_passage(
    passage_id: str, agent_id: str, item: PreparedPassage, created_at: str
) -> Passage:
    """The passage a new row holds, from the values `passage_table.insert_row` wrote and the
    columns' defaults (what `passage_from_row` would read back; a test holds the two equal on
    both engines)."""
    return Passage(
        passage_id=passage_id,
        agent_id=agent_id,
        content=item.content,
        tags=item.tags,
        metadata=json.loads(item.metadata_json),
        created_at=created_at,
        vector_state="pending",
        expires_at=item.expires_at,
        superseded_by=None,
        importance=item.importance,
        access_count=item.access_count,
        last_accessed_at=item.last_accessed_at,
        provenance=json.loads(item.provenance_json),
        vector_chunks=1,
        sensitivity=item.sensitivity,
        context=item.context,
    )
