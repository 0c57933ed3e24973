"""`memory-agent blocks ...`: the agent's core-memory blocks.

Read-only, for the CLI user: a read-only block is protected from the agent (its model-facing
memory tools), not from its owner. The CLI user is the owner, so `set` and `edit` (which replace
the value through the owner's explicit `update_block`) work on read-only blocks, and
`set --writable` lifts the flag. `append` is the agent's own edit (`core_memory_append`, exactly
what the model calls), so a read-only block refuses it, and the error says to use `set` instead.
Limits hold for everyone: a value over the block's limit is refused and nothing changes.
"""

from __future__ import annotations

import tempfile
from typing import IO

import click

from ..authors import Author
from ..core.blocks import Block
from ..errors import BlockLimitExceededError
from ..manager import MemoryManager
from .app import open_memory, shared_options
from .output import (
    author_text,
    block_data,
    console,
    emit,
    make_table,
    preview,
    print_block,
    print_blocks,
    say,
    timestamp,
)

__all__ = ["blocks"]


@click.group()
def blocks() -> None:
    """Show and edit the agent's core-memory blocks.

    Limits always hold. Read-only protects a block from the agent's memory tools, not from you:
    'set' and 'edit' work on read-only blocks (you are the owner), 'append' acts as the agent
    would and is refused on them.
    """


def _show(
    memory: MemoryManager, label: str, message: str | None = None, block: Block | None = None
) -> None:
    """Print the block after a change (the block the change returned) or as asked: a panel, or
    its JSON."""
    block = block or memory.get_block(label)

    def render() -> None:
        if message:
            say(message)
        print_block(block)

    emit(block_data(block), render)


@blocks.command("list")
@shared_options
def list_blocks() -> None:
    """List the blocks attached to the agent, as the tree of their /memories paths (on-demand
    blocks flagged: listed in the prompt, read with the memory tool)."""
    with open_memory() as memory:
        found = memory.list_blocks()
    emit([block_data(b) for b in found], lambda: print_blocks(found))


@blocks.command("show")
@shared_options
@click.argument("label")
def show_block(label: str) -> None:
    """Show one block in full."""
    with open_memory() as memory:
        _show(memory, label)


@blocks.command("create")
@shared_options
@click.argument("label")
@click.argument("value", required=False)
@click.option("--value", "value_option", help="Its first value (the same as VALUE).")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    help="Its character limit (default: DEFAULT_BLOCK_LIMIT).",
)
@click.option("--description", help="What the block is for (shown to the model).")
@click.option("--read-only", is_flag=True, help="Protect it from the agent's memory tools.")
@click.option("--shared", is_flag=True, help="Mark it as shared (other agents may attach it).")
@click.option(
    "--sensitivity",
    metavar="LEVEL",
    default="private",
    show_default=True,
    help="public, private or secret (secret: not listed, shown or rendered into a prompt unless "
    "allowed, e.g. --allow-secret).",
)
def create_block(
    label: str,
    value: str | None,
    value_option: str | None,
    limit: int | None,
    description: str | None,
    read_only: bool,
    shared: bool,
    sensitivity: str,
) -> None:
    """Create a block LABEL, with VALUE as its first value (like 'set'), and attach it to the
    agent."""
    if value is not None and value_option is not None:
        raise click.UsageError("Give the value as an argument or with --value, not both.")
    with open_memory(create=True, take_back=True) as memory:
        block = memory.create_block(
            label,
            value or value_option or "",
            description=description,
            limit=limit,
            read_only=read_only,
            is_shared=shared,
            sensitivity=sensitivity,
        )
        _show(memory, label, f"Created block '{label}'.", block)


@blocks.command("set")
@shared_options
@click.argument("label")
@click.argument("value", required=False)
@click.option(
    "--file",
    "source",
    type=click.File("r", encoding="utf-8"),
    help="Read the value from this file ('-' for stdin).",
)
@click.option("--limit", type=click.IntRange(min=1), help="New character limit.")
@click.option("--description", help="New description.")
@click.option(
    "--read-only/--writable",
    "read_only",
    default=None,
    help="Protect the block from the agent's tools, or lift that protection.",
)
@click.option(
    "--in-prompt/--on-demand",
    "in_prompt",
    default=None,
    help="Render the block in every system prompt, or only list its /memories path and "
    "size there (the model reads it with the memory tool).",
)
@click.option(
    "--sensitivity",
    metavar="LEVEL",
    help="Make it public, private or secret (changing a secret block takes --allow-secret).",
)
def set_block(
    label: str,
    value: str | None,
    source: IO[str] | None,
    limit: int | None,
    description: str | None,
    read_only: bool | None,
    in_prompt: bool | None,
    sensitivity: str | None,
) -> None:
    """Replace a block's value and/or its limit, description, read-only or on-demand flag (as its
    owner)."""
    if value is not None and source is not None:
        raise click.UsageError("Give the value as an argument or with --file, not both.")
    if source is not None:
        value = source.read()
    if all(item is None for item in (value, limit, description, read_only, in_prompt, sensitivity)):
        raise click.UsageError(
            "Nothing to change: give a VALUE, --file, --limit, --description, "
            "--read-only/--writable, --in-prompt/--on-demand or --sensitivity."
        )
    with open_memory(create=True, take_back=True) as memory:
        block = memory.update_block(
            label,
            value=value,
            limit=limit,
            description=description,
            read_only=read_only,
            in_prompt=in_prompt,
            sensitivity=sensitivity,
        )
        _show(memory, label, f"Updated block '{label}' (version {block.version}).", block)


@blocks.command("append")
@shared_options
@click.argument("label")
@click.argument("text")
def append_block(label: str, text: str) -> None:
    """Append TEXT on a new line, as the agent's own tool would (refused on read-only blocks)."""
    with open_memory(create=True, take_back=True) as memory:
        memory.core_memory_append(label, text)
        _show(memory, label, f"Appended to block '{label}'.")


@blocks.command("edit")
@shared_options
@click.argument("label")
def edit_block(label: str) -> None:
    """Edit a block's value in $EDITOR (as its owner)."""
    with open_memory(create=True, take_back=True) as memory:
        original = memory.get_block(label).value
        edited = click.edit(original, extension=".md", require_save=True)
        if edited is None or edited.rstrip("\n") == original.rstrip("\n"):
            say(f"No changes to block '{label}'.")
            return
        if not original.endswith("\n") and edited.endswith("\n"):
            edited = edited[:-1]  # editors add a final newline the block did not have
        try:
            block = memory.update_block(label, value=edited)
        except BlockLimitExceededError as error:
            raise click.ClickException(f"{error} Your edit was saved to {_keep(edited)}.") from None
        _show(memory, label, f"Updated block '{label}' (version {block.version}).")


def _keep(text: str) -> str:
    """Save a refused edit, so the user's typing is not lost."""
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", suffix=".md", delete=False, prefix="memory-agent-edit-"
    ) as handle:
        handle.write(text)
        return handle.name


@blocks.command("history")
@shared_options
@click.argument("label")
def block_history(label: str) -> None:
    """List every saved version of a block, oldest first."""
    with open_memory() as memory:
        viewer = memory.agent_id
        versions = memory.block_history(label)
    rows = [
        (
            v.version,
            timestamp(v.created_at),
            v.agent_id or "",
            author_text(Author.from_columns(v.author_kind, v.author), viewer),
            v.action,
            len(v.value),
            preview(v.value, 50),
        )
        for v in versions
    ]
    emit(
        versions,
        lambda: console().print(
            make_table(
                ("version", "time", "agent", "author", "action", "chars", "value"),
                rows,
                title=label,
            )
        ),
    )


@blocks.command("undo")
@shared_options
@click.argument("label")
def undo_block(label: str) -> None:
    """Restore the version before the current one (repeat to walk further back)."""
    with open_memory() as memory:
        block = memory.undo_block(label)
        _show(memory, label, f"Restored block '{label}' (now version {block.version}).")


@blocks.command("attach")
@shared_options
@click.argument("block")
@click.option(
    "--from",
    "from_agent",
    metavar="AGENT_ID",
    help="Take BLOCK as a label of this agent's blocks instead of a block id.",
)
@click.option("--read-only", is_flag=True, help="Attach it read-only for this agent.")
def attach_block(block: str, from_agent: str | None, read_only: bool) -> None:
    """Attach an existing block (by id, or by label with --from) to the agent, sharing it."""
    with open_memory() as memory:
        block_id = memory.get_agent_block(from_agent, block).block_id if from_agent else block
        attached = memory.attach_block(memory.agent_id, block_id, read_only=read_only)
        _show(
            memory,
            attached.label,
            f"Attached block '{attached.label}' to agent '{memory.agent_id}'.",
        )


@blocks.command("detach")
@shared_options
@click.argument("label")
def detach_block(label: str) -> None:
    """Detach a block from the agent (other agents keep it)."""
    with open_memory() as memory:
        block = memory.get_block(label)
        memory.detach_block(memory.agent_id, block.block_id)
    emit(
        {"detached": block.block_id, "label": label},
        lambda: say(f"Detached block '{label}' ({block.block_id}) from the agent."),
    )


@blocks.command("delete")
@shared_options
@click.argument("label")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
def delete_block(label: str, yes: bool) -> None:
    """Delete a block from the agent (the block itself goes once no agent has it attached)."""
    with open_memory() as memory:
        block = memory.get_block(label)
        if not yes:
            click.confirm(f"Delete block '{label}'?", abort=True, err=True)
        memory.delete_block(label)
    emit({"deleted": block.block_id, "label": label}, lambda: say(f"Deleted block '{label}'."))
