"""Render core memory into the system prompt, in Letta's XML layout (or the older markdown form).

Block values and descriptions are escaped (`&`, `<`, `>`), so text stored in a block can never
close its own tag or forge another section of the prompt.

A block whose label is a plain XML name is wrapped in a tag of that name (`<persona>`), as Letta
does. A path label (`system/human/family`), a label that is no XML name (`2024-notes`, `.config`)
and a label that is one of this layout's own tag names (`value`, `memory_blocks`, ...) is written
as `<block label="system/human/family">` ... `</block>`: `/` cannot appear in a tag name, and a
block named like a section would otherwise open a second one. Labels are validated
(`labels.validate_label`) and the attribute is escaped all the same.
In the markdown form, whose sections are `## [LABEL]` headings, a line of stored text that
starts with `#` is escaped with a backslash, so it can never open a section.

On-demand blocks (`Block.in_prompt` false) are not rendered: a `<memory_files>` section lists
their memory-tool paths and sizes (the format of the memory tool's directory view), so the model
knows they exist and can `view` one when it needs it. The listing stops after
`MAX_LISTED_FILES` entries and says how many more there are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from .blocks import Block
from .memory_paths import MEMORY_ROOT, format_size, memory_path

__all__ = [
    "MAX_LISTED_FILES",
    "MemoryMetadata",
    "block_tags",
    "escape_markdown",
    "escape_text",
    "render_memory",
]

MAX_LISTED_FILES = 100
"""On-demand files listed in the prompt at most; `view /memories` lists them all."""

_FILES_INTRO = (
    "These memory files are not shown here: read one with the memory tool when you need it "
    f"(its view command, e.g. view {MEMORY_ROOT}/NAME). Size, then path:"
)
_XML_INTRO = "The following memory blocks are currently engaged in your core memory unit:"
_XML_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_LAYOUT_TAGS = frozenset({
    "block", "memory_blocks", "description", "metadata", "value", "memory_metadata",
    "conversation_summary", "recent_conversation",
})


@dataclass(frozen=True)
class MemoryMetadata:
    """Facts about memory that the model cannot see in the blocks themselves."""

    current_time: str
    last_modified: str | None
    recall_messages: int
    archival_passages: int
    summary: str | None = None


def render_memory(
    blocks: Sequence[Block], metadata: MemoryMetadata, *, use_xml_format: bool = True
) -> str:
    """Blocks in the prompt rendered in full, on-demand blocks listed, then the metadata."""
    shown = [block for block in blocks if block.in_prompt]
    files = _file_lines([block for block in blocks if not block.in_prompt])
    if use_xml_format:
        return _render_xml(shown, files, metadata)
    return _render_markdown(shown, files, metadata)


def _file_lines(on_demand: Sequence[Block]) -> list[str]:
    """`size<TAB>path` lines of the on-demand blocks, sorted by path, capped."""
    ordered = sorted(on_demand, key=lambda block: block.label)
    lines = [f"{format_size(len(b.value.encode('utf-8')))}\t{memory_path(b.label)}"
             for b in ordered[:MAX_LISTED_FILES]]
    if len(ordered) > MAX_LISTED_FILES:
        lines.append(f"... and {len(ordered) - MAX_LISTED_FILES} more (view {MEMORY_ROOT} lists them all)")
    return lines


def escape_text(value: str) -> str:
    """Escape `&`, `<` and `>` so text can never close or open a tag of the prompt."""
    return escape(value, quote=False)


_text = escape_text


def escape_markdown(value: str) -> str:
    """Backslash-escape every line that would start a markdown heading (leading spaces allowed)."""
    return "\n".join(f"\\{line}" if line.lstrip(" ").startswith("#") else line for line in value.split("\n"))


def block_tags(label: str) -> tuple[str, str]:
    """The opening and closing tag a block with this label is rendered in (see the module doc)."""
    if _XML_NAME.fullmatch(label) and label not in _LAYOUT_TAGS and not label.lower().startswith("xml"):
        return f"<{label}>", f"</{label}>"
    return f'<block label="{escape(label, quote=True)}">', "</block>"


def _render_xml(blocks: Sequence[Block], files: list[str], metadata: MemoryMetadata) -> str:
    parts = ["<memory_blocks>", _XML_INTRO, ""]
    for block in blocks:
        opening, closing = block_tags(block.label)
        parts += [opening]
        if block.description:
            parts += ["<description>", _text(block.description), "</description>"]
        parts += [
            "<metadata>",
            *(["- read_only=true"] if block.read_only else []),
            f"- chars_current={block.chars_current}",
            f"- chars_limit={block.limit}",
            "</metadata>",
            "<value>",
            _text(block.value),
            "</value>",
            closing,
            "",
        ]
    parts += ["</memory_blocks>"]
    if files:
        parts += ["", "<memory_files>", _FILES_INTRO, *files, "</memory_files>"]
    parts += ["", "<memory_metadata>", *_metadata_lines(metadata), "</memory_metadata>"]
    if metadata.summary:
        parts += ["", "<conversation_summary>", _text(metadata.summary), "</conversation_summary>"]
    return "\n".join(parts)


def _render_markdown(blocks: Sequence[Block], files: list[str], metadata: MemoryMetadata) -> str:
    parts: list[str] = []
    for block in blocks:
        flags = ", read-only" if block.read_only else ""
        parts += [f"## [{block.label.upper()}] ({block.chars_current}/{block.limit} chars{flags})"]
        if block.description:
            parts += [f"_{escape_markdown(block.description)}_"]
        parts += [escape_markdown(block.value), ""]
    if files:
        parts += ["## [MEMORY FILES]", _FILES_INTRO, *files, ""]
    parts += ["## [MEMORY METADATA]", *_metadata_lines(metadata)]
    if metadata.summary:
        parts += ["", "## [CONVERSATION SUMMARY]", escape_markdown(metadata.summary)]
    return "\n".join(parts)


def _metadata_lines(metadata: MemoryMetadata) -> list[str]:
    return [
        f"- Current time: {metadata.current_time}",
        f"- Memory last modified: {metadata.last_modified or 'never'}",
        f"- {metadata.recall_messages} messages are stored in recall memory"
        " (conversation_search finds them)",
        f"- {metadata.archival_passages} passages are stored in archival memory"
        " (archival_memory_search finds them)",
    ]
