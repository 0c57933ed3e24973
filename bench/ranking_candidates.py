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
- keyword head: the keyword leg's best j kept in front of the fused ranking.

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
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
    QUICK_TURNS,
    CachedEmbedding,
    Conversation,
    Result,
    load_conversation,
    objective,
    paired_bootstrap,
    truncated,
)

from memory_agent import MemoryManager, Settings  # noqa: E402
from memory_agent.archival import ArchivalMemory, NewPassage, VectorConfig  # noqa: E402
from memory_agent.archival.filters import PassageFilter  # noqa: E402
from memory_agent.archival.fusion import DEFAULT_DEPTH, FusionConfig, fuse  # noqa: E402
from memory_agent.archival.passages import indexed_text  # noqa: E402
from memory_agent.archival.query_text import vector_query_text  # noqa: E402

CONTEXT = "previous+date"


@dataclass
class Question:
    category: int
    evidence: np.ndarray
    keyword: np.ndarray
    """Passage indices of the keyword ranking, best first (every passage that matched)."""
    keyword_scores: np.ndarray
    sims: dict[str, np.ndarray]
    """Vector similarity of every passage, per way of computing it."""


@dataclass
class Corpus:
    name: str
    questions: list[Question]
    own: np.ndarray
    with_context: np.ndarray


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
            own = _unit(embedding([t.text for t in turns]))
            with_context = _unit(
                embedding([indexed_text(t.text, c) for t, c in zip(turns, contexts, strict=True)])
            )
            texts = [q.text for q in conversation.questions]
            probes = _unit(embedding(texts))
            content = _unit(embedding([vector_query_text(text, "vector") for text in texts]))
            questions, agree = [], 0
            everything = PassageFilter.build(agent_id)
            for q, probe, words in zip(conversation.questions, probes, content, strict=True):
                hits = archival.search(agent_id, q.text, limit=1000, mode="keyword")
                live = [by_id[m.passage_id] for m in archival.index.query(q.text, everything, 10)]
                best = np.maximum(own @ probe, with_context @ probe)
                agree += live == list(np.argsort(-best, kind="stable")[: len(live)])
                questions.append(
                    Question(
                        q.category,
                        np.array(sorted(position[e] for e in q.evidence)),
                        np.array([by_id[h.passage_id] for h in hits], dtype=int),
                        np.array([float(h.keyword_score or 0.0) for h in hits], dtype=np.float32),
                        {
                            "best": best,
                            "content": np.maximum(own @ words, with_context @ words),
                            "mean": (own @ probe + with_context @ probe) / 2,
                            "mean+content": (own @ words + with_context @ words) / 2,
                            "probe": probe,
                        },
                    )
                )
            checks.append(
                f"{conversation.name}: exact vector top 10 equals the live index's on "
                f"{agree}/{len(questions)} questions"
            )
            corpora.append(Corpus(conversation.name, questions, own, with_context))
    return corpora, checks


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


Method = Callable[[Corpus, Question], np.ndarray]


def families(quick: bool) -> dict[str, list[tuple[str, Method]]]:
    """Each candidate idea as the settings leave-one-out chooses among."""
    weights = (0.5, 0.6) if quick else (0.4, 0.5, 0.6, 0.7)
    depths = (50, 100)
    out: dict[str, list[tuple[str, Method]]] = {}

    def grid(sims: str, label: str) -> list[tuple[str, Method]]:
        return [
            (
                f"{label}{how} w{w} depth {d}",
                lambda c, q, how=how, w=w, d=d: fused(q, q.sims[sims], how, w, d, d),
            )
            for how in ("score", "zscore")
            for w in weights
            for d in depths
        ]

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


# ----- leave-one-out and report -----------------------------------------------------------------


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
    for sims in ("best", "content", "mean", "mean+content"):
        alone = results_of(corpora, lambda c, q, s=sims: np.argsort(-q.sims[s], kind="stable")[:20])
        lines.append(line(f"vector alone [{sims}]", alone, keyword, rounds))
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
    return f"array fusion equals fusion.fuse (shipped default) on {same}/{total} questions"


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
        conversations = [truncated(c, QUICK_TURNS) for c in conversations]
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
    print("\n".join(report(corpora, args.quick, 200 if args.quick else args.bootstrap)))
    return 0


if __name__ == "__main__":
    from record import run_recorded

    raise SystemExit(run_recorded(main, __file__))
