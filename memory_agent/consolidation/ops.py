"""The manager operations consolidation works through: a narrow protocol, so the engine sits below
the manager (which implements it and passes itself in) yet changes memory only through the
manager's public operations, where limits, read-only, sharing, stale-write refusal and the journal
are enforced. Reads of its own bookkeeping (the sessions table, the journal) go through
`database.reading()`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from ..archival import ArchivalMemory, Passage
from ..conversation.recall import StoredMessage
from ..core.blocks import Block, BlockVersion
from ..store.protocol import Store

__all__ = ["MemoryOps"]

Detail = Mapping[str, Any] | None


class MemoryOps(Protocol):
    """What `MemoryManager` offers the consolidation engine (its public methods, by name)."""

    @property
    def database(self) -> Store: ...

    @property
    def archival(self) -> ArchivalMemory: ...

    def atomic(self) -> AbstractContextManager[object]: ...

    def list_blocks(self, *, agent_id: str | None = None) -> list[Block]: ...

    def get_block(self, label: str, *, agent_id: str | None = None) -> Block: ...

    def block_history(self, label: str, *, agent_id: str | None = None) -> list[BlockVersion]: ...

    def search_messages(
        self,
        query: str,
        *,
        agent_id: str | None = None,
        roles: Sequence[str] | None = None,
        start_date: str | None = None,
        end_date: str | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> list[StoredMessage]: ...

    def edit_block(
        self,
        label: str,
        compute: Callable[[Block], str],
        *,
        action: str,
        check_stale: bool = True,
        expected_version: int | None = None,
        agent_id: str | None = None,
    ) -> Block: ...

    def archival_memory_get(
        self, passage_id: str, *, agent_id: str | None = None
    ) -> Passage | None: ...

    def archival_memory_insert(
        self,
        content: str,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        *,
        agent_id: str | None = None,
        expires_at: Any = None,
        ttl_days: float | None = None,
        importance: float | None = None,
        provenance: Mapping[str, Any] | None = None,
    ) -> str: ...

    def archival_memory_delete(
        self, passage_id: str, *, agent_id: str | None = None
    ) -> Passage: ...

    def supersede_passage(
        self,
        old_id: str,
        new_id: str,
        *,
        agent_id: str | None = None,
        journal_detail: Detail = None,
    ) -> Passage: ...

    def restore_passage(
        self, passage_id: str, *, agent_id: str | None = None, journal_detail: Detail = None
    ) -> Passage: ...

    def set_passage_importance(
        self,
        passage_id: str,
        importance: float,
        *,
        agent_id: str | None = None,
        journal_detail: Detail = None,
    ) -> Passage: ...

    def update_passage(
        self,
        passage_id: str,
        *,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        provenance: Mapping[str, Any] | None = None,
        agent_id: str | None = None,
        journal_detail: Detail = None,
    ) -> Passage: ...
