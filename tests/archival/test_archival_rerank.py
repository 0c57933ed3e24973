"""The optional rerank stage of hybrid search, against the scripted Messages API server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from archival_helpers import HashEmbedding

from memory_agent import MemoryManager, Settings
from memory_agent.archival import ArchivalMemory, InMemoryVectorStore
from memory_agent.archival.rerank import AnthropicReranker
from memory_agent.testing import ScriptedMessagesServer
from memory_agent.testing.responses import error_response, text_response

NOTES = [
    "Ada's sister lives in Lisbon near the river.",
    "Ada visited Lisbon in 2019 for a wedding.",
    "Ada's brother moved to Porto.",
    "Lisbon trams are yellow.",
]

pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture
def server() -> Iterator[ScriptedMessagesServer]:
    with ScriptedMessagesServer(is_auxiliary=lambda request: False) as running:
        yield running


def _archival(
    manager: MemoryManager, server: ScriptedMessagesServer
) -> tuple[ArchivalMemory, dict[str, str]]:
    reranker = AnthropicReranker("cheap-model", api_key="test-key", base_url=server.url, depth=3)
    archival = ArchivalMemory(
        manager.db,
        embedding_function=HashEmbedding(),
        vector_store=InMemoryVectorStore(),
        reranker=reranker,
    )
    ids = {note: archival.insert("alice", note) for note in NOTES}
    return archival, ids


def test_the_model_reorders_the_fused_head(
    manager: MemoryManager, server: ScriptedMessagesServer
) -> None:
    archival, _ = _archival(manager, server)
    fused = [
        hit.content
        for hit in ArchivalMemory(
            manager.db,
            embedding_function=HashEmbedding(),
            vector_store=archival.index.store,
        ).search("alice", "Lisbon sister", limit=4)
    ]
    server.enqueue(text_response("3, 1"), model="cheap-model")
    hits = archival.search("alice", "Lisbon sister", limit=4)
    # The model named candidates 3 and 1; 2 keeps its place after them; the 4th was never sent.
    assert [hit.content for hit in hits] == [fused[2], fused[0], fused[1], fused[3]]
    [request] = server.message_requests()
    assert request.body["model"] == "cheap-model"
    sent = request.body["messages"][0]["content"]
    assert "Query: Lisbon sister" in sent and all(
        f"[{n}] {fused[n - 1]}" in sent for n in (1, 2, 3)
    )
    assert fused[3] not in sent
    assert "test-key" not in repr(archival.reranker)


def test_a_failed_or_useless_answer_keeps_the_fused_order(
    manager: MemoryManager, server: ScriptedMessagesServer
) -> None:
    archival, _ = _archival(manager, server)
    server.enqueue(text_response("none of them"), model="cheap-model")
    first = archival.search("alice", "Lisbon sister", limit=4)
    server.enqueue(error_response(400), model="cheap-model")
    second = archival.search("alice", "Lisbon sister", limit=4)
    plain = ArchivalMemory(
        manager.db, embedding_function=HashEmbedding(), vector_store=archival.index.store
    ).search("alice", "Lisbon sister", limit=4)
    assert (
        [h.passage_id for h in first]
        == [h.passage_id for h in second]
        == [h.passage_id for h in plain]
    )
    assert len(server.message_requests()) == 2
    assert archival.search("alice", "Lisbon", mode="keyword")  # other modes never call the model
    assert len(server.message_requests()) == 2


def test_the_setting_switches_it_on_for_the_manager(
    tmp_path: Path, server: ScriptedMessagesServer
) -> None:
    settings = Settings(
        persist_directory=tmp_path,
        archival_rerank_model="cheap-model",
        anthropic_api_key="test-key",
        anthropic_base_url=server.url,
        database_url=os.environ.get("MEMORY_DATABASE_URL"),
    )
    with MemoryManager(
        agent_id="ada",
        settings=settings,
        embedding_function=HashEmbedding(),
        vector_store=InMemoryVectorStore(),
    ) as memory:
        for note in NOTES:
            memory.archival_memory_insert(note)
        server.enqueue(text_response("4"), model="cheap-model")
        hits = memory.archival_memory_search("Lisbon trams", limit=2)
        assert len(server.message_requests()) == 1 and len(hits) == 2
    assert Settings.from_env({}, env_file=None).archival_rerank_model is None
    assert (
        Settings.from_env({"ARCHIVAL_RERANK_MODEL": "m"}, env_file=None).archival_rerank_model
        == "m"
    )
