"""Sentence vectors: a short passage of several sentences is also embedded sentence by sentence.

One vector of a whole turn ("Caroline: I went to a support group yesterday. It was so powerful.
The transgender stories were inspiring.") averages several facts, and a question about one of
them finds it less well than a vector of that sentence alone. So each sentence of a short passage
gets a vector too, stored as a further chunk of the passage (`chunks.py`): the passage's vector
score is still its best chunk's, and a hit still shows the whole passage.

A bare sentence loses who it is about ("It was so powerful."), and on LoCoMo bare sentence vectors
made hybrid search worse. So when a passage begins with a label ("Caroline: ...": one to four
capitalised words and a colon), every sentence is written with that label in front. The rule knows
nothing of speakers: any leading label is kept, and a passage without one is split bare.

Measured leave-one-conversation-out on the LoCoMo dev conversations (`bench/ranking_candidates.py`,
docs/ranking.md), with reply links (`links.py`): hybrid − keyword +0.065 / +0.053 / +0.057 at
k = 5 / 10 / 20, against +0.024 / +0.033 / +0.027 without both. What it costs: about one more
vector per sentence of a short passage, embedding CPU about a third more on dialogue turns.

Only short passages are split (at most MAX_SENTENCE_SOURCE characters and MAX_SENTENCES
sentences): a document's facts are already spread over window chunks, and splitting it would
multiply its vectors.
"""

from __future__ import annotations

import re

__all__ = ["MAX_SENTENCES", "MAX_SENTENCE_SOURCE", "sentence_texts"]

MAX_SENTENCE_SOURCE = 1_000
"""Longest passage (characters) that is split into sentences; LoCoMo's turns are at most 444."""
MAX_SENTENCES = 16
"""Most sentences a split passage may have; more, and it is left whole."""
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\[])")
"""A sentence ends at '.', '!' or '?' followed by space and a capital (or an opening bracket)."""
_LABEL = re.compile(r"([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,3}): (?=\S)")
"""A leading label: one to four capitalised words, a colon and a space ("Caroline: ...")."""


def sentence_texts(text: str) -> list[str]:
    """The texts embedded as a passage's sentence vectors, each prefixed with the passage's
    leading label when it has one; [] for a passage of one sentence, or one too long to split."""
    if len(text) > MAX_SENTENCE_SOURCE:
        return []
    match = _LABEL.match(text)
    label, body = (match.group(1), text[match.end() :]) if match else ("", text)
    parts = [part.strip() for part in _SENTENCE_END.split(body) if part.strip()]
    if not 2 <= len(parts) <= MAX_SENTENCES:
        return []
    return [f"{label}: {part}" for part in parts] if label else parts
