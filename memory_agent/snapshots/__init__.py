"""Whole agents as data: a `Snapshot` read out of the tables, or written into them as new agents.

The table-level work of export and import lives here, beside the tables' own writers, so the
layers above reach it through `MemoryManager.snapshot` and `restore` (and, for a storage dir no
manager has opened, `admin.restore_snapshot`). Both file formats (`portability/`) translate a
`Snapshot`; they never read or write a table themselves.
"""

from .clearance import within_clearance
from .records import (
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
from .restore import restore_snapshot
from .tables import ImportReport, read_snapshot, validate_snapshot, write_snapshot

__all__ = [
    "AgentRecord",
    "AttachmentRecord",
    "BlockRecord",
    "BlockVersionRecord",
    "ImportNotes",
    "ImportReport",
    "JournalRecord",
    "MessageRecord",
    "PassageRecord",
    "Snapshot",
    "SummaryRecord",
    "read_snapshot",
    "restore_snapshot",
    "validate_snapshot",
    "within_clearance",
    "write_snapshot",
]
