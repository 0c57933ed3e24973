"""The `memory` tool as the model sees it: Anthropic's command set as one tool schema.

Served beside the Letta-style tools (`tools.core.CORE_MEMORY_TOOLS`) by the same `ToolSpec`
machinery, so `tools.get_tools_definitions()` and the SDK's MCP server (`mcp__memory__memory`)
carry it; `memory_agent.integrations.anthropic_memory` serves the same commands as Anthropic's own
`memory_20250818` tool type to plain `anthropic` SDK users.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, cast

from ...core.memory_paths import MEMORY_ROOT
from ...errors import ConfigurationError
from ..core import CORE_MEMORY_TOOLS
from ..spec import ToolSpec
from .commands import COMMANDS, MemoryFiles

__all__ = [
    "DEFAULT_TOOL_SET",
    "MEMORY_TOOL",
    "MEMORY_TOOL_NAME",
    "TOOL_SETS",
    "ToolSet",
    "check_tool_set",
    "specs_for_tool_set",
]

MEMORY_TOOL_NAME = "memory"


def _text(description: str) -> dict[str, str]:
    return {"type": "string", "description": description}


MEMORY_TOOL = ToolSpec(
    name=MEMORY_TOOL_NAME,
    description=(
        f"Your memory directory {MEMORY_ROOT}, kept across conversations and sessions. Every "
        "memory "
        f"block is a file: the block labelled 'human' is {MEMORY_ROOT}/human, 'project/notes.md' "
        "is "
        f"{MEMORY_ROOT}/project/notes.md. Some files are always shown in your system prompt (a new "
        f"file is when it is persona, human or under {MEMORY_ROOT}/system/); the others are listed "
        "there "
        "with their sizes, and you read them with view. Commands: view (a directory two levels "
        "deep, or a "
        "file with line numbers; view_range [first, last] picks lines), create (a new file with "
        "file_text), "
        "str_replace (old_str must occur exactly once), insert (insert_text after line "
        "insert_line, "
        "0 = at the top), delete (a file or a directory), rename (old_path to new_path). Names use "
        "letters, digits, '_', '-' and '.'. Record progress and facts as you go: anything not "
        "written here is forgotten."
    ),
    properties={
        "command": {"type": "string", "enum": list(COMMANDS), "description": "The command to run."},
        "path": _text(
            f"view, create, str_replace, insert, delete: a path under {MEMORY_ROOT}, "
            f"e.g. {MEMORY_ROOT}/project/notes.md."
        ),
        "view_range": {
            "type": "array",
            "items": {"type": "integer"},
            "description": "view: [first line, last line], 1-based; -1 as last means to the end.",
        },
        "file_text": _text("create: the content of the new file."),
        "old_str": _text("str_replace: the exact text to replace (must occur exactly once)."),
        "new_str": _text("str_replace: the replacement text."),
        "insert_line": {
            "type": "integer",
            "description": "insert: the line after which to insert (0 = top).",
        },
        "insert_text": _text("insert: the text to insert."),
        "old_path": _text("rename: the file or directory to move."),
        "new_path": _text("rename: where to move it (must not exist)."),
    },
    required=("command",),
    run=lambda memory, arguments, agent: MemoryFiles(memory, agent).run(arguments),
)


ToolSet = Literal["letta", "anthropic", "both"]
"""Which memory tools the model gets: Letta's block tools, Anthropic's `memory` tool, or both
(the archival and conversation-search tools come with every set)."""

TOOL_SETS: tuple[str, ...] = ("letta", "anthropic", "both")

DEFAULT_TOOL_SET: ToolSet = "both"
"""Both, because each set does what the other cannot: the Letta tools are what agents and prompts
written for this library (and for Letta) call, and `memory` is the command set Claude is trained
on and the only way to read on-demand blocks. The cost is one more tool definition."""


def check_tool_set(tool_set: object) -> ToolSet:
    """The tool set, if it is one; an unknown set is a ConfigurationError."""
    if tool_set not in TOOL_SETS:
        raise ConfigurationError(
            f"Unknown memory tool set {tool_set!r}; use one of: {', '.join(TOOL_SETS)}."
        )
    return cast(ToolSet, tool_set)  # one of TOOL_SETS, checked above


def specs_for_tool_set(specs: Sequence[ToolSpec], tool_set: str) -> tuple[ToolSpec, ...]:
    """The specs of one tool set, in their order; an unknown set is a ConfigurationError."""
    left_out = {
        "letta": {MEMORY_TOOL_NAME},
        "anthropic": {spec.name for spec in CORE_MEMORY_TOOLS},
        "both": set(),
    }[check_tool_set(tool_set)]
    return tuple(spec for spec in specs if spec.name not in left_out)
