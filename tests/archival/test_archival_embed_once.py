"""Each passage is embedded once, also by the first write of a process: opening the vector store
runs checks that embed pending passages, which used to include the very passages being written."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from memory_agent import MemoryManager, Settings
from memory_agent.archival import MiniLMEmbeddingFunction

pytestmark = pytest.mark.usefixtures("backend")


class CountingMiniLM(MiniLMEmbeddingFunction):
    """The shipped model (its loaded session is shared), counting each text it embeds whole."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: Counter[str] = Counter()

    def embed_chunks(self, texts: list[str]) -> list[list[np.ndarray]]:
        self.texts.update(texts)
        return super().embed_chunks(texts)


def _settings(storage: Path) -> Settings:
    return Settings(persist_directory=storage, database_url=os.environ.get("MEMORY_DATABASE_URL"))


NEW = ["Ada keeps bees on the roof.", "The bees swarmed in May.", "Honey is sold on Fridays."]


def test_the_first_insert_of_a_process_embeds_each_passage_once(
    storage: Path, minilm: MiniLMEmbeddingFunction
) -> None:
    del minilm  # loaded once per session, shared with the counting copy
    counting = CountingMiniLM()
    with MemoryManager(
        agent_id="ada", settings=_settings(storage), embedding_function=counting
    ) as memory:
        ids = memory.archival_memory_insert_many(NEW)
        assert [counting.texts[text] for text in NEW] == [1, 1, 1], counting.texts
        passages = [memory.archival.get("ada", passage_id) for passage_id in ids]
        assert [p and p.vector_state for p in passages] == ["indexed"] * 3
        found = memory.archival_memory_search("who keeps bees?", mode="vector")
        assert found and found[0].passage_id == ids[0]


def test_passages_left_pending_are_embedded_once_when_a_process_opens_them(
    storage: Path, minilm: MiniLMEmbeddingFunction
) -> None:
    with MemoryManager(
        agent_id="ada", settings=_settings(storage), embedding_function=minilm
    ) as memory:
        ids = memory.archival_memory_insert_many(NEW)
        with memory.db.transaction() as conn:  # as a crash before the vectors leaves them
            conn.execute("UPDATE passages SET vector_state = 'pending'")
    counting = CountingMiniLM()
    with MemoryManager(
        agent_id="ada", settings=_settings(storage), embedding_function=counting
    ) as memory:
        assert memory.archival.pending_count("ada") == 0
        assert [counting.texts[text] for text in NEW] == [1, 1, 1], counting.texts
        assert memory.archival_memory_search("honey", mode="vector")[0].passage_id == ids[2]
