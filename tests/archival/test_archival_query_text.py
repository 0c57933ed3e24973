"""The text each index is asked with: vector search alone embeds the query's content words."""

from __future__ import annotations

import re

import pytest
from archival_helpers import HashEmbedding
from hypothesis import given
from hypothesis import strategies as st

from memory_agent.archival import ArchivalMemory, NewPassage, VectorConfig
from memory_agent.archival.query_text import CONTENT_WORD_MODES, vector_query_text
from memory_agent.store.database import Database
from memory_agent.store.fts import STOP_WORDS


def test_vector_mode_embeds_the_content_words_in_order() -> None:
    assert vector_query_text("What did Caroline research?", "vector") == "Caroline research"
    assert vector_query_text("When is Mel's 5th trip to Paris", "vector") == "Mel 5th trip Paris"


@pytest.mark.parametrize("mode", ["hybrid", "scored", "keyword"])
def test_other_modes_embed_the_query_as_written(mode: str) -> None:
    assert mode not in CONTENT_WORD_MODES
    assert vector_query_text("What did Caroline research?", mode) == "What did Caroline research?"


@pytest.mark.parametrize("query", ["what is it", "?!", "", "   "])
def test_a_query_without_content_words_is_embedded_as_written(query: str) -> None:
    assert vector_query_text(query, "vector") == query


@given(st.text(max_size=200))
def test_content_words_are_the_query_words_minus_stop_words(query: str) -> None:
    probe = vector_query_text(query, "vector")
    words = re.findall(r"\w+", query)
    kept = [word for word in words if word.lower() not in STOP_WORDS]
    if kept:
        assert probe.split(" ") == kept
    else:
        assert probe == query


class RecordingEmbedding(HashEmbedding):
    """The hashing embedding, remembering every text it was asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def __call__(self, input):  # type: ignore[no-untyped-def, override]
        self.seen.extend(input)
        return super().__call__(input)


@pytest.mark.usefixtures("backend")
def test_vector_search_probes_with_content_words_and_hybrid_with_the_question(
    db: Database, chroma_config: VectorConfig
) -> None:
    embedding = RecordingEmbedding()
    archival = ArchivalMemory(db, chroma_config, embedding)
    archival.insert_many("alice", [NewPassage("Caroline researched adoption agencies.")])
    question = "What did Caroline research?"
    embedding.seen.clear()
    hits = archival.search("alice", question, mode="vector")
    assert embedding.seen == ["Caroline research"]
    assert [hit.content for hit in hits] == ["Caroline researched adoption agencies."]
    embedding.seen.clear()
    archival.search("alice", question, mode="hybrid")
    assert embedding.seen == [question]
