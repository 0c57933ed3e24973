"""Every page of the memory inspector works on PostgreSQL (issue 27): the real `memory-agent ui
--database-url` on a database of the test session's server, walked in headless Chromium, and a
block edited and undone through the form, read back through a second MemoryManager."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from inspector_pages import block_path, data_page, open_page, walk
from inspector_seed import AGENT, EDITED_BLOCK, HUMAN_TEXT, seed

from memory_agent import MemoryManager, Settings
from memory_agent.testing.postgres_cluster import PostgresCluster
from memory_agent.testing.ui_process import UiServer

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def pg_store(
    postgres_cluster: PostgresCluster,
    postgres_template: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, str]]:
    """A database of its own (a copy of the migrated template) seeded with the inspector's data;
    the vectors live in PERSIST_DIRECTORY, which the server is given too."""
    url = postgres_cluster.database_url(template=postgres_template)
    store = {
        "PERSIST_DIRECTORY": str(tmp_path_factory.mktemp("inspector-pg")),
        "MEMORY_DATABASE_URL": url,
    }
    seed(store)
    yield store
    postgres_cluster.drop(url)


@pytest.fixture(scope="module")
def ui(pg_store: dict[str, str], start_ui: Any) -> UiServer:
    return start_ui(
        database_url=pg_store["MEMORY_DATABASE_URL"],
        environ={"PERSIST_DIRECTORY": pg_store["PERSIST_DIRECTORY"]},
    )


def human_value(store: dict[str, str]) -> str:
    with MemoryManager(agent_id=AGENT, settings=Settings.from_env(store, env_file=None)) as memory:
        return memory.get_block(EDITED_BLOCK).value


def test_every_page_works_on_postgresql(page: Any, ui: UiServer) -> None:
    """Each page's checks, without screenshots: test_inspector_browser.py writes those, and a
    full-page screenshot costs the browser more CPU than the page's checks."""
    walk(page, ui, None)


def test_edit_and_undo_on_postgresql(page: Any, ui: UiServer, pg_store: dict[str, str]) -> None:
    open_page(page, ui, block_path(EDITED_BLOCK))
    page.fill("form[data-form=edit] textarea[name=value]", "Edited on PostgreSQL.")
    with page.expect_navigation(wait_until="load"):
        page.locator("form[data-form=edit] [type=submit]").first.click()
    assert data_page(page) != "error" and page.locator("p.flash").count() == 1
    assert human_value(pg_store) == "Edited on PostgreSQL."
    with page.expect_navigation(wait_until="load"):
        page.locator("form[data-form=undo] [type=submit]").first.click()
    assert data_page(page) != "error" and page.locator("p.flash").count() == 1
    assert human_value(pg_store) == HUMAN_TEXT
