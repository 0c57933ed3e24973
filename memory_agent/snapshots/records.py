"""The format-neutral form of exported memory: one record type per table, a Snapshot of them all.

Both file formats (the project's JSON, Letta's `.af`) are translations of a `Snapshot`, so reading
the database and writing it back is written once. Ids in a snapshot are the source's ids: they
tie records together (a message to its agent, a summary to the messages it covers) and are mapped
to fresh ids on import wherever the target database already uses them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AgentRecord",
    "AttachmentRecord",
    "BlockRecord",
    "BlockVersionRecord",
    "ImportNotes",
    "JournalRecord",
    "MessageRecord",
    "PassageRecord",
    "Snapshot",
    "SummaryRecord",
]


@dataclass(frozen=True)
class AgentRecord:
    """An agent; `system_prompt` is its own base prompt, `letta` what only a Letta export uses
    again (model configs, agent type, the groups it belongs to)."""

    agent_id: str
    name: str | None
    created_at: str
    system_prompt: str | None = None
    letta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BlockRecord:
    block_id: str
    label: str
    value: str
    limit: int
    description: str | None
    read_only: bool
    is_shared: bool
    owner_agent_id: str | None
    version: int
    created_at: str
    updated_at: str
    in_prompt: bool = True
    """False for an on-demand block (listed, not rendered); exports without the field keep it in."""
    sensitivity: str = "private"
    """public, private or secret (`memory_agent.privacy.sensitivity`); files without the field:
    private."""


@dataclass(frozen=True)
class BlockVersionRecord:
    block_id: str
    version: int
    value: str
    description: str | None
    limit: int
    read_only: bool
    agent_id: str | None
    action: str
    created_at: str
    author_kind: str | None = None
    author: str | None = None


@dataclass(frozen=True)
class AttachmentRecord:
    """A block attached to an agent; `read_only` is this agent's own flag on the attachment."""

    agent_id: str
    block_id: str
    label: str
    read_only: bool
    attached_at: str


@dataclass(frozen=True)
class MessageRecord:
    message_id: int | str
    agent_id: str
    role: str
    message_type: str
    content: str | list[dict[str, Any]]
    created_at: str
    in_context: bool = True
    session_id: str | None = None
    turn_id: str | None = None
    sdk_uuid: str | None = None
    token_count: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SummaryRecord:
    summary_id: int | str | None
    agent_id: str
    summary: str
    first_message_id: int | str | None
    last_message_id: int | str | None
    model: str | None
    tokens_before: int | None
    tokens_after: int | None
    is_fallback: bool
    created_at: str


@dataclass(frozen=True)
class PassageRecord:
    passage_id: str
    agent_id: str
    content: str
    tags: list[str]
    metadata: dict[str, Any]
    created_at: str
    expires_at: str | None = None
    superseded_by: str | None = None
    """The passage_id (in the same file) of the passage that replaced it."""
    importance: float = 0.5
    access_count: int = 0
    last_accessed_at: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    sensitivity: str = "private"
    """public, private or secret (`memory_agent.privacy.sensitivity`); files without the field:
    private."""
    context: str = ""
    """Ranking-only context the indexes see and search results do not show (absent from older
    exports)."""


@dataclass(frozen=True)
class JournalRecord:
    agent_id: str | None
    action: str
    target_type: str
    target_id: str | None
    label: str | None
    old_value: str | None
    new_value: str | None
    detail: dict[str, Any]
    created_at: str
    author_kind: str | None = None
    author: str | None = None


@dataclass
class ImportNotes:
    """What reading a file changed or could not carry over; reported, never written as rows."""

    limits_raised: list[dict[str, Any]] = field(default_factory=list)
    """Blocks whose value was longer than their limit: `{"label", "limit", "raised_to"}`."""
    unattached_blocks: list[str] = field(default_factory=list)
    """Labels of blocks no agent of the file had attached (imported unattached)."""
    not_imported: dict[str, list[str]] = field(default_factory=dict)
    """What has no counterpart here, by kind ("tools", "tool_rules", "skills", ...)."""
    tools_provided: list[str] = field(default_factory=list)
    """The file's tools that the memory tools provide here under the same name."""

    def skip(self, kind: str, names: list[str]) -> None:
        if names:
            self.not_imported.setdefault(kind, []).extend(names)


@dataclass
class Snapshot:
    """The memory of one or more agents: every table's rows that belong to them."""

    agents: list[AgentRecord] = field(default_factory=list)
    blocks: list[BlockRecord] = field(default_factory=list)
    block_history: list[BlockVersionRecord] = field(default_factory=list)
    attachments: list[AttachmentRecord] = field(default_factory=list)
    messages: list[MessageRecord] = field(default_factory=list)
    summaries: list[SummaryRecord] = field(default_factory=list)
    passages: list[PassageRecord] = field(default_factory=list)
    journal: list[JournalRecord] = field(default_factory=list)
    notes: ImportNotes = field(default_factory=ImportNotes)
