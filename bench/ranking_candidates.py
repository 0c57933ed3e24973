"""What could raise hybrid search above keyword search on LoCoMo: each candidate, leave-one-out.

`bench/archival_locomo.py` measures the shipped search and chooses its fusion setting; this script
measures the ideas tried on top of it (docs/ranking.md), each as a family of settings chosen
leave-one-conversation-out (the best on the other conversations by the mean of R@5, R@10, R@20,
categories 1-4, scored on the held-out one), so no figure is in sample:

- fusion: min-max or z-score, keyword weight 0.4-0.7, 50 or 100 candidates per index, RRF;
- depth: keyword and vector depth apart (20, 50, 100, every passage);
- calibration: the vector leg divided by its best score instead of min-max normalised;
- content words: the vector leg probed with the question's content words;
- chunk mean: a passage with context scored by the mean of its text and context vectors'
  similarities instead of the best of them (with the question or its content words);
- prf: pseudo-relevance feedback on the vector side (the probe moved towards the vectors of the
  keyword leg's top m hits, Rocchio-style);
- dynamic weight: the keyword weight raised with the gap between its two best scores;
- keyword rerank: the keyword leg's top N reordered by the fused score, nothing else added;
- keyword head: the keyword leg's best j kept in front of the fused ranking;
- sentence vectors: each turn of two or more sentences also embedded sentence by sentence
  ("Speaker: sentence", or the bare sentence), as further chunks of the passage (its vector
  score is still its best chunk's);
- mean vector: the normalised mean of the text and text-plus-context vectors as the passage's one
  vector (what a cosine index could store instead of the mean of two similarities);
- keyword expansion: each query word's nearest words of the store's own vocabulary (MiniLM vectors
  of single words) searched as a second keyword query, its bm25 added at a lower weight;
- neighbour spread: a passage's fused score raised by a share of its neighbours' (the turn
  before or after it), the candidates widened by those neighbours;
- learned fusion: a logistic regression on both legs' normalised scores and ranks (with or without
  the neighbours' fused scores), trained on the other conversations, its L2 penalty chosen by
  training on one of them and scoring the other.

Before the families it prints the ceiling a fusion of the two legs works under: the share of the
evidence in the keyword top k and top 2k, in the union of both legs' top k and top 2k, and in the
best k of the union of both legs' top 50 (any order), per conversation and pooled.

Every conversation's turns are stored as the product stores them with context at index time
('previous+date' context, extra vectors: docs/context-at-index-time.md), keyword rankings are read
from the real search, and vector similarities are computed exactly from the same MiniLM vectors
(checked against the live vector index). Fusion is recomputed here with array arithmetic: the
shipped fusion's ranking is checked against `fusion.fuse` on every question.

    python bench/ranking_candidates.py [--data DIR] [--embedding-cache FILE] [--quick]
"""

from __future__ import annotations

import argparse
import pickle
import re
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from archival_locomo import (  # noqa: E402
    CONTEXTS,
    DEFAULT_DATA,
    KS,
    QUICK_ROUNDS,
    CachedEmbedding,
    Conversation,
    Result,
    load_conversation,
    loo_quick_slice,
    objective,
    paired_bootstrap,
)

from memory_agent import MemoryManager, Settings  # noqa: E402
from memory_agent.archival import ArchivalMemory, NewPassage, VectorConfig  # noqa: E402
from memory_agent.archival.filters import PassageFilter  # noqa: E402
from memory_agent.archival.fusion import DEFAULT_DEPTH, FusionConfig, fuse  # noqa: E402
from memory_agent.archival.links import context_heads  # noqa: E402
from memory_agent.archival.passages import indexed_text  # noqa: E402
from memory_agent.archival.query_text import vector_query_text  # noqa: E402
from memory_agent.archival.sentences import sentence_texts  # noqa: E402
from memory_agent.store.fts import STOP_WORDS, query_tokens  # noqa: E402

CONTEXT = "previous+date"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\[])")
_WORD = re.compile(r"\w+")
EXPANSIONS = ((1, 0.6), (3, 0.6), (1, 0.7), (3, 0.7))
"""(nearest words per query word, least cosine) of the keyword expansion family."""


def sentences_of(text: str, speaker: bool = True) -> list[str]:
    """A stored turn's sentences (an image caption is one more), each as "Speaker: sentence" with
    `speaker`, else bare; [] for a turn of one sentence, whose sentence vector would be its own
    text's."""
    name, _, body = text.partition(": ")
    body, _, caption = body.partition(" [shares an image: ")
    parts = [part for part in _SENTENCE_END.split(body) if part.strip()]
    if caption:
        parts.append("shares an image: " + caption.rstrip("]"))
    if len(parts) < 2:
        return []
    return [f"{name}: {part}" for part in parts] if speaker else parts


FIELD_WEIGHTS = (0.25, 0.5, 0.75, 1.0, 1.5)
"""Weights of the context column (the text column weighs 1) the field-weight family tries."""


def labelled_sentences(text: str) -> list[str]:
    """The generic form of `sentences_of`, for any passage, as the product embeds it
    (`archival/sentences.py`): its sentences, each prefixed with the passage's leading label when
    it has one (nothing about speakers or image captions); [] for a passage of one sentence."""
    return sentence_texts(text)


def context_links(texts: Sequence[str], contexts: Sequence[str]) -> np.ndarray:
    """Per passage, the passage its context names as an insert finds it (`archival/links.py`: the
    longest passage whose whole text begins the context and is at least half of it; -1 for none).
    Read from the texts alone: a conversation turn stored with the turn it answers as context
    points at that turn, whatever the order the two were stored in."""
    where = {text: i for i, text in reversed(list(enumerate(texts)))}
    links = np.full(len(texts), -1, dtype=int)
    for i, context in enumerate(contexts):
        named = [where[head] for head in context_heads(context) if where.get(head, i) != i]
        if named:
            links[i] = named[0]
    return links


@dataclass
class Question:
    category: int
    evidence: np.ndarray
    keyword: np.ndarray
    """Passage indices of the keyword ranking, best first (every passage that matched)."""
    keyword_scores: np.ndarray
    sims: dict[str, np.ndarray]
    """Vector similarity of every passage, per way of computing it."""
    bm25: np.ndarray
    """The keyword query's bm25 of every passage (0 where it does not match), from a replica of
    the keyword index."""
    expansion: dict[tuple[int, float], np.ndarray]
    """bm25 of every passage for the expansion words alone, per EXPANSIONS setting."""
    fields: dict[float, np.ndarray] = field(default_factory=dict)
    """bm25 of every passage with text and context as two columns, per weight of the context
    column (FIELD_WEIGHTS; the text column weighs 1)."""


@dataclass
class Corpus:
    name: str
    questions: list[Question]
    own: np.ndarray
    with_context: np.ndarray
    sentence_vectors: int
    replica_agrees: int
    links: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    """Per passage, the passage whose whole text makes up most of its context (-1: none):
    `context_links`, no use of the order passages were stored in."""


def _unit(rows: Any) -> np.ndarray:
    matrix = np.asarray(rows, dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=-1, keepdims=True)


def gather(
    conversations: Sequence[Conversation], embedding: CachedEmbedding, scratch: Path
) -> tuple[list[Corpus], list[str]]:
    """Store each conversation as the product does; read keyword rankings; compute vectors."""
    corpora, checks = [], []
    settings = Settings(persist_directory=scratch)
    with MemoryManager(agent_id="bench", settings=settings) as memory:
        archival = ArchivalMemory(memory.db, VectorConfig(path=scratch / "chroma"), embedding)
        for conversation in conversations:
            agent_id = f"locomo-{conversation.name}"
            memory.ensure_agent(agent_id)
            turns = conversation.turns
            contexts = [CONTEXTS[CONTEXT](turns, i) for i in range(len(turns))]
            archival.insert_many(
                agent_id,
                [
                    NewPassage(t.text, metadata={"dia_id": t.dia_id}, created_at=t.when, context=c)
                    for t, c in zip(turns, contexts, strict=True)
                ],
            )
            position = {t.dia_id: i for i, t in enumerate(turns)}
            by_id = {
                p.passage_id: position[p.metadata["dia_id"]]
                for p in archival.list(agent_id, limit=1_000_000)
            }
            indexed = [indexed_text(t.text, c) for t, c in zip(turns, contexts, strict=True)]
            own = _unit(embedding([t.text for t in turns]))
            with_context = _unit(embedding(indexed))
            mean_vector = _unit(own + with_context)
            split = [sentences_of(t.text) for t in turns]
            owner = np.array([i for i, parts in enumerate(split) for _ in parts], dtype=int)
            sentences = _unit(embedding([part for parts in split for part in parts]))
            bare = _unit(embedding([p for t in turns for p in sentences_of(t.text, speaker=False)]))
            generic = [labelled_sentences(t.text) for t in turns]
            labelled_owner = np.array(
                [i for i, parts in enumerate(generic) for _ in parts], dtype=int
            )
            labelled = _unit(embedding([part for parts in generic for part in parts]))
            split_any = np.array([bool(parts) for parts in generic])
            long_turn = np.array([len(parts) >= 3 for parts in generic])
            replica = KeywordReplica(indexed, embedding)
            columns = FieldReplica([t.text for t in turns], contexts)
            links = context_links([t.text for t in turns], contexts)
            texts = [q.text for q in conversation.questions]
            probes = _unit(embedding(texts))
            content = _unit(embedding([vector_query_text(text, "vector") for text in texts]))
            questions, agree, same_keyword = [], 0, 0
            everything = PassageFilter.build(agent_id)
            for q, probe, words in zip(conversation.questions, probes, content, strict=True):
                hits = archival.search(agent_id, q.text, limit=1000, mode="keyword")
                live = [by_id[m.passage_id] for m in archival.index.query(q.text, everything, 10)]
                best = np.maximum(own @ probe, with_context @ probe)
                stored = np.maximum(best, _best_of(labelled @ probe, labelled_owner, len(turns)))
                agree += live == list(np.argsort(-stored, kind="stable")[: len(live)])
                by_sentence = np.full(len(turns), -1.0, dtype=np.float32)
                np.maximum.at(by_sentence, owner, sentences @ probe)
                keyword = np.array([by_id[h.passage_id] for h in hits], dtype=int)
                bm25 = replica.scores(query_tokens(q.text, drop_stop_words=True))
                same_keyword += _order(bm25)[:10].tolist() == keyword[:10].tolist()
                questions.append(
                    Question(
                        q.category,
                        np.array(sorted(position[e] for e in q.evidence)),
                        keyword,
                        np.array([float(h.keyword_score or 0.0) for h in hits], dtype=np.float32),
                        {
                            "best": best,
                            "content": np.maximum(own @ words, with_context @ words),
                            "mean": (own @ probe + with_context @ probe) / 2,
                            "mean+content": (own @ words + with_context @ words) / 2,
                            "mean vector": mean_vector @ probe,
                            "sentences": np.maximum(best, by_sentence),
                            "bare sentences": np.maximum(
                                best, _best_of(bare @ probe, owner, len(turns))
                            ),
                            "sentences+content": np.maximum(
                                np.maximum(own @ words, with_context @ words),
                                _best_of(sentences @ words, owner, len(turns)),
                            ),
                            "labelled sentences": np.maximum(
                                best, _best_of(labelled @ probe, labelled_owner, len(turns))
                            ),
                            "labelled sentences, no own vector": np.maximum(
                                np.where(split_any, -1.0, own @ probe),
                                np.maximum(
                                    with_context @ probe,
                                    _best_of(labelled @ probe, labelled_owner, len(turns)),
                                ),
                            ),
                            "labelled sentences, 3+": np.maximum(
                                best,
                                np.where(
                                    long_turn,
                                    _best_of(labelled @ probe, labelled_owner, len(turns)),
                                    -1.0,
                                ),
                            ),
                            "probe": probe,
                        },
                        bm25,
                        replica.expansions(q.text),
                        columns.weighted(query_tokens(q.text, drop_stop_words=True)),
                    )
                )
                sims = questions[-1].sims
                for leg in ("best", "sentences"):
                    words_leg = "content" if leg == "best" else "sentences+content"
                    sims[f"{leg}|content"] = np.maximum(sims[leg], sims[words_leg])
                    sims[f"{leg}+content/2"] = (sims[leg] + sims[words_leg]) / 2
            checks.append(
                f"{conversation.name}: exact vector top 10 (sentence vectors, as stored) equals"
                " the live index's on "
                f"{agree}/{len(questions)} questions; the keyword replica's top 10 equals the live"
                f" search's on {same_keyword}/{len(questions)}; {len(sentences)} sentence vectors"
                f" for {len(turns)} turns; {len(labelled)} by the generic rule, "
                f"{sum(a == b for a, b in zip(split, generic, strict=True))} turns split alike; "
                f"{int((links >= 0).sum())} context links, "
                f"{int(((links >= 0) & (links == np.arange(len(turns)) - 1)).sum())} of them to the"
                f" turn before"
            )
            corpora.append(
                Corpus(
                    conversation.name,
                    questions,
                    own,
                    with_context,
                    len(sentences),
                    same_keyword,
                    links,
                )
            )
    return corpora, checks


def _best_of(values: np.ndarray, owner: np.ndarray, size: int) -> np.ndarray:
    best = np.full(size, -1.0, dtype=np.float32)
    np.maximum.at(best, owner, values)
    return best


def _order(scores: np.ndarray) -> np.ndarray:
    """Passages with a positive score, best first (ties by position, as the live search's)."""
    matched = np.flatnonzero(scores > 0)
    return matched[np.argsort(-scores[matched], kind="stable")]


class KeywordReplica:
    """An in-memory FTS5 table holding what the keyword index holds for each passage (same
    tokenizer), so that queries the product does not make (expansion words) can be scored; its
    ranking of the real query is checked against the live search's."""

    def __init__(self, indexed: Sequence[str], embedding: CachedEmbedding) -> None:
        self.size = len(indexed)
        self.db = sqlite3.connect(":memory:")
        self.db.execute(
            "CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61 remove_diacritics 2')"
        )
        self.db.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", enumerate(indexed))
        self.vocabulary = sorted(
            {
                word
                for text in indexed
                for word in _WORD.findall(text.lower())
                if word not in STOP_WORDS and len(word) > 2 and not word.isdigit()
            }
        )
        self.embedding = embedding
        self.vectors = _unit(embedding(self.vocabulary))

    def scores(self, terms: Sequence[str]) -> np.ndarray:
        """bm25 (higher is better) of every passage for these words joined with OR."""
        out = np.zeros(self.size, dtype=np.float32)
        if terms:
            query = " OR ".join(f'"{term}"' for term in terms)
            for row, value in self.db.execute(
                "SELECT rowid, bm25(t) FROM t WHERE t MATCH ?", (query,)
            ):
                out[row] = -value
        return out

    def expansions(self, question: str) -> dict[tuple[int, float], np.ndarray]:
        """bm25 of the expansion words alone, per EXPANSIONS setting: for each query word, its
        nearest vocabulary words at or above the cosine floor that are not a query word nor share
        its first four letters (porter already joins those)."""
        terms = query_tokens(question, drop_stop_words=True)
        near = _unit(self.embedding(terms)) @ self.vectors.T if terms else np.zeros((0, 0))
        out = {}
        for count, floor in EXPANSIONS:
            extra: set[str] = set()
            for row, term in zip(near, terms, strict=True):
                kept = [
                    self.vocabulary[i]
                    for i in np.argsort(-row)
                    if row[i] >= floor
                    and self.vocabulary[i] not in terms
                    and self.vocabulary[i][:4] != term[:4]
                ]
                extra.update(kept[:count])
            out[(count, floor)] = self.scores(sorted(extra))
        return out


class FieldReplica:
    """An in-memory FTS5 table with a passage's text and context as two columns, so bm25 can
    weigh the context apart (the product indexes them as one text)."""

    def __init__(self, texts: Sequence[str], contexts: Sequence[str]) -> None:
        self.size = len(texts)
        self.db = sqlite3.connect(":memory:")
        self.db.execute(
            "CREATE VIRTUAL TABLE f USING fts5(x, c, tokenize='porter unicode61 remove_diacritics"
            " 2')"
        )
        self.db.executemany(
            "INSERT INTO f(rowid, x, c) VALUES (?, ?, ?)",
            ((i, t, c) for i, (t, c) in enumerate(zip(texts, contexts, strict=True))),
        )

    def weighted(self, terms: Sequence[str]) -> dict[float, np.ndarray]:
        """bm25 (higher is better) of every passage per context-column weight."""
        out = {}
        for weight in FIELD_WEIGHTS:
            scores = np.zeros(self.size, dtype=np.float32)
            if terms:
                query = " OR ".join(f'"{term}"' for term in terms)
                for row, value in self.db.execute(
                    "SELECT rowid, bm25(f, 1.0, ?) FROM f WHERE f MATCH ?", (weight, query)
                ):
                    scores[row] = -value
            out[weight] = scores
        return out


# ----- fusion on arrays -----------------------------------------------------------------------


def _normalise(values: np.ndarray, how: str) -> np.ndarray:
    if how == "zscore":
        spread = values.std()
        return (values - values.mean()) / spread if spread > 0 else np.zeros_like(values)
    if how == "max":
        top = values.max()
        return values / top if top > 0 else np.ones_like(values)
    low, high = values.min(), values.max()
    return (values - low) / (high - low) if high > low else np.ones_like(values)


def fused(
    q: Question,
    sims: np.ndarray,
    method: str = "score",
    weight: float | None = 0.6,
    keyword_depth: int = DEFAULT_DEPTH,
    vector_depth: int = DEFAULT_DEPTH,
    vector_norm: str | None = None,
    dynamic: float = 0.0,
) -> np.ndarray:
    """The fused ranking's passage indices (top 20), as `fusion.fuse` computes it."""
    size = len(sims)
    kw = q.keyword[:keyword_depth]
    vec = np.argsort(-sims, kind="stable")[:vector_depth]
    vhow = vector_norm or method
    kn = _normalise(q.keyword_scores[:keyword_depth], method) if len(kw) else np.zeros(0)
    vn = _normalise(sims[vec], vhow)
    kpart = np.full(size, kn.min() if method == "zscore" and len(kn) else 0.0, np.float64)
    vpart = np.full(size, vn.min() if vhow == "zscore" else 0.0, np.float64)
    kpart[kw], vpart[vec] = kn, vn
    w = float(weight or 0.0)
    if dynamic and len(kn) > 1:
        w = min(0.95, w + dynamic * float(kn[0] - kn[1]))
    score = w * kpart + (1 - w) * vpart
    best_rank = np.full(size, 1 << 30)
    best_rank[vec] = np.arange(1, len(vec) + 1)
    best_rank[kw] = np.minimum(best_rank[kw], np.arange(1, len(kw) + 1))
    candidates = np.union1d(kw, vec)
    order = sorted(candidates.tolist(), key=lambda i: (-score[i], best_rank[i], i))
    return np.array(order[:20], dtype=int)


def _prf_sims(corpus: Corpus, q: Question, m: int, beta: float, which: str) -> np.ndarray:
    vectors = corpus.own if which == "text" else corpus.with_context
    head = q.keyword[:m]
    probe = q.sims["probe"]
    if len(head):
        probe = probe + beta * vectors[head].mean(axis=0)
        probe = probe / np.linalg.norm(probe)
    return np.maximum(corpus.own @ probe, corpus.with_context @ probe)


def _keyword_rerank(q: Question, sims: np.ndarray, head: int, weight: float) -> np.ndarray:
    top = set(q.keyword[:head].tolist())
    order = [i for i in fused(q, sims, weight=weight).tolist() if i in top]
    order += [i for i in q.keyword[:head].tolist() if i not in order]
    return np.array((order + q.keyword[head:].tolist())[:20], dtype=int)


def _keyword_head(q: Question, sims: np.ndarray, head: int, weight: float) -> np.ndarray:
    first = q.keyword[:head].tolist()
    rest = [i for i in fused(q, sims, weight=weight).tolist() if i not in first]
    return np.array((first + rest)[:20], dtype=int)


def _expanded(q: Question, setting: tuple[int, float], weight: float) -> Question:
    """The question with its keyword leg replaced by the expanded query's ranking."""
    scores = q.bm25 + weight * q.expansion[setting]
    order = _order(scores)
    return Question(q.category, q.evidence, order, scores[order], q.sims, q.bm25, q.expansion)


def _neighbour_spread(q: Question, direction: str, share: float) -> np.ndarray:
    """The shipped fusion with each passage's score raised by `share` of its neighbour's (the
    passage before, after, or the better of both); candidates widened by their neighbours."""
    sims = q.sims["best"]
    size = len(sims)
    kw = q.keyword[:DEFAULT_DEPTH]
    vec = np.argsort(-sims, kind="stable")[:DEFAULT_DEPTH]
    kpart, vpart = np.zeros(size), np.zeros(size)
    if len(kw):
        kpart[kw] = _normalise(q.keyword_scores[:DEFAULT_DEPTH], "score")
    vpart[vec] = _normalise(sims[vec], "score")
    score = 0.6 * kpart + 0.4 * vpart
    before, after = np.r_[0.0, score[:-1]], np.r_[score[1:], 0.0]
    spread = {"before": before, "after": after, "both": np.maximum(before, after)}[direction]
    candidate = np.zeros(size, dtype=bool)
    candidate[kw] = candidate[vec] = True
    candidate |= np.r_[False, candidate[:-1]] | np.r_[candidate[1:], False]
    total = score + share * spread
    pool = np.flatnonzero(candidate)
    return pool[np.argsort(-total[pool], kind="stable")][:20]


def _fused_scores(
    q: Question, sims: np.ndarray, method: str, weight: float, depth: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What `fused` ranks by, for every passage: the fused score shifted so that a passage in
    neither leg scores 0, whether each passage is a candidate, and its best rank in either leg
    (the tie-break)."""
    size = len(sims)
    kw = q.keyword[:depth]
    vec = np.argsort(-sims, kind="stable")[:depth]
    kn = _normalise(q.keyword_scores[:depth], method) if len(kw) else np.zeros(0)
    vn = _normalise(sims[vec], method)
    kpart = np.full(size, kn.min() if method == "zscore" and len(kn) else 0.0, np.float64)
    vpart = np.full(size, vn.min() if method == "zscore" else 0.0, np.float64)
    floor = weight * kpart[0] + (1 - weight) * vpart[0] if size else 0.0
    kpart[kw], vpart[vec] = kn, vn
    score = weight * kpart + (1 - weight) * vpart - floor
    candidate = np.zeros(size, dtype=bool)
    candidate[kw] = candidate[vec] = True
    score[~candidate] = 0.0
    best_rank = np.full(size, 1 << 30)
    best_rank[vec] = np.arange(1, len(vec) + 1)
    best_rank[kw] = np.minimum(best_rank[kw], np.arange(1, len(kw) + 1))
    return score, candidate, best_rank


LINK_DIRECTIONS = ("named", "naming", "both")
"""Which linked passage lifts a passage: one whose context names it (a reply to it), the one its
own context names (what it replies to), or the better of the two."""


def _link_spread(
    q: Question,
    sims: np.ndarray,
    links: np.ndarray,
    toward: str,
    share: float,
    combine: str = "add",
    method: str = "score",
    weight: float = 0.6,
    depth: int = DEFAULT_DEPTH,
    widen: bool = True,
) -> np.ndarray:
    """The fused ranking with each passage's score raised by `share` of a linked passage's
    (`context_links`: no insertion order), added or as a floor (`combine` 'max'); with `widen`,
    the candidates widened by the passages linked to them."""
    score, candidate, best_rank = _fused_scores(q, sims, method, weight, depth)
    linked = links >= 0
    target = np.where(linked, links, 0)
    naming = np.where(linked, score[target], 0.0)
    named = np.zeros(len(score))
    np.maximum.at(named, target[linked], score[linked])
    lift = {"named": named, "naming": naming, "both": np.maximum(named, naming)}[toward]
    total = score + share * lift if combine == "add" else np.maximum(score, share * lift)
    pool = candidate.copy()
    if widen:
        pool[target[linked & candidate]] = True
        pool |= linked & candidate[target]
    chosen = np.flatnonzero(pool)
    order = np.lexsort((chosen, best_rank[chosen], -total[chosen]))
    return chosen[order][:20]


def _field_weighted(q: Question, weight: float) -> Question:
    """The question with its keyword leg ranked by the two-column replica (context weight)."""
    scores = q.fields[weight]
    order = _order(scores)
    return Question(
        q.category, q.evidence, order, scores[order], q.sims, q.bm25, q.expansion, q.fields
    )


Method = Callable[[Corpus, Question], np.ndarray]


def fusion_grid(
    sims: str, label: str, weights: Sequence[float], depths: Sequence[int]
) -> list[tuple[str, Method]]:
    """Score and z-score fusion of the keyword leg with the `sims` vector leg, per weight and
    depth (the same depth for both legs)."""
    return [
        (
            f"{label}{how} w{w} depth {d}",
            lambda c, q, how=how, w=w, d=d: fused(q, q.sims[sims], how, w, d, d),
        )
        for how in ("score", "zscore")
        for w in weights
        for d in depths
    ]


def families(quick: bool) -> dict[str, list[tuple[str, Method]]]:
    """Each candidate idea as the settings leave-one-out chooses among."""
    weights = (0.5, 0.6) if quick else (0.4, 0.5, 0.6, 0.7)
    depths = (50, 100)
    out: dict[str, list[tuple[str, Method]]] = {}

    def grid(sims: str, label: str) -> list[tuple[str, Method]]:
        return fusion_grid(sims, label, weights, depths)

    out[f"shipped fusion (min-max 0.6, depth {DEFAULT_DEPTH})"] = [
        (f"score w0.6 depth {DEFAULT_DEPTH}", lambda c, q: fused(q, q.sims["best"]))
    ]
    out["fusion grid"] = grid("best", "")
    out["depth per leg"] = [
        (
            f"score 0.6 kw {dk} vec {dv}",
            lambda c, q, dk=dk, dv=dv: fused(q, q.sims["best"], "score", 0.6, dk, dv),
        )
        for dk in (20, 50, 100, 100_000)
        for dv in (20, 50, 100, 100_000)
    ]
    out["calibration (vector / its best)"] = [
        (
            f"score/max w{w}",
            lambda c, q, w=w: fused(q, q.sims["best"], "score", w, vector_norm="max"),
        )
        for w in weights
    ]
    out["content words (vector leg)"] = grid("content", "content ")
    out["chunk mean"] = grid("mean", "mean ")
    out["chunk mean + content words"] = grid("mean+content", "mean+content ")
    out["prf (vector side)"] = [
        (
            f"prf {which} m{m} b{beta}",
            lambda c, q, m=m, beta=beta, which=which: fused(q, _prf_sims(c, q, m, beta, which)),
        )
        for which in ("text", "context")
        for m in ((3,) if quick else (1, 3, 5, 10))
        for beta in ((0.5,) if quick else (0.5, 1.0, 2.0))
    ]
    out["dynamic weight (keyword gap)"] = [
        (
            f"zscore w{w} +{g}*gap",
            lambda c, q, w=w, g=g: fused(q, q.sims["best"], "zscore", w, dynamic=g),
        )
        for w in weights
        for g in (0.05, 0.1, 0.2)
    ]
    out["sentence vectors, shipped fusion"] = [
        ("score w0.6 depth 50", lambda c, q: fused(q, q.sims["sentences"]))
    ]
    out["sentence vectors, fusion grid"] = grid("sentences", "sentences ")
    out["sentence vectors without the speaker, shipped fusion"] = [
        ("score w0.6 depth 50", lambda c, q: fused(q, q.sims["bare sentences"]))
    ]
    out["mean vector (normalised)"] = grid("mean vector", "mean vector ")
    out["keyword expansion"] = [
        (
            f"{n} word(s) >= {floor} weight {w}",
            lambda c, q, e=(n, floor), w=w: fused(_expanded(q, e, w), q.sims["best"]),
        )
        for n, floor in EXPANSIONS
        for w in (0.2, 0.35, 0.5)
    ]
    out["neighbour spread"] = [
        (f"{d} {share}", lambda c, q, d=d, share=share: _neighbour_spread(q, d, share))
        for d in ("before", "after", "both")
        for share in (0.1, 0.2, 0.3, 0.5)
    ]
    out.update(third_round(quick, weights))
    out["keyword rerank (top N reordered)"] = [
        (f"N{n} w{w}", lambda c, q, n=n, w=w: _keyword_rerank(q, q.sims["best"], n, w))
        for n in (10, 20, 30, 50)
        for w in weights
    ]
    out["keyword head kept (top j first)"] = [
        (f"j{j} w{w}", lambda c, q, j=j, w=w: _keyword_head(q, q.sims["best"], j, w))
        for j in (1, 2, 3, 5)
        for w in weights
    ]
    return out


def third_round(quick: bool, weights: Sequence[float]) -> dict[str, list[tuple[str, Method]]]:
    """The third round's families (docs/ranking.md): links read from the context instead of
    insertion order, stacked on sentence vectors and the fusion grid; sentence vectors by a
    generic label rule; two probes for the vector leg; a weight for the context's words in bm25."""
    shares = (0.2, 0.5) if quick else (0.2, 0.3, 0.5, 0.7, 1.0)
    floors = (0.7,) if quick else (0.5, 0.7, 0.9)
    out: dict[str, list[tuple[str, Method]]] = {}

    def spread(sims: str, grid: bool = False, widen: bool = True) -> list[tuple[str, Method]]:
        fusions = (
            [(how, w, d) for how in ("score", "zscore") for w in weights for d in (50, 100)]
            if grid
            else [("score", 0.6, DEFAULT_DEPTH)]
        )
        steps = [("add", share) for share in shares] + [("max", floor) for floor in floors]
        return [
            (
                f"{how} w{w} depth {d} {toward} {combine} {share}",
                lambda c, q, how=how, w=w, d=d, t=toward, m=combine, x=share: _link_spread(
                    q, q.sims[sims], c.links, t, x, m, how, w, d, widen
                ),
            )
            for how, w, d in fusions
            for toward in LINK_DIRECTIONS
            for combine, share in steps
        ]

    def grid(sims: str, label: str) -> list[tuple[str, Method]]:
        return fusion_grid(sims, label, weights, (50, 100))

    out["link spread (context links)"] = spread("best")
    out["link spread + fusion grid"] = spread("best", grid=True)
    out["sentence vectors + link spread"] = spread("sentences")
    out["sentence vectors + link spread + fusion grid"] = spread("sentences", grid=True)
    out["link demotion (a linked passage's score subtracted)"] = [
        (
            f"{toward} add {share}",
            lambda c, q, t=toward, x=share: _link_spread(q, q.sims["best"], c.links, t, x),
        )
        for toward in LINK_DIRECTIONS
        for share in (-0.1, -0.2, -0.3, -0.5)
    ]
    out["labelled sentences (generic rule), shipped fusion"] = [
        ("score w0.6 depth 50", lambda c, q: fused(q, q.sims["labelled sentences"]))
    ]
    out["labelled sentences + link spread"] = spread("labelled sentences")
    out["labelled sentences + link spread, candidates only"] = spread(
        "labelled sentences", widen=False
    )
    out["link spread, candidates only"] = spread("best", widen=False)
    out["labelled sentences (no own vector when split) + link spread"] = spread(
        "labelled sentences, no own vector"
    )
    out["labelled sentences (turns of 3+ sentences) + link spread"] = spread(
        "labelled sentences, 3+"
    )
    out["labelled sentences + link spread + fusion grid"] = spread("labelled sentences", grid=True)
    out["two probes (question, content words)"] = [
        (f"{way} {label}", method)
        for way in ("best|content", "best+content/2")
        for label, method in grid(way, "")
    ]
    out["sentence vectors + two probes"] = [
        (f"{way} {label}", method)
        for way in ("sentences|content", "sentences+content/2")
        for label, method in grid(way, "")
    ]
    out["two probes + link spread + fusion grid"] = spread("best|content", grid=True)
    out["bm25 context weight (keyword leg)"] = [
        (
            f"context x{cw}, shipped fusion",
            lambda c, q, cw=cw: fused(_field_weighted(q, cw), q.sims["best"]),
        )
        for cw in FIELD_WEIGHTS
    ]
    out["bm25 context weight + link spread"] = [
        (
            f"context x{cw} {toward} add {share}",
            lambda c, q, cw=cw, t=toward, x=share: _link_spread(
                _field_weighted(q, cw), q.sims["best"], c.links, t, x
            ),
        )
        for cw in FIELD_WEIGHTS
        for toward in LINK_DIRECTIONS
        for share in shares
    ]
    return out


# ----- learned fusion ----------------------------------------------------------------------------

PENALTIES = (1e-3, 1e-2, 1e-1)
"""L2 penalties the learned fusion chooses among (on the training conversations only)."""


def _features(
    q: Question, neighbours: bool, leg: str = "best", links: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Per candidate: both legs' min-max score and 1/log2(rank + 1) (0 outside a leg's top 50),
    the vector leg's z-score, and with `neighbours` the shipped fused score of the passage before
    and after (candidates then include those neighbours); with `links`, of the passage its
    context names and the best of those whose context names it instead (`context_links`).
    Returns (features, candidates)."""
    sims = q.sims[leg]
    size = len(sims)
    kw = q.keyword[:DEFAULT_DEPTH]
    vec = np.argsort(-sims, kind="stable")[:DEFAULT_DEPTH]
    ks, kr, vs, vr = (np.zeros(size) for _ in range(4))
    if len(kw):
        ks[kw] = _normalise(q.keyword_scores[:DEFAULT_DEPTH], "score")
        kr[kw] = 1 / np.log2(np.arange(len(kw)) + 2)
    vs[vec] = _normalise(sims[vec], "score")
    vr[vec] = 1 / np.log2(np.arange(len(vec)) + 2)
    columns = [ks, kr, vs, vr, _normalise(sims, "zscore")]
    candidate = np.zeros(size, dtype=bool)
    candidate[kw] = candidate[vec] = True
    shipped = 0.6 * ks + 0.4 * vs
    if links is not None:
        linked = links >= 0
        target = np.where(linked, links, 0)
        named = np.zeros(size)
        np.maximum.at(named, target[linked], shipped[linked])
        columns += [np.where(linked, shipped[target], 0.0), named]
        widened = candidate.copy()
        widened[target[linked & candidate]] = True
        candidate = widened | (linked & candidate[target])
    elif neighbours:
        columns += [np.r_[0.0, shipped[:-1]], np.r_[shipped[1:], 0.0]]
        candidate |= np.r_[False, candidate[:-1]] | np.r_[candidate[1:], False]
    pool = np.flatnonzero(candidate)
    return np.stack(columns, axis=1)[pool], pool


Model = tuple[np.ndarray, np.ndarray, np.ndarray]


def _train(rows: Sequence[tuple[np.ndarray, np.ndarray]], penalty: float) -> Model:
    """Logistic regression (evidence or not) by gradient descent on standardised features."""
    x = np.concatenate([features for features, _ in rows])
    y = np.concatenate([labels for _, labels in rows])
    mean, spread = x.mean(axis=0), x.std(axis=0) + 1e-9
    x = (x - mean) / spread
    weights, bias = np.zeros(x.shape[1]), 0.0
    for _ in range(300):
        error = 1 / (1 + np.exp(-(x @ weights + bias))) - y
        weights -= 0.5 * (x.T @ error / len(y) + penalty * weights)
        bias -= 0.5 * float(error.mean())
    return weights, mean, spread


def learned_fusion(
    corpora: Sequence[Corpus], neighbours: bool, leg: str = "best", links: bool = False
) -> tuple[dict[str, list[Result]], list[str]]:
    """Held-out results of the learned fusion: for each conversation, the penalty best when
    training on one other conversation and scoring the other (both ways), then a model trained on
    both others with it."""
    every = {
        c.name: [
            (q, *_features(q, neighbours, leg, c.links if links else None)) for q in c.questions
        ]
        for c in corpora
    }
    data = {name: [row for row in rows if row[0].category != 5] for name, rows in every.items()}

    def training(names: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        return [
            (x, np.isin(pool, q.evidence).astype(float)) for n in names for q, x, pool in data[n]
        ]

    def scored(model: Model, name: str) -> list[Result]:
        weights, mean, spread = model
        rows = []
        for q, x, pool in every[name]:
            top = pool[np.argsort(-(((x - mean) / spread) @ weights), kind="stable")][:20]
            evidence = set(q.evidence.tolist())
            rows.append(
                (q.category, {k: len(evidence & set(top[:k].tolist())) / len(evidence) for k in KS})
            )
        return rows

    held, chosen = {}, []
    for c in corpora:
        others = [o.name for o in corpora if o.name != c.name]
        pairs = [(a, b) for a in others for b in others if a != b]
        penalty = max(
            PENALTIES,
            key=lambda p: sum(objective(scored(_train(training([a]), p), b)) for a, b in pairs),
        )
        held[c.name] = scored(_train(training(others), penalty), c.name)
        chosen.append(f"{c.name}: L2 {penalty:g}")
    return held, chosen


# ----- the ceiling of a fusion of the two legs ----------------------------------------------------


def _share(found: set[int], q: Question, k: int | None = None) -> float:
    """Share of q's evidence in `found` (at most k of it when k is given: a list of k places)."""
    hits = len(found & set(q.evidence.tolist()))
    return (hits if k is None else min(hits, k)) / len(q.evidence)


def _undominated(q: Question, sims: np.ndarray, k: int) -> float:
    """Share of q's evidence (at most k of it) that fewer than k passages beat on both legs at
    once (keyword bm25 and vector similarity, each at least as high and one higher): no fusion that
    rises with both scores can put any other evidence in its top k."""
    hits = 0
    for e in q.evidence.tolist():
        at_least = (q.bm25 >= q.bm25[e]) & (sims >= sims[e])
        above = at_least & ((q.bm25 > q.bm25[e]) | (sims > sims[e]))
        hits += int(above.sum()) < k
    return min(hits, k) / len(q.evidence)


def ceiling(corpora: Sequence[Corpus], legs: Sequence[str] = ("best", "sentences")) -> list[str]:
    """What any fusion of keyword and vector leg could place in its top k, next to keyword search
    and the shipped fusion (categories 1-4), per conversation and pooled, for each vector leg."""
    lines = [
        "Ceiling of a fusion (share of evidence, categories 1-4): kw k / kw 2k = keyword top k /"
        " top 2k;",
        "union k / union 2k = union of both legs' top k / top 2k (up to 2k / 4k passages);"
        " best k of top 50 =",
        "the most any order of the union of both legs' top 50 puts in k places; monotone = the"
        " most any",
        "fusion rising with both legs' scores can put there (evidence beaten on both legs by fewer"
        " than k",
        "passages; weights may differ per question); shipped = the shipped fusion's top k.",
    ]
    for leg in legs:
        lines += [
            f"vector leg [{leg}]:",
            "| conversation | n | k | kw k | kw 2k | union k | union 2k | best k of top 50 |"
            " monotone | shipped |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        groups = [(c.name, [c]) for c in corpora] + [("pooled", list(corpora))]
        for label, members in groups:
            questions = [(c, q) for c in members for q in c.questions if q.category != 5]
            for k in KS:
                cells = np.zeros(7)
                for _, q in questions:
                    vec = np.argsort(-q.sims[leg], kind="stable")
                    kw = q.keyword.tolist()
                    cells += [
                        _share(set(kw[:k]), q),
                        _share(set(kw[: 2 * k]), q),
                        _share(set(kw[:k]) | set(vec[:k].tolist()), q),
                        _share(set(kw[: 2 * k]) | set(vec[: 2 * k].tolist()), q),
                        _share(set(kw[:DEFAULT_DEPTH]) | set(vec[:DEFAULT_DEPTH].tolist()), q, k),
                        _undominated(q, q.sims[leg], k),
                        _share(set(fused(q, q.sims[leg])[:k].tolist()), q),
                    ]
                cells /= len(questions)
                lines.append(
                    f"| {label} | {len(questions)} | {k} | "
                    + " | ".join(f"{value:.3f}" for value in cells)
                    + " |"
                )
    return lines


# ----- leave-one-out and report -----------------------------------------------------------------

VECTOR_LEGS = (
    "best",
    "content",
    "mean",
    "mean+content",
    "mean vector",
    "sentences",
    "bare sentences",
    "sentences+content",
)


def _vector_alone(sims: str, corpus: Corpus, q: Question) -> np.ndarray:
    return np.argsort(-q.sims[sims], kind="stable")[:20]


def results_of(corpora: Sequence[Corpus], method: Method) -> dict[str, list[Result]]:
    out: dict[str, list[Result]] = {}
    for corpus in corpora:
        rows: list[Result] = []
        for q in corpus.questions:
            top = method(corpus, q).tolist()
            evidence = set(q.evidence.tolist())
            rows.append((q.category, {k: len(evidence & set(top[:k])) / len(evidence) for k in KS}))
        out[corpus.name] = rows
    return out


def leave_one_out(
    family: list[tuple[str, dict[str, list[Result]]]],
) -> tuple[dict[str, list[Result]], list[str]]:
    names = list(family[0][1])
    held, chosen = {}, []
    for name in names:
        label, best = max(
            family,
            key=lambda item: objective(
                r for other in names if other != name for r in item[1][other]
            ),
        )
        held[name] = best[name]
        chosen.append(f"{name}: {label}")
    return held, chosen


def _mean(rows: Sequence[Result], k: int) -> float:
    kept = [r[k] for category, r in rows if category != 5]
    return sum(kept) / len(kept) if kept else float("nan")


def line(
    label: str, held: dict[str, list[Result]], keyword: dict[str, list[Result]], rounds: int
) -> str:
    pooled = [r for rows in held.values() for r in rows]
    cells = " / ".join(f"{_mean(pooled, k):.3f}" for k in KS)
    diffs = "  ".join(
        "@{}: {:+.3f} [{:+.3f}, {:+.3f}]".format(k, *paired_bootstrap(held, keyword, k, rounds))
        for k in KS
    )
    per = "; ".join(
        f"{name} " + "/".join(f"{_mean(held[name], k) - _mean(keyword[name], k):+.3f}" for k in KS)
        for name in held
    )
    return f"{label}: {cells}\n    - keyword: {diffs}\n    per conversation - keyword: {per}"


def report(corpora: Sequence[Corpus], quick: bool, rounds: int) -> list[str]:
    keyword = results_of(corpora, lambda c, q: q.keyword[:20])
    lines = [
        "Held-out recall @5 / @10 / @20 (categories 1-4), each family chosen leave-one-out, and "
        "its",
        f"paired difference from keyword search ({rounds} bootstrap resamples, 95% intervals):",
        line("keyword (context at index time)", keyword, keyword, rounds),
    ]
    alone: dict[str, dict[str, list[Result]]] = {}
    for sims in VECTOR_LEGS:
        alone[sims] = results_of(corpora, partial(_vector_alone, sims))
        lines.append(line(f"vector alone [{sims}]", alone[sims], keyword, rounds))
    diffs = "  ".join(
        "@{}: {:+.3f} [{:+.3f}, {:+.3f}]".format(
            k, *paired_bootstrap(alone["sentences+content"], alone["content"], k, rounds)
        )
        for k in KS
    )
    lines.append(f"vector alone [sentences+content] - [content] (shipped vector mode): {diffs}")
    expanded = [
        (
            f"{n} word(s) >= {floor} weight {w}",
            results_of(corpora, lambda c, q, e=(n, floor), w=w: _expanded(q, e, w).keyword[:20]),
        )
        for n, floor in EXPANSIONS
        for w in (0.2, 0.35, 0.5)
    ]
    held, chosen = leave_one_out(expanded)
    lines.append(line("keyword alone, with expansion (12 settings)", held, keyword, rounds))
    lines.append("    chosen: " + "; ".join(chosen))
    weighted = [
        (
            f"context x{cw}",
            results_of(corpora, lambda c, q, cw=cw: _field_weighted(q, cw).keyword[:20]),
        )
        for cw in FIELD_WEIGHTS
    ]
    held, chosen = leave_one_out(weighted)
    label = f"keyword alone, context column weighted ({len(FIELD_WEIGHTS)} settings)"
    lines.append(line(label, held, keyword, rounds))
    lines.append("    chosen: " + "; ".join(chosen))
    shipped: dict[str, list[Result]] | None = None
    for name, family in families(quick).items():
        scored = [(label, results_of(corpora, method)) for label, method in family]
        held, chosen = leave_one_out(scored)
        if shipped is None:
            shipped = held
        lines.append(line(f"hybrid, {name} ({len(family)} settings)", held, keyword, rounds))
        lines.append("    chosen: " + "; ".join(chosen))
        if held is not shipped:
            diffs = "  ".join(
                "@{}: {:+.3f} [{:+.3f}, {:+.3f}]".format(
                    k, *paired_bootstrap(held, shipped, k, rounds)
                )
                for k in KS
            )
            lines.append(f"    - shipped fusion: {diffs}")
    assert shipped is not None
    learned = [
        (False, "best", False, "both legs' scores and ranks"),
        (True, "best", False, "with neighbours' scores"),
        (True, "best", True, "with context links' scores"),
        (True, "sentences", True, "sentence vectors, with context links' scores"),
    ]
    for neighbours, leg, links, name in learned:
        held, chosen = learned_fusion(corpora, neighbours, leg, links)
        lines.append(line(f"hybrid, learned fusion ({name})", held, keyword, rounds))
        lines.append("    chosen: " + "; ".join(chosen))
        diffs = "  ".join(
            "@{}: {:+.3f} [{:+.3f}, {:+.3f}]".format(k, *paired_bootstrap(held, shipped, k, rounds))
            for k in KS
        )
        lines.append(f"    - shipped fusion: {diffs}")
    return lines


def fusion_check(corpora: Sequence[Corpus]) -> str:
    """The array fusion against `fusion.fuse` with the shipped default, question by question."""
    same = total = 0
    config = FusionConfig()
    for corpus in corpora:
        for q in corpus.questions:
            sims = q.sims["best"]
            vec = np.argsort(-sims, kind="stable")[: config.vector_depth]
            reference = fuse(
                [
                    (str(i), float(s))
                    for i, s in zip(q.keyword[: config.keyword_depth], q.keyword_scores)
                ],
                [(str(i), float(sims[i])) for i in vec],
                config,
            )
            same += [int(c.passage_id) for c in reference[:20]] == fused(q, sims).tolist()
            total += 1
    spread = sum(
        _link_spread(q, q.sims["best"], np.full(len(q.sims["best"]), -1), "both", 0.0).tolist()
        == fused(q, q.sims["best"]).tolist()
        for corpus in corpora
        for q in corpus.questions
    )
    return (
        f"array fusion equals fusion.fuse (shipped default) on {same}/{total} questions; "
        f"link spread without links equals it on {spread}/{total}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--bootstrap", type=int, default=2000)
    parser.add_argument("--embedding-cache", type=Path)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    files = sorted(args.data.glob("*.json")) if args.data.is_dir() else []
    if len(files) < 2:
        print(
            f"SKIPPED: leave-one-out needs two LoCoMo conversations in {args.data}", file=sys.stderr
        )
        return 0
    conversations = [load_conversation(path) for path in files]
    if args.quick:
        conversations = loo_quick_slice(conversations)
    from memory_agent.archival import MiniLMEmbeddingFunction

    embedding = CachedEmbedding(MiniLMEmbeddingFunction())
    if args.embedding_cache is not None and args.embedding_cache.is_file():
        embedding.cache.update(pickle.loads(args.embedding_cache.read_bytes()))
    with tempfile.TemporaryDirectory(prefix="ranking-") as scratch:
        corpora, checks = gather(conversations, embedding, Path(scratch))
    if args.embedding_cache is not None:
        args.embedding_cache.write_bytes(pickle.dumps(embedding.cache))
    count = sum(len(c.questions) for c in corpora)
    print(
        f"LoCoMo, {len(corpora)} conversations ({', '.join(c.name for c in corpora)}), {count}"
        f" questions{' (quick slice)' if args.quick else ''}; turns stored with '{CONTEXT}'"
        " context, extra vectors"
    )
    print("\n".join(checks + [fusion_check(corpora)]))
    print("\n".join(ceiling(corpora)))
    print("\n".join(report(corpora, args.quick, QUICK_ROUNDS if args.quick else args.bootstrap)))
    return 0


if __name__ == "__main__":
    from record import run_recorded

    raise SystemExit(run_recorded(main, __file__))
