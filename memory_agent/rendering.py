"""Render core memory into the system prompt, in Letta's XML layout (or the older markdown form).

Block values and descriptions are escaped (`&`, `<`, `>`), so text stored in a block can never
close its own tag or forge another section of the prompt.

A block whose label is a plain XML name is wrapped in a tag of that name (`<persona>`), as Letta
does. A path label (`system/human/family`), a label that is no XML name (`2024-notes`, `.config`)
and a label that is one of this layout's own tag names (`value`, `memory_blocks`, ...) is written
as `<block label="system/human/family">` ... `</block>`: `/` cannot appear in a tag name, and a
block named like a section would otherwise open a second one. Labels are validated
(`labels.validate_label`) and the attribute is escaped all the same.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from .blocks import Block

__all__ = ["MemoryMetadata", "block_tags", "escape_text", "render_memory"]

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
    if use_xml_format:
        return _render_xml(blocks, metadata)
    return _render_markdown(blocks, metadata)


def escape_text(value: str) -> str:
    """Escape `&`, `<` and `>` so text can never close or open a tag of the prompt."""
    return escape(value, quote=False)


_text = escape_text


def block_tags(label: str) -> tuple[str, str]:
    """The opening and closing tag a block with this label is rendered in (see the module doc)."""
    if _XML_NAME.fullmatch(label) and label not in _LAYOUT_TAGS and not label.lower().startswith("xml"):
        return f"<{label}>", f"</{label}>"
    return f'<block label="{escape(label, quote=True)}">', "</block>"


def _render_xml(blocks: Sequence[Block], metadata: MemoryMetadata) -> str:
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
    parts += ["</memory_blocks>", "", "<memory_metadata>", *_metadata_lines(metadata), "</memory_metadata>"]
    if metadata.summary:
        parts += ["", "<conversation_summary>", _text(metadata.summary), "</conversation_summary>"]
    return "\n".join(parts)


def _render_markdown(blocks: Sequence[Block], metadata: MemoryMetadata) -> str:
    parts: list[str] = []
    for block in blocks:
        flags = ", read-only" if block.read_only else ""
        parts += [f"## [{block.label.upper()}] ({block.chars_current}/{block.limit} chars{flags})"]
        if block.description:
            parts += [f"_{block.description}_"]
        parts += [block.value, ""]
    parts += ["## [MEMORY METADATA]", *_metadata_lines(metadata)]
    if metadata.summary:
        parts += ["", "## [CONVERSATION SUMMARY]", metadata.summary]
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
