"""The exceptions memory-agent raises, in one tree.

Every error carries the fields a caller needs to react (label, sizes, the current value) and a
message that says what happened and what to do next, because the same text is shown to the model
as a tool error and to people in the CLI.

    MemoryAgentError
    ├── ConfigurationError          a setting or argument has a value we cannot use
    │   └── SensitivityError        a sensitivity level or clearance is not one we know
    ├── AgentNotFoundError          no agent with that id in this storage dir
    ├── BlockError                  a core-memory block refused an operation
    │   ├── InvalidLabelError       the label is not a name or a path of names
    │   ├── BlockNotFoundError      no block with that label is attached to the agent
    │   ├── BlockExistsError        the agent already has a block with that label
    │   ├── LabelConflictError      the label would make one of the agent's blocks a file and a
    directory │   ├── BlockNotAttachedError   the block id exists but is not attached to that agent
    │   ├── BlockLimitExceededError the write would exceed the block's character limit │   ├──
    ReadOnlyBlockError      the block (or this agent's attachment) is read-only │   ├──
    ContentNotFoundError    the text to replace or insert after is not in the block │   ├──
    AmbiguousContentError   the text to replace occurs more than once │   ├── StaleBlockError
    the block changed since this agent last saw it │   └── NothingToUndoError      the block has no
    earlier version ├── StorageError                the database could not be opened, migrated or
    written │   └── WriteOutcomeUnknownError the connection was lost at COMMIT: check before
    repeating ├── ArchivalError               archival memory refused an operation ├──
    MessageNotFoundError        no stored message with that id ├── ImportFormatError           an
    export file could not be read ├── MemoryToolError             a memory-tool command (view,
    create, ...) refused its path └── ModelAuthenticationError    the model API has no credentials
    or refused them
"""

from __future__ import annotations

__all__ = [
    "AgentNotFoundError",
    "AmbiguousContentError",
    "ArchivalError",
    "BlockError",
    "BlockExistsError",
    "BlockLimitExceededError",
    "BlockNotAttachedError",
    "BlockNotFoundError",
    "ConfigurationError",
    "ConsolidationError",
    "ContentNotFoundError",
    "ImportFormatError",
    "InvalidLabelError",
    "LabelConflictError",
    "MemoryAgentError",
    "MemoryToolError",
    "MessageNotFoundError",
    "ModelAuthenticationError",
    "NothingToUndoError",
    "ReadOnlyBlockError",
    "RollbackRefusedError",
    "SensitivityError",
    "StaleBlockError",
    "StorageError",
    "WriteOutcomeUnknownError",
    "preview",
]


class MemoryAgentError(Exception):
    """Base of every error memory-agent raises on purpose."""


class ConfigurationError(MemoryAgentError, ValueError):
    """A setting or argument has a value that cannot be used."""


class SensitivityError(ConfigurationError):
    """A sensitivity level (or clearance) that is not public, private or secret: refused, never
    treated as any level, so a typo cannot make a secret public."""


class AgentNotFoundError(MemoryAgentError):
    def __init__(self, agent_id: str) -> None:
        self.agent_id = agent_id
        super().__init__(
            f"No agent '{agent_id}' in this storage dir. "
            "Check the agent id, or create the agent first (memory-agent agents create)."
        )


class BlockError(MemoryAgentError):
    """A core-memory block refused an operation; `label` names the block."""

    def __init__(self, message: str, label: str) -> None:
        self.label = label
        super().__init__(message)


class InvalidLabelError(BlockError):
    def __init__(self, label: str) -> None:
        super().__init__(
            f"{preview(repr(label))} is not a valid block label. Use a name of 1-64 letters, "
            "digits, '_', '-' or '.', or a path of such names joined by '/' (e.g. "
            "'system/human/family'; no '.' or '..' segment, at most 16 segments and 100 "
            "characters).",
            label,
        )


class BlockNotFoundError(BlockError):
    def __init__(self, label: str, agent_id: str, available: list[str] | None = None) -> None:
        self.agent_id = agent_id
        self.available = list(available or [])
        known = ", ".join(self.available) if self.available else "none"
        super().__init__(
            f"No block '{label}' is attached to agent '{agent_id}'. Attached blocks: {known}.",
            label,
        )


class BlockExistsError(BlockError):
    def __init__(self, label: str, agent_id: str) -> None:
        self.agent_id = agent_id
        super().__init__(
            f"Agent '{agent_id}' already has a block '{label}'. "
            "Edit it, or delete it before creating a new one.",
            label,
        )


class LabelConflictError(BlockError):
    """A block labelled `file` and one labelled `file/...` for one agent: `file` would be a file of
    the memory directory and a directory at once (the memory tool's paths cannot hold both)."""

    def __init__(self, label: str, agent_id: str, file: str, inside: str) -> None:
        self.agent_id = agent_id
        self.file = file
        self.inside = inside
        super().__init__(
            f"Agent '{agent_id}' cannot hold both a block '{file}' and a block '{inside}': "
            f"'{file}' "
            "would be "
            f"a file and a directory at once. Rename one of them (e.g. '{file}' to '{file}/index') "
            "first.",
            label,
        )


class BlockNotAttachedError(BlockError):
    def __init__(self, block_id: str, agent_id: str) -> None:
        self.block_id = block_id
        self.agent_id = agent_id
        super().__init__(
            f"Block '{block_id}' is not attached to agent '{agent_id}'. Attach it first.",
            block_id,
        )


class BlockLimitExceededError(BlockError):
    def __init__(self, label: str, current: int, attempted: int, limit: int) -> None:
        self.current = current
        self.attempted = attempted
        self.limit = limit
        super().__init__(
            f"Block '{label}' holds {current} characters; this write would make it {attempted}, "
            f"over its limit of {limit}. Nothing was changed. Shorten the text, or make room "
            "first (replace or rethink the block).",
            label,
        )


class ReadOnlyBlockError(BlockError):
    def __init__(self, label: str) -> None:
        super().__init__(
            f"Block '{label}' is read-only for this agent; nothing was changed. "
            "Its owner can change it through the explicit API (update_block) or the CLI.",
            label,
        )


class ContentNotFoundError(BlockError):
    def __init__(self, label: str, needle: str) -> None:
        self.needle = needle
        super().__init__(
            f"The text '{preview(needle)}' does not occur in block '{label}'; nothing was "
            "changed. Copy the exact text from the block, or use memory_rethink to rewrite it.",
            label,
        )


class AmbiguousContentError(BlockError):
    def __init__(self, label: str, needle: str, count: int) -> None:
        self.needle = needle
        self.count = count
        super().__init__(
            f"The text '{preview(needle)}' occurs {count} times in block '{label}'; nothing "
            "was changed. Include more surrounding text so that it matches exactly once.",
            label,
        )


class StaleBlockError(BlockError):
    def __init__(self, label: str, current_value: str, version: int) -> None:
        self.current_value = current_value
        self.version = version
        super().__init__(
            f"Block '{label}' was changed by another agent since you last saw it (now at "
            f"version {version}); nothing was changed. Its current value is:\n{current_value}\n"
            "Redo your edit against this value.",
            label,
        )


class NothingToUndoError(BlockError):
    def __init__(self, label: str) -> None:
        super().__init__(f"Block '{label}' has no earlier version to restore.", label)


class StorageError(MemoryAgentError):
    """The database could not be opened, migrated or written."""


class EncryptionKeyError(MemoryAgentError):
    """The store's encryption and the key given do not match (a wrong key, no key for an encrypted
    store, a key for a plain one), or an encrypted export cannot be opened with the key. Nothing
    was opened, created or changed; the message says which key to set."""


class WriteOutcomeUnknownError(StorageError):
    """The connection was lost during COMMIT and the server could not be asked whether it applied
    the write. A separate class because the right reaction differs from every other StorageError:
    repeating the write blindly may apply it twice, so the caller looks first."""


class ArchivalError(MemoryAgentError):
    """Archival memory refused an operation."""


class ConsolidationError(MemoryAgentError):
    """A consolidation session cannot be found, or cannot be rolled back in its state."""


class RollbackRefusedError(ConsolidationError):
    """Rolling a consolidation back would lose a later edit; `item` names what was edited."""

    def __init__(self, session_id: str, item: str, later: str) -> None:
        self.session_id = session_id
        self.item = item
        super().__init__(
            f"Consolidation {session_id} was not rolled back: {item} was changed after it "
            f"({later}), and a "
            "rollback would lose that change; nothing was changed. Undo the later change first, or "
            "edit "
            "the item by hand."
        )


class MessageNotFoundError(MemoryAgentError):
    def __init__(self, message_id: int) -> None:
        self.message_id = message_id
        super().__init__(f"No stored message with id {message_id}.")


class MemoryToolError(MemoryAgentError):
    """A memory-tool command refused: a path outside /memories or unsafe, a missing file, ...

    The message is the exact text the model gets; where Anthropic's local-filesystem memory tool
    has a message for the same case, it is that message, word for word. `path` is the path the
    command named (as given, possibly hostile: never a file name on disk).
    """

    def __init__(self, message: str, path: object = None) -> None:
        self.path = path
        super().__init__(message)


class ImportFormatError(MemoryAgentError):
    """An export file is unreadable or not in a format we know."""


def preview(text: str, limit: int = 80) -> str:
    """What an error echoes of text it was sent: at most `limit` characters and the length of the
    rest, never the whole (a 50 MB argument must not come back as a 50 MB error)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters in all)"


class ModelAuthenticationError(MemoryAgentError):
    """The model API has no credentials (the CLI is "not logged in") or answered 401/403.

    `status` is the HTTP status (None when no request was made); `detail` is the SDK's own text.
    Nothing of the failed reply is stored as an assistant message or kept in context.
    """

    def __init__(self, status: int | None, detail: str) -> None:
        self.status = status
        self.detail = detail
        if status is None:
            message = (
                "The model API has no credentials (the Claude CLI says it is not logged in). "
                "Set ANTHROPIC_API_KEY, in the environment or in .env; ANTHROPIC_BASE_URL alone "
                "is not enough."
            )
        elif status == 403:
            message = (
                "The model API refused access (HTTP 403). Check that ANTHROPIC_API_KEY holds a "
                "key allowed to use this model."
            )
        else:
            message = (
                f"The model API rejected the credentials (HTTP {status}). Set ANTHROPIC_API_KEY "
                "to a valid key, in the environment or in .env."
            )
        super().__init__(message)
