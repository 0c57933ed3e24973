"""The record types of a `Snapshot`, under their old import path (they live in `snapshots`)."""

from ..snapshots.records import (
    AgentRecord,
    AttachmentRecord,
    BlockRecord,
    BlockVersionRecord,
    ImportNotes,
    JournalRecord,
    MessageRecord,
    PassageRecord,
    Snapshot,
    SummaryRecord,
)

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
