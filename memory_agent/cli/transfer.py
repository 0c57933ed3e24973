"""`memory-agent export` and `import`: moving agents between storage dirs (and to/from Letta)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .. import portability
from ..errors import ConfigurationError
from ..maintenance.admin import list_agent_info
from .app import load_settings, open_memory, shared_options, state
from .output import emit, say

__all__ = ["export", "import_"]


@click.command()
@shared_options
@click.option(
    "--format",
    "format_",
    type=click.Choice(["json", "af"]),
    default="json",
    show_default=True,
    help="json: this project's format (everything). af: a Letta Agent File that Letta imports "
    "(blocks, messages, system prompt, groups; passages in agent metadata).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write to this file (atomically) instead of stdout.",
)
@click.option("--all", "all_agents", is_flag=True, help="Export every agent of the storage dir.")
@click.option(
    "--encrypt",
    is_flag=True,
    help="Encrypt the file (AES-256-GCM) with the key in MEMORY_ENCRYPTION_KEY or "
    "MEMORY_ENCRYPTION_KEY_FILE; import opens it with the same key. Needs --output.",
)
def export(format_: str, output: Path | None, all_agents: bool, encrypt: bool) -> None:
    """Export the agent's memory: blocks, messages, summaries, passages and journal."""
    key = load_settings().encryption_key
    if encrypt and output is None:
        raise ConfigurationError("--encrypt writes a binary file: name it with --output (-o).")
    if encrypt and key is None:
        raise ConfigurationError(
            "--encrypt needs a key: set MEMORY_ENCRYPTION_KEY or MEMORY_ENCRYPTION_KEY_FILE."
        )
    with open_memory() as memory:
        agent_ids = [info.agent_id for info in list_agent_info(memory)] if all_agents else None
        document = portability.export_memory(memory, agent_ids=agent_ids, format=format_)  # type: ignore[arg-type]  # click.Choice
    if output is None:
        click.echo(json.dumps(document, ensure_ascii=False, indent=2))
        return
    written = portability.write_export(document, output, encrypt_with=key if encrypt else None)
    sealed = " encrypted" if encrypt else ""
    emit(
        {"path": written, "format": format_, "encrypted": encrypt},
        lambda: say(
            f"Exported {len(document['agents'])} agent(s) to {written} ({format_}{sealed})."
        ),
    )


@click.command("import")
@shared_options
@click.argument("file", type=click.Path(path_type=Path))
def import_(file: Path) -> None:
    """Import a memory-agent JSON export or a Letta Agent File (.af) as new agent(s).

    The format is recognised from the content. With --agent, the file's only agent is imported
    under that id. All or nothing: a bad file or an existing agent id changes nothing. The report
    names everything a Letta file held that is not carried over (tools, tool rules, skills, ...).
    """
    chosen = state()
    report = portability.import_file(
        file, chosen.storage_dir, agent_id=chosen.agent_id, settings=load_settings()
    )

    def render() -> None:
        say(
            f"Imported agent(s) {', '.join(report.agent_ids)}: {report.blocks} blocks, "
            f"{report.messages} messages, {report.summaries} summaries, {report.passages} passages."
        )
        if report.duplicate_passages:
            say(f"Skipped {report.duplicate_passages} duplicate passage(s).")
        if report.vectors_pending:
            say(
                f"{report.vectors_pending} passage(s) still wait for vectors; "
                "'memory-agent doctor' writes them."
            )
        if report.system_prompts:
            say(f"Kept the system prompt of {report.system_prompts} agent(s) as their base prompt.")
        for raised in report.limits_raised:
            say(
                f"Block '{raised['label']}' holds {raised['raised_to']} characters, over its limit "
                "of "
                f"{raised['limit']}: imported whole, limit raised to {raised['raised_to']}."
            )
        if report.unattached_blocks:
            say(
                f"{len(report.unattached_blocks)} block(s) no agent had attached were imported "
                "unattached: "
                f"{', '.join(report.unattached_blocks)}."
            )
        if report.tools_provided:
            say(f"Tools the memory tools provide here: {', '.join(report.tools_provided)}.")
        for kind, names in report.not_imported.items():
            say(
                f"Not imported (no counterpart here), {kind.replace('_', ' ')}: {', '.join(names)}."
            )
        for warning in report.warnings:
            say(f"Warning: {warning}")

    emit(report, render)
