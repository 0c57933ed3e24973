"""Render core memory into the system prompt, in Letta's XML layout (or the older markdown form).

Block values and descriptions are escaped (`&`, `<`, `>`), so text stored in a block can never
close its own tag or forge another section of the prompt.

A block whose label is a plain XML name is wrapped in a tag of that name (`<persona>`), as Letta
does. A path label (`system/human/family`), a label that is no XML name (`2024-notes`, `.config`)
and a label that reads as a name the prompt uses for itself (`reserved_names`: `turn_context`,
`Memory_Blocks`, `value`, `user`, `tool_result`, ...) is written as
`<block label="system/human/family">` ... `</block>`: `/` cannot appear in a tag name, and a block
named like a section would otherwise open a second one. Labels are validated
(`labels.validate_label`) and the attribute is escaped all the same.
In the markdown form, whose sections are `## [LABEL]` headings, a block whose label reads as a
reserved name is headed `## [BLOCK: label]`, and every line of stored text that would start a
heading is escaped with a backslash, so it can never open a section. A line starts after any
line break a reader may honour (`\n`, `\r`, `\v`, `\f`, `\x1c`-`\x1e`, `\x85`, U+2028, U+2029),
and the heading marker (`#`, or its full-width and small forms) may follow any run of spaces,
tabs, no-break or ideographic spaces, or invisible format characters.

On-demand blocks (`Block.in_prompt` false) are not rendered: a `<memory_files>` section lists
their memory-tool paths and sizes (the format of the memory tool's directory view), so the model
knows they exist and can `view` one when it needs it. The listing stops after
`MAX_LISTED_FILES` entries and says how many more there are.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from ..core.blocks import Block
from ..core.memory_paths import MEMORY_ROOT, format_size, memory_path
from .reserved_names import (
    CONVERSATION_SUMMARY,
    MEMORY_BLOCKS,
    MEMORY_FILES,
    MEMORY_METADATA,
    TURN_CONTEXT,
    reads_as_reserved,
)

__all__ = [
    "MAX_LISTED_FILES",
    "MemoryMetadata",
    "block_tags",
    "escape_markdown",
    "escape_text",
    "markdown_heading",
    "opens_heading",
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
_LINE_BREAK = re.compile("(\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029])")
"""Every line boundary of `str.splitlines`, kept by `re.split` so that text is escaped, not
rewritten."""
_HEADING_MARKERS = ("#", "\uff03", "\ufe5f")
"""`#` and the full-width and small number signs a reader may take for it."""


@dataclass(frozen=True)
class MemoryMetadata:
    """Facts about memory that the model cannot see in the blocks themselves.

    Only what changes with memory belongs here: the system prompt must stay byte-identical
    between memory edits to keep the prompt cache. The time and the recall and archival counts
    come with each turn instead (`memory_agent.prompt.turn_context`).
    """

    last_modified: str | None
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
    lines = [
        f"{format_size(len(b.value.encode('utf-8')))}\t{memory_path(b.label)}"
        for b in ordered[:MAX_LISTED_FILES]
    ]
    if len(ordered) > MAX_LISTED_FILES:
        lines.append(
            f"... and {len(ordered) - MAX_LISTED_FILES} more (view {MEMORY_ROOT} lists them all)"
        )
    return lines


def escape_text(value: str) -> str:
    """Escape `&`, `<` and `>` so text can never close or open a tag of the prompt."""
    return escape(value, quote=False)


_text = escape_text


def opens_heading(line: str) -> bool:
    """Whether a line would read as a markdown heading: a heading marker after nothing but blanks
    (spaces of any width, tabs, control and invisible format characters, combining marks), or a
    line of only `=` or only `-`, which makes the line above it a heading (setext style)."""
    for position, character in enumerate(line):
        if character.isspace() or unicodedata.category(character)[0] in "ZCM":
            continue
        rest = line[position:].rstrip()
        return rest.startswith(_HEADING_MARKERS) or set(rest) in ({"="}, {"-"})
    return False


def escape_markdown(value: str) -> str:
    """Backslash-escape every line that would start a markdown heading, whatever line break
    precedes it and whatever blanks precede its marker; nothing else is changed."""
    parts = _LINE_BREAK.split(value)
    return "".join(
        f"\\{part}" if index % 2 == 0 and opens_heading(part) else part
        for index, part in enumerate(parts)
    )


def block_tags(label: str) -> tuple[str, str]:
    """The opening and closing tag a block with this label is rendered in (see the module doc)."""
    if (
        _XML_NAME.fullmatch(label)
        and not reads_as_reserved(label)
        and not label.lower().startswith("xml")
    ):
        return f"<{label}>", f"</{label}>"
    return f'<block label="{escape(label, quote=True)}">', "</block>"


def markdown_heading(label: str) -> str:
    """The bracketed name of a block's markdown heading: `PERSONA`, or `BLOCK: turn_context` for a
    label that reads as a reserved name (so it cannot pass for `## [MEMORY METADATA]`)."""
    return f"BLOCK: {label}" if reads_as_reserved(label) else label.upper()


def _render_xml(blocks: Sequence[Block], files: list[str], metadata: MemoryMetadata) -> str:
    parts = [f"<{MEMORY_BLOCKS}>", _XML_INTRO, ""]
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
    parts += [f"</{MEMORY_BLOCKS}>"]
    if files:
        parts += ["", f"<{MEMORY_FILES}>", _FILES_INTRO, *files, f"</{MEMORY_FILES}>"]
    parts += ["", f"<{MEMORY_METADATA}>", *_metadata_lines(metadata), f"</{MEMORY_METADATA}>"]
    if metadata.summary:
        parts += [
            "",
            f"<{CONVERSATION_SUMMARY}>",
            _text(metadata.summary),
            f"</{CONVERSATION_SUMMARY}>",
        ]
    return "\n".join(parts)


def _render_markdown(blocks: Sequence[Block], files: list[str], metadata: MemoryMetadata) -> str:
    parts: list[str] = []
    for block in blocks:
        flags = ", read-only" if block.read_only else ""
        parts += [
            f"## [{markdown_heading(block.label)}] ({block.chars_current}/{block.limit} "
            f"chars{flags})"
        ]
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
        f"- Memory last modified: {metadata.last_modified or 'never'}",
        "- The current time and how many messages and passages recall and archival memory hold"
        f" come with each user message, in <{TURN_CONTEXT}>",
    ]
