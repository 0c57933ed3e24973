"""`memory-agent init` and `memory-agent agents ...`: the agents of a storage dir."""

from __future__ import annotations

import click

from ..maintenance import admin
from .app import load_settings, open_memory, shared_options, state
from .output import block_data, console, emit, make_table, print_blocks, say, timestamp

__all__ = ["agents", "init"]


@click.command()
@shared_options
@click.option("--persona", help="First value of the persona block (default: MEMORY_PERSONA).")
@click.option("--human", help="First value of the human block (default: MEMORY_HUMAN).")
def init(persona: str | None, human: str | None) -> None:
    """Create the storage dir and an agent with the default blocks.

    Safe to run again: an existing agent is left as it is. The agent becomes the storage dir's
    default when it has none, so later commands need no --agent.
    """
    chosen, settings = state(), load_settings()
    directory = admin.storage_path(chosen.storage_dir, settings)
    info, created = admin.init_storage(
        directory, chosen.agent_id, settings=settings, persona=persona, human=human
    )

    def render() -> None:
        verb = "Created" if created else "Already initialised:"
        say(f"{verb} agent '{info.agent_id}' in {directory}")

    emit({"storage_dir": directory, "created": created, "agent": info}, render)


@click.group()
def agents() -> None:
    """List, show, create and delete the agents of a storage dir."""


@agents.command("list")
@shared_options
def list_agents() -> None:
    """List the agents, with how much memory each holds (* marks the default)."""
    settings = load_settings()
    directory = admin.storage_path(state().storage_dir, settings)
    with admin.open_database(
        directory, database_url=settings.database_url, encryption_key=settings.encryption_key
    ) as db:
        infos = admin.list_agent_info(db)

    def render() -> None:
        rows = [
            (
                "*" if i.is_default else "",
                i.agent_id,
                timestamp(i.created_at),
                i.blocks,
                i.messages,
                i.summaries,
                i.passages,
                i.name or "",
            )
            for i in infos
        ]
        console().print(
            make_table(
                ("", "agent", "created", "blocks", "messages", "summaries", "passages", "name"),
                rows,
            )
        )

    emit(infos, render)


@agents.command("show")
@shared_options
@click.argument("agent_id", required=False)
def show_agent(agent_id: str | None) -> None:
    """Show one agent (default: the current one) and its blocks."""
    if agent_id:
        state().agent_id = agent_id
    with open_memory() as memory:
        info = admin.agent_info(memory, memory.agent_id)
        blocks = memory.list_blocks()
        summary = memory.get_summary()

    def render() -> None:
        say(
            f"Agent {info.agent_id}"
            + (f" ({info.name})" if info.name else "")
            + (" [default]" if info.is_default else "")
        )
        say(
            f"created {info.created_at}; {info.messages} messages, {info.summaries} summaries, "
            f"{info.passages} passages"
        )
        print_blocks(blocks, title="blocks")
        if summary:
            say(f"summary: {summary}")

    emit({"agent": info, "blocks": [block_data(b) for b in blocks], "summary": summary}, render)


@agents.command("create")
@shared_options
@click.argument("agent_id")
@click.option("--name", help="A human-readable name for the agent.")
@click.option("--persona", help="First value of the persona block.")
@click.option("--human", help="First value of the human block.")
def create_agent(agent_id: str, name: str | None, persona: str | None, human: str | None) -> None:
    """Create a new agent with the default blocks (an existing id is refused)."""
    info = admin.create_agent(
        state().storage_dir,
        agent_id,
        settings=load_settings(),
        name=name,
        persona=persona,
        human=human,
    )
    emit(info, lambda: say(f"Created agent '{info.agent_id}'."))


@agents.command("delete")
@shared_options
@click.argument("agent_id")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
def delete_agent(agent_id: str, yes: bool) -> None:
    """Delete an agent with its messages, summaries, passages and unshared blocks (journalled)."""
    settings = load_settings()
    directory = admin.storage_path(state().storage_dir, settings)
    with admin.open_database(
        directory, database_url=settings.database_url, encryption_key=settings.encryption_key
    ) as db:
        admin.agent_info(db, agent_id)  # an unknown agent is an error before the question
        if not yes:
            click.confirm(f"Delete agent '{agent_id}' and all of its memory?", abort=True, err=True)
        info = admin.delete_agent(db, agent_id)
    emit(
        info,
        lambda: say(
            f"Deleted agent '{agent_id}' ({info.messages} messages, {info.passages} passages)."
        ),
    )
