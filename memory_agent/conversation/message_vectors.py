"""The vector side of conversation search: each message embedded, after its turn, not during it.

A message is written in one short transaction with no vector (`vector_chunks` NULL: pending), so
embedding never lengthens a turn's write. `write_pending` embeds pending messages in batches:
the agent calls it after a turn, a vector or hybrid search calls it (bounded) for the agent it
searches, and `reconcile` (`memory-agent doctor --repair`) catches up on everything and drops
vectors whose message is gone. The vectors live in a vector store of their own (for Chroma, one
collection per agent under a prefix apart from archival's), so archival search and its reconcile
never see them; they are embedded by archival's `VectorIndex`, the same model and the same
window chunking (`archival/chunks.py`).

Each message is embedded as a passage with ranking-only context would be: its own text, plus the
text followed by its context (the message before it in the same session, the turn it answers,
and the date) as an extra vector, the best one winning (docs/conversation-search.md).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ..archival.chunks import best_per_passage, chunk_id, passage_of, vector_ids
from ..archival.failures import vector_failure_text
from ..archival.filters import PassageFilter
from ..archival.timestamps import to_epoch
from ..archival.vector_index import VectorIndex
from ..archival.vector_store import VectorMatch, VectorRecord, VectorStore
from ..errors import MemoryAgentError
from ..store.protocol import Store
from . import recall
from .recall import StoredMessage

__all__ = [
    "CATCH_UP_BATCH",
    "MAX_EMBEDDED_CHARS",
    "SEARCH_BUDGET_SECONDS",
    "chroma_message_store",
    "MessageReconcileReport",
    "MessageVectors",
    "message_context",
    "message_of",
    "message_prefix",
    "message_vector_id",
]

log = logging.getLogger(__name__)

MESSAGE_ID_PREFIX = "message-"
MAX_EMBEDDED_CHARS = 4_000
"""How much of one message its vectors cover (about four model windows): a pasted log or a
tool's listing of megabytes is found by its words (keyword search covers every character), and
embedding all of it would stall the writer for minutes. Stated in docs/conversation-search.md."""
SEARCH_BUDGET_SECONDS = 1.0
"""How long a search spends catching up on messages without vectors before it ranks (at least one
small batch): a search must answer promptly even over a long history never embedded; the rest
is written by the agent after its turns, or by `doctor --repair`."""
SEARCH_BATCH = 4
SMALL_BACKLOG = 64
"""A backlog this small is embedded whole even under a budget: results then do not depend on the
machine's speed; a larger one (a long history never embedded) is cut by the budget."""
MAX_CONTEXT_CHARS = 1_000
"""How much of the turn a message answers goes into its context (about one model window)."""
CATCH_UP_BATCH = 256
"""How many pending messages one call of `write_pending(limit=...)` embeds when bounded (a search
catches up at most this many, newest first, so a first search of a long history stays short)."""


def message_prefix(archival_prefix: str) -> str:
    """The collection-name prefix of message vectors beside archival's `archival_prefix` (the
    same model's name, another kind: archival's listing and rebuild never match it)."""
    return ("messages_" + archival_prefix.removeprefix("archival_"))[:63].rstrip("._-")


def chroma_message_store(index: VectorIndex) -> VectorStore:
    """Chroma beside archival's collections (same place, same model's name) under the message
    prefix: the default store of message vectors, for the manager and `doctor` alike."""
    from ..archival.chroma_store import ChromaVectorStore
    from ..archival.config import collection_prefix_for

    prefix = index.config.collection_prefix or collection_prefix_for(index.embedding_function)
    return ChromaVectorStore(index.config, message_prefix(prefix))


def message_vector_id(message_id: int) -> str:
    """The vector id of a message's first vector (later chunks follow `chunks.chunk_id`)."""
    return f"{MESSAGE_ID_PREFIX}{message_id}"


def message_of(vector_id: str) -> int | None:
    """The message id a vector id belongs to (None for an id that is not a message's)."""
    head = passage_of(vector_id)
    number = head[len(MESSAGE_ID_PREFIX) :] if head.startswith(MESSAGE_ID_PREFIX) else ""
    return int(number) if number.isdigit() else None


def message_context(previous: str, created_at: str) -> str:
    """A message's ranking-only context: the turn it answers and the day it was said."""
    try:
        when = datetime.fromisoformat(created_at.replace("Z", "+00:00"))
        day = f"{when.day} {when:%B %Y}"
    except ValueError:
        day = ""
    return f"{previous} {day}".strip()


@dataclass
class MessageReconcileReport:
    """What a catch-up of message vectors did; `errors` holds each vector-store failure."""

    embedded: int = 0
    """Messages whose vectors were written."""
    removed_vectors: int = 0
    """Vectors whose message is gone (forgotten, deleted) that were deleted."""
    missing_vectors: int = 0
    """Messages marked as having vectors whose vectors were absent (written again)."""
    still_pending: int = 0
    """Messages still without vectors afterwards (see `errors`)."""
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors and self.still_pending == 0


class MessageVectors:
    """Messages' vectors in their own store, embedded by archival's index (its model)."""

    def __init__(
        self, db: Store, index: Callable[[], VectorIndex], store: Callable[[], VectorStore]
    ) -> None:
        """`index` and `store` are resolved on first use: nothing loads a model or opens Chroma
        until a message is embedded or searched by meaning."""
        self._db = db
        self._index_of = index
        self._store_of = store
        self._store: VectorStore | None = None
        self._lock = threading.Lock()
        self._writing = threading.Lock()

    @property
    def database(self) -> Store:
        return self._db

    @property
    def store(self) -> VectorStore:
        if self._store is None:
            with self._lock:
                if self._store is None:
                    self._store = self._store_of()
        return self._store

    @property
    def is_open(self) -> bool:
        """Whether the store was opened (the agent writes after a turn only once it is)."""
        return self._store is not None

    def write_pending(
        self, agent_id: str | None, limit: int | None = None, *, budget: float | None = None
    ) -> int:
        """Embed pending messages (newest first; at most `limit`, all when None) and mark them;
        returns how many. With `budget` (seconds), small batches until it is spent. Never raises
        for a vector-side failure: what failed stays pending and a warning is logged (search
        then answers from keywords and says so)."""
        done = 0
        started = time.monotonic()
        if budget is not None:
            with self._db.reading() as conn:
                if recall.pending_vector_count(conn, agent_id) <= SMALL_BACKLOG:
                    budget = None
        batch_size = CATCH_UP_BATCH if budget is None else SEARCH_BATCH
        with self._writing:  # one writer at a time: the agent's thread and a search may both call
            while limit is None or done < limit:
                if budget is not None and done and time.monotonic() - started > budget:
                    break
                size = batch_size if limit is None else min(batch_size, limit - done)
                with self._db.reading() as conn:
                    batch = recall.pending_vector_rows(conn, agent_id, size)
                    contexts = [
                        message_context(
                            recall.previous_text(conn, m)[:MAX_CONTEXT_CHARS], m.created_at
                        )
                        for m in batch
                    ]
                if not batch:
                    break
                try:
                    self._write_batch(batch, contexts)
                except Exception as error:  # any model or store failure: they stay pending
                    log.warning(
                        "Message vectors not written for %d message(s), left pending: %s",
                        len(batch),
                        vector_failure_text(error),
                    )
                    break
                done += len(batch)
        return done

    def after_writes(
        self, forget: Callable[[str, list[str], bool], list[str]]
    ) -> Callable[[str, list[str], bool], list[str]]:
        """`forget` (a forget's removal of vectors), run once no batch is being written. Why: a
        batch read before the forget's commit would otherwise be stored after the removal."""

        def waited(owner: str, ids: list[str], whole: bool) -> list[str]:
            with self._writing:
                return forget(owner, ids, whole)

        return waited

    def _write_batch(self, batch: Sequence[StoredMessage], contexts: Sequence[str]) -> None:
        texted = [i for i, m in enumerate(batch) if m.text.strip()]
        chunks: list[list[object]] = [[] for _ in batch]
        if texted:
            found = self._index_of().vectors_with_context(
                [batch[i].text[:MAX_EMBEDDED_CHARS] for i in texted],
                [contexts[i] for i in texted],
            )
            if len(found) != len(texted) or not all(found):
                raise MemoryAgentError(
                    f"The embedding function returned {len(found)} vectors for {len(texted)} texts."
                )
            for i, vectors in zip(texted, found):
                chunks[i] = list(vectors)
        records = [
            VectorRecord(
                chunk_id(message_vector_id(m.message_id), number),
                m.agent_id,
                vector,  # type: ignore[arg-type]  # an embedding: a sequence of floats
                (m.role,),
                to_epoch(m.created_at),
            )
            for m, vectors in zip(batch, chunks)
            for number, vector in enumerate(vectors)
        ]
        if records:
            self.store.upsert(records)
        with self._db.transaction() as conn:
            recall.mark_vectors(
                conn, [(m.message_id, len(vectors)) for m, vectors in zip(batch, chunks)]
            )

    def query(self, text: str, where: PassageFilter, limit: int) -> list[tuple[int, float]]:
        """The `limit` messages nearest to `text` under `where` (agent, roles as tags, dates),
        each at its best vector: (message id, cosine similarity), closest first. Raises if the
        model or the store fails."""
        probe = self._index_of().embed_query(text)
        store = self.store
        matches: list[VectorMatch] = best_per_passage(
            lambda depth: store.query(probe, where, depth), limit
        )
        found = []
        for match in matches:
            message_id = message_of(match.passage_id)
            if message_id is not None:
                found.append((message_id, match.similarity))
        return found

    def reconcile(
        self, agent_id: str | None = None, *, full: bool = False
    ) -> MessageReconcileReport:
        """Embed every pending message, then (for agents whose counts disagree, or all with
        `full`) re-embed messages whose vectors are missing and delete vectors of messages that
        are gone. Never raises for a vector-store failure (see `errors`)."""
        report = MessageReconcileReport()
        try:
            report.embedded += self.write_pending(agent_id)
            with self._db.reading() as conn:
                agents = (
                    [agent_id]
                    if agent_id is not None
                    else sorted(recall.agents_with_messages(conn))
                )
            agents = sorted(set(agents) | (self.store.agents() if agent_id is None else set()))
            with self._writing:  # no batch is written while ids are compared
                for agent in agents:
                    self._compare(agent, full, report)
            if report.missing_vectors:
                report.embedded += self.write_pending(agent_id)
        except Exception as error:  # the store could not be listed, counted or written
            report.errors.append(vector_failure_text(error))
        with self._db.reading() as conn:
            report.still_pending = recall.pending_vector_count(conn, agent_id)
        return report

    def _compare(self, agent_id: str, full: bool, report: MessageReconcileReport) -> None:
        with self._db.reading() as conn:
            written = recall.vector_chunks(conn, agent_id)
        expected = {
            vector_id
            for message_id, chunks in written.items()
            if chunks
            for vector_id in vector_ids(message_vector_id(message_id), chunks)
        }
        if not full and self.store.count(agent_id) == len(expected):
            return
        in_store = self.store.ids(agent_id)
        orphans = sorted(in_store - expected)
        missing = [
            message_id
            for message_id, chunks in written.items()
            if chunks and not in_store.issuperset(vector_ids(message_vector_id(message_id), chunks))
        ]
        if missing:
            with self._db.transaction() as conn:
                recall.mark_vectors(conn, [(message_id, None) for message_id in missing])
            report.missing_vectors += len(missing)
        if orphans:
            self.store.delete(agent_id, orphans)
            report.removed_vectors += len(orphans)
