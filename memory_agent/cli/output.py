"""Printing: rich tables and panels for people, JSON for programs.

Every command prints through `emit(data, render)`: with --json the data is printed as JSON and
nothing else reaches stdout; otherwise `render` draws it. Stored text is always printed as plain
`Text`, never as rich markup, so a block holding "[bold]" prints as written.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ..authors import Author
from ..core.blocks import Block
from .app import state

__all__ = [
    "author_text",
    "block_data",
    "console",
    "emit",
    "emit_json",
    "jsonable",
    "make_table",
    "preview",
    "print_block",
    "print_blocks",
    "say",
    "timestamp",
]


PIPE_WIDTH = 120
"""Width of tables written to a pipe or file (rich's default of 80 would squeeze ids and text)."""


def console(*, stderr: bool = False) -> Console:
    """A console on the current stdout/stderr (which CliRunner swaps), without auto-highlighting."""
    out = Console(stderr=stderr, highlight=False)
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out.width = PIPE_WIDTH
    return out


def jsonable(value: Any) -> Any:
    """Dataclasses, tuples and paths as plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {key: jsonable(item) for key, item in dataclasses.asdict(value).items()}
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    if isinstance(value, Path):
        return str(value)
    return value


def emit_json(data: Any) -> None:
    click.echo(json.dumps(jsonable(data), ensure_ascii=False, indent=2))


def emit(data: Any, render: Callable[[], None]) -> None:
    """JSON of `data` with --json, else whatever `render` prints."""
    if state().json:
        emit_json(data)
    else:
        render()


def say(message: str, *, style: str | None = None) -> None:
    """One status line for people (suppressed with --json, where the data speaks)."""
    if not state().json:
        console().print(Text(message, style=style or ""))


def timestamp(value: str) -> str:
    """A stored UTC timestamp, to the minute, for tables."""
    return value[:16].replace("T", " ")


def preview(text: str, width: int = 80) -> str:
    """A one-line preview of stored text (only its start is read: a block may hold megabytes)."""
    flat = " ".join(text[: width * 8].split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def author_text(author: Author | None, viewer: str | None) -> str:
    """Who made a change, as agent `viewer` sees it (another agent's model is another agent);
    "-" for changes recorded before authors were."""
    if author is None:
        return "-"
    return preview(str(author.seen_by(viewer)), 60)


def make_table(
    columns: Sequence[str], rows: Iterable[Sequence[Any]], *, title: str | None = None
) -> Table:
    """A table whose columns never wrap (ids stay whole), except the last, which holds free text."""
    table = Table(title=title, title_justify="left")
    for index, column in enumerate(columns):
        table.add_column(column, no_wrap=index < len(columns) - 1)
    for row in rows:
        table.add_row(*(Text("" if cell is None else str(cell)) for cell in row))
    return table


def block_data(block: Block) -> dict[str, Any]:
    """A block as JSON: its fields plus its current size."""
    return {**dataclasses.asdict(block), "chars_current": block.chars_current}


def print_blocks(blocks: Sequence[Block], *, title: str | None = None) -> None:
    """Blocks as a tree of their path labels (a directory row, then its files indented), the
    way the memory tool sees them under /memories; on-demand blocks are flagged."""
    rows: list[tuple[str, str, str, object, str]] = []
    shown: set[str] = set()
    for block in sorted(blocks, key=lambda b: b.label.split("/")):
        *parents, name = block.label.split("/")
        for depth in range(len(parents)):
            directory = "/".join(parents[: depth + 1])
            if directory not in shown:
                shown.add(directory)
                rows.append(("  " * depth + parents[depth] + "/", "", "", "", ""))
        rows.append(
            (
                "  " * len(parents) + name,
                f"{block.chars_current}/{block.limit}",
                _flags(block),
                block.version,
                preview(block.value, 50),
            )
        )
    console().print(make_table(("label", "chars", "flags", "version", "value"), rows, title=title))


PANEL_LIMIT = 20_000
"""Longest value drawn in a panel; a longer one is written as it is, below a heading line, since
laying out megabytes of text in a box takes rich minutes (writing it takes milliseconds)."""


def print_block(block: Block) -> None:
    subtitle = f"{block.chars_current}/{block.limit} chars, version {block.version}"
    if flags := _flags(block):
        subtitle += f", {flags}"
    if len(block.value) > PANEL_LIMIT:
        console().print(Text.assemble(Text(block.label, style="bold"), f" ({subtitle})"))
        if block.description:
            console().print(Text(block.description, style="italic"))
        click.echo(block.value)
        return
    body = Text(block.value) if block.value else Text("(empty)", style="dim")
    if block.description:
        body = Text.assemble(Text(block.description + "\n\n", style="italic"), body)
    console().print(
        Panel(
            body,
            title=Text(block.label, style="bold"),
            subtitle=subtitle,
            title_align="left",
            subtitle_align="left",
        )
    )


def _flags(block: Block) -> str:
    flags = (
        ("on demand", not block.in_prompt),
        ("read-only", block.read_only),
        ("shared", block.is_shared),
        (block.sensitivity, block.sensitivity != "private"),
    )
    return ", ".join(flag for flag, on in flags if on)
