"""Walking every page of the inspector in the browser: shared by the SQLite and PostgreSQL tests.

Each page is opened by its URL, must answer 200 with its `data-page` hook, raise no script error
and show what the seed (inspector_seed.py) put there; a screenshot of it is written to the folder
the caller names.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from inspector_seed import AGENT, EDITED_BLOCK, HUMAN_TEXT, OTHER, SEARCH_WORD, SUMMARY

from memory_agent.testing.ui_process import UiServer

SEARCH_MODES = ("keyword", "vector", "hybrid", "scored")


@dataclass(frozen=True)
class PageCheck:
    """One page: its name (the `data-page` hook and the screenshot's name), its path, and texts it
    must show."""

    name: str
    path: str
    shows: tuple[str, ...] = ()
    hook: str = ""
    labels: tuple[str, ...] = ()
    """Blocks the page must list (elements with these `data-label`s)."""

    @property
    def data_page(self) -> str:
        return self.hook or self.name


def agent_path(suffix: str = "", agent: str = AGENT) -> str:
    return f"/agents/{quote(agent, safe='')}{suffix}"


def block_path(label: str, suffix: str = "", agent: str = AGENT) -> str:
    return agent_path(f"/blocks/{quote(label, safe='/')}{suffix}", agent)


PAGES = (
    PageCheck("agents", "/", (AGENT, OTHER)),
    PageCheck(
        "memory",
        agent_path(),
        ("garden", "ideas", OTHER),
        labels=(
            "persona",
            "human",
            "projects/garden",
            "notes/ideas",
            "team/calendar",
            "reference/style",
        ),
    ),
    PageCheck("block", block_path(EDITED_BLOCK), ()),
    PageCheck(
        "block-path-label", block_path("projects/garden"), ("Peppers planted",), hook="block"
    ),
    PageCheck("journal", agent_path("/journal"), ("Retro on Fridays", "Peppers planted")),
    PageCheck("conversation", agent_path("/conversation"), (SUMMARY, "And what about the garden?")),
    *(
        PageCheck(
            f"search-{mode}",
            agent_path(f"/search?q={SEARCH_WORD}&mode={mode}"),
            (SEARCH_WORD,),
            hook="search",
        )
        for mode in SEARCH_MODES
    ),
    PageCheck("prompt", agent_path("/prompt"), (HUMAN_TEXT,)),
    PageCheck("metrics", agent_path("/metrics"), ("1234", "2345", "3456", "91")),
    PageCheck("error-unknown-agent", "/agents/nobody-here", (), hook="error"),
)


def data_page(page: Any) -> str | None:
    """The page's `data-page` hook (the `<main id="page">` element's)."""
    return page.get_attribute("main#page", "data-page")


def open_page(page: Any, server: UiServer, path: str) -> Any:
    """Go to `path` on the server; the navigation's response."""
    return page.goto(server.page(path), wait_until="load")


def walk(page: Any, server: UiServer, folder: Path | None, prefix: str = "") -> list[Path]:
    """Open every page in PAGES, check it, screenshot it into `folder`; the screenshots written."""
    script_errors: list[str] = []
    page.on("pageerror", lambda error: script_errors.append(str(error)))
    written: list[Path] = []
    for number, check in enumerate(PAGES, start=1):
        response = open_page(page, server, check.path)
        assert response is not None, check.path
        if check.data_page == "error":
            assert 400 <= response.status < 500, f"{check.path}: HTTP {response.status}"
        else:
            assert response.status == 200, f"{check.path}: HTTP {response.status}"
        assert data_page(page) == check.data_page, f"{check.path} is not the {check.data_page} page"
        text = page.inner_text("main#page")
        for shown in check.shows:
            assert shown in text, f"{check.path} does not show {shown!r}"
        listed = set(
            page.locator("[data-label]").evaluate_all("els => els.map(e => e.dataset.label)")
        )
        assert set(check.labels) <= listed, (
            f"{check.path} lists {sorted(listed)}, not all of {check.labels}"
        )
        assert "Traceback" not in page.content(), f"{check.path} shows a traceback"
        if check.data_page == "error":
            errors = page.locator("p.error")
            assert errors.count() == 1 and errors.inner_text().strip(), (
                f"{check.path}: no one-line error"
            )
        if folder is not None:
            shot = folder / f"{prefix}{number:02d}-{check.name}.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 1000, f"{shot} is empty"
            written.append(shot)
    assert not script_errors, f"script errors on the pages: {script_errors}"
    return written


def hits(page: Any) -> list[dict[str, Any]]:
    """The search page's hits: passage id, text, and the scores shown in its table of signals
    (name -> number, None where the page shows a dash for a signal that did not find it)."""
    found = []
    for hit in page.locator(".hit").all():
        cells = hit.locator("table.scores th, table.scores td").all_inner_texts()
        scores = {name.strip(): _number(value) for name, value in zip(cells[::2], cells[1::2])}
        found.append(
            {
                "passage_id": hit.get_attribute("data-passage-id") or "",
                "text": hit.inner_text(),
                "scores": scores,
            }
        )
    return found


def _number(text: str) -> float | None:
    text = text.strip()
    return None if text in {"", "-", "\u2013", "\u2014"} else float(text)
