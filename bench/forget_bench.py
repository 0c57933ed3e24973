"""What one forget for real costs on a store of 10,000 passages (issue 26, item 2).

One `forget_passage`, `forget_message` and `forget_block` each, timed whole: the deletes and
redactions in one transaction, the agent's Chroma collection written anew without the vectors,
Chroma's sqlite vacuumed, every FTS5 index merged, memory.db vacuumed and its WAL truncated. The
store also holds 2,000 messages and a few blocks with versions. Both VACUUMs rewrite whole files,
so the cost grows with the store's size, not with what is forgotten; the second table splits it.

Vectors come from a cheap deterministic 384-dimension embedding (the default model's size) so the
run measures forgetting rather than embedding 10,000 texts; `--real-embedding` uses the default
model. SQLite only (PostgreSQL's VACUUM FULL of the touched tables is the server's work).
Run: python bench/forget_bench.py [--passages N] [--quick]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from memory_agent import MemoryManager, Settings
from memory_agent.store import scrub

WORDS = (
    "tide harbour lantern keeper garden ledger orchard meadow violin river market winter summer "
    "copper "
    "silver lesson doctor ticket bakery station museum canvas pottery island bridge letter"
).split()


class HashEmbedding:
    """A deterministic 384-dimension embedding from a text's hash (no model: forgetting is
    measured)."""

    def __call__(self, input: list[str]) -> list[list[float]]:  # noqa: A002 - Chroma's parameter name
        vectors = []
        for text in input:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
            generator = random.Random(seed)
            vectors.append([generator.uniform(-1, 1) for _ in range(384)])
        return vectors

    def name(self) -> str:
        return "hash-384"


def sentence(generator: random.Random, number: int) -> str:
    return f"Note {number}: " + " ".join(generator.choice(WORDS) for _ in range(14))


def size_of(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--passages", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=2_000)
    parser.add_argument("--real-embedding", action="store_true")
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 200 passages, 100 messages"
    )
    args = parser.parse_args()
    if args.quick:
        args.passages, args.messages = 200, 100
    generator = random.Random(26)
    with tempfile.TemporaryDirectory() as directory:
        settings = Settings.from_env({"PERSIST_DIRECTORY": directory}, env_file=None)
        embedding: Any = None if args.real_embedding else HashEmbedding()
        with MemoryManager(
            agent_id="bench", settings=settings, embedding_function=embedding
        ) as memory:
            started = time.perf_counter()
            ids = memory.archival_memory_insert_many(
                [sentence(generator, n) for n in range(args.passages)]
            )
            for number in range(args.messages):
                memory.store_message(
                    "user" if number % 2 == 0 else "assistant", sentence(generator, number)
                )
            memory.create_block("notes", "First note")
            for number in range(5):
                memory.core_memory_append("notes", f"Line {number}")
            built = time.perf_counter() - started
            print(
                f"store: {args.passages} passages, {args.messages} messages, built in {built:.1f} "
                "s; "
                f"{size_of(Path(directory)) / 1e6:.1f} MB on disk; load {os.getloadavg()[0]:.1f}"
            )
            message_id = memory.all_messages()[args.messages // 2].message_id
            rows = []
            for kind, run in (
                ("passage", lambda: memory.forget_passage(ids[len(ids) // 2])),
                ("message", lambda: memory.forget_message(message_id)),
                ("block", lambda: memory.forget_block("notes")),
            ):
                report = run()
                rows.append((kind, report.seconds))
            print(f"{'forget':<10}{'seconds (whole forget incl. vectors and VACUUM)':>50}")
            for kind, seconds in rows:
                print(f"{kind:<10}{seconds:>50.3f}")
            started = time.perf_counter()
            scrub.scrub(memory.database)
            print(
                f"{'scrub':<10}{time.perf_counter() - started:>50.3f}  (FTS optimize + VACUUM + "
                "WAL "
                "truncate alone)"
            )


if __name__ == "__main__":
    from record import (
        run_recorded,
    )  # bench/record.py: a full run's output, kept for docs/benchmarks.md

    run_recorded(main, __file__)
