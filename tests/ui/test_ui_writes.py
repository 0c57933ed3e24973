"""Writes through the inspector: edit, stale-write refusal, undo, placement, passage deletion, the
CSRF check and read-only mode; each refusal is an error page and leaves every row as it was."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from inspector_helpers import (
    UI_USER,
    client_for,
    csrf_token,
    data_page,
    error_line,
    flash_line,
    snapshot,
    textarea_value,
)

from memory_agent import MemoryManager

pytestmark = pytest.mark.usefixtures("backend")

BLOCK = "/agents/ada/blocks/projects/alpha.md"


def test_an_edit_is_stored_journalled_as_the_ui_user_and_shown_after_a_redirect(
    memory: MemoryManager,
) -> None:
    client = client_for(memory)
    token = csrf_token(client, BLOCK)
    response = client.post(
        BLOCK,
        data={
            "value": "Alpha ships in June.\r\nOwner: Dana.",
            "expected_version": "1",
            "csrf_token": token,
        },
    )
    assert response.status_code == 303 and response.headers["location"] == f"{BLOCK}?flash=saved"
    block = memory.get_block("projects/alpha.md", agent_id="ada")
    assert (
        block.value == "Alpha ships in June.\nOwner: Dana." and block.version == 2
    )  # CRLF from the form undone
    entry = memory.journal(agent_id="ada", limit=1)[0]
    assert (entry.author_kind, entry.author, entry.label) == (
        "person",
        UI_USER.name,
        "projects/alpha.md",
    )
    assert entry.new_value == block.value
    shown = client.get(response.headers["location"])
    assert flash_line(shown.text).startswith("Saved")
    assert textarea_value(shown.text) == block.value


def test_a_value_with_leading_newlines_round_trips_through_the_textarea(
    memory: MemoryManager,
) -> None:
    memory.update_block("rules", value="\n\nIndented first line", agent_id="ada")
    client = client_for(memory)
    page = client.get("/agents/ada/blocks/rules")
    assert textarea_value(page.text) == "\n\nIndented first line"
    version = re.search(r'name="expected_version" value="(\d+)"', page.text)
    assert version is not None
    before = snapshot(memory)
    response = client.post(
        "/agents/ada/blocks/rules",
        data={
            "value": textarea_value(page.text),
            "expected_version": version.group(1),
            "csrf_token": csrf_token(client),
        },
    )
    assert response.headers["location"].endswith("flash=unchanged")
    assert snapshot(memory) == before


def test_the_owner_may_edit_a_block_read_only_for_the_model(memory: MemoryManager) -> None:
    client = client_for(memory)
    response = client.post(
        "/agents/ada/blocks/rules",
        data={"value": "Be kind.", "expected_version": "1", "csrf_token": csrf_token(client)},
    )
    assert response.status_code == 303
    assert memory.get_block("rules", agent_id="ada").value == "Be kind."


def test_a_stale_write_is_refused_with_a_clear_message_and_changes_nothing(
    memory: MemoryManager,
) -> None:
    client = client_for(memory)
    token = csrf_token(client, BLOCK)
    memory.execute_tool(
        "core_memory_append",
        {"label": "projects/alpha.md", "content": "Budget: 10k."},
        agent_id="ada",
    )  # the model edits while the page is open
    before = snapshot(memory)
    response = client.post(
        BLOCK, data={"value": "my edit", "expected_version": "1", "csrf_token": token}
    )
    assert response.status_code == 409 and data_page(response.text) == "error"
    line = error_line(response.text)
    assert (
        "changed since you opened it" in line
        and "version 2" in line
        and "nothing was changed" in line
    )
    assert snapshot(memory) == before


def test_limits_hold_for_ui_edits(memory: MemoryManager) -> None:
    client = client_for(memory)
    before = snapshot(memory)
    limit = memory.get_block("projects/alpha.md", agent_id="ada").limit
    response = client.post(
        BLOCK,
        data={
            "value": "x" * (limit + 1),
            "expected_version": "1",
            "csrf_token": csrf_token(client),
        },
    )
    assert response.status_code == 400 and "limit" in error_line(response.text).lower()
    assert snapshot(memory) == before


def test_undo_restores_the_previous_value(memory: MemoryManager) -> None:
    memory.update_block("projects/alpha.md", value="changed", agent_id="ada")
    client = client_for(memory)
    response = client.post(f"{BLOCK}/undo", data={"csrf_token": csrf_token(client)})
    assert response.status_code == 303 and response.headers["location"] == f"{BLOCK}?flash=undone"
    assert (
        memory.get_block("projects/alpha.md", agent_id="ada").value
        == "Alpha ships in May.\nOwner: Dana."
    )
    assert memory.journal(agent_id="ada", limit=1)[0].author == UI_USER.name


def test_undo_with_nothing_to_undo_is_a_clear_refusal(memory: MemoryManager) -> None:
    client = client_for(memory)
    token = csrf_token(client)
    before = snapshot(memory)
    response = client.post(f"{BLOCK}/undo", data={"csrf_token": token})
    assert (
        response.status_code == 409
        and data_page(response.text) == "error"
        and error_line(response.text)
    )
    assert snapshot(memory) == before


def test_placement_moves_a_block_between_prompt_and_on_demand(memory: MemoryManager) -> None:
    client = client_for(memory)
    token = csrf_token(client)
    response = client.post(
        f"{BLOCK}/placement", data={"placement": "in_prompt", "csrf_token": token}
    )
    assert response.status_code == 303 and response.headers["location"].endswith("flash=in_prompt")
    assert memory.get_block("projects/alpha.md", agent_id="ada").in_prompt
    assert "Alpha ships in May." in memory.get_system_prompt_addition(
        agent_id="ada", mark_seen=False
    )
    client.post(f"{BLOCK}/placement", data={"placement": "on_demand", "csrf_token": token})
    assert not memory.get_block("projects/alpha.md", agent_id="ada").in_prompt
    before = snapshot(memory)
    wrong = client.post(f"{BLOCK}/placement", data={"placement": "sideways", "csrf_token": token})
    assert wrong.status_code == 400 and "placement" in error_line(wrong.text)
    assert snapshot(memory) == before


def test_deleting_a_passage_removes_it_and_an_unknown_one_is_a_404(memory: MemoryManager) -> None:
    kept = memory.archival_memory_insert("Keep this one.", agent_id="ada")
    doomed = memory.archival_memory_insert("Delete this one.", agent_id="ada")
    client = client_for(memory)
    token = csrf_token(client)
    response = client.post(
        f"/agents/ada/passages/{doomed}/delete",
        data={"csrf_token": token, "q": "one", "mode": "keyword"},
    )
    assert response.status_code == 303
    assert response.headers["location"] == "/agents/ada/search?q=one&mode=keyword&flash=deleted"
    assert memory.archival_memory_get(doomed, agent_id="ada") is None
    assert memory.archival_memory_get(kept, agent_id="ada") is not None
    entry = memory.journal(agent_id="ada", limit=1)[0]
    assert entry.target_id == doomed and entry.author == UI_USER.name
    other = memory.archival_memory_insert("Bob's passage.", agent_id="bob")
    before = snapshot(memory)
    again = client.post(f"/agents/ada/passages/{doomed}/delete", data={"csrf_token": token})
    assert again.status_code == 404 and "no passage" in error_line(again.text)
    foreign = client.post(
        f"/agents/ada/passages/{other}/delete", data={"csrf_token": token}
    )  # bob's, not ada's
    assert foreign.status_code == 404
    assert memory.archival_memory_get(other, agent_id="bob") is not None
    assert snapshot(memory) == before


def test_every_write_without_or_with_a_wrong_csrf_token_is_refused_and_changes_nothing(
    memory: MemoryManager,
) -> None:
    passage = memory.archival_memory_insert("A passage.", agent_id="ada")
    client = client_for(memory)
    good = csrf_token(client)
    other_session = client_for(memory)
    foreign = csrf_token(other_session)  # valid, but for another session
    assert foreign != good
    before = snapshot(memory)
    writes = [
        (BLOCK, {"value": "forged", "expected_version": "1"}),
        (f"{BLOCK}/undo", {}),
        (f"{BLOCK}/placement", {"placement": "in_prompt"}),
        (f"/agents/ada/passages/{passage}/delete", {}),
    ]
    for path, fields in writes:
        for token in (None, "", "0" * 64, foreign, good + "x"):
            data = fields if token is None else {**fields, "csrf_token": token}
            response = client.post(path, data=data)
            assert response.status_code == 403, (path, token)
            assert data_page(response.text) == "error" and "CSRF" in error_line(response.text)
    assert snapshot(memory) == before


def test_a_form_of_unknown_or_excessive_length_is_refused_unread(memory: MemoryManager) -> None:
    client = client_for(memory)
    token = csrf_token(client)
    before = snapshot(memory)
    body = f"csrf_token={token}&placement=in_prompt".encode()

    def chunks() -> Iterator[bytes]:
        yield body  # a generator body is sent chunked, without Content-Length

    endless = client.post(
        f"{BLOCK}/placement",
        content=chunks(),
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert endless.status_code == 411 and data_page(endless.text) == "error"
    huge = client.post(
        BLOCK, data={"value": "x" * 2_100_000, "expected_version": "1", "csrf_token": token}
    )
    assert huge.status_code == 413 and "too large" in error_line(huge.text)
    assert snapshot(memory) == before


def test_a_session_cookie_is_needed_the_token_alone_is_not_enough(memory: MemoryManager) -> None:
    client = client_for(memory)
    token = csrf_token(client)
    client.cookies.clear()
    before = snapshot(memory)
    response = client.post(
        BLOCK, data={"value": "forged", "expected_version": "1", "csrf_token": token}
    )
    assert response.status_code == 403
    assert snapshot(memory) == before


def test_read_only_renders_no_forms_and_refuses_every_post(memory: MemoryManager) -> None:
    passage = memory.archival_memory_insert("A passage.", agent_id="ada")
    client = client_for(memory, read_only=True)
    for path in (
        "/",
        "/agents/ada",
        BLOCK,
        "/agents/ada/journal",
        "/agents/ada/conversation",
        "/agents/ada/search",
        "/agents/ada/search?q=passage&mode=keyword",
        "/agents/ada/prompt",
        "/agents/ada/metrics",
    ):
        response = client.get(path)
        assert response.status_code == 200, path
        assert 'method="post"' not in response.text and "data-form=" not in response.text, path
        assert "csrf_token" not in response.text, path
    assert "Alpha ships in May." in client.get(BLOCK).text
    before = snapshot(memory)
    for path in (
        BLOCK,
        f"{BLOCK}/undo",
        f"{BLOCK}/placement",
        f"/agents/ada/passages/{passage}/delete",
    ):
        response = client.post(
            path, data={"value": "x", "expected_version": "1", "placement": "in_prompt"}
        )
        assert response.status_code == 403 and "read-only" in error_line(response.text), path
    assert snapshot(memory) == before


def test_a_block_named_like_an_action_is_saved_not_mistaken_for_the_action(
    memory: MemoryManager,
) -> None:
    memory.create_block("notes/undo", "a block called undo", agent_id="ada")
    memory.create_block("notes/placement", "a block called placement", agent_id="ada")
    client = client_for(memory)
    token = csrf_token(client)
    saved = client.post(
        "/agents/ada/blocks/notes/undo",
        data={"value": "edited", "expected_version": "1", "csrf_token": token},
    )
    assert (
        saved.status_code == 303
        and saved.headers["location"] == "/agents/ada/blocks/notes/undo?flash=saved"
    )
    assert memory.get_block("notes/undo", agent_id="ada").value == "edited"
    moved = client.post(
        "/agents/ada/blocks/notes/placement",
        data={"value": "moved?", "expected_version": "1", "csrf_token": token},
    )
    assert moved.headers["location"] == "/agents/ada/blocks/notes/placement?flash=saved"
    assert memory.get_block("notes/placement", agent_id="ada").value == "moved?"
    undone = client.post("/agents/ada/blocks/notes/undo/undo", data={"csrf_token": token})
    assert undone.status_code == 303
    assert memory.get_block("notes/undo", agent_id="ada").value == "a block called undo"
