"""SQLite and PostgreSQL side by side: block edits, appends from many processes, keyword search.

One run measures both backends on the same machine, one after the other:

1. block edit latency (p50/p95 ms of append, replace, insert, rethink) on a store of N agents
   with 10 blocks each (bench/block_edit_bench.py's population and edits);
2. appends per second to one shared block with 1, 4 and 8 writer processes
   (bench/shared_block_bench.py's run; every entry is checked to be there exactly once);
3. keyword search on the LoCoMo dev conversations: evidence recall@5/10/20 over the questions
   of categories 1-4 and search latency, FTS5 bm25 (SQLite) against the shipped
   `pg_fulltext.RANKING` (PostgreSQL), each conversation stored as its own agent, one passage per
   turn ("Speaker: words"); in sample: bench/pg_keyword_locomo.py chooses and scores out of sample;
4. keyword and hybrid search p50/p95 at `--passages` passages of one agent with the default
   embedding model (all-MiniLM-L6-v2, int8 ONNX): bench/archival_scale.py's synthetic notes,
   embedded once in batches (kept in `--vector-cache` across runs: 100,000 take a quarter of an hour
   or more on 2 busy cores), inserted with those vectors, then searched with the live model, so a
   search's figure includes encoding the query. `--embedding hashed` measures storage + fusion alone
   (hashed bag-of-words vectors). The vector side is embedded Chroma on both backends.

PostgreSQL is a throwaway local cluster (memory_agent.testing.postgres_cluster: fsync off,
loopback TCP) unless --database-url names a server (then each section uses that database; it
should be empty). On a shared machine the figures move with the load: say so next to them.

    python bench/backends_bench.py [--quick] [--database-url URL] [--agents 1000] [--passages
    100000]
                                   [--embedding minilm|hashed] [--vector-cache FILE.npy]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import shared_block_bench  # noqa: E402
from archival_locomo import DEFAULT_DATA, KS, load_conversation, recall  # noqa: E402
from archival_scale import (
    HashedWords,
    PrecomputedEmbedding,
    synthetic_passages,
    synthetic_questions,
)  # noqa: E402
from block_edit_bench import percentile, populate  # noqa: E402

from memory_agent import MemoryManager, Settings  # noqa: E402
from memory_agent.archival import ArchivalMemory, MiniLMEmbeddingFunction, NewPassage, VectorConfig  # noqa: E402
from memory_agent.testing.postgres_cluster import PostgresCluster  # noqa: E402

BACKENDS = ("sqlite", "postgres")


class Databases:
    """A fresh database per measurement: None for SQLite, a new PostgreSQL database otherwise."""

    def __init__(self, cluster: PostgresCluster | None, fixed_url: str | None) -> None:
        self.cluster, self.fixed_url = cluster, fixed_url

    def fresh(self, backend: str) -> str | None:
        if backend == "sqlite":
            return None
        if self.fixed_url:
            return self.fixed_url
        assert self.cluster is not None
        return self.cluster.database_url("bench")


@contextmanager
def backend_environment(url: str | None) -> Iterator[None]:
    """MEMORY_DATABASE_URL for this measurement (spawned writer processes inherit it)."""
    before = os.environ.pop("MEMORY_DATABASE_URL", None)
    if url:
        os.environ["MEMORY_DATABASE_URL"] = url
    try:
        yield
    finally:
        os.environ.pop("MEMORY_DATABASE_URL", None)
        if before is not None:
            os.environ["MEMORY_DATABASE_URL"] = before


def _manager(directory: str, url: str | None, agent_id: str) -> MemoryManager:
    settings = Settings.from_env({"PERSIST_DIRECTORY": directory}, env_file=None)
    return MemoryManager(agent_id=agent_id, settings=settings, database_url=url)


def block_edits(url: str | None, agents: int, edits: int) -> dict[str, list[float]]:
    """Latency samples (ms) per edit kind on a store of `agents` agents with 10 blocks each."""
    with (
        tempfile.TemporaryDirectory() as directory,
        _manager(directory, url, "bench-owner") as memory,
    ):
        agent_ids = populate(memory, agents, 10)
        rng = random.Random(7)
        kinds: dict[str, Callable[[str, int], object]] = {
            "append": lambda a, n: memory.core_memory_append("notes_1", f"fact {n}", agent_id=a),
            "replace": lambda a, n: memory.core_memory_replace(
                "notes_2",
                memory.get_block("notes_2", agent_id=a).value,
                f"Block rewritten {n}.",
                agent_id=a,
            ),
            "insert": lambda a, n: memory.memory_insert(
                "notes_3", f"inserted {n}", insert_after="Block", agent_id=a
            ),
            "rethink": lambda a, n: memory.memory_rethink("notes_4", f"Rethought {n}.", agent_id=a),
        }
        samples: dict[str, list[float]] = {}
        for name, edit in kinds.items():
            samples[name] = []
            for number in range(edits // len(kinds)):
                agent_id = rng.choice(agent_ids)
                began = time.perf_counter()
                edit(agent_id, number)
                samples[name].append((time.perf_counter() - began) * 1000)
        return samples


def keyword_locomo(
    url: str | None, data: Path, turns_cap: int | None
) -> tuple[dict[int, float], list[float], int]:
    """Mean evidence recall@k (categories 1-4), search latencies (ms), and the question count."""
    conversations = [load_conversation(path) for path in sorted(data.glob("*.json"))]
    recalls: list[dict[int, float]] = []
    latencies: list[float] = []
    with tempfile.TemporaryDirectory() as directory, _manager(directory, url, "bench") as memory:
        archival = ArchivalMemory(
            memory.db, VectorConfig(path=Path(directory) / "chroma"), HashedWords()
        )
        for conversation in conversations:
            turns = conversation.turns[:turns_cap] if turns_cap else conversation.turns
            known = {turn.dia_id for turn in turns}
            agent_id = f"locomo-{conversation.name}"
            memory.ensure_agent(agent_id)
            archival.insert_many(
                agent_id,
                [
                    NewPassage(turn.text, metadata={"dia_id": turn.dia_id}, created_at=turn.when)
                    for turn in turns
                ],
            )
            for question in conversation.questions:
                if question.category == 5 or not question.evidence <= known:
                    continue
                began = time.perf_counter()
                hits = archival.search(agent_id, question.text, limit=max(KS), mode="keyword")
                latencies.append((time.perf_counter() - began) * 1000)
                recalls.append(
                    recall([hit.passage.metadata["dia_id"] for hit in hits], question.evidence)
                )
        archival.close()
    mean = {k: statistics.fmean(r[k] for r in recalls) for k in KS}
    return mean, latencies, len(recalls)


def passage_vectors(
    texts: list[str], model: MiniLMEmbeddingFunction, cache: Path | None
) -> dict[str, Any]:
    """The model's vector of every text, read from `cache` (a .npy of their rows) when it holds
    exactly as many rows, else embedded in batches and saved there."""
    if cache is not None and cache.is_file():
        rows = np.load(cache)
        if rows.shape[0] == len(texts):
            print(f"  vectors of {len(texts)} passages read from {cache}", file=sys.stderr)
            return dict(zip(texts, rows, strict=True))
    started = time.perf_counter()
    rows = np.stack(
        [
            vector
            for start in range(0, len(texts), 1000)
            for vector in model(texts[start : start + 1000])
        ]
    )
    seconds = time.perf_counter() - started
    print(
        f"  embedded {len(texts)} passages in {seconds:.0f} s ({len(texts) / seconds:.0f}/s)",
        file=sys.stderr,
    )
    if cache is not None:
        np.save(cache, rows.astype(np.float32))
    return dict(zip(texts, rows, strict=True))


def search_at_scale(
    url: str | None, passages: list[NewPassage], questions: list[str], live: Any, stored: Any
) -> tuple[float, dict[str, list[float]]]:
    """Insert time (s) of the passages (vectors from `stored`), and keyword and hybrid search
    latencies (ms) with `live` encoding each query, after a warm-up of ten queries."""
    with tempfile.TemporaryDirectory() as directory, _manager(directory, url, "bench") as memory:
        config = VectorConfig(path=Path(directory) / "chroma")
        started = time.perf_counter()
        bulk = ArchivalMemory(memory.db, config, stored)
        for start in range(0, len(passages), 5000):
            bulk.insert_many("bench", passages[start : start + 5000])
        inserted = time.perf_counter() - started
        archival = ArchivalMemory(memory.db, config, live)
        latencies: dict[str, list[float]] = {"keyword": [], "hybrid": []}
        for mode, samples in latencies.items():
            for number, query in enumerate(questions):
                began = time.perf_counter()
                archival.search("bench", query, limit=10, mode=mode)  # type: ignore[arg-type]
                if number >= 10:
                    samples.append((time.perf_counter() - began) * 1000)
        archival.close()
    return inserted, latencies


def _row(label: str, values: dict[str, str]) -> str:
    return f"{label:34}" + "".join(f"{values.get(b, '-'):>22}" for b in BACKENDS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="small sizes, seconds not minutes (for tests)"
    )
    parser.add_argument(
        "--database-url", help="an existing PostgreSQL database instead of a throwaway cluster"
    )
    parser.add_argument("--agents", type=int, default=1000, help="agents in the block-edit store")
    parser.add_argument("--edits", type=int, default=2000, help="block edits timed per backend")
    parser.add_argument("--appends", type=int, default=300, help="appends per writer process")
    parser.add_argument("--writers", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="directory of LoCoMo JSON files"
    )
    parser.add_argument(
        "--passages", type=int, default=100_000, help="passages for the hybrid p95 (0: skip)"
    )
    parser.add_argument(
        "--embedding",
        choices=("minilm", "hashed"),
        default="minilm",
        help="vectors for the hybrid p95: the default model, or hashed words (storage + fusion)",
    )
    parser.add_argument(
        "--vector-cache", type=Path, help="a .npy file keeping the passages' model vectors"
    )
    args = parser.parse_args(argv)
    if args.quick:
        # Two writers only: each writer is a spawned process (the most a quick run pays for), and
        # one writer is the same code without the contention.
        args.agents, args.edits, args.appends, args.writers, args.passages = 10, 40, 20, [2], 60
    turns_cap = 30 if args.quick else None

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that `finally` stops the cluster
    cluster = None if args.database_url else PostgresCluster().start()
    try:
        databases = Databases(cluster, args.database_url)
        print(_row("", {b: b for b in BACKENDS}))
        print(f"block edits ({args.agents} agents x 10 blocks, {args.edits} edits), p50 / p95 ms")
        edits = {b: block_edits(databases.fresh(b), args.agents, args.edits) for b in BACKENDS}
        for kind in edits["sqlite"]:
            print(
                _row(
                    f"  {kind}",
                    {
                        b: f"{statistics.median(edits[b][kind]):.2f} / "
                        f"{percentile(edits[b][kind], 0.95):.2f}"
                        for b in BACKENDS
                    },
                ),
                flush=True,
            )

        print(f"appends/s to one shared block ({args.appends} per writer), every entry once?")
        for writers in args.writers:
            cells = {}
            for backend in BACKENDS:
                with backend_environment(databases.fresh(backend)):
                    result = shared_block_bench.run(writers, args.appends)
                cells[backend] = f"{result.rate:.0f} ({'intact' if result.intact else 'LOST'})"
            print(_row(f"  {writers} writer(s)", cells), flush=True)

        if args.data.is_dir():
            found = {b: keyword_locomo(databases.fresh(b), args.data, turns_cap) for b in BACKENDS}
            asked = found["sqlite"][2]
            print(f"keyword search, LoCoMo {args.data.name} ({asked} questions, categories 1-4)")
            for k in KS:
                print(
                    _row(f"  evidence recall@{k}", {b: f"{found[b][0][k]:.3f}" for b in BACKENDS})
                )
            print(
                _row(
                    "  search p50 / p95 ms",
                    {
                        b: f"{statistics.median(found[b][1]):.2f} / "
                        f"{percentile(found[b][1], 0.95):.2f}"
                        for b in BACKENDS
                    },
                ),
                flush=True,
            )
        else:
            print(f"keyword search: skipped, no LoCoMo data at {args.data}")

        if args.passages:
            passages = synthetic_passages(args.passages)
            questions = synthetic_questions(20 if args.quick else 210)
            if args.embedding == "minilm":
                # reuse off: both backends search the same questions, each encodes them
                live: Any = MiniLMEmbeddingFunction(reuse_vectors=False)
                PrecomputedEmbedding.space = live.name()
                stored: Any = PrecomputedEmbedding(
                    passage_vectors([p.content for p in passages], live, args.vector_cache)
                )
            else:
                live = stored = HashedWords()
            print(
                f"search, {args.passages} synthetic notes of one agent ({args.embedding} "
                "embeddings,"
                f" {len(questions) - 10} queries, limit 10)"
            )
            scale = {
                b: search_at_scale(databases.fresh(b), passages, questions, live, stored)
                for b in BACKENDS
            }
            print(
                _row(
                    "  insert s (vectors precomputed)", {b: f"{scale[b][0]:.1f}" for b in BACKENDS}
                )
            )
            for mode in ("keyword", "hybrid"):
                print(
                    _row(
                        f"  {mode} search p50 / p95 ms",
                        {
                            b: f"{statistics.median(scale[b][1][mode]):.1f} / "
                            f"{percentile(scale[b][1][mode], 0.95):.1f}"
                            for b in BACKENDS
                        },
                    ),
                    flush=True,
                )
    finally:
        if cluster is not None:
            cluster.stop()
    return 0


if __name__ == "__main__":
    from record import (
        run_recorded,
    )  # bench/record.py: a full run's output, kept for docs/benchmarks.md

    raise SystemExit(run_recorded(main, __file__))
