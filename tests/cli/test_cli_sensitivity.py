"""Sensitivity levels from the command line (issue 26, item 4), on both backends: --sensitivity on
remember and blocks create/set, passage-sensitivity, --allow-secret and --public-only on reads and
export; an unknown level is one error line and changes nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from memory_agent import MemoryManager
from memory_agent.store.snapshot import store_snapshot

pytestmark = pytest.mark.usefixtures("backend")

MARK = "Wombat-6619"
Invoke = Callable[..., Result]


def _ids(result_output: str) -> list[str]:
    return [item["id"] for item in json.loads(result_output)]


def test_levels_from_the_command_line(initialised: Invoke) -> None:
    run = initialised
    assert run("blocks", "create", "door", f"Door {MARK}", "--sensitivity", "secret").exit_code == 0
    assert run("blocks", "create", "hello", "Hi", "--sensitivity", "public").exit_code == 0
    listed = run("--json", "blocks", "list")
    assert "door" not in [b["label"] for b in json.loads(listed.output)]
    assert "door" in [
        b["label"] for b in json.loads(run("--json", "blocks", "list", "--allow-secret").output)
    ]
    assert [
        b["label"] for b in json.loads(run("--json", "blocks", "list", "--public-only").output)
    ] == ["hello"]
    assert run("blocks", "show", "door").exit_code == 1
    assert MARK in run("blocks", "show", "door", "--allow-secret").output

    secret = json.loads(
        run("--json", "remember", f"Vault {MARK}", "--sensitivity", "secret").output
    )["id"]
    plain = json.loads(run("--json", "remember", "Vault is downstairs").output)["id"]
    assert _ids(run("--json", "recall", "vault", "--mode", "keyword").output) == [plain]
    assert set(
        _ids(run("--json", "recall", "vault", "--mode", "keyword", "--allow-secret").output)
    ) == {secret, plain}
    assert _ids(run("--json", "passages").output) == [plain]

    exported = run("export")
    assert exported.exit_code == 0 and MARK not in exported.output
    assert MARK in run("export", "--allow-secret").output
    public = json.loads(run("export", "--public-only").output)
    assert [b["label"] for b in public["blocks"]] == ["hello"] and public["passages"] == []

    changed = run("--json", "passage-sensitivity", plain, "public")
    assert changed.exit_code == 0 and json.loads(changed.output)["sensitivity"] == "public"
    assert (
        run("passage-sensitivity", secret, "public").exit_code == 1
    )  # not seen without --allow-secret
    assert run("passage-sensitivity", secret, "private", "--allow-secret").exit_code == 0
    assert run("blocks", "set", "hello", "--sensitivity", "secret").exit_code == 0
    assert "hello" not in run("blocks", "list").output


def test_the_journal_shows_no_secret_without_allow_secret(initialised: Invoke) -> None:
    """The journal's values hold what was written: the entries of a secret block or passage (live,
    or deleted with its level recorded) are left out as in an export, unless --allow-secret."""
    run = initialised
    assert run("blocks", "create", "door", f"Door {MARK}", "--sensitivity", "secret").exit_code == 0
    assert run("blocks", "create", "diary", f"Diary {MARK}").exit_code == 0
    assert run("blocks", "set", "diary", "--sensitivity", "secret").exit_code == 0
    assert run("blocks", "delete", "diary", "--allow-secret", "--yes").exit_code == 0
    assert run("remember", f"Vault {MARK}", "--sensitivity", "secret").exit_code == 0
    assert run("remember", "Vault is downstairs").exit_code == 0

    for output in (
        run("journal").output,
        run("--json", "journal").output,
        run("journal", "--public-only").output,
    ):
        assert MARK not in output
    shown = run("--json", "journal").output
    assert "Vault is downstairs" in shown
    assert run("--json", "journal", "--allow-secret").output.count(MARK) >= 3


def test_an_unknown_level_is_one_error_line_and_changes_nothing(
    initialised: Invoke,
    error_of: Callable[..., str],
    open_store: Callable[[str], MemoryManager],
    tmp_path: Path,
) -> None:
    run = initialised
    run("blocks", "create", "notes", "Some notes.")
    passage = json.loads(run("--json", "remember", "A fact.").output)["id"]
    document = json.loads(run("export", "--allow-secret").output)
    document["passages"][0]["sensitivity"] = "classified"
    bad_file = tmp_path / "bad.json"
    bad_file.write_text(json.dumps(document), encoding="utf-8")
    with open_store("ada") as memory:
        before = store_snapshot(memory.database)
    for args in (
        ("remember", "New text", "--sensitivity", "Secret"),
        ("blocks", "create", "other", "x", "--sensitivity", "top"),
        ("blocks", "set", "notes", "changed", "--sensitivity", "hidden"),
        ("passage-sensitivity", passage, "everyone"),
        ("--agent", "copy", "import", str(bad_file)),
    ):
        line = error_of(run(*args))
        assert "must be one of public, private, secret" in line, line
    with open_store("ada") as memory:
        assert store_snapshot(memory.database) == before
    assert run("export", "--allow-secret", "--public-only").exit_code == 2


def test_a_refused_invocation_leaves_the_callers_clearance_as_it_was(initialised: Invoke) -> None:
    """click does not close a context whose arguments fail to parse: a clearance the first option
    raised must not outlive the refusal in the thread that ran it (CliRunner's, here)."""
    from memory_agent.privacy.sensitivity import current_clearance

    run = initialised
    assert run("blocks", "create", "door", f"Door {MARK}", "--sensitivity", "secret").exit_code == 0
    for order in (("--allow-secret", "--public-only"), ("--public-only", "--allow-secret")):
        assert run("blocks", "list", *order).exit_code == 2
        assert current_clearance() == "private"
    assert "door" not in [b["label"] for b in json.loads(run("--json", "blocks", "list").output)]
    assert MARK in run("--allow-secret", "blocks", "show", "door").output
    assert current_clearance() == "private"
