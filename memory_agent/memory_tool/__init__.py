"""Old home of Anthropic's memory tool, now `memory_agent.tools.memory_tool`; kept so existing
imports (`from memory_agent.memory_tool import MemoryFiles`) still work."""

from ..tools.memory_tool import (
    COMMANDS,
    DEFAULT_TOOL_SET,
    MEMORY_TOOL,
    MEMORY_TOOL_NAME,
    TOOL_SETS,
    MemoryFiles,
    ToolSet,
    check_tool_set,
    specs_for_tool_set,
)

__all__ = [
    "COMMANDS",
    "DEFAULT_TOOL_SET",
    "MEMORY_TOOL",
    "MEMORY_TOOL_NAME",
    "TOOL_SETS",
    "MemoryFiles",
    "ToolSet",
    "check_tool_set",
    "specs_for_tool_set",
]
