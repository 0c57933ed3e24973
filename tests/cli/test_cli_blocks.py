"""`blocks ...`: every subcommand on a real storage dir, limits and read-only included."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from memory_agent import MemoryManager

Run = Callable[..., Result]
ErrorOf = Callable[[Result], str]

pytestmark = pytest.mark.usefixtures("backend")


def _block(run: Run, label: str) -> dict:
    result = run("--json", "blocks", "show", label)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_list_and_show(initialised: Run) -> None:
    listed = json.loads(initialised("blocks", "list", "--json").stdout)
    assert [b["label"] for b in listed] == ["persona", "human"]
    assert listed[1]["limit"] == 5000 and listed[1]["chars_current"] == len(listed[1]["value"])
    table = initialised("blocks", "list").stdout
    assert "persona" in table and "/5000" in table
    panel = initialised("blocks", "show", "human").stdout
    assert "Nothing is known about the user yet." in panel


def test_stored_text_is_printed_as_written_not_as_markup(initialised: Run) -> None:
    initialised("blocks", "set", "human", "Likes [bold]Rust[/bold] and <value> tags")
    assert (
        "Likes [bold]Rust[/bold] and <value> tags" in initialised("blocks", "show", "human").stdout
    )


def test_set_append_history_undo(initialised: Run) -> None:
    run = initialised
    assert run("blocks", "set", "human", "Name: Ada").exit_code == 0
    assert run("blocks", "append", "human", "Likes sailing").exit_code == 0
    assert _block(run, "human")["value"] == "Name: Ada\nLikes sailing"
    history = json.loads(run("--json", "blocks", "history", "human").stdout)
    assert [v["action"] for v in history] == ["create", "update", "core_memory_append"]
    assert "core_memory_append" in run("blocks", "history", "human").stdout
    undone = run("blocks", "undo", "human")
    assert undone.exit_code == 0 and "version 4" in undone.stdout
    assert _block(run, "human")["value"] == "Name: Ada"


def test_set_reads_a_file_or_stdin_and_changes_limit_and_description(
    initialised: Run, tmp_path: Path
) -> None:
    source = tmp_path / "value.txt"
    source.write_text("From a file", encoding="utf-8")
    assert initialised("blocks", "set", "human", "--file", str(source)).exit_code == 0
    assert _block(initialised, "human")["value"] == "From a file"
    assert initialised("blocks", "set", "human", "--file", "-", input="From stdin").exit_code == 0
    assert (
        initialised(
            "blocks", "set", "human", "--limit", "100", "--description", "The user"
        ).exit_code
        == 0
    )
    block = _block(initialised, "human")
    assert (block["value"], block["limit"], block["description"]) == ("From stdin", 100, "The user")


def test_set_without_a_change_is_a_usage_error(initialised: Run) -> None:
    result = initialised("blocks", "set", "human")
    assert result.exit_code == 2 and "Nothing to change" in result.stderr


def test_over_limit_values_are_refused_and_nothing_changes(
    initialised: Run, error_of: ErrorOf
) -> None:
    before = _block(initialised, "human")
    line = error_of(initialised("blocks", "set", "human", "x" * 5001))
    assert "over its limit of 5000" in line and "5001" in line
    assert "over its limit of 20" in error_of(
        initialised("blocks", "set", "human", "--limit", "20")
    )
    initialised("blocks", "set", "human", "--limit", "40")
    assert "over its limit of 40" in error_of(initialised("blocks", "append", "human", "y" * 10))
    after = _block(initialised, "human")
    assert (after["value"], after["version"]) == (before["value"], before["version"] + 1)


def test_unknown_label_is_one_clear_error(initialised: Run, error_of: ErrorOf) -> None:
    for args in (
        ("blocks", "show", "nope"),
        ("blocks", "set", "nope", "x"),
        ("blocks", "append", "nope", "x"),
        ("blocks", "history", "nope"),
        ("blocks", "undo", "nope"),
        ("blocks", "detach", "nope"),
        ("blocks", "edit", "nope"),
    ):
        line = error_of(initialised(*args))
        assert "No block 'nope'" in line and "Attached blocks: human, persona" in line
    assert "not a valid block label" in error_of(initialised("blocks", "show", "../etc"))


def test_read_only_protects_from_the_agent_not_from_the_owner(
    initialised: Run, error_of: ErrorOf, open_store: Callable[[str], MemoryManager]
) -> None:
    run = initialised
    assert run("blocks", "set", "persona", "--read-only").exit_code == 0
    assert _block(run, "persona")["read_only"] is True
    assert "read-only" in run("blocks", "list").stdout
    assert "is read-only" in error_of(run("blocks", "append", "persona", "more"))
    with open_store("ada") as memory:
        assert memory.execute_tool(
            "core_memory_append", {"label": "persona", "content": "x"}
        ).is_error
    assert run("blocks", "set", "persona", "Owner's value").exit_code == 0
    assert _block(run, "persona")["value"] == "Owner's value"
    assert run("blocks", "set", "persona", "--writable").exit_code == 0
    assert run("blocks", "append", "persona", "more").exit_code == 0


def test_create_attach_detach_delete(initialised: Run, error_of: ErrorOf) -> None:
    run = initialised
    run("agents", "create", "bob")
    assert (
        run(
            "blocks", "create", "team", "--value", "Plan: ship", "--shared", "--limit", "200"
        ).exit_code
        == 0
    )
    attached = run("--agent", "bob", "blocks", "attach", "team", "--from", "ada", "--read-only")
    assert attached.exit_code == 0, attached.output
    bob_view = _block(lambda *a: run("--agent", "bob", *a), "team")
    assert bob_view["read_only"] is True and bob_view["is_shared"] is True
    run("blocks", "append", "team", "Then: celebrate")
    assert (
        _block(lambda *a: run("--agent", "bob", *a), "team")["value"]
        == "Plan: ship\nThen: celebrate"
    )
    assert run("--agent", "bob", "blocks", "detach", "team").exit_code == 0
    assert "No block 'team'" in error_of(run("--agent", "bob", "blocks", "show", "team"))
    assert run("--agent", "bob", "blocks", "attach", bob_view["block_id"]).exit_code == 0
    assert "is not attached" in error_of(run("blocks", "attach", "block-missing"))
    assert "already has a block 'team'" in error_of(run("blocks", "create", "team"))
    assert run("blocks", "delete", "team", "--yes").exit_code == 0
    assert _block(lambda *a: run("--agent", "bob", *a), "team")["value"].startswith("Plan")


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Point $EDITOR at a script that replaces the file's text with the given text."""
    script = tmp_path / "editor.py"

    def use(text: str) -> None:
        script.write_text(f"import sys\nopen(sys.argv[1], 'w').write({text!r})\n", encoding="utf-8")
        monkeypatch.setenv("EDITOR", f'"{sys.executable}" "{script}"')

    return use


def test_edit_opens_the_editor(initialised: Run, editor: Callable[[str], None]) -> None:
    editor("Edited in the editor\n")
    result = initialised("blocks", "edit", "human")
    assert result.exit_code == 0, result.output
    assert _block(initialised, "human")["value"] == "Edited in the editor"
    result = initialised("blocks", "edit", "human")
    assert result.exit_code == 0 and "No changes" in result.stdout


def test_edit_over_the_limit_keeps_the_text(
    initialised: Run, editor: Callable[[str], None], error_of: ErrorOf
) -> None:
    assert initialised("blocks", "set", "human", "short", "--limit", "10").exit_code == 0
    editor("far too long for ten characters")
    line = error_of(initialised("blocks", "edit", "human"))
    saved = Path(line.rsplit("saved to ", 1)[1].rstrip("."))
    assert "over its limit of 10" in line
    assert saved.read_text(encoding="utf-8") == "far too long for ten characters"
    saved.unlink()


def test_create_takes_the_value_positionally_like_set(initialised: Run, error_of: ErrorOf) -> None:
    run = initialised
    assert run("blocks", "create", "notes", "some notes").exit_code == 0
    assert _block(run, "notes")["value"] == "some notes"
    assert run("blocks", "create", "todo", "--value", "ship it").exit_code == 0
    assert _block(run, "todo")["value"] == "ship it"
    both = run("blocks", "create", "other", "a", "--value", "b")
    assert both.exit_code == 2 and "not both" in both.stderr
    assert "No block 'other'" in error_of(run("blocks", "show", "other"))


def test_list_shows_the_tree_and_set_switches_on_demand(initialised: Run, storage: Path) -> None:
    with MemoryManager(storage_dir=storage) as memory:
        memory.create_block("project/notes.md", "Launch on Monday", in_prompt=False)
        memory.create_block("project/specs/api.md", "REST")
    lines = initialised("blocks", "list").stdout.splitlines()
    rows = [line.split("│")[1][1:].rstrip() for line in lines if line.startswith("│")]
    assert rows == ["human", "persona", "project/", "  notes.md", "  specs/", "    api.md"]
    notes_row = next(line for line in lines if "notes.md" in line)
    assert "on demand" in notes_row and "on demand" not in next(
        line for line in lines if "api.md" in line
    )

    assert initialised("blocks", "set", "project/notes.md", "--in-prompt").exit_code == 0
    assert _block(initialised, "project/notes.md")["in_prompt"] is True
    assert initialised("blocks", "set", "human", "--on-demand").exit_code == 0
    listed = {
        b["label"]: b["in_prompt"]
        for b in json.loads(initialised("--json", "blocks", "list").stdout)
    }
    assert listed == {
        "persona": True,
        "human": False,
        "project/notes.md": True,
        "project/specs/api.md": True,
    }
    with MemoryManager(storage_dir=storage) as memory:
        prompt = memory.get_system_prompt_addition()
    assert "Launch on Monday" in prompt and "\t/memories/human" in prompt
    assert "Nothing is known about the user yet." not in prompt
