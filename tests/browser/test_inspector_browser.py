"""The memory inspector in a real browser (issue 27): headless Chromium against the real
`memory-agent ui` process on a seeded SQLite storage dir.

Every page opens and is screenshotted; a block edited in the form is in memory.db (read with
sqlite3, read-only) and undo puts the old value back; search shows per-signal scores; markup in a
block shows as text; a POST with a tampered CSRF token changes nothing. The same walk on PostgreSQL
is test_inspector_postgres.py; --read-only is test_inspector_read_only.py.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from inspector_pages import (
    PAGES,
    SEARCH_MODES,
    agent_path,
    block_path,
    data_page,
    hits,
    open_page,
    walk,
)
from inspector_seed import (
    AGENT,
    EDITED_BLOCK,
    HUMAN_TEXT,
    PASSAGES,
    SCRIPT_BLOCK,
    SCRIPT_TEXT,
    SEARCH_WORD,
    SUMMARY,
    TEXTAREA_BLOCK,
    TEXTAREA_TEXT,
    Seeded,
)

from memory_agent import MemoryManager, Settings
from memory_agent.testing.ui_process import UiServer

pytestmark = pytest.mark.sqlite_only(
    reason="reads the server's memory.db with sqlite3 to see each write land; the same pages on "
    "PostgreSQL are walked by tests/browser/test_inspector_postgres.py"
)


@pytest.fixture(scope="module")
def ui(sqlite_store: tuple[Path, Seeded], start_ui: Any) -> UiServer:
    storage, _ = sqlite_store
    return start_ui(storage_dir=storage)


@pytest.fixture
def db(sqlite_store: tuple[Path, Seeded]) -> Iterator[sqlite3.Connection]:
    """memory.db opened read-only, as another process would look at it."""
    storage, _ = sqlite_store
    connection = sqlite3.connect(f"file:{storage / 'memory.db'}?mode=ro", uri=True)
    yield connection
    connection.close()


def block_value(db: sqlite3.Connection, label: str, agent: str = AGENT) -> tuple[str, int]:
    row = db.execute(
        "SELECT b.value, b.in_prompt FROM blocks b JOIN agent_blocks a USING (block_id)"
        " WHERE a.agent_id = ? AND a.label = ?",
        (agent, label),
    ).fetchone()
    assert row is not None, f"no block {label!r} for {agent}"
    return str(row[0]), int(row[1])


def submit(page: Any, form: str) -> Any:
    """Submit the page's first form with this `data-form` hook; the response of the navigation."""
    with page.expect_navigation(wait_until="load") as navigation:
        page.locator(f"form[data-form={form}] [type=submit]").first.click()
    return navigation.value


def test_every_page_opens_and_is_screenshotted(
    page: Any, ui: UiServer, screenshot_dir: Path
) -> None:
    shots = walk(page, ui, screenshot_dir / "sqlite")
    assert len(shots) == len(PAGES)


def test_the_journal_filters_by_author(page: Any, ui: UiServer) -> None:
    open_page(page, ui, agent_path("/journal?author_kind=agent"))
    kinds = page.locator(".entry").evaluate_all("els => els.map(e => e.dataset.authorKind)")
    assert kinds and set(kinds) == {"agent"}, kinds
    assert "Retro on Fridays" in page.inner_text("main#page")
    open_page(page, ui, agent_path("/journal?author_kind=model"))
    text = page.inner_text("main#page")
    assert "Peppers planted" in text and "Retro on Fridays" not in text
    assert set(
        page.locator(".entry").evaluate_all("els => els.map(e => e.dataset.authorKind)")
    ) == {"model"}


def test_the_conversation_shows_the_summary_where_it_replaced_messages(
    page: Any, ui: UiServer
) -> None:
    open_page(page, ui, agent_path("/conversation"))
    items = page.locator("ol.conversation > li").evaluate_all(
        "els => els.map(e => ({summary: e.classList.contains('summary-item'), id: "
        "e.dataset.messageId,"
        " compacted: e.classList.contains('compacted'),"
        " spoken: e.classList.contains('role-user') || e.classList.contains('role-assistant'), "
        "text: e.innerText}))"
    )
    summaries = [index for index, item in enumerate(items) if item["summary"]]
    assert len(summaries) == 1 and SUMMARY in items[summaries[0]]["text"]
    before, after = items[: summaries[0]], items[summaries[0] + 1 :]
    assert before and all(item["compacted"] for item in before if item["spoken"])
    assert after and not any(item["compacted"] for item in after if item["spoken"])
    assert "Message 0:" in before[0]["text"] and "And what about the garden?" in page.inner_text(
        "main#page"
    )
    ids = [int(item["id"]) for item in items if not item["summary"]]
    assert ids == sorted(ids), "messages out of order"


def test_editing_a_block_in_the_form_reaches_sqlite_and_undo_restores_it(
    page: Any, ui: UiServer, db: sqlite3.Connection
) -> None:
    assert block_value(db, EDITED_BLOCK)[0] == HUMAN_TEXT
    open_page(page, ui, block_path(EDITED_BLOCK))
    assert page.locator("form[data-form=edit] textarea[name=value]").input_value() == HUMAN_TEXT
    edited = "Name: Ada. Lives in Lisbon now. Prefers short answers."
    page.fill("form[data-form=edit] textarea[name=value]", edited)

    response = submit(page, "edit")

    assert response.status == 200 and data_page(page) != "error", page.inner_text("main#page")
    assert page.locator("p.flash").count() == 1
    assert block_value(db, EDITED_BLOCK)[0] == edited
    author = db.execute(
        "SELECT author_kind FROM journal WHERE agent_id = ? AND label = ? ORDER BY entry_id DESC"
        " LIMIT 1",
        (AGENT, EDITED_BLOCK),
    ).fetchone()
    assert author == ("person",), "the UI's edit is journalled as its user's"
    newest = page.locator("li.version").first
    assert newest.locator(".diff .add").all_inner_texts() == [f"+{edited}"]
    assert newest.locator(".diff .del").all_inner_texts() == [f"-{HUMAN_TEXT}"]

    response = submit(page, "undo")

    assert response.status == 200 and data_page(page) != "error", page.inner_text("main#page")
    assert page.locator("p.flash").count() == 1
    assert block_value(db, EDITED_BLOCK)[0] == HUMAN_TEXT
    assert page.locator("form[data-form=edit] textarea[name=value]").input_value() == HUMAN_TEXT


def test_a_stale_edit_is_refused_and_changes_nothing(
    chromium: Any, ui: UiServer, db: sqlite3.Connection
) -> None:
    context = chromium.new_context()
    try:
        first, second = context.new_page(), context.new_page()
        for tab in (first, second):
            open_page(tab, ui, block_path("projects/garden"))
        before = block_value(db, "projects/garden")[0]
        # A tab behind another gets few animation frames, and a click waits for them: 2 s each.
        first.bring_to_front()
        first.fill("form[data-form=edit] textarea[name=value]", before + " Beans too.")
        submit(first, "edit")
        assert block_value(db, "projects/garden")[0] == before + " Beans too."

        second.bring_to_front()
        second.fill("form[data-form=edit] textarea[name=value]", "An edit made on the old version.")
        submit(second, "edit")

        assert block_value(db, "projects/garden")[0] == before + " Beans too."
        shown = second.inner_text("main#page")
        assert "version" in shown.lower(), (
            f"the refusal does not say the block changed meanwhile: {shown[:500]}"
        )
    finally:
        context.close()


def test_moving_a_block_between_in_prompt_and_on_demand(
    page: Any, ui: UiServer, db: sqlite3.Connection
) -> None:
    assert block_value(db, "notes/ideas")[1] == 0
    open_page(page, ui, block_path("notes/ideas"))
    submit(page, "placement")
    assert block_value(db, "notes/ideas")[1] == 1
    open_page(page, ui, agent_path("/prompt"))
    assert "A reading list for the summer." in page.inner_text("main#page")

    open_page(page, ui, block_path("notes/ideas"))
    submit(page, "placement")
    assert block_value(db, "notes/ideas")[1] == 0
    open_page(page, ui, agent_path("/prompt"))
    assert "A reading list for the summer." not in page.inner_text("main#page")


SIGNALS = {
    "keyword": {"score", "keyword rank", "keyword score"},
    "vector": {"score", "vector rank", "similarity"},
    "hybrid": {"score", "keyword rank", "keyword score", "vector rank", "similarity", "fused"},
    "scored": {
        "score",
        "keyword rank",
        "vector rank",
        "similarity",
        "fused",
        "recency",
        "importance",
    },
}
"""Per mode, the signals whose figures the hits of the search word must show (numbers, not
dashes)."""


@pytest.mark.parametrize("mode", SEARCH_MODES)
def test_search_shows_each_hits_scores(
    page: Any, ui: UiServer, sqlite_store: tuple[Path, Seeded], mode: str
) -> None:
    _, seeded = sqlite_store
    open_page(page, ui, agent_path(f"/search?q={SEARCH_WORD}&mode={mode}"))
    assert data_page(page) == "search"
    found = hits(page)
    assert found, f"no hits for {SEARCH_WORD!r} in {mode} mode"
    assert {hit["passage_id"] for hit in found} <= set(seeded.passage_ids.values())
    lisbon = {seeded.passage_ids[text] for text in PASSAGES if SEARCH_WORD in text}
    top = {hit["passage_id"] for hit in found[:2]}
    assert top == lisbon if mode != "vector" else top & lisbon, [hit["text"][:60] for hit in found]
    scores = [hit["scores"]["score"] for hit in found]
    assert all(score is not None for score in scores) and scores == sorted(scores, reverse=True), (
        scores
    )
    for hit in found:
        if hit["passage_id"] in lisbon:
            missing = {name for name in SIGNALS[mode] if hit["scores"].get(name) is None}
            assert not missing, (
                f"a {mode} hit of {SEARCH_WORD!r} shows no {sorted(missing)}: {hit['scores']}"
            )
            if "keyword rank" in SIGNALS[mode]:
                assert hit["scores"]["keyword rank"] in {1, 2}
        elif mode in {"keyword"}:
            raise AssertionError(f"keyword search for {SEARCH_WORD!r} found {hit['text'][:60]!r}")


def test_deleting_a_passage_from_the_search_page(
    page: Any, ui: UiServer, sqlite_store: tuple[Path, Seeded], db: sqlite3.Connection
) -> None:
    _, seeded = sqlite_store
    target = seeded.passage_ids["The quarterly tax return is due at the end of July."]
    open_page(page, ui, agent_path("/search?q=quarterly&mode=keyword"))
    hit = page.locator(f".hit[data-passage-id='{target}']")
    assert hit.count() == 1
    with page.expect_navigation(wait_until="load"):
        hit.locator("form[data-form=delete] [type=submit]").click()
    assert page.locator("p.flash").count() == 1
    assert db.execute(
        "SELECT COUNT(*) FROM passages WHERE passage_id = ?", (target,)
    ).fetchone() == (0,)
    assert db.execute("SELECT COUNT(*) FROM passages WHERE agent_id = ?", (AGENT,)).fetchone() == (
        len(PASSAGES) - 1,
    )


@pytest.mark.parametrize(
    ("label", "text"), [(SCRIPT_BLOCK, SCRIPT_TEXT), (TEXTAREA_BLOCK, TEXTAREA_TEXT)]
)
def test_markup_in_a_block_shows_as_text(page: Any, ui: UiServer, label: str, text: str) -> None:
    for path, shows_value in (
        (agent_path(), False),
        (block_path(label), True),
        (agent_path("/prompt"), False),
        (agent_path("/journal"), True),
    ):
        open_page(page, ui, path)
        assert page.evaluate("() => typeof window.__pwned") == "undefined", (
            f"{path} ran the block's script"
        )
        assert (
            page.locator("b").evaluate_all("els => els.filter(e => e.textContent === 'x').length")
            == 0
        ), f"{path} rendered the block's <b> as markup"
        if shows_value:
            assert text in page.inner_text("main#page"), (
                f"{path} does not show the block's text as text"
            )
    open_page(page, ui, block_path(label))
    assert page.locator("form[data-form=edit] textarea[name=value]").input_value() == text


def test_the_prompt_page_shows_the_exact_prompt(
    page: Any, ui: UiServer, sqlite_store: tuple[Path, Seeded]
) -> None:
    """What the page shows is, character for character, what the model would get now (markup in
    a block escaped by the prompt's own rendering, and shown as that text)."""
    storage, _ = sqlite_store
    open_page(page, ui, agent_path("/prompt"))
    shown = page.locator("pre.prompt").text_content()
    with MemoryManager(
        agent_id=AGENT,
        settings=Settings.from_env({"PERSIST_DIRECTORY": str(storage)}, env_file=None),
    ) as memory:
        expected = memory.get_system_prompt_addition(mark_seen=False)
    assert shown is not None and shown.strip() == expected.strip()
    assert page.evaluate("() => typeof window.__pwned") == "undefined"
    tokens = page.locator("strong.tokens").inner_text()
    assert int(tokens.replace(",", "")) > 100


def test_a_post_with_a_tampered_csrf_token_is_refused(
    page: Any, ui: UiServer, db: sqlite3.Connection
) -> None:
    before = block_value(db, EDITED_BLOCK)[0]
    open_page(page, ui, block_path(EDITED_BLOCK))
    page.fill("form[data-form=edit] textarea[name=value]", "Forged by another page.")
    page.evaluate(
        "() => { document.querySelector('form[data-form=edit] input[name=csrf_token]').value = "
        "'tampered'; }"
    )

    response = submit(page, "edit")

    assert response.status in {400, 403}, response.status
    assert data_page(page) == "error" and page.locator("p.error").count() == 1
    assert block_value(db, EDITED_BLOCK)[0] == before


def test_a_post_carrying_another_sessions_token_is_refused(
    chromium: Any, page: Any, ui: UiServer, db: sqlite3.Connection
) -> None:
    """A token read off one session's page does not work from another session (another site's page
    posting with its own cookies)."""
    before = block_value(db, EDITED_BLOCK)[0]
    open_page(page, ui, block_path(EDITED_BLOCK))
    token = page.get_attribute("form[data-form=edit] input[name=csrf_token]", "value")
    version = page.get_attribute("form[data-form=edit] input[name=expected_version]", "value")
    assert token
    stranger = chromium.new_context()
    try:
        answer = stranger.request.post(
            ui.page(block_path(EDITED_BLOCK)),
            form={
                "value": "Forged by another session.",
                "expected_version": version or "",
                "csrf_token": token,
            },
        )
        assert answer.status in {400, 403}, answer.status
    finally:
        stranger.close()
    assert block_value(db, EDITED_BLOCK)[0] == before
