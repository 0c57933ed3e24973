"""Latency of one block edit on a database holding 1,000 agents and 10,000 blocks.

Goal (issue 2): p95 under 5 ms on a 2-core machine (issue 23: 1 ms, with the storage identity
check each write now makes, printed on its own at the end). Run: python bench/block_edit_bench.py
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from memory_agent import MemoryManager, Settings


def populate(memory: MemoryManager, agents: int, blocks_per_agent: int) -> list[str]:
    """Create agents, each with persona + human + extra blocks (2 default blocks count too)."""
    agent_ids = [f"bench-agent-{n:04d}" for n in range(agents)]
    for agent_id in agent_ids:
        memory.ensure_agent(agent_id)
        for number in range(blocks_per_agent - 2):
            memory.create_block(
                f"notes_{number}", f"Block {number} of {agent_id}.", agent_id=agent_id
            )
    return agent_ids


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--blocks-per-agent", type=int, default=10)
    parser.add_argument("--edits", type=int, default=2000)
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 20 agents, 7 blocks each, 50 edits"
    )
    args = parser.parse_args()
    if args.quick:
        args.agents, args.blocks_per_agent, args.edits = 20, 7, 50

    with tempfile.TemporaryDirectory() as directory:
        settings = Settings.from_env({"PERSIST_DIRECTORY": directory}, env_file=None)
        with MemoryManager(agent_id="bench-owner", settings=settings) as memory:
            started = time.perf_counter()
            agent_ids = populate(memory, args.agents, args.blocks_per_agent)
            with memory.db.reading() as conn:
                block_count = conn.execute("SELECT COUNT(*) FROM blocks").fetchone()[0]
            print(
                f"populated {len(agent_ids) + 1} agents, {block_count} blocks in "
                f"{time.perf_counter() - started:.1f} s  ({Path(directory) / 'memory.db'})"
            )

            rng = random.Random(7)
            kinds = {
                "core_memory_append": lambda a, n: memory.core_memory_append(
                    "notes_1", f"fact {n}", agent_id=a
                ),
                "core_memory_replace": lambda a, n: memory.core_memory_replace(
                    "notes_2",
                    memory.get_block("notes_2", agent_id=a).value,
                    f"Block rewritten {n}.",
                    agent_id=a,
                ),
                "memory_insert": lambda a, n: memory.memory_insert(
                    "notes_3", f"inserted {n}", insert_after="Block", agent_id=a
                ),
                "memory_rethink": lambda a, n: memory.memory_rethink(
                    "notes_4", f"Rethought {n}.", agent_id=a
                ),
            }
            print(f"{'edit':22} {'n':>6} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
            for name, edit in kinds.items():
                samples = []
                for number in range(args.edits // len(kinds)):
                    agent_id = rng.choice(agent_ids)
                    began = time.perf_counter()
                    edit(agent_id, number)
                    samples.append((time.perf_counter() - began) * 1000)
                print(
                    f"{name:22} {len(samples):>6} {statistics.median(samples):>8.3f} "
                    f"{percentile(samples, 0.95):>8.3f} {max(samples):>8.3f}"
                )
            # Issue 23: every write transaction first checks that memory.db is still the file it
            # opened (one stat()); its share of an edit, timed on its own.
            checks = 20_000 if not args.quick else 500
            began = time.perf_counter()
            for _ in range(checks):
                memory.db._check_identity()
            print(
                "storage identity check per write: "
                f"{(time.perf_counter() - began) / checks * 1e6:.1f} us"
            )


if __name__ == "__main__":
    from record import (
        run_recorded,
    )  # bench/record.py: a full run's output, kept for docs/benchmarks.md

    run_recorded(main, __file__)
