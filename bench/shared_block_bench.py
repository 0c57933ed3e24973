"""Appends per second to one shared block with 1, 4 and 8 writer processes.

Each writer is a process of its own (forked from one launcher, `memory_agent.testing.
forked`) with its own MemoryManager on one storage dir; all wait at a
barrier, then each makes N `core_memory_append` calls to the same shared block. Wall time runs
from the barrier to the last writer's last append (process start-up and imports are excluded).
Each append is one BEGIN IMMEDIATE transaction that rewrites the block and adds a history row and
a journal entry, so the rate is bounded by one writer at a time, whatever the process count.

    python bench/shared_block_bench.py [--appends 300] [--writers 1 4 8]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier

from memory_agent import MemoryManager, Settings
from memory_agent.testing.forked import start_forked

LABEL = "bench_shared"
LIMIT = 1_000_000
SPAWN = multiprocessing.get_context("spawn")


@dataclass(frozen=True)
class WriterReport:
    started: float
    finished: float
    latencies_ms: list[float]


@dataclass(frozen=True)
class RunResult:
    writers: int
    appends: int
    wall_s: float
    latencies_ms: list[float]
    final_chars: int
    intact: bool

    @property
    def rate(self) -> float:
        return self.appends / self.wall_s


def _settings(storage: str) -> Settings:
    """The storage dir, and the PostgreSQL server when MEMORY_DATABASE_URL names one (writers
    are spawned, so they inherit it; bench/backends_bench.py runs this on both backends)."""
    environ = {"PERSIST_DIRECTORY": storage}
    if os.environ.get("MEMORY_DATABASE_URL"):
        environ["MEMORY_DATABASE_URL"] = os.environ["MEMORY_DATABASE_URL"]
    return Settings.from_env(environ, env_file=None)


def _writer(
    storage: str,
    label: str,
    writer: str,
    appends: int,
    start: Barrier,
    reports: Queue[WriterReport],
) -> None:
    with MemoryManager(agent_id=writer, settings=_settings(storage)) as memory:
        memory.join_shared_block(label)
        latencies: list[float] = []
        start.wait(timeout=300)
        started = time.monotonic()  # CLOCK_MONOTONIC: comparable across processes on Linux
        for number in range(appends):
            began = time.perf_counter()
            memory.core_memory_append(label, f"{writer}:{number:05d}")
            latencies.append((time.perf_counter() - began) * 1000)
        reports.put(WriterReport(started, time.monotonic(), latencies))


def run(writers: int, appends: int) -> RunResult:
    """One measurement on a fresh storage dir and a block of its own (on PostgreSQL the database
    may be one that earlier measurements used: `backends_bench.py --database-url`)."""
    label = f"{LABEL}_{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as storage:
        with MemoryManager(agent_id="bench-setup", settings=_settings(storage)) as memory:
            memory.create_block(label, "", limit=LIMIT, is_shared=True)
        start, reports = SPAWN.Barrier(writers), SPAWN.Queue()
        # Forked from one launcher: a spawned writer would import the package and the
        # script that runs this (bench/backends_bench.py imports Chroma and onnxruntime) first.
        launcher = start_forked(
            _writer, [(storage, label, f"w{n}", appends, start, reports) for n in range(writers)]
        )
        collected = [reports.get(timeout=600) for _ in range(writers)]
        launcher.join(timeout=60)
        if launcher.exitcode != 0:
            raise RuntimeError(f"a writer failed (launcher exit code {launcher.exitcode})")
        with MemoryManager(agent_id="bench-setup", settings=_settings(storage)) as memory:
            value = memory.get_block(label).value
    counts = Counter(value.splitlines())
    return RunResult(
        writers=writers,
        appends=writers * appends,
        wall_s=max(r.finished for r in collected) - min(r.started for r in collected),
        latencies_ms=[ms for r in collected for ms in r.latencies_ms],
        final_chars=len(value),
        intact=len(counts) == writers * appends and set(counts.values()) == {1},
    )


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--appends", type=int, default=300, help="appends per writer (default 300)")
    parser.add_argument(
        "--writers", type=int, nargs="+", default=[1, 4, 8], help="writer counts to measure"
    )
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 1 and 2 writers, 20 appends each"
    )
    args = parser.parse_args()
    if args.quick:
        args.appends, args.writers = 20, [1, 2]
    print(
        f"{'writers':>7} {'appends':>7} {'wall s':>7} {'appends/s':>9} {'p50 ms':>7} {'p95 ms':>7} "
        f"{'max ms':>7} {'chars':>7} {'intact':>6}"
    )
    for writers in args.writers:
        result = run(writers, args.appends)
        latencies = result.latencies_ms
        print(
            f"{result.writers:>7} {result.appends:>7} {result.wall_s:>7.2f} {result.rate:>9.0f} "
            f"{statistics.median(latencies):>7.2f} {percentile(latencies, 0.95):>7.2f} "
            f"{max(latencies):>7.1f} {result.final_chars:>7} {'yes' if result.intact else 'NO':>6}",
            flush=True,
        )


if __name__ == "__main__":
    from record import (
        run_recorded,
    )  # bench/record.py: a full run's output, kept for docs/benchmarks.md

    run_recorded(main, __file__)
