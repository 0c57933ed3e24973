"""The archival methods MemoryManager is to carry, until they are pasted into manager.py.

The body of `ArchivalManagerMethods` is the exact code for `MemoryManager`; the tests use
`MemoryManager` itself once it has `archival_memory_search`, and this mixin over it until then.
Delete this file after the paste.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from memory_agent import MemoryManager
from memory_agent.archival import (
    ArchivalMemory,
    NewPassage,
    Passage,
    ReconcileReport,
    SearchHit,
    VectorConfig,
)
from memory_agent.archival.tool_specs import ARCHIVAL_TOOLS
from memory_agent.tool_specs import CORE_MEMORY_TOOLS, ToolSpec

log = logging.getLogger("memory_agent.manager")


class ArchivalManagerMethods:
    # In MemoryManager.__init__: a keyword-only parameter `embedding_function: Any = None`, and
    #     self._embedding_function = embedding_function
    #     self._archival: ArchivalMemory | None = None
    #     self._archival_lock = threading.Lock()

    # ----- archival memory ----------------------------------------------------------------

    @property
    def archival(self) -> ArchivalMemory:
        """Archival memory, opened on first use: only then are Chroma and the embedding model
        loaded. The first open reconciles the vector store with SQLite (pending vectors written,
        orphans removed); a vector store that is down is logged, not raised."""
        if self._archival is None:
            with self._archival_lock:
                if self._archival is None:
                    archival = ArchivalMemory(
                        self.db, VectorConfig.from_settings(self.settings, self.storage_dir),
                        self._embedding_function,
                    )
                    report = archival.reconcile()
                    if report.errors:
                        log.warning("Archival vectors not reconciled on open: %s", "; ".join(report.errors))
                    self._archival = archival
        return self._archival

    def archival_memory_insert(self, content: str, tags: Iterable[str] | None = None,
                               metadata: Mapping[str, Any] | None = None, *,
                               agent_id: str | None = None) -> str:
        """Archive a passage; returns its id (the existing id for identical content)."""
        return self.archival.insert(agent_id or self.agent_id, content, tags, metadata)

    def archival_memory_insert_many(self, items: Iterable[str | NewPassage | Mapping[str, Any]], *,
                                    agent_id: str | None = None) -> list[str]:
        return self.archival.insert_many(agent_id or self.agent_id, items)

    def archival_memory_get(self, passage_id: str, *, agent_id: str | None = None) -> Passage | None:
        return self.archival.get(agent_id or self.agent_id, passage_id)

    def archival_memory_delete(self, passage_id: str, *, agent_id: str | None = None) -> Passage:
        return self.archival.delete(agent_id or self.agent_id, passage_id)

    def archival_memory_list(self, limit: int = 50, offset: int = 0, tags: Iterable[str] | None = None, *,
                             agent_id: str | None = None) -> list[Passage]:
        return self.archival.list(agent_id or self.agent_id, limit, offset, tags)

    def archival_memory_search(self, query: str, limit: int = 5, tags: Iterable[str] | None = None,
                               start_date: Any = None, end_date: Any = None, mode: str | None = None, *,
                               agent_id: str | None = None) -> list[SearchHit]:
        """Hybrid search by default; keyword only when MEMORY_HYBRID_SEARCH is false."""
        chosen = mode or ("hybrid" if self.settings.memory_hybrid_search else "keyword")
        return self.archival.search(agent_id or self.agent_id, query, limit, tags, start_date, end_date,
                                    chosen)  # type: ignore[arg-type]

    def search_archival_hybrid(self, query: str, limit: int = 5, *, agent_id: str | None = None) -> list[SearchHit]:
        return self.archival_memory_search(query, limit, mode="hybrid", agent_id=agent_id)

    def reconcile_archival(self, *, agent_id: str | None = None, progress: Callable[[int, int], None] | None = None,
                           full: bool = False) -> ReconcileReport:
        """Repair the vector store from SQLite; every agent's passages unless `agent_id` is given."""
        return self.archival.reconcile(agent_id, progress, full=full)

    # tool_specs() becomes:
    def tool_specs(self) -> tuple[ToolSpec, ...]:
        return CORE_MEMORY_TOOLS + ARCHIVAL_TOOLS


class _WiredManager(ArchivalManagerMethods, MemoryManager):
    def tool_specs(self) -> tuple[ToolSpec, ...]:
        # Keeps tools that other work adds to MemoryManager meanwhile.
        return (*MemoryManager.tool_specs(self), *ARCHIVAL_TOOLS)

    def __init__(self, *args: Any, embedding_function: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._embedding_function = embedding_function
        self._archival: ArchivalMemory | None = None
        self._archival_lock = threading.Lock()


WiredManager: type[MemoryManager] = (
    MemoryManager if hasattr(MemoryManager, "archival_memory_search") else _WiredManager
)
