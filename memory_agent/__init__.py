"""memory-agent: durable, Letta-style memory for agents built on the Claude Agent SDK."""

from compaction import CompactionSettings

from .agent import MemoryAwareAgent, TurnResult
from .blocks import Block, BlockVersion
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
    ContentNotFoundError,
    ImportFormatError,
    InvalidLabelError,
    MemoryAgentError,
    MessageNotFoundError,
    NothingToUndoError,
    ReadOnlyBlockError,
    StaleBlockError,
    StorageError,
)
from .manager import MemoryManager, ToolOutcome
from .recall import StoredMessage, StoredSummary
from .session_store import SQLiteSessionStore
from .settings import Settings

__all__ = [
    "AgentNotFoundError",
    "AmbiguousContentError",
    "ArchivalError",
    "Block",
    "BlockError",
    "BlockExistsError",
    "BlockLimitExceededError",
    "BlockNotAttachedError",
    "BlockNotFoundError",
    "BlockVersion",
    "CompactionSettings",
    "ConfigurationError",
    "ContentNotFoundError",
    "ImportFormatError",
    "InvalidLabelError",
    "MemoryAgentError",
    "MemoryAwareAgent",
    "MemoryManager",
    "MessageNotFoundError",
    "NothingToUndoError",
    "ReadOnlyBlockError",
    "SQLiteSessionStore",
    "Settings",
    "StaleBlockError",
    "StorageError",
    "StoredMessage",
    "StoredSummary",
    "ToolOutcome",
    "TurnResult",
]
