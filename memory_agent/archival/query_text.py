"""What text each index is asked with: the vector index reads a question's content words alone.

A sentence embedding of "What did Caroline research?" is pulled towards every other question-shaped
text by its function words ("what", "did"); the passages it should find are statements. Embedding
the content words alone ("Caroline research") moves the probe towards them. Measured on the LoCoMo
dev conversations (docs/ranking.md, `bench/ranking_candidates.py`), leave-one-conversation-out:
vector search alone gains +0.029 / +0.044 / +0.045 evidence recall at k = 5 / 10 / 20 (turns with
context; +0.046 / +0.040 / +0.051 on plain turns), and every fold chose it. In hybrid search it
does not help (-0.014 at k = 10: the keyword leg already carries the content words, and the whole
question adds a signal the fusion uses), so hybrid and scored searches embed the question as it is.

The keyword index is not affected: it drops the same stop words by itself (`store.fts`).
"""

from __future__ import annotations

import re

from ..store.fts import STOP_WORDS

__all__ = ["CONTENT_WORD_MODES", "vector_query_text"]

CONTENT_WORD_MODES: frozenset[str] = frozenset({"vector"})
"""Search modes whose vector probe is the query's content words (chosen leave-one-out)."""
_WORD = re.compile(r"\w+", re.UNICODE)


def vector_query_text(query: str, mode: str) -> str:
    """The text embedded for `query` in `mode`: its words minus stop words, in order, for the
    modes in CONTENT_WORD_MODES; the query unchanged otherwise, or when no content word is left
    (a query of stop words alone, or of punctuation, is embedded as written)."""
    if mode not in CONTENT_WORD_MODES:
        return query
    words = [word for word in _WORD.findall(query) if word.lower() not in STOP_WORDS]
    return " ".join(words) if words else query
