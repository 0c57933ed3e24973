"""Passages: the records of archival memory, and the rules for what may be stored.

A passage is a piece of text an agent chose to keep (or that was imported for it), with tags,
free-form metadata and a UTC creation time. SQLite holds the passage; the vector store holds only
its embedding under the same id. `vector_state` says whether that embedding is known to be
written ('indexed') or still owed ('pending').
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ArchivalError
from ..validation import check_json, check_text
from .timestamps import Timestamp, to_utc_iso

__all__ = [
    "NewPassage",
    "Passage",
    "PreparedPassage",
    "SearchHit",
    "content_hash",
    "normalise_tags",
    "passage_from_row",
    "prepare",
]

MAX_TAG_LENGTH = 100


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
    vector_chunks: int = 1
    """How many vectors (chunks) hold it in the vector store; 0 marks one vector embedded before
    chunking from the first window only (see `chunks.py`)."""


@dataclass(frozen=True)
class NewPassage:
    """A passage to insert; `created_at` defaults to now (imports pass the original time)."""

    content: str
    tags: Iterable[str] | None = None
    metadata: Mapping[str, Any] | None = None
    created_at: Timestamp | None = None

    @classmethod
    def coerce(cls, item: str | NewPassage | Mapping[str, Any]) -> NewPassage:
        """Accept a bare string, a NewPassage, or a mapping with the same field names."""
        if isinstance(item, NewPassage):
            return item
        if isinstance(item, str):
            return cls(item)
        if isinstance(item, Mapping):
            unknown = set(item) - {"content", "tags", "metadata", "created_at"}
            if unknown or "content" not in item:
                raise ArchivalError(
                    "A passage to insert is a string or a mapping with 'content' and optional "
                    f"'tags', 'metadata', 'created_at'; got keys {sorted(item)}."
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


def prepare(item: str | NewPassage | Mapping[str, Any]) -> PreparedPassage:
    """Validate one passage to insert; raises ArchivalError saying what is wrong with it."""
    passage = NewPassage.coerce(item)
    content = _check_content(passage.content)
    return PreparedPassage(
        content=content,
        content_hash=content_hash(content),
        tags=normalise_tags(passage.tags),
        metadata_json=_encode_metadata(passage.metadata),
        created_at=None if passage.created_at is None else to_utc_iso(passage.created_at),
    )


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


def _encode_metadata(metadata: Mapping[str, Any] | None) -> str:
    """Metadata as JSON text; refuses what JSON cannot hold so a write never half-succeeds."""
    if metadata is None:
        return "{}"
    if not isinstance(metadata, Mapping):
        raise ArchivalError(f"Passage metadata must be a mapping, got {type(metadata).__name__}.")
    check_json("Passage metadata", metadata)
    try:
        return json.dumps(dict(metadata), ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError) as error:
        raise ArchivalError(f"Passage metadata must be JSON-serialisable: {error}") from error


def passage_from_row(row: sqlite3.Row) -> Passage:
    return Passage(
        passage_id=row["passage_id"],
        agent_id=row["agent_id"],
        content=row["content"],
        tags=tuple(json.loads(row["tags"])),
        metadata=json.loads(row["metadata"]),
        created_at=row["created_at"],
        vector_state=row["vector_state"],
        vector_chunks=int(row["vector_chunks"]),
    )
