"""Path labels through the CLI: created, shown, edited and listed under their normal form."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from click.testing import Result

Run = Callable[..., Result]

pytestmark = pytest.mark.usefixtures("backend")


def test_path_labels_through_the_cli(initialised: Run, error_of: Callable[[Result], str]) -> None:
    run = initialised
    created = run(
        "blocks", "create", "/system/human/family", "--value", "Two sisters", "--limit", "200"
    )
    assert created.exit_code == 0, created.output
    assert run("blocks", "append", "system//human/family", "A brother").exit_code == 0
    shown = json.loads(run("--json", "blocks", "show", "system/human/family").stdout)
    assert (shown["label"], shown["value"]) == ("system/human/family", "Two sisters\nA brother")
    labels = [b["label"] for b in json.loads(run("--json", "blocks", "list").stdout)]
    assert "system/human/family" in labels
    assert "not a valid block label" in error_of(
        run("blocks", "create", "system/../human", "--value", "x")
    )
