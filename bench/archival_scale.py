"""Archival memory at scale: insert throughput and search latency with 100,000 passages.

Synthetic passages (short notes about 200 people, 50 places and 1,000 activities, seeded; a few
people come up often, as in a real memory) are
embedded once with all-MiniLM-L6-v2 in batches, timed on their own. They are then inserted through
`ArchivalMemory.insert_many` with an embedding function that looks the precomputed vectors up, so
the insert figure is storage alone (SQLite row, tags, FTS5 row, journal entry, Chroma upsert, state
update); "with embedding" adds the measured embedding time, and a live run over a sample checks it.
Search latency is measured per mode with the model loaded (query encoding included), after a
warm-up, over questions built from the same vocabulary, each figure with the machine's load
average and the mean CPU time per search (the process's, every thread: steadier under load);
hybrid is measured again with its two legs one after the other (`search_threads=0`) to show what
running them concurrently gains.

    python bench/archival_scale.py [--passages 100000] [--queries 200] [--keep DIR]
    python bench/archival_scale.py --keep DIR --search-only  # re-measure searches on a kept store
    python bench/archival_scale.py --cheap-embedding         # storage and keyword paths only
    python bench/archival_scale.py --keep DIR --search-only --model-threads 1  # model on 1 thread
    python bench/archival_scale.py --quick                   # 100 passages, seconds

Embedding 100,000 passages takes about 8 minutes on 2 quiet cores (over an hour at load 8); build
the store once with `--keep DIR`, then measure searches with `--keep DIR --search-only` on a quiet
machine. bench/archival_insert_cpu.py compares the insert path's CPU cost between two commits.
`--cheap-embedding` replaces the model with hashed bag-of-words vectors (384 dimensions, no
model): insert throughput without embedding and keyword latency are the real figures, vector and
hybrid latency then leave out query encoding (printed apart when the model is used).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import re
import resource
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chromadb.api.types import Documents, EmbeddingFunction, Embeddings  # noqa: E402

from memory_agent import MemoryManager, Settings  # noqa: E402
from memory_agent.archival import ArchivalMemory, MiniLMEmbeddingFunction, NewPassage, VectorConfig  # noqa: E402

AGENT = "scale"
MODES_MEASURED = ("keyword", "vector", "hybrid", "scored")
_SYLLABLES = (
    [
        "Al",
        "Be",
        "Ca",
        "Da",
        "El",
        "Fa",
        "Gi",
        "Ha",
        "Is",
        "Jo",
        "Ka",
        "Le",
        "Mi",
        "No",
        "Ol",
        "Pe",
        "Ra",
        "Sa",
        "Ta",
        "Vi",
    ],
    ["ex", "na", "ra", "to", "lo", "mi", "sa", "den", "vin", "ric"],
)
NAMES = [first + second for first in _SYLLABLES[0] for second in _SYLLABLES[1]]  # 200 names
PLACES = [
    "Lisbon",
    "Osaka",
    "Nairobi",
    "Montreal",
    "Reykjavik",
    "Santiago",
    "Prague",
    "Hanoi",
    "Dakar",
    "Oslo",
    "Lima",
    "Tbilisi",
    "Perth",
    "Quito",
    "Bergen",
    "Kyoto",
    "Seville",
    "Accra",
    "Tallinn",
    "Cusco",
    "Busan",
    "Lyon",
    "Zanzibar",
    "Krakow",
    "Austin",
    "Porto",
    "Muscat",
    "Bruges",
    "Hobart",
    "Fez",
] + [
    f"the {noun}"
    for noun in [
        "lake house",
        "office",
        "climbing gym",
        "farmers market",
        "library",
        "hospital",
        "beach",
        "stadium",
        "bakery",
        "museum",
        "cabin",
        "harbor",
        "community garden",
        "concert hall",
        "train station",
        "bookshop",
        "dojo",
        "vineyard",
        "ski lodge",
        "night market",
    ]
]
VERBS = [
    "cooked",
    "painted",
    "fixed",
    "planned",
    "photographed",
    "built",
    "cleaned",
    "sketched",
    "sold",
    "bought",
    "repaired",
    "decorated",
    "organised",
    "rehearsed",
    "studied",
    "wrote about",
    "filmed",
    "measured",
    "translated",
    "tasted",
    "sewed",
    "carved",
    "restored",
    "packed",
    "designed",
]
OBJECTS = [
    "a curry",
    "a mural",
    "the bicycle",
    "a wedding",
    "a sunrise",
    "a treehouse",
    "the garage",
    "a bird",
    "old records",
    "a kayak",
    "the piano",
    "a birthday party",
    "a fundraiser",
    "a play",
    "ancient history",
    "volcanoes",
    "a documentary",
    "the kitchen",
    "a poem",
    "sourdough bread",
    "a quilt",
    "a canoe",
    "a chess set",
    "the attic",
    "a vintage car",
    "a herb garden",
    "a lantern",
    "a marathon route",
    "a telescope",
    "a podcast",
    "a wool scarf",
    "a recipe book",
    "a sailboat",
    "a puppet show",
    "a bonsai tree",
    "the fence",
    "a comic strip",
    "a violin",
    "a campfire song",
    "a board game",
]
FEELINGS = [
    "felt proud",
    "was exhausted",
    "laughed a lot",
    "was nervous",
    "felt calm",
    "got frustrated",
    "was delighted",
    "felt homesick",
    "was surprised",
    "felt grateful",
    "was bored",
    "felt inspired",
]
REASONS = [
    "for a school project",
    "to surprise a friend",
    "after a long week",
    "because it rained",
    "for the first time",
    "with help from a neighbour",
    "to raise money",
    "on a whim",
    "before moving house",
    "as a birthday gift",
    "to learn something new",
    "during the holidays",
]
TAGS = ["family", "work", "health", "travel", "hobby", "food"]
_NAME_WEIGHTS = [
    1.0 / rank for rank in range(1, len(NAMES) + 1)
]  # Zipf: a few people come up often


def synthetic_passages(count: int, seed: int = 7) -> list[NewPassage]:
    """Short dated notes about people, places and activities; a few names are common (Zipf)."""
    rng = random.Random(seed)
    passages = []
    for number in range(count):
        first, second = rng.choices(NAMES, weights=_NAME_WEIGHTS, k=2)
        text = (
            f"{first} {rng.choice(VERBS)} {rng.choice(OBJECTS)} in {rng.choice(PLACES)} with "
            f"{second} "
            f"{rng.choice(REASONS)} and {rng.choice(FEELINGS)} (note {number}, "
            f"{rng.randint(1, 28)}/{rng.randint(1, 12)}/{rng.randint(2015, 2025)})."
        )
        passages.append(NewPassage(text, tags=[rng.choice(TAGS)]))
    return passages


def synthetic_questions(count: int, seed: int = 11) -> list[str]:
    """Questions about the same people, places and activities, people drawn as often as in notes."""
    rng = random.Random(seed)
    forms = [
        "When did {n} go to {p}?",
        "Who {v} {o} with {n}?",
        "What did {n} do in {p}?",
        "Has {n} ever {v} {o}?",
        "How did {n} feel after they {v} {o}?",
        "Where was {o} {v}?",
    ]
    return [
        rng.choice(forms).format(
            n=rng.choices(NAMES, weights=_NAME_WEIGHTS)[0],
            p=rng.choice(PLACES),
            v=rng.choice(VERBS),
            o=rng.choice(OBJECTS),
        )
        for _ in range(count)
    ]


class PrecomputedEmbedding(EmbeddingFunction[Documents]):
    """Returns vectors computed earlier, so that inserts can be timed without the model."""

    def __init__(self, vectors: dict[str, Any]) -> None:
        self.vectors = vectors

    def __call__(self, input: Documents) -> Embeddings:
        return [self.vectors[text] for text in input]

    @staticmethod
    def name() -> str:
        return PrecomputedEmbedding.space  # the same collection as the model's

    space = MiniLMEmbeddingFunction.name()

    def get_config(self) -> dict[str, Any]:
        return {}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> PrecomputedEmbedding:
        return PrecomputedEmbedding({})


class HashedWords(EmbeddingFunction[Documents]):
    """A cheap stand-in for the model: hashed bag of words, 384 dimensions, unit length."""

    def __init__(self) -> None:
        pass

    def __call__(self, input: Documents) -> Embeddings:
        vectors = []
        for text in input:
            vector = [0.0] * 384
            for word in re.findall(r"\w+", text.lower()):
                vector[zlib.crc32(word.encode()) % 384] += 1.0
            norm = math.sqrt(sum(x * x for x in vector)) or 1.0
            vectors.append([x / norm for x in vector])
        return vectors  # type: ignore[return-value]

    def embed_query(self, input: Documents) -> Embeddings:
        return self(input)

    @staticmethod
    def name() -> str:
        return "bench-hashed-words"

    def get_config(self) -> dict[str, Any]:
        return {}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> HashedWords:
        return HashedWords()


def timed_embedding(
    model: Any, texts: Sequence[str], batch: int = 512
) -> tuple[dict[str, Any], float]:
    started = time.perf_counter()
    vectors: dict[str, Any] = {}
    for start in range(0, len(texts), batch):
        chunk = list(texts[start : start + batch])
        vectors.update(zip(chunk, model(chunk)))
        done = start + len(chunk)
        if done % 10_000 < batch:
            rate = done / (time.perf_counter() - started)
            print(f"  embedded {done}/{len(texts)} ({rate:.0f}/s)", file=sys.stderr)
    return vectors, time.perf_counter() - started


def timed_insert(
    archival: ArchivalMemory, passages: Sequence[NewPassage], chunk: int = 5000
) -> float:
    started = time.perf_counter()
    for start in range(0, len(passages), chunk):
        archival.insert_many(AGENT, passages[start : start + chunk])
        print(f"  inserted {min(start + chunk, len(passages))}/{len(passages)}", file=sys.stderr)
    return time.perf_counter() - started


def cpu_seconds() -> float:
    """User + system CPU time of the process, every thread (search legs, the model's)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def latencies(archival: ArchivalMemory, questions: Sequence[str], mode: str) -> list[float]:
    """Wall-clock ms per search; also prints the mean CPU ms per search, which a busy machine
    moves far less than the wall clock."""
    for question in questions[:10]:  # warm-up: caches, first-query costs
        archival.search(AGENT, question, limit=10, mode=mode)  # type: ignore[arg-type]
    samples = []
    cpu = cpu_seconds()
    for question in questions:
        started = time.perf_counter()
        archival.search(AGENT, question, limit=10, mode=mode)  # type: ignore[arg-type]
        samples.append((time.perf_counter() - started) * 1000)
    print(f"  {mode}: {(cpu_seconds() - cpu) * 1000 / len(questions):.1f} CPU ms per search")
    return samples


def percentile(samples: Sequence[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def build(
    storage: Path, model: Any, passages_count: int, sample: int, singles_count: int = 100
) -> None:
    """Embed, then insert, the synthetic passages; prints the insert figures."""
    passages = synthetic_passages(passages_count)
    vectors, embed_seconds = timed_embedding(model, [p.content for p in passages])
    print(
        f"embedding {passages_count} passages (batches of 512): {embed_seconds:.1f} s = "
        f"{passages_count / embed_seconds:.0f} passages/s"
    )
    with MemoryManager(agent_id=AGENT, settings=Settings(persist_directory=storage)) as memory:
        config = VectorConfig(path=storage / "chroma")
        bulk = ArchivalMemory(memory.db, config, PrecomputedEmbedding(vectors))
        insert_seconds = timed_insert(bulk, passages)
        print(
            f"insert_many without embedding: {insert_seconds:.1f} s = "
            f"{passages_count / insert_seconds:.0f} passages/s"
        )
        print(
            f"insert_many with embedding (measured embedding + insert): "
            f"{passages_count / (insert_seconds + embed_seconds):.0f} passages/s"
        )
        archival = ArchivalMemory(memory.db, config, model)
        live = [
            NewPassage(f"live sample {n}: {p.content}", p.tags)
            for n, p in enumerate(passages[:sample])
        ]
        started = time.perf_counter()
        archival.insert_many(AGENT, live)
        print(
            f"insert_many with live embedding, {sample} more passages: "
            f"{sample / (time.perf_counter() - started):.0f} passages/s"
        )
        long_texts = [
            NewPassage(
                f"long sample {n}: " + " ".join(p.content for p in passages[n * 24 : (n + 1) * 24])
            )
            for n in range(max(1, sample // 20))
        ]
        started = time.perf_counter()
        long_ids = archival.insert_many(AGENT, long_texts)
        seconds = time.perf_counter() - started
        chunks = [archival.get(AGENT, passage_id) for passage_id in long_ids]
        per_passage = sum(p.vector_chunks for p in chunks if p is not None) / len(long_ids)
        print(
            f"insert_many with live embedding, {len(long_ids)} long passages (24 notes, ~700 "
            "word-pieces): "
            f"{len(long_ids) / seconds:.1f} passages/s, {per_passage:.1f} vectors each"
        )
        singles = []
        for n in range(min(singles_count, passages_count)):
            started = time.perf_counter()
            archival.insert(AGENT, f"single insert {n}: {passages[n].content}")
            singles.append((time.perf_counter() - started) * 1000)
        print(
            f"single insert (live embedding): p50 {percentile(singles, 0.5):.1f} ms, "
            f"p95 {percentile(singles, 0.95):.1f} ms"
        )


def measure_search(storage: Path, model: Any, queries: int) -> None:
    """Search latency per mode over the stored passages, model loaded, after a warm-up."""
    with MemoryManager(agent_id=AGENT, settings=Settings(persist_directory=storage)) as memory:
        archival = ArchivalMemory(memory.db, VectorConfig(path=storage / "chroma"), model)
        print(f"passages stored: {archival.count(AGENT)}, pending: {archival.pending_count()}")
        questions = synthetic_questions(queries)
        for mode in MODES_MEASURED:
            samples = latencies(archival, questions, mode)
            print(
                f"search {mode:<7} (limit 10, {queries} queries): p50 "
                f"{percentile(samples, 0.5):.1f} ms, "
                f"p95 {percentile(samples, 0.95):.1f} ms, mean {statistics.fmean(samples):.1f} ms"
                f" (load {os.getloadavg()[0]:.1f})"
            )
        # The same hybrid searches with the two legs one after the other on the calling thread:
        # what running them concurrently (the default) gains on this machine.
        sequential = ArchivalMemory(
            memory.db, VectorConfig(path=storage / "chroma"), model, search_threads=0
        )
        samples = latencies(sequential, questions, "hybrid")
        print(
            "search hybrid, legs one after the other (search_threads=0): p50 "
            f"{percentile(samples, 0.5):.1f} ms, "
            f"p95 {percentile(samples, 0.95):.1f} ms, mean {statistics.fmean(samples):.1f} ms"
            f" (load {os.getloadavg()[0]:.1f})"
        )
        sequential.close()
        writes = []
        for question in questions:
            ids = [
                hit.passage_id for hit in archival.search(AGENT, question, limit=10, mode="keyword")
            ]
            started = time.perf_counter()
            archival._record_access(ids, "2030-01-01T00:00:00.000000+00:00")
            writes.append((time.perf_counter() - started) * 1000)
        print(
            "of which the access-count write (one transaction, 10 hits): p50 "
            f"{percentile(writes, 0.5):.2f} ms, "
            f"p95 {percentile(writes, 0.95):.2f} ms"
        )
        encode = []
        for question in questions:
            started = time.perf_counter()
            model.embed_query([question])
            encode.append((time.perf_counter() - started) * 1000)
        print(
            f"query encoding alone: p50 {percentile(encode, 0.5):.1f} ms, p95 "
            f"{percentile(encode, 0.95):.1f} ms"
        )
        runs = []
        for _ in range(5):
            started = time.perf_counter()
            report = archival.reconcile()
            runs.append((time.perf_counter() - started) * 1000)
        print(
            f"reconcile with nothing to do: median {statistics.median(runs):.1f} ms of 5 "
            f"(ok={report.ok}, compared_ids={report.compared_ids})"
        )


def run(storage: Path, args: argparse.Namespace) -> None:
    model: Any = (
        HashedWords()
        if args.cheap_embedding
        # reuse off: the same questions are searched in each mode, and each must pay its encoding
        else MiniLMEmbeddingFunction(threads=args.model_threads, reuse_vectors=False)
    )
    PrecomputedEmbedding.space = model.name()
    started = time.perf_counter()
    if not args.cheap_embedding:
        model.load()
    print(
        f"model load: {time.perf_counter() - started:.1f} s"
        + (
            " (cheap hashed embedding: vector/hybrid figures leave out real query encoding)"
            if args.cheap_embedding
            else ""
        )
    )
    if not args.search_only:
        # A quick run times 20 single inserts, not 100: each embeds on its own.
        build(storage, model, args.passages, args.sample, 20 if args.quick else 100)
    measure_search(storage, model, args.queries)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--sample", type=int, default=2000, help="passages inserted with live embedding"
    )
    parser.add_argument("--keep", type=Path, help="storage dir to keep (default: a temporary one)")
    parser.add_argument(
        "--search-only",
        action="store_true",
        help="only measure search latency over the passages already in --keep",
    )
    parser.add_argument(
        "--cheap-embedding",
        action="store_true",
        help="hashed bag-of-words vectors instead of the model (storage and keyword paths)",
    )
    parser.add_argument(
        "--model-threads",
        type=int,
        help="onnxruntime intra-op threads for the model (default: onnxruntime's, one per core)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: 100 passages, 10 queries, 20 single inserts",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.passages, args.queries, args.sample = 100, 10, 10
    if args.search_only and args.keep is None:
        parser.error("--search-only needs --keep DIR holding a previous run's storage")
    built = f"the store in {args.keep}" if args.search_only else f"{args.passages} passages"
    print(f"archival scale benchmark: {built}, {args.queries} queries")
    if args.keep is not None:
        run(args.keep, args)
    else:
        with tempfile.TemporaryDirectory(prefix="archival-scale-") as scratch:
            run(Path(scratch), args)
    return 0


if __name__ == "__main__":
    from record import (
        run_recorded,
    )  # bench/record.py: a full run's output, kept for docs/benchmarks.md

    raise SystemExit(run_recorded(main, __file__))
