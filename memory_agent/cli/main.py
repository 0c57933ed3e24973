"""The assembled `memory-agent` command: the root group with every command group attached."""

from __future__ import annotations

from .agents import agents, init
from .app import cli
from .archival import forget, passages, recall, remember
from .blocks import blocks
from .chat import chat
from .consolidation import consolidate, consolidations
from .doctor import doctor
from .journal import journal
from .messages import compact, messages, summary
from .transfer import export, import_
from .ui import ui

__all__ = ["cli", "main"]

for command in (init, agents, blocks, remember, recall, forget, passages, messages, summary, compact,
                export, import_, journal, doctor, chat, consolidate, consolidations, ui):
    cli.add_command(command)


def main() -> None:
    """The console script's entry point."""
    cli(prog_name="memory-agent")
