"""The Chroma vector store: embedded `PersistentClient` by default, `HttpClient` for a server.

One collection per agent (named from a prefix and the agent id), because a Chroma `where` filter
that every record passes is not free: at 100,000 passages a query filtered on an `agent_id`
metadata field took about 500 ms against 2 ms unfiltered. With a collection per agent, isolation
costs nothing and only tag and date filters reach Chroma's `where`. Each record still carries its
agent id, tags and creation time as metadata.

chromadb is imported and the client opened on first use, not when this module is imported or the
store constructed, because importing chromadb takes about a second and most agent turns never
touch archival memory. Telemetry is always off. Collections are created without an embedding
function (`embedding_function=None`): archival memory sends embeddings it computed itself, so a
collection never needs, or downloads, a model of its own. Distances are cosine.
"""

from __future__ import annotations

import functools
import hashlib
import re
import sqlite3
import threading
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..privacy.file_modes import ModeGuard, private_dir
from ..privacy.heap_zeroing import zero_fill_heap
from .chroma_image import place_fresh_file
from .chunks import passage_of
from .config import VectorConfig
from .filters import PassageFilter
from .vector_store import VectorMatch, VectorRecord

__all__ = [
    "ChromaVectorStore",
    "chroma_where",
    "collection_name",
    "release_embedded_store",
    "scrub_sqlite_file",
]

DEFAULT_PREFIX = "archival"
OVERFETCH = 10
_PAGE = 5000
_UNSAFE = re.compile(r"[^a-zA-Z0-9._-]+")


class ChromaVectorStore:
    """A `VectorStore` keeping each agent's vectors in a Chroma collection of its own."""

    def __init__(self, config: VectorConfig, prefix: str = DEFAULT_PREFIX) -> None:
        self.config = config
        self.prefix = prefix
        self._client: Any = None
        self._collections: dict[str, Any] = {}
        self._batch_size = _PAGE
        self._lock = threading.Lock()
        self._guard = ModeGuard(config.path) if config.host is None else None

    # ----- connection -------------------------------------------------------------------------

    def _connected(self) -> Any:
        """The client, opened once; a failed open is retried on the next call."""
        if self._client is None:
            with self._lock:
                if self._client is None:
                    client = _open_client(self.config)
                    self._batch_size = min(_PAGE, int(client.get_max_batch_size()))
                    self._client = client
                    self._keep_private()
        return self._client

    def _keep_private(self) -> None:
        """Chroma creates its files with the umask's modes: make what it made owner-only."""
        if self._guard is not None:
            self._guard.sweep()

    def _collection(self, agent_id: str, *, create: bool) -> Any | None:
        """The agent's collection; None if it has none yet and `create` is false."""
        if agent_id in self._collections:
            return self._collections[agent_id]
        client = self._connected()
        name = collection_name(self.prefix, agent_id)
        if create:
            collection = client.get_or_create_collection(
                name,
                embedding_function=None,
                metadata={"agent_id": agent_id},
                configuration={"hnsw": {"space": "cosine"}},
            )
        else:
            from chromadb.errors import NotFoundError

            try:
                collection = client.get_collection(name, embedding_function=None)
            except NotFoundError:
                return None
        with self._lock:
            return self._collections.setdefault(agent_id, collection)

    def drop_collections(self) -> int:
        """Delete every collection of this prefix (a rebuild of a Chroma server); returns how
        many."""
        client = self._connected()
        names = [c.name for c in client.list_collections() if c.name.startswith(f"{self.prefix}-")]
        for name in names:
            client.delete_collection(name)
        with self._lock:
            self._collections.clear()
        return len(names)

    def forget(
        self, agent_id: str, passage_ids: Sequence[str], *, whole_agent: bool = False
    ) -> list[str]:
        """Forgetting: remove these passages' vectors so that no byte of them stays; returns
        warnings.

        A Chroma delete leaves the record in its log (`embeddings_queue`, with its metadata: tags)
        and the vector in the HNSW files, marked deleted. So the agent's collection is written
        anew without them (the others' vectors and metadata copied over, nothing re-embedded) and
        the old one dropped, which removes its log rows and its segment files; then chroma.sqlite3
        is vacuumed. `whole_agent` drops the collection. A Chroma server is asked the same through
        its API; what it keeps on its own disk and backups is its operator's (the warning says so).
        """
        client = self._connected()
        name = collection_name(self.prefix, agent_id)
        existing = self._collection(agent_id, create=False)
        with self._lock:
            self._collections.pop(agent_id, None)
        if existing is not None:
            kept = (
                {"ids": [], "embeddings": [], "metadatas": []}
                if whole_agent
                else _all_records(existing)
            )
            gone = set(passage_ids)
            client.delete_collection(name)
            if (
                self.config.host is None
            ):  # before re-adding: the new rows would reuse the orphans' ids
                scrub_sqlite_file(
                    self.config.path / "chroma.sqlite3", before=_ORPHAN_ROWS, vacuum=False
                )
            if not whole_agent:
                rows = [
                    (i, e, m)
                    for i, e, m in zip(
                        kept["ids"], kept["embeddings"], kept["metadatas"], strict=True
                    )
                    if passage_of(i) not in gone
                ]
                collection = self._collection(agent_id, create=True)
                assert collection is not None  # create=True makes the collection
                for chunk in _chunks(rows, self._batch_size):
                    collection.add(
                        ids=[r[0] for r in chunk],
                        embeddings=[r[1] for r in chunk],
                        metadatas=[r[2] for r in chunk],
                    )
        if self.config.host is not None:
            return [
                f"the Chroma server at {self.config.host} was asked to delete the vectors; its own "
                "disk, "
                "write-ahead log and backups are its operator's to clear"
            ]
        self._keep_private()
        return scrub_sqlite_file(self.config.path / "chroma.sqlite3")

    def close(self) -> None:
        """Release the client, so that an embedded store's directory can be moved (a rebuild)."""
        with self._lock:
            client, self._client = self._client, None
            self._collections.clear()
        close = getattr(client, "close", None)
        if callable(close):
            close()
        if self.config.host is None:
            _forget_embedded_system(self.config.path)

    # ----- the VectorStore protocol -------------------------------------------------------------

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        by_agent: dict[str, list[VectorRecord]] = defaultdict(list)
        for record in records:
            by_agent[record.agent_id].append(record)
        for agent_id, agent_records in by_agent.items():
            collection = self._collection(agent_id, create=True)
            assert collection is not None  # create=True makes the collection
            for chunk in _chunks(agent_records, self._batch_size):
                collection.upsert(
                    ids=[record.passage_id for record in chunk],
                    embeddings=[_vector(record.embedding) for record in chunk],
                    metadatas=[_metadata(record) for record in chunk],
                )
        self._keep_private()

    def query(
        self, embedding: Sequence[float], where: PassageFilter, limit: int
    ) -> list[VectorMatch]:
        """Nearest passages passing the filter.

        A Chroma `where` costs time in proportion to the records it lets through (at 100,000
        passages, 100-600 ms for a tag or date filter most passages pass), so a filtered query
        first takes the nearest OVERFETCH x limit unfiltered and filters them here; only if too
        few pass (a selective filter) does it ask Chroma to filter, which is then cheap.
        """
        collection = self._collection(where.agent_id, create=False)
        if collection is None or limit <= 0:
            return []
        chroma_filter = chroma_where(where)
        if chroma_filter is None:
            return [match for match, _ in _nearest(collection, embedding, limit)]
        wide = _nearest(collection, embedding, limit * OVERFETCH, with_metadata=True)
        kept = [match for match, metadata in wide if _passes(where, metadata)]
        if len(kept) >= limit or len(wide) < limit * OVERFETCH:
            return kept[:limit]
        return [match for match, _ in _nearest(collection, embedding, limit, chroma_filter)]

    def delete(self, agent_id: str, passage_ids: Sequence[str]) -> None:
        collection = self._collection(agent_id, create=False)
        if collection is None:
            return
        for chunk in _chunks(list(passage_ids), self._batch_size):
            collection.delete(ids=list(chunk))

    def embeddings(self, agent_id: str, passage_ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored vectors of these ids (those the agent's collection has): consolidation
        compares passages without embedding them again."""
        collection = self._collection(agent_id, create=False)
        found: dict[str, list[float]] = {}
        if collection is None:
            return found
        for chunk in _chunks(list(passage_ids), self._batch_size):
            page = collection.get(ids=list(chunk), include=["embeddings"])
            for passage_id, vector in zip(page["ids"], page["embeddings"], strict=True):
                found[passage_id] = [float(value) for value in vector]
        return found

    def ids(self, agent_id: str) -> set[str]:
        collection = self._collection(agent_id, create=False)
        found: set[str] = set()
        offset = 0
        while collection is not None:
            page = collection.get(include=[], limit=_PAGE, offset=offset)["ids"]
            found.update(page)
            if len(page) < _PAGE:
                break
            offset += len(page)
        return found

    def agents(self) -> set[str]:
        mine = f"{self.prefix}-"
        return {
            str(collection.metadata["agent_id"])
            for collection in self._connected().list_collections()
            if collection.name.startswith(mine)
            and (collection.metadata or {}).get("agent_id") is not None
        }

    def count(self, agent_id: str) -> int:
        collection = self._collection(agent_id, create=False)
        return 0 if collection is None else int(collection.count())


def _nearest(
    collection: Any,
    embedding: Sequence[float],
    limit: int,
    where: dict[str, Any] | None = None,
    *,
    with_metadata: bool = False,
) -> list[tuple[VectorMatch, dict[str, Any]]]:
    include = ["distances", "metadatas"] if with_metadata else ["distances"]
    result = collection.query(
        query_embeddings=[_vector(embedding)], n_results=limit, where=where, include=include
    )
    if len(result["ids"][0]) < limit and _candidates(collection, where) > len(result["ids"][0]):
        return _exact_nearest(collection, embedding, limit, where)
    metadatas = result["metadatas"][0] if with_metadata else [{}] * len(result["ids"][0])
    return [
        (VectorMatch(str(i), 1.0 - float(d)), dict(m or {}))
        for i, d, m in zip(result["ids"][0], result["distances"][0], metadatas)
    ]


def _candidates(collection: Any, where: dict[str, Any] | None) -> int:
    """How many records the query could have answered with (all, or those passing `where`)."""
    if where is None:
        return int(collection.count())
    return len(_all_records(collection, where, include=[])["ids"])


def _exact_nearest(
    collection: Any, embedding: Sequence[float], limit: int, where: dict[str, Any] | None
) -> list[tuple[VectorMatch, dict[str, Any]]]:
    """The nearest records by an exact scan, for a query the index answered short.

    Why: Chroma's HNSW graph is approximate, and a record it cannot reach is missing even when
    more results are asked for than the collection holds (seen: 64 of 65 records for 240 asked,
    in 1 to 5 of 25 new stores), so a search could answer short while a match was stored. Only
    then, and only over the records the query could answer with, are similarities computed
    here (the collection's space is cosine)."""
    import numpy as np

    from .unit_vectors import unit_rows

    records = _all_records(collection, where)
    if not records["ids"]:
        return []
    similarities = unit_rows(records["embeddings"]) @ unit_rows([embedding])[0]
    order = np.argsort(-similarities, kind="stable")[:limit]
    return [
        (
            VectorMatch(str(records["ids"][n]), float(similarities[n])),
            dict(records["metadatas"][n] or {}),
        )
        for n in order
    ]


def _passes(where: PassageFilter, metadata: dict[str, Any]) -> bool:
    return where.accepts(
        str(metadata.get("agent_id", "")),
        metadata.get("tags") or (),
        float(metadata.get("created_at", 0.0)),
    )


def collection_name(prefix: str, agent_id: str) -> str:
    """A valid, stable Chroma collection name for the agent: readable part plus a hash."""
    readable = _UNSAFE.sub("_", agent_id)[:40].strip("._-")
    digest = hashlib.sha256(agent_id.encode("utf-8")).hexdigest()[:12]
    return f"{prefix}-{readable}-{digest}" if readable else f"{prefix}-{digest}"


def chroma_where(where: PassageFilter) -> dict[str, Any] | None:
    """The Chroma `where` clause for the filter's tags and time window (the agent is the
    collection); None when there is nothing to filter."""
    clauses: list[dict[str, Any]] = []
    if where.start_epoch is not None:
        clauses.append({"created_at": {"$gte": where.start_epoch}})
    if where.end_epoch is not None:
        clauses.append({"created_at": {"$lte": where.end_epoch}})
    if where.tags:
        tag_clauses = [{"tags": {"$contains": tag}} for tag in where.tags]
        joiner = "$and" if where.tag_mode == "all" else "$or"
        clauses.append(tag_clauses[0] if len(tag_clauses) == 1 else {joiner: tag_clauses})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


@functools.cache
def _chroma_settings() -> Any:
    """Chroma's own settings, read once per process: building them reads each of their many
    fields from the environment, about 4 ms of CPU, which every new client paid."""
    from chromadb.config import Settings as ChromaSettings

    return ChromaSettings(anonymized_telemetry=False)


def _open_client(config: VectorConfig) -> Any:
    import chromadb

    chroma_settings = _chroma_settings().model_copy()  # a client writes its path into its copy
    if config.host:
        return chromadb.HttpClient(host=config.host, port=config.port, settings=chroma_settings)
    private_dir(config.path.parent)  # the storage dir, when Chroma is the first to need it
    private_dir(config.path)
    zero_fill_heap()  # its index files must not carry stale memory: see privacy/heap_zeroing.py
    place_fresh_file(config.path, _open_fresh)  # a new directory: archival/chroma_image.py
    return chromadb.PersistentClient(path=str(config.path), settings=chroma_settings)


def _open_fresh(scratch: Path) -> None:
    """Open a client on the empty directory `scratch` and let it go: Chroma's fresh file."""
    import chromadb

    chromadb.PersistentClient(path=str(scratch), settings=_chroma_settings().model_copy())
    _forget_embedded_system(scratch, force=True)


def release_embedded_store(path: Path) -> None:
    """Forget this process's Chroma system for `path` even if clients still hold it: the
    directory is about to be moved aside (a rebuild), so every such client is stale anyway."""
    _forget_embedded_system(path, force=True)


def _forget_embedded_system(path: Path, *, force: bool = False) -> None:
    """Drop chromadb's process-wide cached system for this directory.

    chromadb caches one system per path (`SharedSystemClient`, not public API) and keeps it even
    when opening the client failed (a corrupt chroma.sqlite3), so a new client on the same path,
    after the directory was moved aside, would get the broken one. Only this path's entry is
    removed, and only when no other client of the process still holds it.
    """
    try:
        from chromadb.api.shared_system_client import SharedSystemClient
    except ImportError:  # a chromadb without this cache has nothing to forget
        return
    identifier = str(path)
    if not force and SharedSystemClient._identifier_to_refcount.get(identifier, 0) > 0:
        return  # another client of this process still uses it (closing ours released our share)
    system = SharedSystemClient._identifier_to_system.pop(identifier, None)
    SharedSystemClient._identifier_to_refcount.pop(identifier, None)
    if system is not None:
        try:
            system.stop()
        except (
            Exception
        ):  # a system that failed to start may fail to stop; it is dropped either way
            pass


def _all_records(
    collection: Any,
    where: dict[str, Any] | None = None,
    include: Sequence[str] = ("embeddings", "metadatas"),
) -> dict[str, list[Any]]:
    """Every id of a collection (those passing `where`), with what `include` names, page by
    page."""
    found: dict[str, list[Any]] = {"ids": [], **{part: [] for part in include}}
    offset = 0
    while True:
        page = collection.get(where=where, include=list(include), limit=_PAGE, offset=offset)
        if not page["ids"]:
            return found
        for part in ("ids", *include):
            found[part] += list(page[part])
        offset += len(page["ids"])


_ORPHAN_ROWS = (
    # Chroma (1.5) drops a collection's embeddings but leaves their array-valued metadata (our
    # tags) behind, pointing at ids that no longer exist; the other two are checked the same way.
    "DELETE FROM embedding_metadata_array WHERE id NOT IN (SELECT id FROM embeddings)",
    "DELETE FROM embedding_metadata WHERE id NOT IN (SELECT id FROM embeddings)",
)


def scrub_sqlite_file(path: Path, before: Sequence[str] = (), *, vacuum: bool = True) -> list[str]:
    """Rewrite a SQLite file other code owns (Chroma's) so that deleted rows leave no bytes behind:
    the `before` statements (a table they name that does not exist is skipped), secure_delete,
    VACUUM, then a WAL checkpoint that truncates the log. Returns warnings."""
    if not path.is_file():
        return []
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        conn.execute("PRAGMA secure_delete = ON")
        for statement in before:
            try:
                conn.execute(statement)
            except sqlite3.OperationalError as error:
                if "no such table" not in str(error):
                    raise
        if not vacuum:
            return []
        conn.execute("VACUUM")
        busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except sqlite3.Error as error:
        return [
            f"could not vacuum {path} ({error}); deleted vectors may stay in its free pages until "
            "Chroma reuses them"
        ]
    finally:
        conn.close()
    if busy and busy[0]:
        return [
            f"{path}'s write-ahead log could not be truncated (another process reads it); run the "
            "forget "
            "again when it is idle"
        ]
    return []


def _metadata(record: VectorRecord) -> dict[str, Any]:
    # Chroma refuses empty lists as metadata values, so an untagged passage has no 'tags' key.
    metadata: dict[str, Any] = {"agent_id": record.agent_id, "created_at": float(record.created_at)}
    if record.tags:
        metadata["tags"] = list(record.tags)
    return metadata


def _vector(embedding: Sequence[float]) -> Any:
    """Numpy rows and lists pass through untouched (Chroma takes both); other sequences become
    lists."""
    return (
        embedding if isinstance(embedding, list) or hasattr(embedding, "ndim") else list(embedding)
    )


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
