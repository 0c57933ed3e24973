"""Render core memory into the system prompt, in Letta's XML layout (or the older markdown form).

Block values and descriptions are escaped (`&`, `<`, `>`), so text stored in a block can never
close its own tag or forge another section of the prompt. Labels are validated identifiers and are
written as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from .blocks import Block

__all__ = ["MemoryMetadata", "escape_text", "render_memory"]

_XML_INTRO = "The following memory blocks are currently engaged in your core memory unit:"


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


def _render_xml(blocks: Sequence[Block], metadata: MemoryMetadata) -> str:
    parts = ["<memory_blocks>", _XML_INTRO, ""]
    for block in blocks:
        parts += [f"<{block.label}>"]
        if block.description:
            parts += ["<description>", _text(block.description), "</description>"]
        parts += [
            "<metadata>",
            *([f"- read_only=true"] if block.read_only else []),
            f"- chars_current={block.chars_current}",
            f"- chars_limit={block.limit}",
            "</metadata>",
            "<value>",
            _text(block.value),
            "</value>",
            f"</{block.label}>",
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
