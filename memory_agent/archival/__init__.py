"""Archival memory: passages in SQLite (FTS5) and their vectors in Chroma, searched hybrid.

Importing this package is cheap: chromadb, onnxruntime and the tokenizer are imported when
archival memory first needs vectors. `MiniLMEmbeddingFunction` and `bundled_model_path` are
re-exported lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .archive import ArchivalMemory
from .chroma_store import ChromaVectorStore
from .config import VectorConfig
from .filters import PassageFilter
from .fusion import FusionConfig
from .memory_store import InMemoryVectorStore
from .passages import NewPassage, Passage, SearchHit
from .reconcile import ReconcileReport
from .scoring import ScoringConfig, SearchExplanation
from .vector_store import VectorMatch, VectorRecord, VectorStore

if TYPE_CHECKING:
    from .embeddings import MiniLMEmbeddingFunction, bundled_model_path

__all__ = [
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

_LAZY = {"MiniLMEmbeddingFunction", "bundled_model_path"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import embeddings

        return getattr(embeddings, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
