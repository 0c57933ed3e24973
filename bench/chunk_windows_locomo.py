"""How long passages are cut into vectors: LoCoMo turns grouped into dialogue-length passages.

archival memory embeds a passage longer than the model's window as overlapping windows and ranks
it by its best one (`memory_agent/archival/chunks.py`). This measures which window to use. Each
session's turns are grouped, in order, into passages of at least --passage-tokens word-pieces
(default 450, about the median dialogue-length memory), so most facts sit past the first window.
A question's evidence turns are mapped to their passages; recall@k is the share of a question's
evidence passages among the k nearest passages by vector alone (exact cosine, each passage at its
best window). Configurations: 'first window' (what embedding from the first 256 word-pieces gave),
and windows of 254/192/128/96/64 word-pieces with a quarter overlap.

The window is chosen leave one conversation out (best mean of R@5/10/20 on the other two,
categories 1-4), with a paired bootstrap 95% interval of the held-out choice against 'first
window', and the cost: vectors per passage (insert time and index size grow with it).

    /work/venv/bin/python bench/chunk_windows_locomo.py [--data DIR] [--passage-tokens 450]
    [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from archival_locomo import (  # noqa: E402
    DEFAULT_DATA,
    KS,
    QUICK_ROUNDS,
    Conversation,
    Result,
    load_conversation,
    mean_recall,
    objective,
    paired_bootstrap,
    truncated,
)

from memory_agent.archival.embeddings import MiniLMEmbeddingFunction  # noqa: E402

WINDOWS: dict[str, tuple[int, int] | None] = {
    "first window": None,
    "254/64": (254, 64),
    "192/48": (192, 48),
    "128/32": (128, 32),
    "96/24": (96, 24),
    "64/16": (64, 16),
}


def group_turns(
    conversation: Conversation, tokens: int, count: object
) -> tuple[list[str], dict[str, int]]:
    """Passages of consecutive turns of one session, each at least `tokens` long; turn ->
    passage."""
    passages: list[str] = []
    owner: dict[str, int] = {}
    current: list[str] = []
    size = 0
    session = None
    for turn in conversation.turns:
        turn_session = turn.dia_id.split(":")[0]
        if current and (size >= tokens or turn_session != session):
            passages.append("\n".join(current))
            current, size = [], 0
        session = turn_session
        current.append(turn.text)
        size += count(turn.text)  # type: ignore[operator]
        owner[turn.dia_id] = len(passages)
    if current:
        passages.append("\n".join(current))
    return passages, owner


def ranked(passage_vectors: list[np.ndarray], query: np.ndarray) -> list[int]:
    """Passages by their best window's cosine to the query, best first."""
    best = np.array([float(np.max(vectors @ query)) for vectors in passage_vectors])
    return [int(i) for i in np.argsort(-best, kind="stable")]


def results_for(
    model: MiniLMEmbeddingFunction,
    conversation: Conversation,
    queries: list[np.ndarray],
    tokens: int,
    window: tuple[int, int] | None,
) -> tuple[list[Result], float]:
    """Recall per question of one conversation under one window, and vectors per passage."""
    tokenizer = model._loaded().whole_tokenizer
    passages, owner = group_turns(
        conversation, tokens, lambda text: len(tokenizer.encode(text).ids) - 2
    )
    if window is None:
        vectors = [np.stack([vector]) for vector in model(passages)]
    else:
        chunker = MiniLMEmbeddingFunction(chunk_tokens=window[0], chunk_overlap=window[1])
        vectors = [np.stack(chunks) for chunks in chunker.embed_chunks(passages)]
    results: list[Result] = []
    for question, query in zip(conversation.questions, queries, strict=True):
        evidence = frozenset(str(owner[dia_id]) for dia_id in question.evidence)
        found = [str(i) for i in ranked(vectors, query)]
        results.append(
            (question.category, {k: len(evidence & set(found[:k])) / len(evidence) for k in KS})
        )
    return results, sum(len(v) for v in vectors) / len(vectors)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--passage-tokens", type=int, default=450)
    parser.add_argument("--bootstrap", type=int, default=2000)
    parser.add_argument(
        "--windows", default=",".join(WINDOWS), help="windows to compare (comma-separated labels)"
    )
    parser.add_argument(
        "--max-vectors",
        type=float,
        default=4.0,
        help="choose only among windows with at most this many vectors per passage (index size)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="the first 30 turns of each conversation, two windows"
    )
    args = parser.parse_args(argv)
    files = sorted(args.data.glob("*.json"))
    if not files:
        print(f"no LoCoMo files in {args.data}; see ../shared/data/README.md")
        return 0
    conversations = [load_conversation(path) for path in files]
    windows = {label: WINDOWS[label] for label in args.windows.split(",")}
    if args.quick:
        conversations = [truncated(c, 30) for c in conversations]
        windows = {label: WINDOWS[label] for label in ("first window", "128/32")}
        args.bootstrap = QUICK_ROUNDS
    model = MiniLMEmbeddingFunction()
    model.load()
    started = time.perf_counter()
    table: dict[tuple[str, str], list[Result]] = {}
    per_passage: dict[str, list[float]] = {}
    queries = {c.name: model.embed_query([q.text for q in c.questions]) for c in conversations}
    for label, window in windows.items():
        for conversation in conversations:
            results, vectors = results_for(
                model, conversation, queries[conversation.name], args.passage_tokens, window
            )
            table[(label, conversation.name)] = results
            per_passage.setdefault(label, []).append(vectors)
    names = [c.name for c in conversations]
    print(
        f"chunk windows on LoCoMo ({len(names)} conversations, passages of >= "
        f"{args.passage_tokens} "
        f"word-pieces, {time.perf_counter() - started:.0f} s)"
    )
    print(f"{'window':<13} {'vectors/passage':>15} " + " ".join(f"R@{k:<4}" for k in KS))
    for label in windows:
        pooled = [r for name in names for r in table[(label, name)] if r[0] != 5]
        print(
            f"{label:<13} {np.mean(per_passage[label]):>15.2f} "
            + " ".join(f"{mean_recall(pooled, k):.3f}" for k in KS)
        )
    first = {name: table[("first window", name)] for name in names}
    for label in windows:
        if label != "first window":
            mine = {name: table[(label, name)] for name in names}
            print(
                f"{label} - first window, R@5/10/20: "
                + ", ".join(
                    "{:+.3f} [{:+.3f}, {:+.3f}]".format(
                        *paired_bootstrap(mine, first, k, args.bootstrap)
                    )
                    for k in KS
                )
            )
    for limit, allowed in (
        ("any", list(windows)),
        (
            f"<= {args.max_vectors:g} vectors/passage",
            [w for w in windows if np.mean(per_passage[w]) <= args.max_vectors],
        ),
    ):
        held_out: dict[str, list[Result]] = {}
        chosen = []
        for name in names:
            train = [other for other in names if other != name]
            best = max(
                allowed, key=lambda label: objective(r for n in train for r in table[(label, n)])
            )
            held_out[name] = table[(best, name)]
            chosen.append(f"{name}: {best}")
        print(
            f"leave one out, {limit}: chose "
            + "; ".join(chosen)
            + "; held-out R@5/10/20 "
            + " / ".join(
                f"{mean_recall([r for n in names for r in held_out[n] if r[0] != 5], k):.3f}"
                for k in KS
            )
        )
    return 0


if __name__ == "__main__":
    from record import (
        run_recorded,
    )  # bench/record.py: a full run's output, kept for docs/benchmarks.md

    raise SystemExit(run_recorded(main, __file__))
