"""`memory-agent journal`: the audit trail of every change to memory, with who made it."""

from __future__ import annotations

import click
from rich.table import Table
from rich.text import Text

from ..authors import AUTHOR_KINDS
from .app import open_memory, shared_options
from .output import author_text, console, emit, preview, timestamp

__all__ = ["journal"]


@click.command("journal")
@shared_options
@click.option(
    "--limit",
    default=50,
    show_default=True,
    type=click.IntRange(1, 100_000),
    help="How many of the newest entries to show.",
)
@click.option(
    "--author-kind",
    type=click.Choice(AUTHOR_KINDS),
    help="Only changes by this kind of author (e.g. 'model' for the agent's own edits).",
)
@click.option(
    "--all-agents", is_flag=True, help="Every agent's entries, not only the chosen agent's."
)
def journal(limit: int, author_kind: str | None, all_agents: bool) -> None:
    """List the newest journal entries, newest first: what changed, and who changed it.

    The author is a person (the CLI, the Python API), the model (an agent's memory tools), an
    import, another agent, or the consolidator; entries written before authors were recorded
    show none. An edit by another agent's model (a shared block) shows as 'agent'.
    """
    with open_memory() as memory:
        viewer = memory.agent_id
        entries = memory.journal(
            agent_id=None if all_agents else viewer, limit=limit, author_kind=author_kind
        )
    rows = [
        (
            e.entry_id,
            timestamp(e.created_at),
            *([e.agent_id or ""] if all_agents else []),
            author_text(e.acted_by, viewer),
            e.action,
            e.label or e.target_id or "",
            preview(e.new_value or e.old_value or "", 40),
        )
        for e in entries
    ]
    title = "journal" if all_agents else f"journal of {viewer}"
    emit(entries, lambda: console().print(_table(rows, title, all_agents=all_agents)))


def _table(rows: list[tuple[object, ...]], title: str, *, all_agents: bool) -> Table:
    """Readable at 120 columns: entry, time and action stay whole on one line; author, agent and
    target (long session and passage ids) fold onto further lines rather than being cut; the value
    keeps a minimum width. The agent column appears only when several agents are listed."""
    table = Table(title=title, title_justify="left")
    table.add_column("entry", no_wrap=True)
    table.add_column("time", no_wrap=True, min_width=16)
    if all_agents:
        table.add_column("agent", overflow="fold", max_width=20)
    table.add_column("author", overflow="fold", max_width=28)
    table.add_column("action", no_wrap=True)
    table.add_column("target", overflow="fold", max_width=24)
    table.add_column("value", overflow="fold", min_width=14, ratio=1)
    for row in rows:
        table.add_row(*(Text(str(cell)) for cell in row))
    return table
