"""MemoryManager: an agent's memory, usable with or without a model.

It composes core memory (blocks), recall memory (messages and summaries) and archival memory over
one SQLite database, and carries the names of the user's original plan so existing code keeps
working. Python methods raise `MemoryAgentError`s. The model-facing tools live in the layer above
(`memory_agent.tools`), which turns those errors into error results. The manager imports nothing
of it, not even inside a function: its `execute_tool`/`get_tools_definitions` are aliases kept for
existing callers that call the `ToolHost` the tools layer registers when it loads
(`register_tool_host`; `import memory_agent` always loads it), and whoever knows the tools hands
their token count to `memory_tokens` (the agent does).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from compaction import CompactionOutcome, CompactionSettings, Summarizer, TokenCounter

from .archival import (
    ArchivalMemory,
    NewPassage,
    Passage,
    ReconcileReport,
    SearchHit,
    VectorConfig,
    VectorStore,
)
from .archival.chunks import passage_of
from .archival.fusion import FusionConfig
from .archival.rebuild import RebuildReport, rebuild_vectors
from .archival.rerank import AnthropicReranker
from .archival.search import SearchMode
from .authors import Author, acting_author
from .authors import acting_as as _acting_as
from .consolidation import (
    ConsolidationReport,
    ConsolidationSession,
    Consolidator,
    ModelConsolidator,
    RulesConsolidator,
    rollback_session,
    run_consolidation,
)
from .conversation.compactor import Compactor
from .conversation.conversation_search import MessageSearchMode
from .conversation.conversation_search import search_messages as _search_messages
from .conversation.message_vectors import (
    MessageReconcileReport,
    MessageVectors,
    chroma_message_store,
)
from .conversation.recall import MessageContent, RecallMemory, StoredMessage, StoredSummary
from .core.blocks import Block, BlockVersion, append_text, insert_text, replace_text
from .core.core_memory import CoreMemory, Edit
from .core.labels import validate_label
from .errors import (
    AgentNotFoundError,
    BlockNotFoundError,
    ConfigurationError,
    ConsolidationError,
    MessageNotFoundError,
    NothingToUndoError,
)
from .forgetting import ForgetReport, Forgetting, Resummarizer
from .privacy.heap_zeroing import zero_fill_heap
from .privacy.sensitivity import (
    DEFAULT_LEVEL,
    Sensitivity,
    clearance_of,
    journal_values_allowed,
    visible_levels,
    with_clearance,
)
from .prompt.rendering import MemoryMetadata, render_memory
from .prompt.turn_context import TurnContext
from .settings import Settings
from .snapshots import (
    ImportReport,
    Snapshot,
    read_snapshot,
    restore_snapshot,
    within_clearance,
)
from .store import agent_state, consolidation_log, journal, scrub
from .store.agent_state import BASE_PROMPT_KEY
from .store.backend import open_store
from .store.meta import read_meta, write_meta
from .store.protocol import Connection, Store
from .validation import checked_methods

__all__ = ["DEFAULT_AGENT_KEY", "MemoryManager", "ToolHost", "ToolOutcome", "register_tool_host"]

DEFAULT_AGENT_KEY = "default_agent_id"
"""Key in the meta table of the agent a storage dir opens when no agent id is given."""

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolOutcome:
    """What a memory tool returns to the model: the text, and whether it is an error.

    Defined here, not in the tools layer, because `execute_tool` returns it."""

    text: str
    is_error: bool = False


class ToolHost(Protocol):
    """The memory tools as the layer above offers them to the manager's two aliases."""

    def definitions(self) -> list[dict[str, Any]]:
        """Anthropic tool schemas of every memory tool."""
        ...

    def execute(
        self,
        memory: MemoryManager,
        name: str,
        arguments: Mapping[str, Any],
        *,
        agent_id: str | None,
    ) -> ToolOutcome:
        """Run one tool for the model; failures are error outcomes."""
        ...


_tool_hosts: list[ToolHost] = []


def register_tool_host(host: ToolHost) -> None:
    """Install the tools behind `MemoryManager.execute_tool` / `get_tools_definitions`: called by
    `memory_agent.tools` when it loads, so the manager never imports the layer above it."""
    _tool_hosts[:] = [host]


def _tool_host() -> ToolHost:
    if not _tool_hosts:
        raise ConfigurationError(
            "The memory tools are not loaded; import memory_agent.tools first."
        )
    return _tool_hosts[0]


@checked_methods(exclude=("execute_tool",))
class MemoryManager:
    """The memory of one agent (by default) in one storage dir.

    Every method takes a keyword-only `agent_id=` to act as another agent of the same storage dir,
    which is how multi-agent code shares one manager; where the agent is the subject of the call
    (`ensure_agent`, `attach_block`, `detach_block`, `get_agent_block`) it is the first argument.
    Every public method checks its arguments against its annotations before anything runs (see
    `validation`): a wrong type, an int past SQLite's range or text with a lone surrogate is a
    ConfigurationError, and nothing is written.

    Every change is journalled with its author (`memory_agent.authors`): `author=` (a person, the
    OS user, by default) unless an `acting_as` block says otherwise; the memory tools act as
    `Author.model(agent_id)`.
    """

    def __init__(
        self,
        storage_dir: str | Path | None = None,
        agent_id: str | None = None,
        compaction_settings: CompactionSettings | None = None,
        *,
        settings: Settings | None = None,
        summarizer: Summarizer | None = None,
        token_counter: TokenCounter | None = None,
        embedding_function: Any = None,
        vector_store: VectorStore | None = None,
        database_url: str | None = None,
        author: Author | None = None,
        message_vector_store: VectorStore | None = None,
    ) -> None:
        if author is not None and not isinstance(author, Author):
            raise ConfigurationError(
                f"author must be an Author (e.g. Author.person()), got {type(author).__name__}."
            )
        self.author = author or Author.person()
        self.settings = settings or Settings.from_env()
        if storage_dir is not None:
            self.storage_dir = Path(storage_dir).expanduser()
        else:
            self.storage_dir = self.settings.persist_directory
        self.compaction_settings = compaction_settings or self.settings.compaction
        if vector_store is None and self.settings.chroma_host is None:
            zero_fill_heap()  # before any memory is read: see privacy/heap_zeroing.py
        self.db = open_store(
            self.storage_dir,
            database_url or self.settings.database_url,
            encryption_key=self.settings.encryption_key,
        )
        self.core = CoreMemory(self.db, author=self.current_author)
        self.recall = RecallMemory(self.db, author=self.current_author)
        self.compactor = self.make_compactor(
            self.compaction_settings, summarizer=summarizer, counter=token_counter
        )
        self._summarizer_given = summarizer
        self._fixed_tokens_cache: dict[str, tuple[str, int]] = {}
        self._tools_tokens: int | None = None
        self._embedding_function = embedding_function
        self._vector_store = vector_store
        self._archival: ArchivalMemory | None = None
        self._archival_lock = threading.Lock()
        self._message_vector_store = message_vector_store
        self._message_vectors = MessageVectors(
            self.db, lambda: self.archival.index, self._open_message_store
        )
        self.agent_id = self._resolve_agent_id(agent_id)
        self.ensure_agent(self.agent_id)

    # ----- authors ------------------------------------------------------------------------

    def current_author(self) -> Author:
        """Who the journal names for a write made now: the innermost `acting_as`, else `author`."""
        return acting_author() or self.author

    def acting_as(self, author: Author) -> AbstractContextManager[Author]:
        """Every journal entry written inside the `with` block (by this thread or asyncio task,
        through any manager) names `author`. Nests; the outer author is back on exit.

        The tool path runs under `Author.model(agent_id)`, imports under `Author.importer(...)`;
        a multi-agent program writing for one agent into another's memory uses
        `Author.other_agent(agent_id)` (see `memory_agent.authors`).
        """
        return _acting_as(author)

    def clearance(
        self, *, allow_secret: bool | None = None, max_sensitivity: str | None = None
    ) -> AbstractContextManager[Sensitivity]:
        """Every read inside the `with` block (this thread or asyncio task) sees up to this
        clearance: `allow_secret=True` includes secret blocks and passages, `max_sensitivity`
        ('public', 'private', 'secret') names the highest level. Without it reads see public and
        private (`memory_agent.privacy.sensitivity`); methods that take `allow_secret` decide per
        call."""
        return with_clearance(clearance_of(allow_secret, max_sensitivity))

    # ----- agents -------------------------------------------------------------------------

    def _resolve_agent_id(self, agent_id: str | None) -> str:
        chosen = agent_id or self.settings.agent_id
        if chosen:
            return chosen
        with self.db.transaction() as conn:
            existing = read_meta(conn, DEFAULT_AGENT_KEY)
            if existing is not None:
                return existing
            generated = f"agent-{uuid.uuid4().hex[:12]}"
            write_meta(conn, DEFAULT_AGENT_KEY, generated)
            return generated

    def ensure_agent(
        self, agent_id: str, *, persona: str | None = None, human: str | None = None
    ) -> bool:
        """Create the agent with its default blocks if it is new; returns True when created."""
        if not agent_id.strip():
            raise ConfigurationError("An agent id must not be empty or blank.")
        if self.core.agent_exists(agent_id):
            return False
        created = self.core.create_agent(agent_id)
        if not created:
            return False
        settings = self.settings
        defaults = {
            "persona": (persona or settings.default_persona, "Who you are and how you behave."),
            "human": (human or settings.default_human, "What you know about the user."),
        }
        for label, (value, description) in defaults.items():
            if label not in settings.memory_shared_blocks:
                self.core.create_block(
                    agent_id,
                    label,
                    value,
                    limit=settings.block_limit_for(label),
                    description=description,
                )
        for label in settings.memory_shared_blocks:
            self.join_shared_block(label, agent_id=agent_id)
        return True

    def join_shared_block(
        self,
        label: str,
        *,
        agent_id: str | None = None,
        value: str = "",
        description: str | None = None,
        read_only: bool = False,
    ) -> Block:
        """Attach the storage dir's shared block with this label, creating it on first use.

        Look-up and creation are one transaction, so processes joining at once share one block.
        """
        target = agent_id or self.agent_id
        with self.db.transaction():
            existing = self.core.find_shared_block(label)
            if existing is None:
                return self.core.create_block(
                    target,
                    label,
                    value,
                    limit=self.settings.block_limit_for(label),
                    description=description,
                    is_shared=True,
                )
            return self.core.attach_block(target, existing.block_id, read_only=read_only)

    def make_compactor(
        self,
        settings: CompactionSettings,
        *,
        summarizer: Summarizer | None = None,
        counter: TokenCounter | None = None,
    ) -> Compactor:
        """A compactor on this storage dir; the summariser uses the configured API key and URL."""
        return Compactor(
            self.recall,
            settings,
            summarizer=summarizer,
            counter=counter,
            api_key=self.settings.anthropic_api_key,
            base_url=self.settings.anthropic_base_url,
            state_db=self.db,
        )

    def compactor_for(self, settings: CompactionSettings | None = None) -> Compactor:
        """The compactor an agent compacts this memory with: the manager's own, or (with
        `settings`) one with those settings sharing the manager's token counter."""
        if settings is None:
            return self.compactor
        return self.make_compactor(settings, counter=self.compactor.counter)

    def count_tokens(self, text: str) -> int:
        """How many tokens `text` takes, by the token counter compaction uses."""
        return self.compactor.count_text(text)

    def get_agent_state(self, *, agent_id: str | None = None) -> dict[str, Any]:
        """Small bookkeeping values of an agent (e.g. its current SDK session)."""
        with self.db.reading() as conn:
            return agent_state.read_state(conn, agent_id or self.agent_id)

    def set_agent_state(self, updates: dict[str, Any], *, agent_id: str | None = None) -> None:
        """Merge `updates` into the agent's bookkeeping values (a None value removes the key)."""
        with self.db.transaction() as conn:
            agent_state.write_state(conn, agent_id or self.agent_id, updates)

    def get_base_system_prompt(self, *, agent_id: str | None = None) -> str | None:
        """The agent's own base system prompt (e.g. the `system` of an imported Letta agent).

        `MemoryAwareAgent` uses it when the caller's options name no system prompt.
        """
        prompt = self.get_agent_state(agent_id=agent_id).get(BASE_PROMPT_KEY)
        return prompt if isinstance(prompt, str) and prompt else None

    def set_base_system_prompt(self, prompt: str | None, *, agent_id: str | None = None) -> None:
        """Set (or, with None or "", clear) the agent's base system prompt."""
        if prompt is not None and not isinstance(prompt, str):
            raise ConfigurationError(f"A system prompt is text, got {type(prompt).__name__}.")
        self.set_agent_state({BASE_PROMPT_KEY: prompt or None}, agent_id=agent_id)

    def list_agents(self) -> list[str]:
        """Every agent of the storage dir, oldest first."""
        with self.db.reading() as conn:
            return [
                row[0] for row in conn.execute("SELECT agent_id FROM agents ORDER BY created_at")
            ]

    # ----- blocks -------------------------------------------------------------------------

    def create_block(
        self,
        label: str,
        value: str = "",
        description: str | None = None,
        limit: int | None = None,
        read_only: bool = False,
        is_shared: bool = False,
        *,
        agent_id: str | None = None,
        in_prompt: bool = True,
        sensitivity: str = DEFAULT_LEVEL,
    ) -> Block:
        """Create a block and attach it; `in_prompt=False` makes it on demand (listed, not
        rendered); `sensitivity` is public, private (the default) or secret (then neither listed nor
        rendered for callers without `allow_secret`)."""
        label = validate_label(label)
        return self.core.create_block(
            agent_id or self.agent_id,
            label,
            value,
            limit=limit if limit is not None else self.settings.block_limit_for(label),
            description=description,
            read_only=read_only,
            is_shared=is_shared,
            in_prompt=in_prompt,
            sensitivity=sensitivity,
        )

    def _cleared(
        self, allow_secret: bool | None, max_sensitivity: str | None
    ) -> AbstractContextManager[Sensitivity]:
        return with_clearance(clearance_of(allow_secret, max_sensitivity))

    def get_block(
        self,
        label: str,
        *,
        agent_id: str | None = None,
        allow_secret: bool | None = None,
        max_sensitivity: str | None = None,
    ) -> Block:
        """The agent's block with this label (BlockNotFoundError when it has none, or when its level
        is above the clearance: a secret block needs `allow_secret=True`)."""
        with self._cleared(allow_secret, max_sensitivity):
            return self.core.get_block(agent_id or self.agent_id, label)

    def get_agent_block(self, agent_id: str, label: str) -> Block:
        """A block of another agent, by label (the name of the user's original plan)."""
        return self.core.get_block(agent_id, label)

    def list_blocks(
        self,
        *,
        agent_id: str | None = None,
        allow_secret: bool | None = None,
        max_sensitivity: str | None = None,
    ) -> list[Block]:
        """The agent's attached blocks, in-prompt and on-demand alike, up to the clearance (secret
        ones only with `allow_secret=True`; `max_sensitivity='public'` for what may be shared)."""
        with self._cleared(allow_secret, max_sensitivity):
            return self.core.list_blocks(agent_id or self.agent_id)

    def block_sizes(
        self, *, agent_id: str | None = None, allow_secret: bool | None = None
    ) -> dict[str, int]:
        """The attached blocks' labels and sizes in UTF-8 bytes (what a directory view shows)."""
        with self._cleared(allow_secret, None):
            return self.core.block_sizes(agent_id or self.agent_id)

    def delete_block(self, label: str, *, agent_id: str | None = None) -> None:
        """Detach and delete the block (journalled: `undo_block` brings it back)."""
        self.core.delete_block(agent_id or self.agent_id, label)

    def attach_block(self, agent_id: str, block_id: str, *, read_only: bool = False) -> Block:
        """Attach an existing block to `agent_id` (the agent is the subject here, so it is
        positional); `read_only` makes it read-only for that agent only."""
        return self.core.attach_block(
            agent_id, block_id, read_only=read_only, acting_agent_id=self.agent_id
        )

    def detach_block(self, agent_id: str, block_id: str) -> None:
        """Detach a block from `agent_id` (positional, as in `attach_block`); the block stays."""
        self.core.detach_block(agent_id, block_id, acting_agent_id=self.agent_id)

    def update_block(
        self,
        label: str,
        *,
        value: str | None = None,
        description: str | None = None,
        limit: int | None = None,
        read_only: bool | None = None,
        in_prompt: bool | None = None,
        agent_id: str | None = None,
        sensitivity: str | None = None,
        allow_secret: bool | None = None,
    ) -> Block:
        """The owner's explicit change (CLI, code): allowed on read-only blocks; limits hold.

        `in_prompt` switches a block between always in the prompt and on demand; `sensitivity`
        relabels it (journalled). Changing a secret block takes `allow_secret=True`.
        """
        with self._cleared(allow_secret, None):
            return self.core.update_block(
                agent_id or self.agent_id,
                label,
                value=value,
                description=description,
                limit=limit,
                read_only=read_only,
                in_prompt=in_prompt,
                sensitivity=sensitivity,
            )

    def set_block_sensitivity(
        self,
        label: str,
        sensitivity: str,
        *,
        agent_id: str | None = None,
        allow_secret: bool | None = None,
    ) -> Block:
        """Relabel a block public, private or secret, for every agent holding it (journalled as
        `set_block_sensitivity`). Any block may be made stricter; a secret one is changed only
        with `allow_secret=True`."""
        with self._cleared(allow_secret, None):
            return self.core.set_sensitivity(agent_id or self.agent_id, label, sensitivity)

    def rename_block(self, label: str, new_label: str, *, agent_id: str | None = None) -> Block:
        """Relabel a block for every agent it is attached to (refused on read-only blocks and
        where any of them already has `new_label`); journalled, the version stays."""
        return self.core.rename_block(agent_id or self.agent_id, label, new_label)

    def view_block(
        self, label: str, *, agent_id: str | None = None, allow_secret: bool | None = None
    ) -> Block:
        """The block as the model reads it with a tool: records that the agent has now seen this
        version, so its next edit is not refused as stale."""
        target = agent_id or self.agent_id
        with self._cleared(allow_secret, None):
            block = self.core.get_block(target, label)
        self.core.mark_seen(target, [block])
        return block

    def block_history(self, label: str, *, agent_id: str | None = None) -> list[BlockVersion]:
        """Every version of the block, oldest first (what `undo_block` steps back through)."""
        return self.core.history(agent_id or self.agent_id, label)

    def undo_block(self, label: str, *, agent_id: str | None = None) -> Block:
        """Restore the block's previous version; for a block this agent deleted (with the memory
        tool's `delete`, the CLI or `delete_block`), bring the block back."""
        target = agent_id or self.agent_id
        try:
            return self.core.undo(target, label)
        except BlockNotFoundError as missing:
            try:
                return self.core.restore_deleted(target, label)
            except NothingToUndoError:
                raise missing from None

    # ----- model-facing edits -------------------------------------------------------------

    def core_memory_append(self, label: str, content: str, *, agent_id: str | None = None) -> str:
        """Letta's `core_memory_append`: add `content` on a new line; returns what the model
        sees."""
        block = self.core.edit(
            agent_id or self.agent_id,
            label,
            Edit("core_memory_append", lambda b: append_text(b.value, content)),
        )
        return _edit_result("Appended to", block)

    def core_memory_replace(
        self, label: str, old_content: str, new_content: str, *, agent_id: str | None = None
    ) -> str:
        """Letta's `core_memory_replace`: `old_content` must occur exactly once; an empty
        `new_content` deletes it. Refused when the agent has not seen the block's current
        version."""
        block = self.core.edit(
            agent_id or self.agent_id,
            label,
            Edit(
                "core_memory_replace",
                lambda b: replace_text(label, b.value, old_content, new_content),
                check_stale=True,
            ),
        )
        return _edit_result("Replaced text in", block)

    def memory_insert(
        self, label: str, text: str, insert_after: str | None = None, *, agent_id: str | None = None
    ) -> str:
        """Letta's `memory_insert`: insert after the first (case-insensitive) occurrence of
        `insert_after`, or at the end."""
        block = self.core.edit(
            agent_id or self.agent_id,
            label,
            Edit("memory_insert", lambda b: insert_text(label, b.value, text, insert_after)),
        )
        return _edit_result("Inserted into", block)

    def memory_rethink(
        self,
        label: str,
        new_value: str,
        reasoning: str | None = None,
        *,
        agent_id: str | None = None,
    ) -> str:
        """Letta's `memory_rethink`: rewrite the block; `reasoning` is journalled and kept in
        archival memory, because the why of a rewrite outlives the old value."""
        target = agent_id or self.agent_id
        label = validate_label(label)
        block = self.core.edit(
            target,
            label,
            Edit("memory_rethink", lambda b: new_value, check_stale=True, reasoning=reasoning),
        )
        if reasoning:
            # The why of a rewrite outlives the block's old value: keep it searchable.
            # At the block's level: the reasons for rewriting a secret are as secret as it is.
            self.archival_memory_insert(
                f"Rewrote memory block '{label}': {reasoning}",
                tags=["memory_update", "reasoning", label],
                agent_id=target,
                sensitivity=block.sensitivity,
                provenance={"block": label, "block_id": block.block_id},
            )
        return _edit_result("Rewrote", block)

    def edit_block(
        self,
        label: str,
        compute: Callable[[Block], str],
        *,
        action: str,
        check_stale: bool = True,
        expected_version: int | None = None,
        agent_id: str | None = None,
    ) -> Block:
        """A model-facing edit whose new value `compute` derives from the block (the memory
        tool's `str_replace` and `insert`). Read-only, stale-write refusal, the limit, history and
        journal hold as for every edit; `compute` may raise to refuse, and then nothing changes.

        `expected_version` is for writers other than the agent's model (the consolidator): the
        edit is refused (StaleBlockError) unless the block is still at that version, and the
        agent is not marked as having seen the result."""
        return self.core.edit(
            agent_id or self.agent_id,
            label,
            Edit(
                action,
                compute,
                check_stale=check_stale and expected_version is None,
                expected_version=expected_version,
            ),
        )

    # ----- the model's view ---------------------------------------------------------------

    def get_system_prompt_addition(
        self,
        use_xml_format: bool = True,
        *,
        agent_id: str | None = None,
        mark_seen: bool = True,
        allow_secret: bool | None = None,
    ) -> str:
        """The rendered memory for the system prompt; marks the rendered versions as seen.

        On-demand blocks are listed with their paths and sizes, not rendered, so they are not
        marked: the agent sees one when it views it with the memory tool. Secret blocks are left
        out (neither rendered nor listed) unless the agent's `allow_secret` is true.
        """
        target = agent_id or self.agent_id
        with self._cleared(allow_secret, None):
            blocks = self.core.list_blocks(target)
        if mark_seen:
            self.core.mark_seen(target, [block for block in blocks if block.in_prompt])
        return render_memory(blocks, self._metadata(target, blocks), use_xml_format=use_xml_format)

    def _metadata(
        self, agent_id: str, blocks: list[Block], *, with_summary: bool = True
    ) -> MemoryMetadata:
        summary = self.recall.latest_summary(agent_id) if with_summary else None
        return MemoryMetadata(
            last_modified=max((b.updated_at for b in blocks), default=None),
            summary=summary.summary if summary else None,
        )

    def turn_context(
        self, now: datetime | None = None, *, agent_id: str | None = None
    ) -> TurnContext:
        """What the model is told with each user message: the time and the memory sizes."""
        target = agent_id or self.agent_id
        return TurnContext(
            now=now or datetime.now(timezone.utc),
            recall_messages=self.recall.count(target),
            archival_passages=self._count_passages(target),
        )

    def _count_passages(self, agent_id: str) -> int:
        with self.db.reading() as conn:
            return int(
                conn.execute(
                    "SELECT COUNT(*) FROM passages WHERE agent_id = ?", (agent_id,)
                ).fetchone()[0]
            )

    def get_tools_definitions(self) -> list[dict[str, Any]]:
        """Anthropic tool schemas of the memory tools: an alias of
        `memory_agent.tools.get_tools_definitions`, through the registered `ToolHost`."""
        return _tool_host().definitions()

    def execute_tool(
        self, name: str, arguments: Mapping[str, Any], *, agent_id: str | None = None
    ) -> ToolOutcome:
        """Run a memory tool for the model; failures come back as error outcomes, never raised: an
        alias of `memory_agent.tools.execute_tool`, through the registered `ToolHost`."""
        return _tool_host().execute(self, name, arguments, agent_id=agent_id)

    # ----- archival memory ----------------------------------------------------------------

    @property
    def archival(self) -> ArchivalMemory:
        """Archival memory, opened on first use (Chroma and the embedding model load lazily).

        Opening reconciles once: passages whose vectors were never written (a crash, a Chroma
        outage) are embedded now; vectors whose passage is gone are removed, and lost ones
        re-embedded, when the vector store is first opened.
        """
        if self._archival is None:
            with self._archival_lock:
                if self._archival is None:
                    archival = self._open_archival()
                    report = archival.reconcile_on_open()
                    if report.errors:
                        logger.warning(
                            "archival reconcile on open left work for later: %s", report.errors
                        )
                    self._archival = archival
        return self._archival

    def _reranker(self) -> AnthropicReranker | None:
        """The optional rerank stage of hybrid search (ARCHIVAL_RERANK_MODEL), off when unset."""
        model = self.settings.archival_rerank_model
        if model is None:
            return None
        return AnthropicReranker(
            model,
            api_key=self.settings.anthropic_api_key,
            base_url=self.settings.anthropic_base_url,
        )

    def archival_memory_insert(
        self,
        content: str,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        *,
        agent_id: str | None = None,
        expires_at: datetime | str | None = None,
        ttl_days: float | None = None,
        importance: float | None = None,
        provenance: Mapping[str, Any] | None = None,
        sensitivity: str | None = None,
        context: str | None = None,
    ) -> str:
        """Store a passage; identical content from the same agent returns the existing id (and makes
        it current again if it was superseded or had expired).

        `expires_at` (timezone-aware) or `ttl_days`, not both, make it expire: search never returns
        it afterwards and `purge_expired` deletes it. `importance` is in [0, 1] (default 0.5);
        `provenance` says where it came from, e.g. {"block": label, "messages": [ids]}.
        `sensitivity` is public, private (the default) or secret; the same text written again at a
        stricter level makes the stored passage that level, never laxer (`set_passage_sensitivity`
        lowers it). `context` is ranking-only text (e.g. the turn this one answers, the date):
        keyword and vector search match it, hits never show it.
        """
        return self.archival.insert(
            agent_id or self.agent_id,
            content,
            tags,
            metadata,
            expires_at=expires_at,
            ttl_days=ttl_days,
            importance=importance,
            provenance=provenance,
            sensitivity=sensitivity,
            context=context,
        )

    def archival_memory_insert_many(
        self, items: Iterable[str | NewPassage | Mapping[str, Any]], *, agent_id: str | None = None
    ) -> list[str]:
        """Store many passages, all validated before any is written and embedded in batches
        (imports, bulk loads); returns their ids in input order."""
        return self.archival.insert_many(agent_id or self.agent_id, items)

    def archival_memory_get(
        self,
        passage_id: str,
        *,
        agent_id: str | None = None,
        allow_secret: bool | None = None,
        max_sensitivity: str | None = None,
    ) -> Passage | None:
        """One passage by id, or None when the agent has no passage with it (or its level is above
        the clearance: a secret passage needs `allow_secret=True`)."""
        return self.archival.get(
            agent_id or self.agent_id,
            passage_id,
            clearance=clearance_of(allow_secret, max_sensitivity),
        )

    def archival_memory_delete(self, passage_id: str, *, agent_id: str | None = None) -> Passage:
        """Delete a passage and its vector; returns what was deleted (ArchivalError when absent)."""
        return self.archival.delete(agent_id or self.agent_id, passage_id)

    def archival_memory_list(
        self,
        limit: int = 50,
        offset: int = 0,
        tags: Sequence[str] | None = None,
        *,
        agent_id: str | None = None,
        allow_secret: bool | None = None,
        max_sensitivity: str | None = None,
    ) -> list[Passage]:
        """The agent's passages, newest first, optionally filtered by `tags`; up to the
        clearance."""
        return self.archival.list(
            agent_id or self.agent_id,
            limit,
            offset,
            tags,
            clearance=clearance_of(allow_secret, max_sensitivity),
        )

    def archival_memory_search(
        self,
        query: str,
        limit: int = 5,
        tags: Sequence[str] | None = None,
        start_date: str | None = None,
        end_date: str | None = None,
        mode: SearchMode | None = None,
        *,
        agent_id: str | None = None,
        include_superseded: bool = False,
        explain: bool = False,
        allow_secret: bool | None = None,
        max_sensitivity: str | None = None,
        count_access: bool = True,
    ) -> list[SearchHit]:
        """Search the agent's passages; `mode` defaults to hybrid (keyword if
        MEMORY_HYBRID_SEARCH=false); 'scored' adds recency and importance to hybrid's match.

        Expired passages are never returned; superseded ones only with `include_superseded=True`.
        `explain=True` attaches each signal's score to every hit (`SearchHit.explanation`).
        Passages above the clearance are filtered out inside the query, in every mode: secret ones
        are found only with `allow_secret=True`, and `max_sensitivity='public'` keeps what may be
        shared. Auto-recall and every other caller that searches through here get the same rule.
        `count_access=False` leaves the hits' access counts as they are (a person inspecting).
        """
        chosen: SearchMode = mode or ("hybrid" if self.settings.memory_hybrid_search else "keyword")
        clearance = clearance_of(allow_secret, max_sensitivity)
        return self.archival.search(
            agent_id or self.agent_id,
            query,
            limit,
            tags,
            start_date,
            end_date,
            chosen,
            include_superseded=include_superseded,
            explain=explain,
            clearance=clearance,
            count_access=count_access,
        )

    def set_passage_sensitivity(
        self,
        passage_id: str,
        sensitivity: str,
        *,
        agent_id: str | None = None,
        allow_secret: bool | None = None,
        journal_detail: Mapping[str, Any] | None = None,
    ) -> Passage:
        """Relabel a passage public, private or secret (journalled as `set_passage_sensitivity` with
        the old and new level). Any passage may be made stricter; a secret one is changed only with
        `allow_secret=True` (without it, it is reported missing)."""
        return self.archival.set_sensitivity(
            agent_id or self.agent_id,
            passage_id,
            sensitivity,
            clearance=clearance_of(allow_secret, None),
            detail=journal_detail,
        )

    def supersede_passage(
        self,
        old_id: str,
        new_id: str,
        *,
        agent_id: str | None = None,
        journal_detail: Mapping[str, Any] | None = None,
    ) -> Passage:
        """Mark passage `old_id` as replaced by `new_id`: kept and linked, left out of default
        search.

        Refuses a passage superseding itself, a missing id, an already expired successor, or a
        cycle. When the successor expires later, search treats `old_id` as current again. Journalled
        with the old and new `superseded_by`. `journal_detail` adds fields to the journal entry
        (e.g. author, session id).
        """
        return self.archival.supersede(
            agent_id or self.agent_id, old_id, new_id, detail=journal_detail
        )

    def restore_passage(
        self,
        passage_id: str,
        *,
        agent_id: str | None = None,
        journal_detail: Mapping[str, Any] | None = None,
    ) -> Passage:
        """Make a superseded passage current again (clears `superseded_by`; journalled). Like every
        change to a passage, a secret one is missing unless inside
        `clearance(allow_secret=True)`."""
        return self.archival.restore(agent_id or self.agent_id, passage_id, detail=journal_detail)

    def set_passage_importance(
        self,
        passage_id: str,
        importance: float,
        *,
        agent_id: str | None = None,
        journal_detail: Mapping[str, Any] | None = None,
    ) -> Passage:
        """Set a passage's importance, a number in [0, 1] (journalled)."""
        return self.archival.set_importance(
            agent_id or self.agent_id, passage_id, importance, detail=journal_detail
        )

    def update_passage(
        self,
        passage_id: str,
        *,
        tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        provenance: Mapping[str, Any] | None = None,
        agent_id: str | None = None,
        journal_detail: Mapping[str, Any] | None = None,
    ) -> Passage:
        """Replace a passage's tags, metadata or provenance (those given; its text never
        changes), journalled."""
        return self.archival.update(
            agent_id or self.agent_id,
            passage_id,
            tags=tags,
            metadata=metadata,
            provenance=provenance,
            detail=journal_detail,
        )

    def purge_expired(
        self,
        *,
        agent_id: str | None = None,
        all_agents: bool = False,
        journal_detail: Mapping[str, Any] | None = None,
    ) -> int:
        """Delete the agent's expired passages for good (rows, keyword index, vectors), journalled
        with their content; `all_agents=True` purges every agent's. Returns how many were
        deleted."""
        target = None if all_agents else (agent_id or self.agent_id)
        return self.archival.purge_expired(target, detail=journal_detail)

    def search_archival_hybrid(self, query: str, limit: int = 5) -> list[SearchHit]:
        """The user's original name for hybrid search: `archival_memory_search(mode="hybrid")`."""
        return self.archival_memory_search(query, limit, mode="hybrid")

    def reconcile_archival(
        self, progress: Any = None, *, agent_id: str | None = None, full: bool = False
    ) -> ReconcileReport:
        """Re-embed pending passages and drop orphan vectors (also done when archival opens)."""
        return self.archival.reconcile(agent_id, progress, full=full)

    def rebuild_archival_vectors(self, progress: Any = None) -> RebuildReport:
        """Replace a damaged vector store: the old one is kept as a backup (embedded Chroma) and
        every passage is re-embedded with this manager's embedding function (`doctor --repair`)."""
        with self._archival_lock:
            archival, self._archival = self._archival or self._open_archival(), None
        return rebuild_vectors(archival, progress)

    def _open_archival(self) -> ArchivalMemory:
        return ArchivalMemory(
            self.db,
            VectorConfig.from_settings(self.settings, self.storage_dir),
            self._embedding_function,
            vector_store=self._vector_store,
            reranker=self._reranker(),
            author=self.current_author,
        )

    # ----- recall memory ------------------------------------------------------------------

    def store_message(
        self, role: str, content: MessageContent, *, agent_id: str | None = None, **fields: Any
    ) -> StoredMessage | None:
        """Store one message in recall memory; None when a message with the same `sdk_uuid` is
        stored."""
        return self.recall.store(agent_id or self.agent_id, role, content, **fields)

    def get_recent_messages(
        self, limit: int = 20, *, agent_id: str | None = None, in_context_only: bool = True
    ) -> list[StoredMessage]:
        """The newest messages, oldest first; those still in the context window unless
        `in_context_only=False` (then compacted ones too)."""
        return self.recall.recent(agent_id or self.agent_id, limit, in_context_only=in_context_only)

    def get_message(self, message_id: int, *, agent_id: str | None = None) -> StoredMessage:
        """One stored message by the id search results show; MessageNotFoundError when the agent
        has none with it (another agent's message counts as none)."""
        message = self.recall.get(agent_id or self.agent_id, message_id)
        if message is None:
            raise MessageNotFoundError(message_id)
        return message

    def in_context_messages(self, *, agent_id: str | None = None) -> list[StoredMessage]:
        """Every message still in the context window, oldest first (what a new session carries)."""
        return self.recall.in_context(agent_id or self.agent_id)

    def all_messages(self, *, agent_id: str | None = None) -> list[StoredMessage]:
        """Every stored message of the agent, compacted ones included, oldest first."""
        return self.recall.all_messages(agent_id or self.agent_id)

    def count_messages(self, *, agent_id: str | None = None, in_context_only: bool = False) -> int:
        """How many messages the agent has stored (or has still in its context window)."""
        return self.recall.count(agent_id or self.agent_id, in_context_only=in_context_only)

    def list_summaries(self, *, agent_id: str | None = None) -> list[StoredSummary]:
        """Every summary compaction wrote for the agent, oldest first."""
        return self.recall.summaries(agent_id or self.agent_id)

    def get_summary(self, *, agent_id: str | None = None) -> str | None:
        """The text of the newest conversation summary, or None before the first compaction."""
        summary = self.recall.latest_summary(agent_id or self.agent_id)
        return summary.summary if summary else None

    def get_summary_record(self, *, agent_id: str | None = None) -> StoredSummary | None:
        """The newest summary with the message range it covers, or None."""
        return self.recall.latest_summary(agent_id or self.agent_id)

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
        mode: MessageSearchMode = "hybrid",
        time_aware: bool = True,
    ) -> list[StoredMessage]:
        """Search the agent's messages, evicted ones included, best first.

        `mode`: 'keyword' (full text, bm25), 'vector' (by meaning) or 'hybrid' (both fused, the
        default; see docs/conversation-search.md). `start_date`/`end_date` (ISO dates or times,
        inclusive; a bare end date covers its day) and `roles` filter in every mode. With
        `time_aware` (the default), a time the query names ("yesterday", "last May") is read by
        rules and the messages of that window are raised in the ranking when no dates are given
        (`time_aware=False` ranks by the words alone). An empty query lists messages newest first.
        """
        return _search_messages(
            self.db,
            self.recall,
            self._message_vectors,
            agent_id or self.agent_id,
            query,
            mode=mode,
            roles=roles,
            start_date=start_date,
            end_date=end_date,
            limit=limit,
            offset=offset,
            fusion=self.archival.fusion if mode == "hybrid" else FusionConfig(),
            time_aware=time_aware,
        )

    def index_message_vectors(
        self, *, agent_id: str | None = None, limit: int | None = None
    ) -> int:
        """Embed messages stored without vectors (newest first, at most `limit`); returns how many.
        The agent calls it after each turn, off the turn's path; a failure leaves them pending."""
        return self._message_vectors.write_pending(agent_id or self.agent_id, limit)

    @property
    def message_vectors_in_use(self) -> bool:
        """Whether this manager has opened the message vectors' store (a search by meaning did)."""
        return self._message_vectors.is_open

    def reconcile_message_vectors(
        self, *, agent_id: str | None = None, full: bool = False
    ) -> MessageReconcileReport:
        """Bring message vectors in line with the messages (every agent's when `agent_id` is None):
        embed those without, re-embed lost ones, drop vectors of forgotten messages."""
        return self._message_vectors.reconcile(agent_id, full=full)

    def _open_message_store(self) -> VectorStore:
        """The message vectors' store: the caller's, else Chroma beside archival's collections
        under a prefix of its own (archival's reconcile and rebuild never see them)."""
        if self._message_vector_store is not None:
            return self._message_vector_store
        return chroma_message_store(self.archival.index)

    def block_versions(self, *, agent_id: str | None = None) -> dict[str, int]:
        """Each attached block's id and current version (what a rendered prompt showed)."""
        return self.core.versions(agent_id or self.agent_id)

    def blocks_changed_by_others(
        self, since: dict[str, int], *, agent_id: str | None = None
    ) -> list[str]:
        """Ids of blocks changed after the `since` versions by anything but the agent's own
        model-facing edits (another agent, the owner's update or undo, a restore)."""
        return self.core.changed_by_others(agent_id or self.agent_id, since)

    def mark_blocks_seen(self, blocks: list[Block], *, agent_id: str | None = None) -> None:
        """Record that the model was shown these versions (outside the system prompt), so its
        next edit of them is not refused as stale."""
        self.core.mark_seen(agent_id or self.agent_id, blocks)

    def memory_fingerprint(
        self, *, agent_id: str | None = None, summary_id: int | None = None
    ) -> str:
        """A cheap value that changes whenever the rendered memory of the agent would change
        (blocks, attachments, summary); the current time and message counts are left out.

        `summary_id` is the newest summary's id when the caller has read it already (0: none yet),
        so a turn reads the summary once; by default it is read here.
        """
        target = agent_id or self.agent_id
        if summary_id is None:
            summary = self.recall.latest_summary(target)
            summary_id = summary.summary_id if summary else 0
        return f"{self.core.fingerprint(target)}|summary:{summary_id}"

    # ----- compaction ---------------------------------------------------------------------

    def memory_tokens(self, *, agent_id: str | None = None, tools_tokens: int | None = None) -> int:
        """Tokens of the rendered memory (cached while memory is unchanged) plus the tool
        definitions.

        `tools_tokens` is what the caller's tool definitions count (an agent counts the tools it
        gives its model); by default, the memory tools' definitions (`get_tools_definitions`).
        """
        target = agent_id or self.agent_id
        fingerprint = self.core.fingerprint(target)
        cached = self._fixed_tokens_cache.get(target)
        if cached is None or cached[0] != fingerprint:
            blocks = self.core.list_blocks(target)
            text = render_memory(blocks, self._metadata(target, blocks, with_summary=False))
            cached = (fingerprint, self.compactor.count_text(text))
            self._fixed_tokens_cache[target] = cached
        if tools_tokens is None:
            if self._tools_tokens is None:
                self._tools_tokens = self.compactor.count_text(
                    json.dumps(self.get_tools_definitions(), ensure_ascii=False)
                )
            tools_tokens = self._tools_tokens
        return cached[1] + tools_tokens

    def should_compact(
        self, *, agent_id: str | None = None, fixed_tokens: int | None = None
    ) -> bool:
        """Whether the next request would reach the compaction trigger (O(new messages)).

        `fixed_tokens` is the request outside the conversation; by default the rendered memory
        and the tool definitions (an agent passes its whole system prompt and tools). It asks the
        same decision function as `MemoryAwareAgent`'s turn planner (`Compactor.compaction_due`),
        without the agent's allowance for the next turn's growth, which only an agent measures.
        """
        target = agent_id or self.agent_id
        fixed = self.memory_tokens(agent_id=target) if fixed_tokens is None else fixed_tokens
        return self.compactor.should_compact(target, fixed)

    async def acompact_history(
        self, *, agent_id: str | None = None, force: bool = True, fixed_tokens: int | None = None
    ) -> CompactionOutcome:
        """Summarise the oldest messages into the running summary (the manual trigger).

        A manual command, like `memory-agent compact` and `MemoryAwareAgent.compact`: it runs when
        called. Automatic compaction is the agent's turn planner's decision alone.
        With `force=True` (the default for a manual call) it compacts even under the trigger.
        The summariser failing never raises: the outcome says `deferred` and nothing is lost.
        """
        target = agent_id or self.agent_id
        fixed = self.memory_tokens(agent_id=target) if fixed_tokens is None else fixed_tokens
        return await self.compactor.compact(target, fixed, force=force)

    def compact_history(
        self, *, agent_id: str | None = None, force: bool = True
    ) -> CompactionOutcome:
        """Synchronous `acompact_history` for code without an event loop."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._compact_in_own_loop(agent_id, force))
        raise RuntimeError(
            "compact_history() was called inside an event loop; use "
            "'await memory.acompact_history()' there instead."
        )

    async def _compact_in_own_loop(self, agent_id: str | None, force: bool) -> CompactionOutcome:
        try:
            return await self.acompact_history(agent_id=agent_id, force=force)
        finally:
            # The HTTP client belongs to this short-lived loop; the next call makes a new one.
            await self.compactor.aclose()

    def journal(
        self,
        *,
        agent_id: str | None = None,
        limit: int = 100,
        author_kind: str | None = None,
        allow_secret: bool | None = None,
        max_sensitivity: str | None = None,
    ) -> list[journal.JournalEntry]:
        """The newest journal entries (every change to memory, with old and new values and who
        made it), newest first; `author_kind` keeps one kind of author (e.g. "model").

        Up to the clearance, as an export: the entries about a block or passage above it (a live
        secret one, or one the journal records as secret, deleted since) are left out, since their
        values hold its text; `allow_secret=True` shows every entry. So fewer than `limit` may
        come."""
        clearance = clearance_of(allow_secret, max_sensitivity)
        with self.db.reading() as conn:
            entries = journal.list_entries(
                conn, agent_id=agent_id, limit=limit, author_kind=author_kind
            )
            if clearance == "secret":
                return entries
            hidden = _hidden_targets(conn, clearance)
        return [
            entry
            for entry in entries
            if (entry.target_type, entry.target_id) not in hidden
            and journal_values_allowed(
                entry.action, entry.old_value, entry.new_value, entry.detail, clearance
            )
        ]

    # ----- forgetting for real ---------------------------------------------------------------

    def forget_passage(self, passage_id: str, *, agent_id: str | None = None) -> ForgetReport:
        """Forget a passage for real: it, the passages it superseded and those holding its text, the
        journal's values about them, copies of the text elsewhere, vectors, and the freed bytes
        (see `memory_agent.forgetting`). The journal keeps only that it was forgotten, by whom,
        when."""
        target = agent_id or self.agent_id
        return self._forget(lambda forgetting: forgetting.passage(target, passage_id))

    def forget_message(self, message_id: int, *, agent_id: str | None = None) -> ForgetReport:
        """Forget a message for real, with its SDK transcript lines and copies; the summaries it
        reached are written again without it (by the model if one is configured, else the rules,
        which the report's warnings say)."""
        target = agent_id or self.agent_id
        report = self._forget(lambda forgetting: forgetting.message(target, message_id))
        self.compactor.forget(target)
        self._fixed_tokens_cache.pop(target, None)
        return report

    def forget_block(self, label: str, *, agent_id: str | None = None) -> ForgetReport:
        """Forget a block for real: every version, every agent's attachment, the passages
        consolidation moved out of it, the journal's values and copies of its text."""
        target = agent_id or self.agent_id
        report = self._forget(lambda forgetting: forgetting.block(target, label))
        self._fixed_tokens_cache.pop(target, None)
        return report

    def forget_agent(self, agent_id: str) -> ForgetReport:
        """Forget an agent for real: its messages, summaries, passages, vectors, blocks no other
        agent holds, session transcripts and the journal's values about it. Forgetting this
        manager's own agent leaves the manager without one: close it."""
        report = self._forget(lambda forgetting: forgetting.agent(agent_id))
        self.compactor.forget(agent_id)
        self._fixed_tokens_cache.pop(agent_id, None)
        return report

    def _forget(self, run: Callable[[Forgetting], ForgetReport]) -> ForgetReport:
        scrub.secure_delete(self.db, True)
        try:
            return run(
                Forgetting(
                    self.db,
                    author=self.current_author,
                    vectors=lambda: self._vector_forget(self.archival.index.store),
                    message_vectors=lambda: self._message_vectors.after_writes(
                        self._vector_forget(self._message_vectors.store)
                    ),
                    scrub_wait_s=self.settings.forget_wait_seconds,
                    rewrite=Resummarizer(
                        self.db, self._forget_summarizer(), self.compaction_settings.clip_chars
                    ),
                )
            )
        finally:
            scrub.secure_delete(self.db, False)

    def _forget_summarizer(self) -> Summarizer | None:
        """The summariser for rewriting summaries: the one given, the model's when configured, else
        None (the rules)."""
        if self._summarizer_given is not None:
            return self._summarizer_given
        if self.settings.anthropic_api_key or self.settings.anthropic_base_url:
            return self.compactor.summarizer
        return None

    def _vector_forget(self, store: VectorStore) -> Callable[[str, list[str], bool], list[str]]:
        """Forgetting's way to remove vectors from `store`, leaving no bytes where it can."""
        forget = getattr(store, "forget", None)
        if callable(forget):
            return lambda owner, ids, whole: list(forget(owner, ids, whole_agent=whole))

        def plain(owner: str, ids: list[str], whole: bool) -> list[str]:
            gone = set(ids)
            stored = store.ids(owner)
            store.delete(owner, [i for i in stored if whole or passage_of(i) in gone])
            return []

        return plain

    # ----- consolidation ------------------------------------------------------------------

    def make_consolidator(self, kind: str = "auto") -> Consolidator:
        """A consolidator: 'rules' (no model), 'model' (the compaction model, with this manager's
        API key and URL, falling back to the rules on any failure) or 'auto' (the model when an
        API key or base URL is configured, else the rules)."""
        if kind == "auto":
            kind = (
                "model"
                if (self.settings.anthropic_api_key or self.settings.anthropic_base_url)
                else "rules"
            )
        if kind == "rules":
            return RulesConsolidator()
        if kind == "model":
            return ModelConsolidator(
                self.compaction_settings,
                api_key=self.settings.anthropic_api_key,
                base_url=self.settings.anthropic_base_url,
            )
        raise ConfigurationError(f"A consolidator is 'auto', 'rules' or 'model', got {kind!r}.")

    async def aconsolidate(
        self,
        *,
        agent_id: str | None = None,
        consolidator: Consolidator | str | None = None,
        dry_run: bool = False,
    ) -> ConsolidationReport:
        """Tidy the agent's memory in one recorded session (see `memory_agent.consolidation`).

        Never raises for a failed run: the report (and the session row) say `failed` with the
        reason, and a warning is logged. A dry run writes nothing, not even a session row.
        Embedding and database work run in this thread: from an event loop shared with other work,
        prefer `await asyncio.to_thread(memory.consolidate, ...)`.
        """
        chosen = (
            consolidator
            if isinstance(consolidator, Consolidator)
            else self.make_consolidator(consolidator or "auto")
        )
        target = agent_id or self.agent_id
        if not self.core.agent_exists(target):
            raise AgentNotFoundError(target)
        return await run_consolidation(self, target, chosen, dry_run=dry_run)

    def consolidate(
        self,
        *,
        agent_id: str | None = None,
        consolidator: Consolidator | str | None = None,
        dry_run: bool = False,
    ) -> ConsolidationReport:
        """Synchronous `aconsolidate` for code without an event loop (or a worker thread); inside a
        running loop it raises ConsolidationError pointing at `aconsolidate`."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(
                self.aconsolidate(agent_id=agent_id, consolidator=consolidator, dry_run=dry_run)
            )
        raise ConsolidationError(
            "consolidate() was called inside a running event loop, which it cannot block; "
            "use 'await memory.aconsolidate()' there instead (or 'await "
            "asyncio.to_thread(memory.consolidate)'). Nothing was changed."
        )

    def list_consolidations(
        self, *, agent_id: str | None = None, limit: int = 20
    ) -> list[ConsolidationSession]:
        """The agent's consolidation sessions, newest first."""
        if limit < 1:
            raise ConfigurationError(f"limit must be at least 1, got {limit}.")
        with self.db.reading() as conn:
            return consolidation_log.list_rows(conn, agent_id or self.agent_id, limit)

    def get_consolidation(self, session_id: str) -> ConsolidationSession:
        """One consolidation session by id (ConsolidationError when there is none)."""
        with self.db.reading() as conn:
            session = consolidation_log.read_row(conn, session_id)
        if session is None:
            raise ConsolidationError(
                f"No consolidation session '{session_id}'. "
                "List them with 'memory-agent consolidations list'."
            )
        return session

    def rollback_consolidation(self, session_id: str) -> ConsolidationSession:
        """Restore every block and passage the session changed, in one transaction; refused
        (RollbackRefusedError, nothing changed) when a later edit touched any of them."""
        return rollback_session(self, session_id)

    # ----- snapshots ----------------------------------------------------------------------

    def snapshot(
        self,
        agent_ids: Sequence[str] | None = None,
        *,
        allow_secret: bool | None = None,
        max_sensitivity: str | None = None,
    ) -> Snapshot:
        """The named agents' whole memory (default: this manager's agent), read in one
        transaction: agents, blocks with their versions and attachments, messages, summaries,
        passages and the journal, in the order the agents are named.

        What export carries and nothing more: secret blocks and passages, and every copy of them
        (versions, journal entries), are left out unless `allow_secret=True`;
        `max_sensitivity='public'` keeps only what may be shared (`snapshots.clearance`).
        Conversation messages and summaries have no level and are always included. An unknown
        agent id is an AgentNotFoundError.
        """
        clearance = clearance_of(allow_secret, max_sensitivity)
        wanted = list(dict.fromkeys(agent_ids if agent_ids is not None else [self.agent_id]))
        if not wanted:
            raise ConfigurationError("Name at least one agent to snapshot.")
        return within_clearance(read_snapshot(self.db, wanted), clearance)

    def restore(
        self,
        snapshot: Snapshot,
        *,
        agent_id: str | None = None,
        author: Author | None = None,
    ) -> ImportReport:
        """Write a snapshot into this storage dir as new agents, all or nothing, in one
        transaction; then the vectors of its passages (a failure there leaves them pending for
        `reconcile_archival`, it never undoes the rows).

        `agent_id` imports the snapshot's only agent under that id. An agent id already used
        here, or any record the live paths would refuse, is refused and nothing is written.
        What the snapshot does not attribute is journalled as `author`
        (`Author.importer("snapshot")` by default). A storage dir with no default agent gets
        the first restored agent as its default.
        """
        if not isinstance(snapshot, Snapshot):
            raise ConfigurationError(
                f"restore takes a Snapshot (from MemoryManager.snapshot or a parsed export), "
                f"got {type(snapshot).__name__}; nothing was imported."
            )
        return restore_snapshot(
            self.db,
            snapshot,
            lambda: self.archival,
            agent_id=agent_id,
            author=author,
            default_agent_key=DEFAULT_AGENT_KEY,
        )

    # ----- lifecycle ----------------------------------------------------------------------

    @property
    def database(self) -> Store:
        """The storage dir's database, for stores that keep tables of their own in it (the SDK
        session store). Memory's own tables are written through the manager's methods only."""
        return self.db

    def atomic(self) -> AbstractContextManager[object]:
        """Group several manager calls into one transaction: all of them commit, or none does
        (e.g. a college's agents and their shared block, set up by processes starting at once)."""
        return self.db.transaction()

    def close(self) -> None:
        """Close the database and release archival memory's vector store client."""
        if self._message_vectors.is_open and self._message_vector_store is None:
            close = getattr(self._message_vectors.store, "close", None)
            if callable(close):
                close()
        if self._archival is not None:
            self._archival.close()
            self._archival = None
        self.db.close()

    def __enter__(self) -> MemoryManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _hidden_targets(conn: Connection, clearance: Sensitivity) -> set[tuple[str, str | None]]:
    """The blocks and passages whose journal entries a caller of `clearance` may not see: those
    above it now, and those the journal ever records above it (a deleted secret's level lives only
    there)."""
    levels = visible_levels(clearance)
    marks = ", ".join("?" for _ in levels)
    hidden: set[tuple[str, str | None]] = set()
    for kind, sql in (
        ("block", f"SELECT block_id FROM blocks WHERE sensitivity NOT IN ({marks})"),
        ("passage", f"SELECT passage_id FROM passages WHERE sensitivity NOT IN ({marks})"),
    ):
        hidden.update((kind, row[0]) for row in conn.execute(sql, levels))
    for row in conn.execute(
        "SELECT target_type, target_id, action, old_value, new_value, detail FROM journal"
        " WHERE forgotten = 0 AND target_type IN ('block', 'passage')"
        " AND (action LIKE ? OR detail LIKE ?)",
        ("%sensitivity%", "%sensitivity%"),
    ):
        try:
            detail = json.loads(row[5] or "{}")
        except ValueError:
            detail = {"sensitivity": "unreadable"}  # no level: fail closed
        if not journal_values_allowed(
            row[2], row[3], row[4], detail if isinstance(detail, dict) else {}, clearance
        ):
            hidden.add((row[0], row[1]))
    return hidden


def _edit_result(verb: str, block: Block) -> str:
    """The model sees the block's new content at once, inside the same turn."""
    return (
        f"{verb} block '{block.label}' ({block.chars_current}/{block.limit} characters, "
        f"version {block.version}). Its value is now:\n{block.value}"
    )
