"""Every command documents itself, and the package exposes only its entry points."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import memory_agent.cli
from memory_agent.cli import cli


def _commands(
    group: click.Group, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    for name, command in group.commands.items():
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))


ALL_COMMANDS = list(_commands(cli))


def test_the_cli_has_every_command_of_the_brief() -> None:
    names = {" ".join(path) for path, _ in ALL_COMMANDS}
    expected = {
        "init",
        "agents list",
        "agents show",
        "agents create",
        "agents delete",
        "blocks list",
        "blocks show",
        "blocks set",
        "blocks append",
        "blocks edit",
        "blocks history",
        "blocks undo",
        "blocks attach",
        "blocks detach",
        "remember",
        "recall",
        "forget",
        "messages",
        "summary",
        "compact",
        "export",
        "import",
        "journal",
        "doctor",
        "chat",
    }
    assert expected <= names


@pytest.mark.parametrize("path", [path for path, _ in ALL_COMMANDS], ids=" ".join)
def test_every_command_has_help_text(path: tuple[str, ...]) -> None:
    command = dict(ALL_COMMANDS)[path]
    assert command.help and command.help.strip(), f"'{' '.join(path)}' has no help text"
    assert command.get_short_help_str().strip()
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.help, f"option {param.opts} of '{' '.join(path)}' has no help text"
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0 and "Usage:" in result.output


def test_global_options_work_before_and_after_the_command() -> None:
    for args in (["--json", "blocks", "list", "--help"], ["blocks", "list", "--json", "--help"]):
        assert CliRunner().invoke(cli, args).exit_code == 0


def test_public_names() -> None:
    assert memory_agent.cli.__all__ == ["cli", "main"]


@pytest.mark.empty_database
@pytest.mark.usefixtures("backend")
def test_the_console_entry_point_runs_in_its_own_process(tmp_path: Path) -> None:
    """What `memory-agent` runs: main(), with errors as one line and no traceback."""
    command = [
        sys.executable,
        "-c",
        "from memory_agent.cli import main; main()",
        "--storage-dir",
        str(tmp_path),
    ]
    failed = subprocess.run(
        [*command, "blocks", "list"], capture_output=True, text=True, timeout=60
    )
    assert failed.returncode == 1 and failed.stdout == ""
    assert (
        failed.stderr.startswith("Error: No memory-agent storage")
        and len(failed.stderr.splitlines()) == 1
    )
    created = subprocess.run(
        [*command, "--agent", "ada", "init"], capture_output=True, text=True, timeout=60
    )
    assert created.returncode == 0 and "Created agent 'ada'" in created.stdout, created.stderr
    usage = subprocess.run([*command, "blocks", "set"], capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2 and "Usage: memory-agent blocks set" in usage.stderr
