"""The assembled `memory-agent` command: the root group with every command group attached."""

from __future__ import annotations

from .agents import agents, init
from .app import cli
from .archival import forget, passage_sensitivity, passages, recall, remember
from .blocks import blocks
from .chat import chat
from .consolidation import consolidate, consolidations
from .doctor import doctor
from .journal import journal
from .messages import compact, messages, summary
from .rekey import rekey
from .transfer import export, import_
from .ui import ui

__all__ = ["cli", "main"]

for command in (
    init,
    agents,
    blocks,
    remember,
    recall,
    forget,
    passages,
    passage_sensitivity,
    messages,
    summary,
    compact,
    export,
    import_,
    journal,
    doctor,
    chat,
    consolidate,
    consolidations,
    rekey,
    ui,
):
    cli.add_command(command)


def main() -> None:
    """The console script's entry point."""
    cli(prog_name="memory-agent")
