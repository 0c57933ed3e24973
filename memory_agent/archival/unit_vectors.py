"""Vectors scaled to unit length, so that a dot product is their cosine similarity.

One place for it: consolidation compares passages this way, and the Chroma store ranks records
this way when its index answers short. A zero vector stays zero (its similarity to anything is 0).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["unit_rows"]


def unit_rows(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    """Each row scaled to length 1 (float64); an empty input gives a 0 x 0 array."""
    matrix = np.asarray(vectors, dtype=np.float64)
    if matrix.size == 0:
        return np.zeros((0, 0))
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.asarray(matrix / np.where(norms == 0, 1.0, norms))
