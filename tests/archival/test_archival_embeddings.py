"""The default embedding function: offline MiniLM, lazy, batched, a real Chroma EmbeddingFunction;
and archival memory importing neither chromadb nor torch until it is used."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from chromadb.api.types import EmbeddingFunction

from memory_agent.archival import ArchivalMemory, MiniLMEmbeddingFunction, bundled_model_path
from memory_agent.archival.config import collection_prefix_for


def test_model_ships_with_the_installed_package() -> None:
    path = bundled_model_path()
    assert (path / "config.json").is_file() and (path / "model.safetensors").is_file()


def test_construction_loads_nothing() -> None:
    function = MiniLMEmbeddingFunction()
    assert not function.is_loaded
    assert isinstance(function, EmbeddingFunction)
    assert MiniLMEmbeddingFunction.build_from_config(function.get_config()).get_config() == function.get_config()
    assert collection_prefix_for(function) == "archival_all-MiniLM-L6-v2"


def test_batch_embeddings_are_unit_vectors_of_384_dimensions(minilm: MiniLMEmbeddingFunction) -> None:
    vectors = minilm(["The cat sat on the mat.", "A kitten rested on the rug.", "Stock prices fell sharply."])
    assert len(vectors) == 3 and all(np.asarray(v).shape == (384,) for v in vectors)
    assert all(np.linalg.norm(v) == pytest.approx(1.0, abs=1e-4) for v in vectors)
    similar, unrelated = float(np.dot(vectors[0], vectors[1])), float(np.dot(vectors[0], vectors[2]))
    assert similar > unrelated + 0.3


def test_query_embedding_matches_document_embedding(minilm: MiniLMEmbeddingFunction) -> None:
    document = minilm(["hello world"])[0]
    query = minilm.embed_query(["hello world"])[0]
    assert np.allclose(document, query, atol=1e-5)


def test_importing_archival_memory_imports_no_heavy_package() -> None:
    code = (
        "import sys, memory_agent.archival\n"
        "heavy = [m for m in ('chromadb', 'torch', 'sentence_transformers', 'numpy') if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_constructing_archival_memory_opens_nothing(db, chroma_config) -> None:  # type: ignore[no-untyped-def]
    archival = ArchivalMemory(db, chroma_config)
    assert archival.index._store is None and archival.index._embedding_function is None
    assert not chroma_config.path.exists()
    assert archival.search("alice", "", limit=1) == []  # a blank query needs neither
