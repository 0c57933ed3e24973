"""memory-agent: durable, Letta-style memory for agents built on the Claude Agent SDK."""

from compaction import CompactionOutcome, CompactionSettings

from . import _old_paths
from .archival import NewPassage, Passage, ReconcileReport, SearchExplanation, SearchHit
from .archival.rebuild import RebuildReport
from .authors import Author
from .consolidation import (
    ConsolidationReport,
    ConsolidationSession,
    Consolidator,
    ModelConsolidator,
    RulesConsolidator,
)
from .conversation.message_vectors import MessageReconcileReport
from .conversation.recall import StoredMessage, StoredSummary
from .core.blocks import Block, BlockVersion
from .errors import (
    AgentNotFoundError,
    AmbiguousContentError,
    ArchivalError,
    BlockError,
    BlockExistsError,
    BlockLimitExceededError,
    BlockNotAttachedError,
    BlockNotFoundError,
    ConfigurationError,
    ConsolidationError,
    ContentNotFoundError,
    EncryptionKeyError,
    ImportFormatError,
    InvalidLabelError,
    LabelConflictError,
    MemoryAgentError,
    MemoryToolError,
    MessageNotFoundError,
    ModelAuthenticationError,
    NothingToUndoError,
    ReadOnlyBlockError,
    RollbackRefusedError,
    SensitivityError,
    StaleBlockError,
    StorageError,
    WriteOutcomeUnknownError,
)
from .forgetting import ForgetReport
from .manager import MemoryManager
from .privacy.encryption_key import EncryptionKey
from .privacy.sensitivity import Sensitivity
from .settings import Settings
from .snapshots import ImportReport, Snapshot
from .store.journal import JournalEntry
from .tools import ToolOutcome, ToolSpec

# The SDK-facing classes import claude_agent_sdk, which takes a while; processes that only touch
# storage (CLI listings, worker processes) should not pay for it, so they load on first use.
_LAZY = {
    "AutoRecallSettings": ".agent",
    "MemoryAwareAgent": ".agent",
    "TurnResult": ".agent",
    "ConsolidationSchedule": ".agent",
    "SQLiteSessionStore": ".integrations.session_store",
    "CollegeSession": ".integrations.college",
}

_old_paths.install()


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    moved = _old_paths.old_attribute(name)  # a module's path before it moved into a room
    if moved is not None:
        return moved
    raise AttributeError(f"module 'memory_agent' has no attribute {name!r}")


__all__ = [
    "AgentNotFoundError",
    "AutoRecallSettings",
    "AmbiguousContentError",
    "ArchivalError",
    "Author",
    "Block",
    "BlockError",
    "BlockExistsError",
    "BlockLimitExceededError",
    "BlockNotAttachedError",
    "BlockNotFoundError",
    "BlockVersion",
    "CollegeSession",
    "CompactionOutcome",
    "CompactionSettings",
    "ConfigurationError",
    "ConsolidationError",
    "ConsolidationReport",
    "ConsolidationSchedule",
    "ConsolidationSession",
    "Consolidator",
    "ContentNotFoundError",
    "EncryptionKey",
    "EncryptionKeyError",
    "ForgetReport",
    "ImportFormatError",
    "ImportReport",
    "InvalidLabelError",
    "LabelConflictError",
    "JournalEntry",
    "MemoryAgentError",
    "MemoryAwareAgent",
    "MemoryManager",
    "MemoryToolError",
    "MessageNotFoundError",
    "MessageReconcileReport",
    "ModelConsolidator",
    "ModelAuthenticationError",
    "NewPassage",
    "NothingToUndoError",
    "Passage",
    "ReadOnlyBlockError",
    "RollbackRefusedError",
    "RulesConsolidator",
    "RebuildReport",
    "ReconcileReport",
    "SQLiteSessionStore",
    "SearchExplanation",
    "SearchHit",
    "Sensitivity",
    "SensitivityError",
    "Settings",
    "Snapshot",
    "StaleBlockError",
    "StorageError",
    "WriteOutcomeUnknownError",
    "StoredMessage",
    "StoredSummary",
    "ToolOutcome",
    "ToolSpec",
    "TurnResult",
]
