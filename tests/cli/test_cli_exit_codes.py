"""Exit statuses over every command: a usage error keeps click's convention (status 2, with the
usage line); every other failure is one line on stderr and status 1, never a traceback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import click
import pytest
from click.testing import Result

from memory_agent.cli import cli

Invoke = Callable[..., Result]  # the `run` fixture of tests/cli/conftest.py


def _leaves(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from _leaves(command, (*prefix, name))
        else:
            yield (*prefix, name)


COMMANDS = list(_leaves(cli))


def _arguments(path: tuple[str, ...], *, required_only: bool = True) -> list[str]:
    """An "x" for each of the command's (required) arguments."""
    command: click.Command = cli
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    return [
        "x"
        for param in command.params
        if isinstance(param, click.Argument) and (param.required or not required_only)
    ]


# Commands that create a store, and so fail for another reason than a missing one: init, chat and
# every command that adds memory create the storage dir and agent on first use (a blank agent id
# is refused before anything is created).
CREATING = {
    ("init",): ["--agent", " ", "init"],
    ("agents", "create"): ["agents", "create", " "],
    ("import",): ["import", "does-not-exist.json"],
    ("chat",): ["chat"],
    **{
        path: ["--agent", " ", *path, *_arguments(path, required_only=False)]
        for path in [
            ("blocks", "set"),
            ("blocks", "append"),
            ("blocks", "create"),
            ("blocks", "edit"),
            ("remember",),
            ("consolidate",),
        ]
    },
    ("ui",): ["ui", "--no-browser", "--token", "too-short"],
}


def one_line_failure(result: Result) -> str:
    assert result.exit_code == 1, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


def test_the_command_list_is_the_cli() -> None:
    assert ("blocks", "set") in COMMANDS and ("doctor",) in COMMANDS and len(COMMANDS) > 20


@pytest.mark.sqlite_only(
    reason="click refuses a usage error before any store is opened, on either backend"
)
@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_a_usage_error_exits_2_with_the_usage(run: Invoke, path: tuple[str, ...]) -> None:
    result = run(*path, *_arguments(path), "--no-such-option")
    assert result.exit_code == 2, result.output
    assert "Usage:" in result.stderr and "No such option" in result.stderr
    if _arguments(path):
        missing = run(*path)
        assert missing.exit_code == 2 and "Missing argument" in missing.stderr, missing.output


@pytest.mark.usefixtures("backend")
@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_every_other_failure_is_one_line_and_exit_1(
    run: Invoke, tmp_path: Path, path: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a storage dir that holds no store (or, for the commands that create one, a value they
    refuse), each command fails with one line and status 1."""
    monkeypatch.setenv("EDITOR", "false")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)  # no .env of the checkout's
    if path in CREATING:
        result = run(*CREATING[path])
    else:
        result = run(
            *path, *_arguments(path, required_only=False), storage_dir=tmp_path / "no-store-here"
        )
    one_line_failure(result)
