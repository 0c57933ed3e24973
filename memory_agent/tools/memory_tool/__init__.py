"""Anthropic's memory tool (`view`, `create`, `str_replace`, `insert`, `delete`, `rename` on
`/memories` paths) over our blocks: the commands (`MemoryFiles`), their texts and the tool spec."""

from .commands import COMMANDS, MemoryFiles
from .spec import (
    DEFAULT_TOOL_SET,
    MEMORY_TOOL,
    MEMORY_TOOL_NAME,
    TOOL_SETS,
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
