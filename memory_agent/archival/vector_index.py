"""The vector side of archival memory: embedding passages and keeping the store in step.

SQLite commits a passage first, as 'pending'; this module then embeds it, writes the vector and
marks the passage 'indexed'. If embedding or the vector write fails, the passage simply stays
pending: the caller's insert has already succeeded, keyword search already finds it, and
`reconcile` writes the vector later. A crash between the vector write and the mark leaves a
pending passage whose vector exists; re-embedding it is an idempotent upsert.

A passage longer than the model's window is embedded whole, as several chunk vectors
(`chunks.py`); searches rank each passage by its best chunk. A short passage of several sentences
also gets one vector per sentence, as further chunks (`sentences.py`).

A passage with ranking-only context is embedded as `CONTEXT_VECTORS` says: 'joined' embeds its
text followed by its context (as the keyword index holds it); 'extra' keeps the text's own vectors
and adds those of text-plus-context as further chunks, the best chunk winning. The choice was
measured on LoCoMo (docs/context-at-index-time.md).

The embedding function and the vector store are resolved on first use, so constructing archival
memory imports neither chromadb nor torch.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import MemoryAgentError
from ..store.protocol import Store
from . import passage_table
from .chunks import best_per_passage, chunk_id, embed_whole, vector_ids
from .config import VectorConfig, collection_prefix_for
from .failures import vector_failure_text
from .filters import PassageFilter
from .passages import Passage, indexed_text
from .sentences import sentence_texts
from .timestamps import to_epoch
from .vector_store import VectorMatch, VectorRecord, VectorStore

__all__ = ["IndexResult", "VectorIndex"]

log = logging.getLogger(__name__)

EMBED_BATCH = 256
ContextVectors = Literal["joined", "extra"]
CONTEXT_VECTORS: ContextVectors = "extra"
"""How a passage's context reaches the vector index (see the module's docstring). 'extra' was chosen
leave-one-conversation-out on LoCoMo: hybrid recall +0.007 / +0.021 / +0.006 at k = 5 / 10 / 20 over
'joined' (docs/context-at-index-time.md); it costs one more vector per passage that has context."""
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class IndexResult:
    indexed: int
    error: str | None = None


class VectorIndex:
    """Embeds passages with one embedding function and writes them to one vector store."""

    def __init__(
        self,
        db: Store,
        config: VectorConfig,
        embedding_function: Any = None,
        vector_store: VectorStore | None = None,
        *,
        batch_size: int = EMBED_BATCH,
    ) -> None:
        self._db = db
        self.config = config
        self._embedding_function = embedding_function
        self._store = vector_store
        self._vector_store_is_ours = vector_store is None
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._on_open: list[Callable[[], None]] = []
        self.context_vectors: ContextVectors = CONTEXT_VECTORS

    @property
    def embedding_function(self) -> Any:
        """The caller's embedding function, or the offline MiniLM one (created on first use)."""
        if self._embedding_function is None:
            with self._lock:
                if self._embedding_function is None:
                    from .embeddings import MiniLMEmbeddingFunction

                    self._embedding_function = MiniLMEmbeddingFunction()
        return self._embedding_function

    @property
    def store(self) -> VectorStore:
        """The caller's vector store, or Chroma as configured (created on first use)."""
        if self._store is None:
            # Resolved before taking the lock: the property above takes the same (non-reentrant)
            # lock.
            embedding_function = self.embedding_function
            opened: list[Callable[[], None]] = []
            with self._lock:
                if self._store is None:
                    from .chroma_store import ChromaVectorStore

                    prefix = self.config.collection_prefix or collection_prefix_for(
                        embedding_function
                    )
                    self._store = ChromaVectorStore(self.config, prefix)
                    opened, self._on_open = self._on_open, []
            for callback in opened:
                callback()
        return self._store

    @property
    def is_open(self) -> bool:
        """Whether the vector store has been created (never opens it)."""
        return self._store is not None

    def when_opened(self, callback: Callable[[], None]) -> None:
        """Run `callback` once, right after the vector store is first opened (now if it is open).

        Checks of the store against SQLite wait for this, so work that never needs vectors
        (keyword search, listing, a CLI command) never imports chromadb.
        """
        if self._store is not None:
            callback()
        else:
            with self._lock:
                if self._store is None:
                    self._on_open.append(callback)
                    return
            callback()

    def close(self) -> None:
        """Release the vector store's client if it was opened and can be closed."""
        store = self._store
        close = getattr(store, "close", None)
        if callable(close):
            close()
            if self._vector_store_is_ours:
                self._store = None

    def embed_documents(self, texts: Sequence[str]) -> list[Sequence[float]]:
        return list(self.embedding_function(list(texts)))

    def stored_embeddings(
        self, agent_id: str, passage_ids: Sequence[str]
    ) -> dict[str, Sequence[float]]:
        """Vectors already stored for these passages, from stores that can return them (an optional
        `embeddings(agent_id, ids)` method: Chroma and the in-memory store have it); empty when the
        store cannot, or fails (the caller embeds the texts instead)."""
        fetch = getattr(self.store, "embeddings", None)
        if fetch is None or not passage_ids:
            return {}
        try:
            return dict(fetch(agent_id, passage_ids))
        except Exception as error:  # the vector side may fail; embedding again is the way round
            log.warning(
                "could not read stored vectors of agent %s (%s); embedding instead", agent_id, error
            )
            return {}

    def embed_query(self, text: str) -> Sequence[float]:
        function = self.embedding_function
        embed = getattr(function, "embed_query", None) or function
        return embed([text])[0]

    def query(self, text: str, where: PassageFilter, limit: int) -> list[VectorMatch]:
        """Nearest passages to `text`, each at its best chunk; raises if the model or the store
        fails."""
        probe = self.embed_query(text)
        store = self.store
        return best_per_passage(lambda depth: store.query(probe, where, depth), limit)

    def write(self, passages: Sequence[Passage], progress: Progress | None = None) -> IndexResult:
        """Embed and store these passages in batches, marking each batch indexed.

        Never raises for a failure of the vector side: what was not written stays pending.

        A store not yet open is opened first. Why: the checks that wait for its opening embed
        every pending passage, these among them, so embedding them before would do it twice (the
        first insert of each process paid double). Those no longer pending then (the checks
        indexed them, or they were deleted) count as done.
        """
        total, done = len(passages), 0
        if passages and not self.is_open:
            try:
                self.store  # noqa: B018 (opening it runs the checks waiting for it)
            except Exception as error:  # the store cannot open: the passages stay pending
                return self._left_pending(total, error)
            passages = self._still_pending(passages)
            done = total - len(passages)
        for start in range(0, len(passages), self.batch_size):
            batch = passages[start : start + self.batch_size]
            try:
                self._write_batch(batch)
            except Exception as error:  # any store or model failure: the passages stay pending
                return self._left_pending(total - done, error, done)
            done += len(batch)
            if progress is not None:
                progress(done, total)
        return IndexResult(done)

    @staticmethod
    def _left_pending(count: int, error: Exception, done: int = 0) -> IndexResult:
        message = vector_failure_text(error)
        log.warning(
            "Archival vectors not written for %d passage(s), left pending: %s", count, message
        )
        return IndexResult(done, message)

    def _still_pending(self, passages: Sequence[Passage]) -> list[Passage]:
        """These passages as SQLite has them now, those still pending (a deleted one is left
        out)."""
        by_agent: dict[str, list[str]] = {}
        for passage in passages:
            by_agent.setdefault(passage.agent_id, []).append(passage.passage_id)
        with self._db.reading() as conn:
            now = {
                agent_id: passage_table.fetch_by_ids(conn, agent_id, ids)
                for agent_id, ids in by_agent.items()
            }
        fresh = (now[p.agent_id].get(p.passage_id) for p in passages)
        return [p for p in fresh if p is not None and p.vector_state == "pending"]

    def passage_vectors(self, batch: Sequence[Passage]) -> list[list[Any]]:
        """Each passage's vectors (its chunks): its context included as `context_vectors` says,
        then one vector per sentence of a short passage (`sentences.py`)."""
        return self.vectors_with_context(
            [p.content for p in batch], [p.context for p in batch], sentences=True
        )

    def vectors_with_context(
        self, texts: Sequence[str], contexts: Sequence[str], *, sentences: bool = False
    ) -> list[list[Any]]:
        """Each text's vectors, its ranking-only context ('' for none) included as
        `context_vectors` says (conversation messages are embedded the same way), and with
        `sentences` its sentence vectors after them (archival passages only: measured there)."""
        extra: list[tuple[int, str]] = []
        if self.context_vectors == "joined":
            whole = [indexed_text(text, context) for text, context in zip(texts, contexts)]
        else:
            whole = list(texts)
            extra = [(i, indexed_text(texts[i], c)) for i, c in enumerate(contexts) if c]
        if sentences:
            extra += [(i, part) for i, text in enumerate(texts) for part in sentence_texts(text)]
        found = embed_whole(self.embedding_function, whole + [text for _, text in extra])
        chunks = [list(vectors) for vectors in found[: len(whole)]]
        for (i, _), vectors in zip(extra, found[len(whole) :]):
            chunks[i].extend(vectors)
        return chunks

    def _write_batch(self, batch: Sequence[Passage]) -> None:
        chunks = self.passage_vectors(batch)
        if len(chunks) != len(batch) or not all(chunks):
            raise MemoryAgentError(
                f"The embedding function returned {len(chunks)} vectors for {len(batch)} texts."
            )
        epoch = functools.cache(to_epoch)  # a batch's passages mostly share one creation time
        self.store.upsert(
            [
                VectorRecord(
                    chunk_id(p.passage_id, number),
                    p.agent_id,
                    vector,
                    p.tags,
                    epoch(p.created_at),
                )
                for p, vectors in zip(batch, chunks)
                for number, vector in enumerate(vectors)
            ]
        )
        for p, vectors in zip(
            batch, chunks
        ):  # chunks of an earlier, longer embedding of it (another window)
            stale = [
                chunk_id(p.passage_id, number) for number in range(len(vectors), p.vector_chunks)
            ]
            if stale:
                self.store.delete(p.agent_id, stale)
        try:
            with self._db.transaction() as conn:
                passage_table.mark_indexed(
                    conn, [(p.passage_id, len(vectors)) for p, vectors in zip(batch, chunks)]
                )
        except (sqlite3.Error, MemoryAgentError) as error:
            raise MemoryAgentError(f"vectors written but not marked indexed: {error}") from error

    def remove_passages(self, agent_id: str, passages: Sequence[Passage]) -> str | None:
        """Delete every vector (chunk) of these passages; see `remove`. Any path that deletes or
        purges passages removes their vectors through this."""
        return self.remove(
            agent_id,
            [
                vector_id
                for p in passages
                for vector_id in vector_ids(p.passage_id, p.vector_chunks)
            ],
        )

    def remove(self, agent_id: str, ids: Sequence[str]) -> str | None:
        """Delete these vectors (see `chunks.vector_ids` for a passage's); returns the error text
        if the store failed (reconcile retries)."""
        if not ids:
            return None
        try:
            self.store.delete(agent_id, list(ids))
        except Exception as error:  # the passage is gone from SQLite; the orphan vector is harmless
            message = vector_failure_text(error)
            log.warning("Archival vectors not removed (reconcile will): %s", message)
            return message
        return None
