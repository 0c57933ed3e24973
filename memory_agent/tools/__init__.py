"""The model-facing layer above `MemoryManager`: tool specs, argument validation, dispatch, the
SDK's MCP adapter and Anthropic's memory tool.

Everything here calls the manager's public API only; the manager knows nothing of tools (its
`execute_tool`/`get_tools_definitions`, kept for existing callers, call the `ToolHost` that
`dispatch` registers with the manager when this package loads). The MCP adapter needs
claude_agent_sdk, which takes a while to import, so its names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .archival import ARCHIVAL_TOOLS
from .core import CORE_MEMORY_TOOLS
from .dispatch import (
    ALL_TOOLS,
    ToolOutcome,
    aexecute_tool,
    execute_tool,
    find_tool,
    get_tools_definitions,
)
from .memory_tool import (
    DEFAULT_TOOL_SET,
    MEMORY_TOOL,
    TOOL_SETS,
    MemoryFiles,
    ToolSet,
    check_tool_set,
)
from .spec import ToolArgumentError, ToolSpec, validate_arguments

if TYPE_CHECKING:
    from .mcp import MEMORY_SERVER_NAME, build_memory_server, memory_tool_names

_LAZY = {"MEMORY_SERVER_NAME", "build_memory_server", "memory_tool_names"}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from . import mcp

        return getattr(mcp, name)
    raise AttributeError(f"module 'memory_agent.tools' has no attribute {name!r}")


__all__ = [
    "ALL_TOOLS",
    "ARCHIVAL_TOOLS",
    "CORE_MEMORY_TOOLS",
    "DEFAULT_TOOL_SET",
    "MEMORY_SERVER_NAME",
    "MEMORY_TOOL",
    "TOOL_SETS",
    "MemoryFiles",
    "ToolArgumentError",
    "ToolOutcome",
    "ToolSet",
    "ToolSpec",
    "aexecute_tool",
    "build_memory_server",
    "check_tool_set",
    "execute_tool",
    "find_tool",
    "get_tools_definitions",
    "memory_tool_names",
    "validate_arguments",
]
