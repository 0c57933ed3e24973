"""The per-turn compaction check through MemoryManager on a 10,000-message history.

Unlike `compaction_bench.py` (the in-memory budget alone) this includes the SQLite reads the
check makes: the latest summary and the messages stored since the last check. Goal (issue 4):
under 1 ms per turn. Run: python bench/manager_trigger_bench.py
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from memory_agent import MemoryManager, Settings

HISTORY = 10_000
TURNS = 500


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 1,000 messages, 20 turns"
    )
    args = parser.parse_args()
    history, turns = (1_000, 20) if args.quick else (HISTORY, TURNS)
    with tempfile.TemporaryDirectory() as directory:
        settings = Settings.from_env({"PERSIST_DIRECTORY": directory}, env_file=None)
        with MemoryManager(agent_id="bench", settings=settings) as memory:
            for number in range(history // 2):
                memory.store_message(
                    "user", f"Question {number} about the launch plan", token_count=12
                )
                memory.store_message(
                    "assistant", f"Answer {number}: the plan holds", token_count=10
                )
            began = time.perf_counter()
            memory.should_compact()
            first = time.perf_counter() - began
            samples = []
            for number in range(turns):
                memory.store_message("user", f"New question {number}", token_count=6)
                memory.store_message("assistant", f"New answer {number}", token_count=6)
                began = time.perf_counter()
                memory.should_compact()
                samples.append(time.perf_counter() - began)
    samples.sort()
    print(f"MemoryManager.should_compact() on a {history:,}-message history, +2 messages per turn")
    print(f"  first check (counts the whole history once) {first * 1e3:8.2f} ms")
    print(
        f"  per turn: median {statistics.median(samples) * 1e3:.3f} ms, "
        f"p95 {samples[int(0.95 * len(samples))] * 1e3:.3f} ms, max {samples[-1] * 1e3:.3f} ms "
        "(goal: under 1 ms)"
    )


if __name__ == "__main__":
    from record import (
        run_recorded,
    )  # bench/record.py: a full run's output, kept for docs/benchmarks.md

    run_recorded(main, __file__)
