"""`init` and `agents ...` on real storage dirs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from memory_agent import MemoryManager

pytestmark = pytest.mark.usefixtures("backend")


def test_init_creates_storage_and_a_default_agent(
    run: Callable[..., Result], storage: Path, backend: str
) -> None:
    result = run("init", "--persona", "I am Sam.")
    assert result.exit_code == 0, result.output
    # On PostgreSQL the server holds the memory: no database file in the storage dir.
    assert "Created agent" in result.output and (storage / "memory.db").is_file() == (
        backend == "sqlite"
    )
    again = run("--json", "init")
    data = json.loads(again.stdout)
    assert again.exit_code == 0 and data["created"] is False and data["agent"]["is_default"] is True
    shown = json.loads(run("--json", "blocks", "show", "persona").stdout)
    assert shown["value"] == "I am Sam."


@pytest.mark.empty_database
def test_commands_before_init_say_to_run_init(
    run: Callable[..., Result], error_of: Callable[[Result], str], storage: Path
) -> None:
    line = error_of(run("blocks", "list"))
    assert "No memory-agent storage" in line and "memory-agent init" in line
    assert not storage.exists()  # looking did not create anything


def test_agents_list_create_show_delete(initialised: Callable[..., Result]) -> None:
    run = initialised
    created = run("agents", "create", "bob", "--name", "Bob", "--human", "Bob's user")
    assert created.exit_code == 0, created.output
    listed = json.loads(run("--json", "agents", "list").stdout)
    assert [(a["agent_id"], a["is_default"], a["blocks"]) for a in listed] == [
        ("ada", True, 2),
        ("bob", False, 2),
    ]
    table = run("agents", "list").stdout
    assert "ada" in table and "Bob" in table
    shown = json.loads(run("--json", "agents", "show", "bob").stdout)
    assert shown["agent"]["name"] == "Bob"
    assert {b["label"]: b["value"] for b in shown["blocks"]}["human"] == "Bob's user"
    deleted = run("agents", "delete", "bob", input="y\n")
    assert deleted.exit_code == 0 and "Deleted agent 'bob'" in deleted.stdout
    assert [a["agent_id"] for a in json.loads(run("--json", "agents", "list").stdout)] == ["ada"]


def test_agents_delete_removes_its_memory_and_keeps_shared_blocks(
    initialised: Callable[..., Result], open_store: Callable[[str], MemoryManager]
) -> None:
    run = initialised
    run("agents", "create", "bob")
    with open_store("ada") as memory:
        shared = memory.create_block("team", "shared notes", is_shared=True)
        memory.attach_block("bob", shared.block_id)
        memory.store_message("user", "hello", agent_id="bob")
    assert run("agents", "delete", "bob", "--yes").exit_code == 0
    with open_store("ada") as memory:
        assert memory.get_block("team").value == "shared notes"
        assert memory.recall.count("bob") == 0
        assert memory.journal(agent_id="bob", limit=1)[0].action == "delete_agent"


def test_agents_delete_can_be_declined(initialised: Callable[..., Result]) -> None:
    result = initialised("agents", "delete", "ada", input="n\n")
    assert result.exit_code == 1 and "Aborted" in result.stderr
    assert initialised("agents", "show", "ada").exit_code == 0


def test_unknown_agent_is_one_clear_error(
    initialised: Callable[..., Result], error_of: Callable[[Result], str]
) -> None:
    for args in (
        ("--agent", "nobody", "blocks", "list"),
        ("agents", "show", "nobody"),
        ("agents", "delete", "nobody", "--yes"),
        ("blocks", "list", "--agent", "nobody"),
    ):
        assert "No agent 'nobody'" in error_of(initialised(*args))
    assert "already exists" in error_of(initialised("agents", "create", "ada"))
