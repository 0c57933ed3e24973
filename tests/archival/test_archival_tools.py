"""The model-facing tools end to end through MemoryManager.execute_tool, and their result text."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from archival_helpers import FlakyVectorStore, HashEmbedding

from memory_agent import MemoryManager, Settings
from memory_agent.archival import ArchivalMemory, ChromaVectorStore, VectorConfig
from memory_agent.tools.archival import ARCHIVAL_TOOLS, format_archival_hits

pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[MemoryManager]:
    manager = MemoryManager(
        agent_id="alice",
        settings=Settings(
            persist_directory=tmp_path / "store", database_url=os.environ.get("MEMORY_DATABASE_URL")
        ),
        embedding_function=HashEmbedding(),
    )
    yield manager
    manager.close()


def run(memory: MemoryManager, name: str, **arguments: object) -> str:
    outcome = memory.execute_tool(name, arguments)
    assert not outcome.is_error, outcome.text
    return outcome.text


def test_tools_are_offered_to_the_model(memory: MemoryManager) -> None:
    names = [tool["name"] for tool in memory.get_tools_definitions()]
    assert {"archival_memory_insert", "archival_memory_search", "conversation_search"} <= set(names)
    for spec in ARCHIVAL_TOOLS:
        schema = spec.definition()["input_schema"]
        assert (
            schema["required"] == ["content"]
            if spec.name == "archival_memory_insert"
            else ["query"]
        )
        assert spec.description and all("description" in p for p in schema["properties"].values())


def test_insert_then_search(memory: MemoryManager) -> None:
    inserted = run(
        memory, "archival_memory_insert", content="The user's dog is called Biscuit.", tags=["pets"]
    )
    passage_id = inserted.split(" as ")[1].split()[0]
    assert passage_id.startswith("passage-") and "pets" in inserted
    found = run(memory, "archival_memory_search", query="dog's name")
    assert "Biscuit" in found and passage_id in found and "tags: pets" in found
    assert "No passages" in run(memory, "archival_memory_search", query="dog", tags=["work"])


def test_search_pages(memory: MemoryManager) -> None:
    for n in range(7):
        memory.archival_memory_insert(f"meeting note number {n}")
    first = run(memory, "archival_memory_search", query="meeting note", limit=5)
    second = run(memory, "archival_memory_search", query="meeting note", limit=5, page=1)
    assert "(1-5, page 0)" in first and "page=1" in first
    assert "(6-7, page 1)" in second and "page=2" not in second
    assert "No passages on this page" in run(
        memory, "archival_memory_search", query="meeting note", page=3
    )


def test_pages_past_the_ranked_matches_answer_plainly(memory: MemoryManager) -> None:
    """The schema allows page 20 with limit 50; search ranks at most 1000 matches, so that page says
    so in the page and limit the model sent (no error about a limit it never sent)."""
    memory.archival_memory_insert("Ada lives in Lisbon.")
    beyond = run(memory, "archival_memory_search", query="Ada", limit=50, page=20)
    assert (
        "page 20 (limit 50)" in beyond
        and "starts at result 1001" in beyond
        and "1050" not in beyond
    )
    last = run(memory, "archival_memory_search", query="Ada", limit=1, page=999)
    assert "No passages on this page" in last


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("archival_memory_insert", {"content": ""}, "empty"),
        (
            "archival_memory_insert",
            {"content": "x", "tags": [3]},
            "'tags' must be a list of strings",
        ),
        (
            "conversation_search",
            {"query": "x", "roles": ["user", 1]},
            "'roles' must be a list of strings",
        ),
        ("archival_memory_search", {"query": "x", "limit": 500}, "limit"),
        ("archival_memory_search", {"query": "x", "page": -1}, "page"),
        ("archival_memory_search", {"query": "x", "start_date": "yesterday"}, "not a date"),
        ("archival_memory_search", {"query": "x", "mode": "vector"}, "does not take mode"),
        ("conversation_search", {"query": "x", "end_date": "soon"}, "not a date"),
    ],
)
def test_bad_arguments_come_back_as_tool_errors(
    memory: MemoryManager, name: str, arguments: dict, message: str
) -> None:
    outcome = memory.execute_tool(name, arguments)
    assert outcome.is_error and message in outcome.text


def test_conversation_search_finds_compacted_messages_too(memory: MemoryManager) -> None:
    old = memory.store_message("user", "My passport number ends in 4471.")
    memory.store_message("assistant", "Noted, I will keep the passport detail in mind.")
    memory.recall.add_summary(
        "alice",
        "User shared passport info.",
        first_message_id=old.message_id,
        last_message_id=old.message_id,
        model="test",
        tokens_before=10,
        tokens_after=2,
    )
    memory.store_message("user", "Now let's talk about the weather.")
    found = run(memory, "conversation_search", query="passport")
    assert "4471" in found and "(summarised out of context)" in found
    only_assistant = run(memory, "conversation_search", query="passport", roles=["assistant"])
    assert "4471" not in only_assistant and "Noted" in only_assistant
    today = old.created_at[:10]
    assert "4471" in run(
        memory, "conversation_search", query="passport", start_date=today, end_date=today
    )
    assert "No messages" in run(
        memory, "conversation_search", query="passport", end_date="2000-01-01"
    )
    assert "weather" in run(memory, "conversation_search", query="", limit=1)


def test_conversation_search_takes_a_mode(memory: MemoryManager) -> None:
    schema = next(s for s in ARCHIVAL_TOOLS if s.name == "conversation_search").definition()
    assert schema["input_schema"]["properties"]["mode"]["enum"] == ["hybrid", "keyword", "vector"]
    memory.store_message("user", "The spare key is under the blue flowerpot.")
    memory.store_message("user", "We talked about the weather today.")
    for mode in ("hybrid", "keyword", "vector"):
        assert "flowerpot" in run(memory, "conversation_search", query="spare key", mode=mode)
    outcome = memory.execute_tool("conversation_search", {"query": "key", "mode": "semantic"})
    assert outcome.is_error and "Unknown conversation search mode 'semantic'" in outcome.text


def test_manager_opens_archival_lazily_and_reconciles_on_first_use(tmp_path: Path) -> None:
    settings = Settings(
        persist_directory=tmp_path / "store", database_url=os.environ.get("MEMORY_DATABASE_URL")
    )
    with MemoryManager(
        agent_id="alice", settings=settings, embedding_function=HashEmbedding()
    ) as memory:
        # A previous run whose vector writes all failed left pending passages behind.
        config = VectorConfig.from_settings(settings)
        down = FlakyVectorStore(ChromaVectorStore(config, "unused"), failing=["upsert"])
        ArchivalMemory(memory.db, config, HashEmbedding(), vector_store=down).insert(
            "alice", "left pending"
        )
        assert not config.path.exists()
        assert memory.archival.pending_count() == 0
        assert memory.search_archival_hybrid("left pending")[0].content == "left pending"


def test_hybrid_setting_off_means_keyword_search(tmp_path: Path) -> None:
    settings = Settings(
        persist_directory=tmp_path / "store",
        memory_hybrid_search=False,
        database_url=os.environ.get("MEMORY_DATABASE_URL"),
    )
    with MemoryManager(
        agent_id="alice", settings=settings, embedding_function=HashEmbedding()
    ) as memory:
        memory.archival_memory_insert("keyword only please")
        hit = memory.archival_memory_search("keyword")[0]
        assert hit.keyword_rank == 1 and hit.vector_rank is None


def test_long_passages_are_clipped_in_results(memory: MemoryManager) -> None:
    memory.archival_memory_insert("start " + "x" * 5000)
    hits = memory.archival_memory_search("start")
    text = format_archival_hits("start", hits)
    assert "[clipped, 5006 characters in all]" in text and len(text) < 2500
