"""A newcomer's first command works whichever it is: every command that adds memory creates the
storage dir and the agent on first use, as `chat` does, and says so; `--help` and the README say
the same; commands that only read, or name something that must already exist, create nothing."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memory_agent.cli import cli

Run = Callable[..., Result]  # the `run` fixture of tests/cli/conftest.py
README = Path(__file__).resolve().parents[2] / "README.md"


def _editor(tmp_path: Path, text: str) -> str:
    script = tmp_path / "editor.py"
    script.write_text(f"import sys\nopen(sys.argv[1], 'w').write({text!r})\n", encoding="utf-8")
    return f'"{sys.executable}" "{script}"'


# (command line, how to read back what it wrote: a command line and the text it must show)
ADDING = {
    "blocks set": (
        ["blocks", "set", "human", "Name: Ada."],
        ["blocks", "show", "human"],
        "Name: Ada.",
    ),
    "blocks append": (
        ["blocks", "append", "human", "Likes tea."],
        ["blocks", "show", "human"],
        "Likes tea.",
    ),
    "blocks create": (
        ["blocks", "create", "project", "Launch in May."],
        ["blocks", "show", "project"],
        "Launch in May.",
    ),
    "blocks edit": (
        ["blocks", "edit", "human"],
        ["blocks", "show", "human"],
        "Edited on first use.",
    ),
    "remember": (
        ["remember", "Ada's sister lives in Lisbon."],
        ["passages"],
        "Ada's sister lives in Lisbon.",
    ),
    "consolidate": (
        ["consolidate", "--rules-only"],
        ["--json", "consolidations", "list"],
        '"completed"',
    ),
}


@pytest.mark.usefixtures("backend")
@pytest.mark.parametrize("name", list(ADDING))
def test_a_command_that_adds_memory_creates_the_storage_dir_and_agent(
    name: str, run: Run, storage: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no .env of the checkout's
    monkeypatch.setenv("EDITOR", _editor(tmp_path, "Edited on first use.\n"))
    command, read_back, expected = ADDING[name]
    assert not storage.exists()
    first = run(*command)
    assert first.exit_code == 0, first.output
    assert first.stdout.startswith("Created agent 'agent-") and f"' in {storage}\n" in first.stdout
    if not os.environ.get("MEMORY_DATABASE_URL"):  # on PostgreSQL the server holds the store
        assert (storage / "memory.db").is_file()
    shown = run(*read_back)
    assert shown.exit_code == 0, shown.output
    assert expected in shown.stdout
    agents = json.loads(run("--json", "agents", "list").stdout)
    assert len(agents) == 1 and agents[0]["is_default"], agents
    # The second time the store is there: nothing more is created (`blocks create` of the same
    # label is then refused, as it should be; the others succeed again).
    again = run(*command)
    assert again.exit_code == (1 if name == "blocks create" else 0), again.output
    assert "Created agent" not in again.stdout
    assert len(json.loads(run("--json", "agents", "list").stdout)) == 1


@pytest.mark.usefixtures("backend")
def test_a_named_agent_is_created_under_that_name_and_json_output_stays_json(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    done = run("--json", "--agent", "ada", "remember", "Ada sails.")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["id"].startswith(
        "passage-"
    )  # no status line mixed into the JSON
    [agent] = json.loads(run("--json", "agents", "list").stdout)
    assert agent["agent_id"] == "ada" and agent["passages"] == 1


READING_OR_NAMING = [
    ["blocks", "list"],
    ["blocks", "show", "human"],
    ["recall", "tea"],
    ["passages"],
    ["journal"],
    ["messages"],
    ["forget", "passage-0"],
    ["blocks", "undo", "human"],
    ["blocks", "delete", "human", "--yes"],
    ["consolidate", "--dry-run"],
    ["consolidations", "rollback", "consolidation-0"],
    ["export", "-o", "x.json"],
]


@pytest.mark.sqlite_only(
    reason="a missing store is a missing memory.db file; a PostgreSQL database exists before "
    "any command runs, so there is no storage dir to (not) create there"
)
@pytest.mark.parametrize("command", READING_OR_NAMING, ids=" ".join)
def test_reading_or_naming_commands_create_nothing(
    command: list[str], run: Run, storage: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run(*command)
    assert result.exit_code == 1, result.output
    assert "No memory-agent storage at" in result.stderr
    assert not storage.exists()


def test_help_and_readme_agree_on_how_to_start() -> None:
    """The issue's defect: --help said "start with init" while the README said the first chat
    creates everything."""
    text = CliRunner().invoke(cli, ["--help"], env={"COLUMNS": "200"}).stdout
    flat = " ".join(text.split())
    assert "Start with 'memory-agent init'" not in flat
    assert "The first 'chat'" in flat and "creates the storage dir and the agent" in flat
    for command in (
        "blocks set",
        "blocks append",
        "blocks create",
        "blocks edit",
        "remember",
        "consolidate",
    ):
        assert f"'{command}'" in flat, command
    readme = " ".join(README.read_text(encoding="utf-8").split())
    assert (
        "The first `memory-agent chat` creates the storage dir and an agent; so does any command "
        "that adds "
        "memory (`blocks set`, `blocks append`, `blocks create`, `blocks edit`, `remember`, "
        "`consolidate`)" in readme
    )


REFUSED_FIRST = [
    ["remember", "Hi", "--sensitivity", "Secret"],
    ["remember", ""],
    ["blocks", "create", "../x", "v"],
    ["blocks", "create", "door", "v", "--sensitivity", "top-secret"],
    ["blocks", "set", "human", "--sensitivity", " secret"],
]


@pytest.mark.usefixtures("backend")
@pytest.mark.parametrize("command", REFUSED_FIRST, ids=" ".join)
def test_a_refused_first_command_leaves_no_storage_dir(
    command: list[str],
    run: Run,
    storage: Path,
    backend: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """'nothing was changed' holds on first use too: the storage dir made for the command goes
    again."""
    if backend == "postgres":
        pytest.skip(
            "on PostgreSQL the agent is created on the server, which this does not take back"
        )
    monkeypatch.chdir(tmp_path)
    assert not storage.exists()
    refused = run(*command)
    assert refused.exit_code == 1, refused.output
    assert not storage.exists()
    assert "removed again" in refused.stderr
