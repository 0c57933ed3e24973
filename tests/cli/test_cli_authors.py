"""Who the CLI says made each change: `blocks history` and `journal` show the author."""

from __future__ import annotations

import getpass
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from memory_agent import Author, MemoryManager
from memory_agent.authors import acting_as
from memory_agent.tools import execute_tool

Run = Callable[..., Result]
ErrorOf = Callable[[Result], str]

pytestmark = pytest.mark.usefixtures("backend")


def _history(run: Run, label: str, *args: str) -> list[dict]:
    result = run("--json", "blocks", "history", label, *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _journal(run: Run, *args: str) -> list[dict]:
    result = run("--json", "journal", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_cli_edit_is_a_persons_not_the_agents(initialised: Run) -> None:
    """The issue's case: `blocks set` was shown as made by the agent."""
    assert initialised("blocks", "set", "human", "Name: Ada").exit_code == 0
    last = _history(initialised, "human")[-1]
    assert (last["action"], last["author_kind"], last["author"]) == (
        "update",
        "person",
        getpass.getuser(),
    )
    table = initialised("blocks", "history", "human").stdout
    assert "author" in table and f"person {getpass.getuser()}" in table
    entry = _journal(initialised, "--limit", "1")[0]
    assert (entry["action"], entry["author_kind"], entry["author"]) == (
        "update",
        "person",
        getpass.getuser(),
    )


def test_author_option_before_or_after_the_command(initialised: Run) -> None:
    assert initialised("--author", "grace", "blocks", "set", "human", "one").exit_code == 0
    assert initialised("blocks", "append", "human", "two", "--author", "agent:s-9").exit_code == 0
    assert [(v["author_kind"], v["author"]) for v in _history(initialised, "human")[-2:]] == [
        ("person", "grace"),
        ("agent", "s-9"),
    ]
    kinds = {
        (e["action"], e["author_kind"]) for e in _journal(initialised, "--author-kind", "agent")
    }
    assert kinds == {("core_memory_append", "agent")}
    refused = initialised("blocks", "append", "human", "three", "--author", "consolidator:s-9")
    assert refused.exit_code != 0 and "Only the consolidation engine" in refused.output
    assert "three" not in initialised("blocks", "get", "human").stdout


def test_a_bad_author_is_refused_and_changes_nothing(initialised: Run) -> None:
    before = _journal(initialised)
    result = initialised("--author", "robot:r2", "blocks", "set", "human", "x")
    assert result.exit_code == 2 and "kind:name" in result.stderr
    assert initialised("--author", "", "blocks", "set", "human", "x").exit_code == 2
    assert _journal(initialised) == before
    assert initialised("journal", "--author-kind", "robot").exit_code == 2


def test_an_author_name_with_a_line_break_is_refused(initialised: Run) -> None:
    before = _journal(initialised)
    for forged in ("person:ada\nmodel:evil", "ada\u2028model:evil", "person:ada\x1b[2J"):
        result = initialised("--author", forged, "blocks", "append", "human", "x")
        assert result.exit_code == 2 and "one line of printable text" in result.stderr
    assert _journal(initialised) == before


def test_the_journal_table_is_readable_at_120_columns(
    initialised: Run, open_store: Callable[[str], MemoryManager]
) -> None:
    """Long author names (a consolidator's session) and passage ids fold onto further lines; time,
    action and target are never cut and the value column is not squeezed to nothing."""
    memory = open_store("ada")
    try:
        old = memory.archival_memory_insert("Standup is at 09:30 every day.")
        new = memory.archival_memory_insert("Standup moved to 10:00.")
        memory.supersede_passage(old, new, journal_detail={"note": "x"})
        with acting_as(Author.consolidator("consolidation-" + "c" * 32)):
            memory.core_memory_append("human", "Ada likes tea.")
        entries = memory.journal(limit=2)
    finally:
        memory.close()
    table = initialised("journal", "--limit", "2", env={"COLUMNS": "120"}).stdout
    lines = table.splitlines()
    assert all(len(line) <= 120 for line in lines) and "…" not in table
    assert entries[0].created_at[:16].replace("T", " ") in table
    assert (
        "core_memory_append" in table and "supersede_passage" in table and "agent" not in lines[1]
    )
    folded = "".join(line.split("│")[5].strip() for line in lines if line.startswith("│"))
    assert old in folded, "the passage id is cut"
    first_lines = [
        line.split("│") for line in lines if line.startswith("│") and line.split("│")[1].strip()
    ]
    assert len(first_lines) == 2 and all(len(cells[6].strip()) >= 10 for cells in first_lines), (
        table
    )


def test_journal_shows_the_model_another_agent_and_an_import(
    initialised: Run, open_store: Callable[[str], MemoryManager], tmp_path: Path
) -> None:
    with open_store("ada") as memory:
        memory.ensure_agent("bob")
        team = memory.create_block("team", "plan", is_shared=True)
        memory.attach_block("bob", team.block_id)
        assert not execute_tool(
            memory, "core_memory_append", {"label": "human", "content": "likes tea"}
        ).is_error
        assert not execute_tool(
            memory, "core_memory_append", {"label": "team", "content": "bob's note"}, agent_id="bob"
        ).is_error
        with memory.acting_as(Author.other_agent("bob")):
            memory.core_memory_append("human", "bob told ada's memory this")
    table = initialised("journal").stdout
    assert "model ada" in table and "agent bob" in table
    entries = _journal(initialised, "--limit", "2")
    assert [(e["author_kind"], e["author"]) for e in entries] == [
        ("agent", "bob"),
        ("model", "ada"),
    ]
    # bob's model edited the shared block: stored as the model's, shown to ada as another agent's
    assert (
        _history(initialised, "team")[-1]["author_kind"],
        _history(initialised, "team")[-1]["author"],
    ) == ("model", "bob")
    assert "agent bob" in initialised("blocks", "history", "team").stdout
    assert "model bob" in initialised("--agent", "bob", "blocks", "history", "team").stdout
    every = _journal(initialised, "--all-agents", "--author-kind", "model")
    assert {e["agent_id"] for e in every} == {"ada", "bob"}

    exported = tmp_path / "ada.json"
    assert initialised("export", "--output", str(exported)).exit_code == 0
    assert initialised("--agent", "ada-copy", "import", str(exported)).exit_code == 0
    copied = _journal(initialised, "--agent", "ada-copy")
    first = copied[0]
    assert (first["action"], first["author_kind"], first["author"]) == (
        "import_agent",
        "import",
        "ada.json",
    )
    assert ("model", "ada") in {
        (e["author_kind"], e["author"]) for e in copied
    }  # the file's authors are kept
