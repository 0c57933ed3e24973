"""The public names of memory_agent.archival are pinned: changing them is a deliberate act."""

from __future__ import annotations

import memory_agent.archival as archival
from memory_agent.tools import archival as tool_specs


def test_package_exports() -> None:
    assert sorted(archival.__all__) == [
        "ArchivalMemory",
        "ChromaVectorStore",
        "FusionConfig",
        "InMemoryVectorStore",
        "MiniLMEmbeddingFunction",
        "NewPassage",
        "Passage",
        "PassageFilter",
        "ReconcileReport",
        "ScoringConfig",
        "SearchExplanation",
        "SearchHit",
        "VectorConfig",
        "VectorMatch",
        "VectorRecord",
        "VectorStore",
        "bundled_model_path",
    ]
    for name in archival.__all__:
        assert getattr(archival, name) is not None


def test_tool_spec_exports() -> None:
    assert sorted(tool_specs.__all__) == [
        "ARCHIVAL_TOOLS",
        "MAX_TOOL_RESULTS",
        "format_archival_hits",
        "format_explanation",
        "format_inserted",
        "format_messages",
    ]
    assert [spec.name for spec in tool_specs.ARCHIVAL_TOOLS] == [
        "archival_memory_insert",
        "archival_memory_search",
        "conversation_search",
    ]
