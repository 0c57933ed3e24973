"""Whole passages in the vector index: one passage, one or more vectors ("chunks").

An embedding model reads a bounded window (all-MiniLM-L6-v2: 256 word-pieces); a longer text
would be embedded from its start only, so a fact past the window could never be found by
meaning. An embedding function that knows its window offers `embed_chunks(texts)`, which splits
each text into overlapping windows and returns one vector per window (the bundled MiniLM one does;
see `embeddings.py`). Other functions are given the whole text and embed it as they define.

The first chunk's vector id is the passage id itself, so a passage that fits the window has one
vector under its own id, exactly as before chunking existed; chunk n > 0 is stored under
`<passage id>#chunk-<n>`. SQLite records how many chunks a passage has (`vector_chunks`), which
is what a delete removes and what reconcile expects. A search asks the store for chunks and keeps
each passage's best one: the passage's vector score is its best chunk's similarity.

`vector_chunks = 0` marks a passage embedded before chunking existed from the first window of a
text that may be longer (one vector, under its id); `memory-agent doctor --repair` re-embeds those.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from .vector_store import VectorMatch

__all__ = [
    "CHUNK_MARK",
    "ChunkingEmbedder",
    "best_per_passage",
    "chunk_id",
    "embed_whole",
    "passage_of",
    "vector_ids",
]

CHUNK_MARK = "#chunk-"
"""Separates a passage id from the number of one of its later chunks. Live passage ids are
`passage-<uuid>` and imported ids containing it are replaced on import, so it is unambiguous."""


@runtime_checkable
class ChunkingEmbedder(Protocol):
    """An embedding function that embeds each text whole, as one vector per window it needs."""

    def embed_chunks(self, texts: list[str]) -> list[list[Any]]:
        """For each text, the vectors of its overlapping windows (one for a text that fits)."""
        ...


def chunk_id(passage_id: str, number: int) -> str:
    """The vector id of a passage's chunk `number` (0 is the passage id itself)."""
    return passage_id if number == 0 else f"{passage_id}{CHUNK_MARK}{number}"


def passage_of(vector_id: str) -> str:
    """The passage a vector id belongs to."""
    head, mark, tail = vector_id.rpartition(CHUNK_MARK)
    return head if mark and tail.isdigit() else vector_id


def vector_ids(passage_id: str, chunks: int) -> list[str]:
    """Every vector id of a passage stored as `chunks` chunks (0, the legacy mark, is one)."""
    return [chunk_id(passage_id, number) for number in range(max(chunks, 1))]


def embed_whole(embedding_function: Any, texts: Sequence[str]) -> list[list[Any]]:
    """Each text's vectors: the function's own windows if it chunks, else one vector per text."""
    if isinstance(embedding_function, ChunkingEmbedder):
        return [list(vectors) for vectors in embedding_function.embed_chunks(list(texts))]
    return [[vector] for vector in embedding_function(list(texts))]


def best_per_passage(
    fetch: Callable[[int], list[VectorMatch]], limit: int, *, widen: int = 4
) -> list[VectorMatch]:
    """The `limit` best passages from a chunk ranking, each at its best chunk's similarity.

    `fetch(n)` returns the n nearest chunks. Several chunks of one passage can fill the list, so
    when fewer than `limit` passages come back from a full list, it is fetched again, wider (up
    to `widen` times `limit`): a store of short passages pays one fetch, as before chunking.
    """
    depth = limit
    while True:
        matches = fetch(depth)
        best: dict[str, VectorMatch] = {}
        for match in matches:  # closest first, so the first chunk seen is the passage's best
            passage_id = passage_of(match.passage_id)
            if passage_id not in best:
                best[passage_id] = VectorMatch(passage_id, match.similarity)
        if len(best) >= limit or len(matches) < depth or depth >= limit * widen:
            return list(best.values())[:limit]
        depth = min(depth * 2, limit * widen)
