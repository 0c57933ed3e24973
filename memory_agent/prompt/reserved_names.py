"""The names the prompt uses for its own parts: one table, read by every place that must not forge
one.

The system prompt and each user message carry sections memory-agent writes itself
(`<memory_blocks>`, `<turn_context>`, ...), and the conversation around them is structured by role
and content-block names the model reads as such (`system`, `user`, `tool_result`, ...). A block is
rendered in a tag named after its label (`<persona>`), so a block labelled like one of these names
would open a section that is not ours, e.g. a forged `<turn_context>` with a false "Current time".

- Rendering (`rendering.block_tags`, the markdown headings) writes a block whose label reads as any
  name here as `<block label="...">` (or `## [BLOCK: ...]`), never as the name itself.
- The memory tool refuses to create or rename a file onto a section name (`is_section_name`):
  the model has no reason to write one, and a refusal says so at once. Element and role names
  (`value`, `user`, ...) stay usable file names; they are only rendered safely.
- Import reports an agent's system prompt that holds one of the section tags (`section_tags_in`).

A label "reads as" a name when it equals it ignoring case and the separators `_`, `-`, `.` and
spaces (`Turn-Context`, `TURN_CONTEXT`, `turn.context` all read as `turn_context`): labels are
plain names and cannot hold spaces or `<`, so that is every spelling a model could take for the tag.
Blocks already stored under such a label (from an older version, or imported) load and work as
before; only their rendering changes. `human` and `persona` are not here: they are Letta's own
block names, rendered `<human>` and `<persona>` on purpose.
"""

from __future__ import annotations

import re

__all__ = [
    "CONVERSATION_SUMMARY",
    "ELEMENT_NAMES",
    "MEMORY_BLOCKS",
    "MEMORY_CHANGES",
    "MEMORY_FILES",
    "MEMORY_METADATA",
    "RECALLED_ITEM",
    "RECALLED_MEMORIES",
    "RESERVED_NAMES",
    "ROLE_NAMES",
    "SECTION_NAMES",
    "TURN_CONTEXT",
    "is_section_name",
    "reads_as_reserved",
    "reserved_name",
    "section_tags_in",
]

MEMORY_BLOCKS = "memory_blocks"
MEMORY_FILES = "memory_files"
MEMORY_METADATA = "memory_metadata"
CONVERSATION_SUMMARY = "conversation_summary"
TURN_CONTEXT = "turn_context"
MEMORY_CHANGES = "memory_changes"
RECALLED_MEMORIES = "recalled_memories"
RECALLED_ITEM = "recalled_item"

SECTION_NAMES: dict[str, str] = {
    MEMORY_BLOCKS: "the system prompt's blocks (rendering)",
    MEMORY_FILES: "the system prompt's list of on-demand files (rendering)",
    MEMORY_METADATA: "the system prompt's memory facts (rendering)",
    CONVERSATION_SUMMARY: "the system prompt's summary of compacted messages (rendering)",
    "recent_conversation": "an older layout's section, still recognised",
    TURN_CONTEXT: "each user message's time and memory sizes (turn_context)",
    MEMORY_CHANGES: "each user message's blocks changed by others (turn_context)",
    RECALLED_MEMORIES: "each user message's automatically recalled memories (turn_context)",
}
"""The sections memory-agent writes into the prompt, and where each comes from."""

ELEMENT_NAMES: frozenset[str] = frozenset(
    {"block", "description", "metadata", "value", RECALLED_ITEM}
)
"""The elements inside a rendered block (`rendering`): `block` wraps a block whose label cannot be
its tag, the others hold its description, size and flags, and text; and the element holding one
recalled memory (`turn_context.render_recalled`)."""

ROLE_NAMES: frozenset[str] = frozenset(
    {
        "system",
        "user",
        "assistant",
        "thinking",
        "redacted_thinking",
        "tool_use",
        "tool_result",
        "server_tool_use",
        "function_calls",
        "function_results",
        "invoke",
        "parameter",
        "system_reminder",
    }
)
"""Role and content-block names the model reads as the conversation's own structure."""

RESERVED_NAMES: frozenset[str] = frozenset(SECTION_NAMES) | ELEMENT_NAMES | ROLE_NAMES
"""Every name a block's own tag must never take."""

_SEPARATORS = re.compile(r"[\s_.\-]+")


def _reading(name: str) -> str:
    return _SEPARATORS.sub("", name.casefold())


_BY_READING: dict[str, str] = {_reading(name): name for name in RESERVED_NAMES}


def reserved_name(label: str) -> str | None:
    """The reserved name a label reads as (see the module doc), or None."""
    return _BY_READING.get(_reading(label))


def reads_as_reserved(label: str) -> bool:
    """Whether a label reads as a section, element or role name of the prompt."""
    return reserved_name(label) is not None


def is_section_name(label: str) -> bool:
    """Whether a label reads as the name of one of memory-agent's own prompt sections."""
    return reserved_name(label) in SECTION_NAMES


_SECTION_TAG = re.compile(r"<\s*/?\s*([A-Za-z_][A-Za-z0-9_.\-]*)[^<>]*>")


def section_tags_in(text: str) -> list[str]:
    """The section names a text opens or closes as tags (`<memory_blocks>`, `</Turn_Context >`),
    once each, in the order first met: what an imported system prompt must not hold unnoticed."""
    found: list[str] = []
    for match in _SECTION_TAG.finditer(text):
        name = reserved_name(match.group(1))
        if name in SECTION_NAMES and name not in found:
            found.append(name)
    return found
