"""Every page of the inspector renders what the store holds, on both backends (HTTP level)."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from backends import backend_environ
from inspector_helpers import client_for, data_page, error_line

from compaction import CompactionSettings
from memory_agent import MemoryManager, Settings
from memory_agent.testing import ScriptedMessagesServer, text_response

pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture
def server() -> Iterator[ScriptedMessagesServer]:
    with ScriptedMessagesServer() as running:
        yield running


@pytest.fixture
def talked(tmp_path: Path, server: ScriptedMessagesServer) -> Iterator[MemoryManager]:
    """An agent with a conversation that was compacted once, a recorded turn's usage and
    passages."""
    settings = Settings.from_env(
        backend_environ(
            {
                "PERSIST_DIRECTORY": str(tmp_path / "store"),
                "ANTHROPIC_BASE_URL": server.url,
                "ANTHROPIC_API_KEY": "k",
            }
        ),
        env_file=None,
    )
    memory = MemoryManager(
        agent_id="ada",
        settings=settings,
        compaction_settings=CompactionSettings(
            retry_initial_wait=0.01, retry_max_wait=0.02, max_attempts=2
        ),
    )
    memory.create_block("projects/alpha.md", "Alpha ships in May.", in_prompt=False)
    for number in range(30):
        memory.store_message("user", f"Question {number} about the alpha launch")
        memory.store_message("assistant", f"Answer {number}")
    server.enqueue(text_response("The user asked thirty questions about the alpha launch."))
    assert memory.compact_history().status == "compacted"
    memory.store_message(
        "result",
        "done",
        message_type="result",
        in_context=False,
        session_id="s1",
        metadata={
            "usage": {
                "input_tokens": 1200,
                "cache_read_input_tokens": 900,
                "cache_creation_input_tokens": 40,
                "output_tokens": 55,
            },
            "total_cost_usd": 0.0123,
        },
    )
    memory.archival_memory_insert("The launch of project alpha moved to May.", tags=["alpha"])
    memory.archival_memory_insert("Bob prefers tea over coffee.", importance=0.9)
    yield memory
    memory.close()


def test_the_agents_page_lists_each_agent_with_its_sizes(memory: MemoryManager) -> None:
    memory.archival_memory_insert("one passage")
    response = client_for(memory).get("/")
    assert response.status_code == 200 and data_page(response.text) == "agents"
    row = re.search(r'<tr data-agent="ada">(.*?)</tr>', response.text, re.S)
    assert row is not None
    numbers = re.findall(r'<td class="num">(\d+)</td>', row.group(1))
    assert numbers == [
        "5",
        "1",
        "0",
        "0",
    ]  # persona, human, projects/alpha.md, rules, team; 1 passage
    assert 'data-agent="bob"' in response.text
    assert "never" not in row.group(1)  # the journal gives ada a last activity


def test_the_memory_page_shows_the_tree_placement_fill_sharing_and_flags(
    memory: MemoryManager,
) -> None:
    response = client_for(memory).get("/agents/ada")
    assert response.status_code == 200 and data_page(response.text) == "memory"
    rows = dict(
        re.findall(r'<tr class="block" data-label="([^"]+)">(.*?)</tr>', response.text, re.S)
    )
    assert set(rows) == {"persona", "human", "projects/alpha.md", "rules", "team"}
    assert "on demand" in rows["projects/alpha.md"] and "in prompt" in rows["rules"]
    assert (
        '<tr class="dir"><td class="name depth-0" colspan="6">projects/</td></tr>' in response.text
    )
    length = len("Alpha ships in May.\nOwner: Dana.")
    assert (
        f'value="{length}"' in rows["projects/alpha.md"]
        and f"{length}/" in rows["projects/alpha.md"]
    )
    assert "bob" in rows["team"] and "bob" not in rows["rules"]
    assert "read-only" in rows["rules"] and "read-only" not in rows["persona"]


def test_the_block_page_shows_the_value_in_a_form_and_diffs_between_versions(
    memory: MemoryManager,
) -> None:
    memory.update_block(
        "projects/alpha.md", value="Alpha ships in June.\nOwner: Dana.", agent_id="ada"
    )
    response = client_for(memory).get("/agents/ada/blocks/projects/alpha.md")
    assert response.status_code == 200 and data_page(response.text) == "block"
    assert 'data-form="edit"' in response.text and 'data-form="undo"' in response.text
    assert 'data-form="placement"' in response.text
    assert 'name="expected_version" value="2"' in response.text
    assert '<span class="del">-Alpha ships in May.</span>' in response.text
    assert '<span class="add">+Alpha ships in June.</span>' in response.text
    assert re.findall(r'data-version="(\d+)"', response.text) == ["2", "1"]


def test_the_journal_is_a_timeline_filtered_by_author(memory: MemoryManager) -> None:
    memory.execute_tool(
        "core_memory_append", {"label": "human", "content": "Likes tea."}, agent_id="ada"
    )
    client = client_for(memory)
    everyone = client.get("/agents/ada/journal")
    assert everyone.status_code == 200 and data_page(everyone.text) == "journal"
    kinds = set(re.findall(r'data-author-kind="([a-z]*)"', everyone.text))
    assert {"model", "person"} <= kinds
    models = client.get("/agents/ada/journal?author_kind=model")
    assert set(re.findall(r'data-author-kind="([a-z]*)"', models.text)) == {"model"}
    assert (
        '<span class="add">+Likes tea.</span>' in models.text
    )  # the change as a diff of old and new
    wrong = client.get("/agents/ada/journal?author_kind=robot")
    assert wrong.status_code == 400 and "author_kind" in error_line(wrong.text)


def test_the_conversation_shows_the_summary_where_it_replaced_messages(
    talked: MemoryManager,
) -> None:
    summary = talked.get_summary_record(agent_id="ada")
    assert summary is not None and summary.last_message_id is not None
    response = client_for(talked).get("/agents/ada/conversation")
    assert response.status_code == 200 and data_page(response.text) == "conversation"
    order = re.findall(r'data-(message|summary)-id="(\d+)"', response.text)
    position = order.index(("summary", str(summary.summary_id)))
    assert order[position - 1] == ("message", str(summary.last_message_id))
    assert "thirty questions" in response.text
    compacted = re.findall(
        r'class="message role-\w+ compacted" data-message-id="(\d+)"', response.text
    )
    assert compacted and all(int(each) <= summary.last_message_id for each in compacted)


def test_search_shows_every_hit_with_its_signal_scores(talked: MemoryManager) -> None:
    client = client_for(talked)
    for mode in ("keyword", "vector", "hybrid", "scored"):
        response = client.get(f"/agents/ada/search?q=alpha+launch&mode={mode}")
        assert response.status_code == 200 and data_page(response.text) == "search", mode
        hits = re.findall(
            r'<li class="hit" data-passage-id="([^"]+)">(.*?)</li>', response.text, re.S
        )
        assert hits, mode
        assert "project alpha" in hits[0][1]
        assert "<th>keyword rank</th>" in hits[0][1] and "<th>similarity</th>" in hits[0][1]
        assert 'data-form="delete"' in hits[0][1]
    keyword = client.get("/agents/ada/search?q=alpha&mode=keyword").text
    assert re.search(r"<th>keyword rank</th><td>1</td>", keyword)
    browse = client.get("/agents/ada/search")
    assert browse.text.count('class="passage"') == 2 and "Bob prefers tea" in browse.text
    bad = client.get("/agents/ada/search?q=x&mode=psychic")
    assert bad.status_code == 400 and "search mode" in error_line(bad.text)


def test_the_prompt_page_shows_the_exact_system_text_and_its_tokens(talked: MemoryManager) -> None:
    talked.set_base_system_prompt("You are Ada.", agent_id="ada")
    expected = "You are Ada.\n\n" + talked.get_system_prompt_addition(
        agent_id="ada", mark_seen=False
    )
    response = client_for(talked).get("/agents/ada/prompt")
    assert response.status_code == 200 and data_page(response.text) == "prompt"
    shown = re.search(r'<pre class="prompt">(.*?)</pre>', response.text, re.S)
    assert shown is not None and html.unescape(shown.group(1)) == expected
    tokens = re.search(r'<strong class="tokens">(\d+)</strong>', response.text)
    assert tokens is not None and int(tokens.group(1)) == talked.compactor.count_text(expected)


def test_the_metrics_page_shows_recorded_usage_and_compactions(talked: MemoryManager) -> None:
    response = client_for(talked).get("/agents/ada/metrics")
    assert response.status_code == 200 and data_page(response.text) == "metrics"
    turns = re.search(r'<table class="turns">(.*?)</table>', response.text, re.S)
    assert turns is not None
    assert re.findall(r'<td class="num">([^<]*)</td>', turns.group(1)) == [
        "1200",
        "40",
        "900",
        "55",
        "0.0123",
    ]
    compactions = re.search(r'<table class="compactions">(.*?)</table>', response.text, re.S)
    summary = talked.get_summary_record(agent_id="ada")
    assert compactions is not None and summary is not None and summary.tokens_before is not None
    assert f'<td class="num">{summary.tokens_before}</td>' in compactions.group(1)
    assert 'class="muted not-recorded"' in response.text


def test_unknown_agents_blocks_and_pages_are_404_pages(memory: MemoryManager) -> None:
    client = client_for(memory)
    for path in (
        "/agents/nobody",
        "/agents/nobody/journal",
        "/agents/ada/blocks/missing",
        "/nowhere",
        "/agents/nobody/search?q=x",
        "/agents/nobody/prompt",
        "/agents/nobody/metrics",
        "/agents/nobody/conversation",
        "/agents/nobody/blocks/persona",
    ):
        response = client.get(path)
        assert response.status_code == 404, path
        assert data_page(response.text) == "error" and error_line(response.text), path


def test_secret_memory_shows_only_at_the_inspectors_secret_clearance(memory: MemoryManager) -> None:
    memory.create_block("diary", "Secret diary entry", sensitivity="secret")
    memory.archival_memory_insert("The safe combination is 4-8-15", sensitivity="secret")
    default = client_for(memory)
    assert 'data-label="diary"' not in default.get("/agents/ada").text
    assert default.get("/agents/ada/blocks/diary").status_code == 404
    assert "4-8-15" not in default.get("/agents/ada/search", params={"q": "safe combination"}).text
    cleared = client_for(memory, clearance="secret")
    assert 'data-label="diary"' in cleared.get("/agents/ada").text
    assert "4-8-15" in cleared.get("/agents/ada/search", params={"q": "safe combination"}).text


def test_searching_in_the_inspector_leaves_access_counts_alone(memory: MemoryManager) -> None:
    passage_id = memory.archival_memory_insert("Bob prefers tea over coffee.")
    hits = client_for(memory).get("/agents/ada/search", params={"q": "tea", "mode": "keyword"})
    assert f'data-passage-id="{passage_id}"' in hits.text
    stored = memory.archival_memory_get(passage_id)
    assert stored is not None and stored.access_count == 0 and stored.last_accessed_at is None
