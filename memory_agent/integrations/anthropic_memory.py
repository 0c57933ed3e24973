"""Anthropic's memory tool for plain `anthropic` SDK users, backed by `MemoryManager`.

`client.beta.messages.tool_runner(tools=[ManagedMemoryTool(memory)], ...)` gives Claude the
`memory_20250818` tool it is trained on (`view`, `create`, `str_replace`, `insert`, `delete`,
`rename` on `/memories` paths), stored as the blocks of one agent: persistent across processes,
shared with the other agents that have a block attached, journalled, with history and undo, and
with every rule of the store (limits, read-only blocks, stale-write refusal). Results and errors
have the texts of the `anthropic` package's `BetaLocalFilesystemMemoryTool`; a refusal reaches the
model as a `ToolError`, so the runner sends it with `is_error`.

The async class runs the same commands in a worker thread (each is a short SQLite transaction), so
the logic is written once, in `memory_tool.MemoryFiles`.
"""

from __future__ import annotations

from typing import Any

from anthropic.lib.tools import (
    BetaAbstractMemoryTool,
    BetaAsyncAbstractMemoryTool,
    ToolError,
)
from anthropic.types.beta import (
    BetaCacheControlEphemeralParam,
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)
from anyio.to_thread import run_sync

from ..authors import Author
from ..errors import MemoryAgentError
from ..manager import MemoryManager
from ..tools.memory_tool import MemoryFiles

__all__ = ["AsyncManagedMemoryTool", "ManagedMemoryTool"]


def _run(files: MemoryFiles, arguments: Any) -> str:
    """One command, journalled as the agent's model's; our refusals become the `ToolError` the
    runner reports as an error result."""
    try:
        with files.memory.acting_as(Author.model(files.agent_id)):
            return files.run(arguments)
    except MemoryAgentError as error:
        raise ToolError(str(error)) from error


def _arguments(command: Any) -> dict[str, Any]:
    """The command model's fields as the tool-call arguments they came from."""
    return {key: value for key, value in vars(command).items() if not key.startswith("_")}


class ManagedMemoryTool(BetaAbstractMemoryTool):
    """The memory tool on one agent's blocks (the manager's own agent unless `agent_id` is
    given)."""

    def __init__(
        self,
        memory: MemoryManager,
        *,
        agent_id: str | None = None,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        self.files = MemoryFiles(memory, agent_id)

    def call(self, input: object) -> str:
        """Checks the call's arguments itself, so a malformed call gets a clear error."""
        return _run(self.files, input)

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return _run(self.files, _arguments(command))

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return _run(self.files, _arguments(command))

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return _run(self.files, _arguments(command))

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return _run(self.files, _arguments(command))

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return _run(self.files, _arguments(command))

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return _run(self.files, _arguments(command))


class AsyncManagedMemoryTool(BetaAsyncAbstractMemoryTool):
    """`ManagedMemoryTool` for `AsyncAnthropic`: the same commands, run in a worker thread."""

    def __init__(
        self,
        memory: MemoryManager,
        *,
        agent_id: str | None = None,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        self.files = MemoryFiles(memory, agent_id)

    async def call(self, input: object) -> str:
        return await run_sync(_run, self.files, input)

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return await run_sync(_run, self.files, _arguments(command))

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return await run_sync(_run, self.files, _arguments(command))

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return await run_sync(_run, self.files, _arguments(command))

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return await run_sync(_run, self.files, _arguments(command))

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return await run_sync(_run, self.files, _arguments(command))

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return await run_sync(_run, self.files, _arguments(command))
