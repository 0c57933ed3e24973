"""ArchivalMemory: an agent's long-term store of passages, searchable by words and by meaning.

SQLite is the source of truth. An insert commits the passage row (with its tags, FTS row and
journal entry) first, then embeds it and writes the vector; if the vector side fails the passage
stays 'pending', the insert still succeeds, keyword search already finds it, and `reconcile`
writes the vector later. A delete removes the row (journalled) first and the vector second; a
vector left behind is ignored by searches and removed by `reconcile`.

Every method names the agent it acts for, and both indexes are filtered by it, so agents sharing
a storage dir never see each other's passages. Identical content inserted twice by the same agent
is stored once: the second insert returns the first one's id.
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from ..authors import Author, acting_as, acting_author
from ..errors import ArchivalError, MemoryAgentError
from ..privacy.sensitivity import DEFAULT_CLEARANCE, LEVELS, Sensitivity, allowed, parse_level
from ..store import journal
from ..store.database import utc_now
from ..store.protocol import Connection, Store
from . import lifecycle, passage_table
from .config import VectorConfig
from .filters import PassageFilter, TagMode
from .fusion import FusionConfig
from .passages import NewPassage, Passage, PreparedPassage, SearchHit, prepare
from .reconcile import Progress, ReconcileReport, reconcile
from .rerank import Reranker
from .scoring import DEFAULT_SCORING, ScoringConfig
from .search import SearchMode, search_passages
from .timestamps import Timestamp
from .vector_index import VectorIndex
from .vector_store import VectorStore

__all__ = ["INSERT_CHUNK", "SEARCH_THREADS", "ArchivalMemory"]

log = logging.getLogger(__name__)

INSERT_CHUNK = 1000
"""insert_many commits and indexes this many passages at a time, bounding memory and the work
a crash can leave pending."""

SEARCH_THREADS = 4
"""Threads running hybrid searches' legs: two concurrent searches without queueing (a third waits
for a free thread, which costs it time, never correctness)."""


class ArchivalMemory:
    """Archival passages of every agent in one database, with their vectors in one store.

    Args:
        db: The storage dir's database (passages live in its `passages` table).
        config: Where the Chroma vectors live; default: embedded Chroma beside the database.
        embedding_function: Any Chroma embedding function; default: offline all-MiniLM-L6-v2.
        vector_store: A `VectorStore` to use instead of Chroma (tests, other backends).
        fusion: How hybrid search fuses keyword and vector rankings.
        reranker: An optional last stage of hybrid search (e.g. `AnthropicReranker`); off by
        default. author: Who acts for each journalled write (the manager's current author); by
        default the
            innermost `acting_as`.
        scoring: The weights of the scored mode (recency and importance added to the fused match).
        search_threads: Threads of the pool on which hybrid and scored searches run their keyword
            and vector legs concurrently, each leg on its own reading connection (created on the
            first such search, closed with the archive); two per concurrent search. 0 runs the
            legs one after the other on the calling thread.
    """

    def __init__(
        self,
        db: Store,
        config: VectorConfig | None = None,
        embedding_function: Any = None,
        *,
        vector_store: VectorStore | None = None,
        fusion: FusionConfig | None = None,
        reranker: Reranker | None = None,
        author: Callable[[], Author | None] = acting_author,
        scoring: ScoringConfig | None = None,
        search_threads: int = SEARCH_THREADS,
    ) -> None:
        if (
            not isinstance(search_threads, int)
            or isinstance(search_threads, bool)
            or search_threads < 0
        ):
            raise ArchivalError(
                f"search_threads must be a whole number, 0 or more, got {search_threads!r}."
            )
        self.search_threads = search_threads
        self.db = db
        self._author = author
        self.scoring = scoring or DEFAULT_SCORING
        self.config = config or VectorConfig(path=db.path.parent / "chroma")
        self.fusion = fusion or FusionConfig()
        self.reranker = reranker
        self.index = VectorIndex(db, self.config, embedding_function, vector_store)
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()
        self._check_on_open = False

    # ----- writing --------------------------------------------------------------------------

    def _acting(self) -> AbstractContextManager[object]:
        """The manager's current author for every journal entry written inside (lifecycle entries
        included, which take the author from `acting_as`)."""
        author = self._author()
        return acting_as(author) if author is not None else nullcontext()

    def insert(
        self,
        agent_id: str,
        content: str,
        tags: Iterable[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        *,
        created_at: Timestamp | None = None,
        expires_at: Timestamp | None = None,
        ttl_days: float | None = None,
        importance: float | None = None,
        provenance: Mapping[str, Any] | None = None,
        sensitivity: str | None = None,
        context: str | None = None,
    ) -> str:
        """Store one passage and return its id (the existing id if this agent already has it, whose
        context stays as first stored). `context` is ranking-only: indexed, never shown in hits."""
        return self.insert_many(
            agent_id,
            [
                NewPassage(
                    content,
                    tags,
                    metadata,
                    created_at,
                    expires_at,
                    ttl_days,
                    importance,
                    provenance,
                    sensitivity,
                    context,
                )
            ],
        )[0]

    def insert_many(
        self, agent_id: str, items: Iterable[str | NewPassage | Mapping[str, Any]]
    ) -> builtins.list[str]:
        """Store many passages, embedding them in batches; returns their ids in input order.

        Every item is validated before anything is written. Rows are committed in chunks of
        INSERT_CHUNK, each chunk's vectors written right after it.
        """
        passages = [prepare(item) for item in items]
        ids: builtins.list[str] = []
        for start in range(0, len(passages), INSERT_CHUNK):
            ids.extend(self._insert_chunk(agent_id, passages[start : start + INSERT_CHUNK]))
        return ids

    def _insert_chunk(
        self, agent_id: str, items: builtins.list[PreparedPassage]
    ) -> builtins.list[str]:
        now = utc_now()
        with self._acting(), self.db.transaction() as conn, journal.batch(conn) as entries:
            passage_table.require_agent(conn, agent_id)
            indexer = passage_table.keyword_indexer(conn, agent_id)
            stored = []
            for item in items:
                passage, created = passage_table.insert_or_get(conn, agent_id, item, now, indexer)
                if created:
                    entries.record(
                        agent_id=agent_id,
                        action="insert_passage",
                        target_type="passage",
                        target_id=passage.passage_id,
                        new_value=passage.content,
                        created_at=now,
                        detail={
                            "tags": list(passage.tags),
                            "metadata": passage.metadata,
                            "expires_at": passage.expires_at,
                            "importance": passage.importance,
                            "provenance": passage.provenance,
                            "sensitivity": passage.sensitivity,
                        },
                    )
                else:
                    entries.flush()  # what came before is journalled before what this write does
                    passage = _raise_level(conn, passage, item, now)
                    if passage.is_superseded or passage.is_expired(now):
                        passage = _revive(conn, passage, item, now)
                    else:
                        passage = _reinsert(conn, self._author(), passage, item, now)
                stored.append((passage, created))
        owed = {p.passage_id: p for p, _ in stored if p.vector_state == "pending"}
        self.index.write(list(owed.values()))
        return [passage.passage_id for passage, _ in stored]

    def delete(self, agent_id: str, passage_id: str) -> Passage:
        """Delete one of the agent's passages (journalled with its content); returns it.

        The vector is removed afterwards; if that fails the orphan is dropped by `reconcile`.
        After `reconcile_on_open`, a vector store not yet open is left closed: the check that
        runs when it opens removes the vector.
        """
        now = utc_now()
        with self._acting(), self.db.transaction() as conn:
            passage = passage_table.fetch_one(conn, agent_id, passage_id)
            if passage is None:
                raise ArchivalError(
                    f"Agent '{agent_id}' has no archival passage '{passage_id}'; nothing was "
                    "deleted. "
                    "Search or list archival memory for the exact id."
                )
            lifecycle.unlink_successor(conn, agent_id, passage, now, None)
            passage_table.delete_row(conn, agent_id, passage_id)
            journal.record(
                conn,
                agent_id=agent_id,
                action="delete_passage",
                target_type="passage",
                target_id=passage_id,
                old_value=passage.content,
                created_at=now,
                detail=lifecycle.deleted_detail(passage),
            )
        if self.index.is_open or not self._check_on_open:
            self.index.remove_passages(agent_id, [passage])
        # else: the vector store is not open and is checked against SQLite when it opens, which
        # removes this vector then; a delete alone does not import chromadb.
        return passage

    def supersede(
        self, agent_id: str, old_id: str, new_id: str, *, detail: Mapping[str, Any] | None = None
    ) -> Passage:
        """Mark `old_id` superseded by `new_id` (refuses itself, a missing id, or a cycle)."""
        with self._acting():
            return lifecycle.supersede(self.db, agent_id, old_id, new_id, detail)

    def restore(
        self, agent_id: str, passage_id: str, *, detail: Mapping[str, Any] | None = None
    ) -> Passage:
        """Make a superseded passage current again."""
        with self._acting():
            return lifecycle.restore(self.db, agent_id, passage_id, detail)

    def set_importance(
        self,
        agent_id: str,
        passage_id: str,
        importance: float,
        *,
        detail: Mapping[str, Any] | None = None,
    ) -> Passage:
        with self._acting():
            return lifecycle.set_importance(self.db, agent_id, passage_id, importance, detail)

    def update(
        self,
        agent_id: str,
        passage_id: str,
        *,
        tags: Iterable[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        provenance: Mapping[str, Any] | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> Passage:
        """Replace a passage's tags, metadata or provenance (those given); its text never changes.

        New tags are rewritten into its vector record too (the passage is 'pending' until then).
        """
        with self._acting():
            passage, tags_changed = lifecycle.update(
                self.db,
                agent_id,
                passage_id,
                tags=tags,
                metadata=metadata,
                provenance=provenance,
                detail=detail,
            )
        if tags_changed:
            self.index.write([passage])
            passage = self.get(agent_id, passage_id) or passage
        return passage

    def set_sensitivity(
        self,
        agent_id: str,
        passage_id: str,
        level: str,
        *,
        clearance: Sensitivity,
        detail: Mapping[str, Any] | None = None,
    ) -> Passage:
        """Change a passage's sensitivity level (journalled). The caller's clearance must allow both
        the passage's current level and the new one: what a caller cannot read, it cannot
        relabel."""
        new_level = parse_level(level)
        with self._acting():
            return lifecycle.set_sensitivity(
                self.db, agent_id, passage_id, new_level, clearance, detail
            )

    def purge_expired(
        self, agent_id: str | None = None, *, detail: Mapping[str, Any] | None = None
    ) -> int:
        """Delete every expired passage for good (rows, keyword index, vectors); returns how
        many."""
        with self._acting():
            deleted = lifecycle.purge_expired(self.db, agent_id, detail)
        for owner, passages in deleted.items():
            if self.index.is_open or not self._check_on_open:
                self.index.remove_passages(owner, passages)
        return sum(len(passages) for passages in deleted.values())

    # ----- reading --------------------------------------------------------------------------

    def get(
        self, agent_id: str, passage_id: str, *, clearance: Sensitivity = DEFAULT_CLEARANCE
    ) -> Passage | None:
        """The agent's passage with this id, or None (also when its level is above `clearance`)."""
        with self.db.reading() as conn:
            passage = passage_table.fetch_one(conn, agent_id, passage_id)
        return passage if passage is not None and allowed(passage.sensitivity, clearance) else None

    def list(
        self,
        agent_id: str,
        limit: int = 50,
        offset: int = 0,
        tags: Iterable[str] | None = None,
        *,
        tag_mode: TagMode = "any",
        start_date: Timestamp | None = None,
        end_date: Timestamp | None = None,
        clearance: Sensitivity = DEFAULT_CLEARANCE,
    ) -> builtins.list[Passage]:
        """The agent's passages up to `clearance`, newest first, optionally by tags and time
        window."""
        if limit < 0 or offset < 0:
            raise ArchivalError("limit and offset must not be negative.")
        where = PassageFilter.build(
            agent_id, tags, tag_mode, start_date, end_date, clearance=clearance
        )
        with self.db.reading() as conn:
            return passage_table.list_rows(conn, where, limit, offset)

    def count(self, agent_id: str) -> int:
        with self.db.reading() as conn:
            return passage_table.passage_count(conn, agent_id)

    def search(
        self,
        agent_id: str,
        query: str,
        limit: int = 5,
        tags: Iterable[str] | None = None,
        start_date: Timestamp | None = None,
        end_date: Timestamp | None = None,
        mode: SearchMode = "hybrid",
        *,
        tag_mode: TagMode = "any",
        include_superseded: bool = False,
        explain: bool = False,
        clearance: Sensitivity = DEFAULT_CLEARANCE,
        count_access: bool = True,
    ) -> builtins.list[SearchHit]:
        """The agent's passages best matching `query`, best first.

        Any text is a valid query (it is never parsed as FTS5 syntax). A blank query lists the
        newest passages. If the vector side fails, the keyword ranking is returned instead.
        Expired passages are never returned; superseded ones only with `include_superseded`; none
        above `clearance` (private by default: secret passages only with clearance 'secret').
        `explain` attaches each hit's signals (`SearchHit.explanation`). The hits' access counts
        go up by one, in one short write after the search (a failure of that write is logged, and
        the search still answers), unless `count_access` is False: a person looking (the inspector)
        is not the agent recalling, and must not change what scored ranking sees.
        """
        if not isinstance(explain, bool):
            raise ArchivalError(f"explain must be true or false, got {explain!r}.")
        if not isinstance(count_access, bool):
            raise ArchivalError(f"count_access must be true or false, got {count_access!r}.")
        now = utc_now()
        where = PassageFilter.build(
            agent_id,
            tags,
            tag_mode,
            start_date,
            end_date,
            live_at=now,
            include_superseded=include_superseded,
            clearance=clearance,
        )
        hits = search_passages(
            self.db,
            self.index,
            query,
            where,
            limit,
            mode,
            self.fusion,
            self._search_executor(),
            self.reranker,
            scoring=self.scoring,
            explain=explain,
        )
        if count_access:
            self._record_access([hit.passage_id for hit in hits], now)
        return hits

    def _record_access(self, passage_ids: builtins.list[str], when: str) -> None:
        if not passage_ids:
            return
        try:
            with self.db.transaction() as conn:
                passage_table.record_access(conn, passage_ids, when)
        except (
            MemoryAgentError
        ) as error:  # a read must not fail because its bookkeeping could not be written
            log.warning("Access counts of %d passage(s) not recorded: %s", len(passage_ids), error)

    def _search_executor(self) -> ThreadPoolExecutor | None:
        """Threads for the two legs of hybrid searches (created on the first search), or None when
        `search_threads` is 0 (the legs then run one after the other)."""
        if self.search_threads == 0:
            return None
        if self._executor is None:
            with self._executor_lock:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(
                        max_workers=self.search_threads, thread_name_prefix="archival-search"
                    )
        return self._executor

    # ----- upkeep ---------------------------------------------------------------------------

    def reconcile(
        self, agent_id: str | None = None, progress: Progress | None = None, *, full: bool = False
    ) -> ReconcileReport:
        """Re-embed pending passages and drop orphan vectors; cheap when nothing is owed."""
        return reconcile(self.db, self.index, agent_id, progress, full=full)

    def reconcile_on_open(self) -> ReconcileReport:
        """What opening archival memory owes: pending passages are embedded now (a SQLite count
        when there are none), and the vector store is checked against SQLite when it is first
        opened, so commands that never touch vectors never load chromadb."""
        report = reconcile(self.db, self.index, pending_only=True)
        self._check_on_open = True
        self.index.when_opened(self._check_vectors)
        return report

    def _check_vectors(self) -> None:
        self._check_on_open = False
        report = self.reconcile()
        if report.errors:
            log.warning("archival reconcile left work for later: %s", report.errors)

    def close(self) -> None:
        """Release the vector store's client and the search threads, after any search still
        running on them ends (the database stays open)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        self.index.close()

    def pending_count(self, agent_id: str | None = None) -> int:
        """Passages still waiting for their vectors."""
        with self.db.reading() as conn:
            return passage_table.pending_count(conn, agent_id)


def _reinsert(
    conn: Connection, author: Author | None, passage: Passage, item: PreparedPassage, now: str
) -> Passage:
    """The agent wrote again the text of a live passage: the same id is acknowledged. A write
    with a later expiry (or none) extends the passage's, else the fact would vanish at the older
    note's expiry. Either way the write is journalled, so a rollback sees that a later write
    touched the passage."""
    if passage.expires_at is not None and (
        item.expires_at is None or item.expires_at > passage.expires_at
    ):
        lifecycle.change_columns(
            conn,
            passage.agent_id,
            passage.passage_id,
            "extend_passage_expiry",
            {"expires_at": item.expires_at},
            now,
            None,
        )
        return passage_table.fetch_one(conn, passage.agent_id, passage.passage_id) or passage
    journal.record(
        conn,
        author=author,
        agent_id=passage.agent_id,
        action="reinsert_passage",
        target_type="passage",
        target_id=passage.passage_id,
        created_at=now,
        detail=None,
    )
    return passage


def _raise_level(conn: Connection, passage: Passage, item: PreparedPassage, now: str) -> Passage:
    """The same text written again at a stricter level makes the passage that level (journalled);
    a laxer write never lowers it: only `set_sensitivity` does, on purpose."""
    if LEVELS.index(item.sensitivity) <= LEVELS.index(
        parse_level(passage.sensitivity, "stored sensitivity")
    ):
        return passage
    lifecycle.change_columns(
        conn,
        passage.agent_id,
        passage.passage_id,
        "set_passage_sensitivity",
        {"sensitivity": item.sensitivity},
        now,
        None,
    )
    return passage_table.fetch_one(conn, passage.agent_id, passage.passage_id) or passage


def _revive(conn: Connection, passage: Passage, item: PreparedPassage, now: str) -> Passage:
    """The agent wrote again the text of a superseded or expired passage: the text is current again
    (a write must not vanish into a hidden passage), with the new write's expiry; journalled."""
    lifecycle.change_columns(
        conn,
        passage.agent_id,
        passage.passage_id,
        "revive_passage",
        {"superseded_by": None, "expires_at": item.expires_at},
        now,
        None,
    )
    return passage_table.fetch_one(conn, passage.agent_id, passage.passage_id) or passage
