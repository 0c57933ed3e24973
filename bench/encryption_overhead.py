"""What encryption at rest costs: block edit p95, hybrid search p95 and insert rate, plain vs
encrypted (with a passphrase, and with a raw key that skips SQLCipher's key derivation).

Issue 26 asks for the figures (no goal is set). Each mode gets a fresh storage dir with the same
agents, blocks and passages, then times the same operations in the same order; the embedding
model is loaded once, before any timing, and shared by both modes. Printed with the date, the
commit and the load average, because on a shared 2-core machine the load moves the figures more
than small differences do. Run: python bench/encryption_overhead.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from memory_agent import MemoryManager, Settings
from memory_agent.store import cipher

KEY = "benchmark passphrase, not a secret"
RAW_KEY = "x'" + "5e" * 32 + "'"
"""A raw 256-bit key (SQLCipher's x'...' form): no key derivation when the store is opened."""
WORDS = (
    "harbour sail ferry island lighthouse keeper morning tide storm chart compass rope anchor "
    "garden tomato basil fence neighbour ladder paint window kitchen recipe bread oven"
).split()


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def sentence(rng: random.Random, number: int) -> str:
    return f"Note {number}: " + " ".join(rng.choice(WORDS) for _ in range(14)) + "."


def commit() -> str:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            cwd=Path(__file__).resolve().parent,
        )
    except OSError:
        return "unknown"
    return done.stdout.strip() or "unknown"


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text(encoding="ascii").split()[:3])
    except OSError:
        return "unknown"


def run_mode(key: str | None, args: argparse.Namespace, embedding: object) -> dict[str, float]:
    """Fill a fresh store, then time inserts, block edits and hybrid searches."""
    rng = random.Random(11)
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as directory:
        environ = {"PERSIST_DIRECTORY": directory}
        if key is not None:
            environ["MEMORY_ENCRYPTION_KEY"] = key
        settings = Settings.from_env(environ, env_file=None)
        began = time.perf_counter()
        memory = MemoryManager(agent_id="bench", settings=settings, embedding_function=embedding)
        figures["open ms"] = (time.perf_counter() - began) * 1000
        try:
            for number in range(args.blocks):
                memory.create_block(f"notes_{number}", f"Block {number}.")
            texts = [sentence(rng, n) for n in range(args.passages)]
            began = time.perf_counter()
            for start in range(0, len(texts), args.batch):
                memory.archival_memory_insert_many(texts[start : start + args.batch])
            figures["insert passages/s"] = len(texts) / (time.perf_counter() - began)
            edits = []
            for number in range(args.edits):
                label = f"notes_{rng.randrange(args.blocks)}"
                started = time.perf_counter()
                memory.core_memory_append(label, f"fact {number}")
                edits.append((time.perf_counter() - started) * 1000)
            figures["block edit p50 ms"] = statistics.median(edits)
            figures["block edit p95 ms"] = percentile(edits, 0.95)
            searches = []
            for _ in range(args.searches):
                query = " ".join(rng.choice(WORDS) for _ in range(3))
                started = time.perf_counter()
                memory.archival_memory_search(query, limit=10)
                searches.append((time.perf_counter() - started) * 1000)
            figures["hybrid search p50 ms"] = statistics.median(searches)
            figures["hybrid search p95 ms"] = percentile(searches, 0.95)
        finally:
            memory.close()
        figures["memory.db MiB"] = os.path.getsize(Path(directory) / "memory.db") / 2**20
        cipher.forget_derived_keys()  # timed as a new process's first open: no key derived yet
        began = time.perf_counter()
        MemoryManager(agent_id="bench", settings=settings, embedding_function=embedding).close()
        figures["reopen ms"] = (time.perf_counter() - began) * 1000
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--passages", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--edits", type=int, default=1000)
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 60 passages, 40 edits, 10 searches"
    )
    args = parser.parse_args()
    if args.quick:
        args.passages, args.batch, args.blocks, args.edits, args.searches = 60, 20, 5, 40, 10

    from memory_agent.archival.embeddings import MiniLMEmbeddingFunction

    # reuse off: both modes embed the same texts, and the second must not find them made
    embedding = MiniLMEmbeddingFunction(reuse_vectors=False)
    embedding(["warm the model up before any timing"])
    print(
        f"encryption overhead · {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC · commit "
        f"{commit()} "
        "· "
        f"load {load()} (start) · {args.passages} passages, {args.edits} edits, {args.searches} "
        "searches"
    )
    # Chroma is imported and started on first use: a small discarded run pays that before timing.
    run_mode(
        None,
        argparse.Namespace(
            **{**vars(args), "passages": 20, "batch": 10, "blocks": 2, "edits": 5, "searches": 3}
        ),
        embedding,
    )
    modes = {
        "plain": run_mode(None, args, embedding),
        "passphrase": run_mode(KEY, args, embedding),
        "raw key": run_mode(RAW_KEY, args, embedding),
    }
    plain = modes["plain"]
    print(
        f"{'figure':24} {'plain':>10} {'passphrase':>11} {'ratio':>6} {'raw key':>10} {'ratio':>6}"
    )
    for name, value in plain.items():
        row = f"{name:24} {value:>10.2f}"
        for mode in ("passphrase", "raw key"):
            other = modes[mode][name]
            row += (
                f" {other:>{11 if mode == 'passphrase' else 10}.2f} "
                f"{other / value if value else float('nan'):>6.2f}"
            )
        print(row)
    print(f"load {load()} (end)")


if __name__ == "__main__":
    from record import (
        run_recorded,
    )  # bench/record.py: a full run's output, kept for docs/benchmarks.md

    run_recorded(main, __file__)
