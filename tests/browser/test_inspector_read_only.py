"""`memory-agent ui --read-only` in a real browser: no page offers a form, and a POST made anyway
is refused and changes nothing (issue 27)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from inspector_pages import PAGES, agent_path, block_path, data_page, open_page
from inspector_seed import AGENT, EDITED_BLOCK, HUMAN_TEXT, Seeded

from memory_agent.testing.ui_process import UiServer

pytestmark = pytest.mark.sqlite_only(
    reason="reads the server's memory.db with sqlite3 to see that nothing changed; the pages on "
    "PostgreSQL are walked by tests/browser/test_inspector_postgres.py"
)


@pytest.fixture(scope="module")
def ui(sqlite_store: tuple[Path, Seeded], start_ui: Any) -> UiServer:
    storage, _ = sqlite_store
    return start_ui(storage_dir=storage, extra=["--read-only"])


def human_value(storage: Path) -> str:
    with sqlite3.connect(f"file:{storage / 'memory.db'}?mode=ro", uri=True) as connection:
        row = connection.execute(
            "SELECT b.value FROM blocks b JOIN agent_blocks a USING (block_id)"
            " WHERE a.agent_id = ? AND a.label = ?",
            (AGENT, EDITED_BLOCK),
        ).fetchone()
    return str(row[0])


def test_read_only_pages_offer_no_form(page: Any, ui: UiServer, screenshot_dir: Path) -> None:
    for check in PAGES:
        open_page(page, ui, check.path)
        assert data_page(page) == check.data_page, check.path
        assert page.locator("form[method=post], form[method=POST], form[data-form]").count() == 0, (
            f"{check.path} offers a form in read-only mode"
        )
        assert page.locator("textarea:not([readonly])").count() == 0, (
            f"{check.path} has an editable text area"
        )
    open_page(page, ui, block_path(EDITED_BLOCK))
    assert HUMAN_TEXT in page.inner_text("main#page")
    page.screenshot(path=str(screenshot_dir / "read-only-block.png"), full_page=True)


def test_a_post_to_a_read_only_server_changes_nothing(
    page: Any, ui: UiServer, sqlite_store: tuple[Path, Seeded]
) -> None:
    storage, seeded = sqlite_store
    before = human_value(storage)
    open_page(page, ui, agent_path())
    for path, form in [
        (
            block_path(EDITED_BLOCK),
            {"value": "Written through a read-only server.", "expected_version": "1"},
        ),
        (block_path(EDITED_BLOCK, "/undo"), {}),
        (block_path(EDITED_BLOCK, "/placement"), {"placement": "on_demand"}),
        (agent_path(f"/passages/{next(iter(seeded.passage_ids.values()))}/delete"), {}),
    ]:
        answer = page.request.post(ui.page(path), form={**form, "csrf_token": "none"})
        assert 400 <= answer.status < 500, f"POST {path}: {answer.status}"
    assert human_value(storage) == before
    with sqlite3.connect(f"file:{storage / 'memory.db'}?mode=ro", uri=True) as connection:
        assert connection.execute("SELECT COUNT(*) FROM passages").fetchone()[0] == len(
            seeded.passage_ids
        )
