"""Archival insert cost in CPU time, so that two commits can be compared on a busy machine.

Wall-clock insert throughput (bench/archival_scale.py) moves with whatever else the machine runs;
the process's CPU time (user + system, `resource.getrusage`, every thread) moves far less. This
script inserts the synthetic passages of bench/archival_scale.py into a fresh store through
`ArchivalMemory.insert_many`, with vectors computed before the clock starts (hashed bag of words,
384 dimensions: the storage path only, as archival_scale's "without embedding" figure), and prints
passages/s and CPU ms per passage. The first 200 passages open the stores and are not timed.

`--compare A B` runs the measurement in child processes on two code trees (git worktrees) in turn,
A B A B ..., so both see the same load, and prints each run and the medians:

    python bench/archival_insert_cpu.py                       # this tree, 20,000 passages
    python bench/archival_insert_cpu.py --compare /work/wt/base . --rounds 3 --passages 15000
    python bench/archival_insert_cpu.py --profile 30          # where the CPU time goes (cProfile)
    python bench/archival_insert_cpu.py --quick               # 500 passages, A/B on this tree
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
WARM_UP = 200
"""Passages inserted before the clock starts: opening SQLite and Chroma is not an insert cost."""
CHUNK = 5000
"""Passages per `insert_many` call, as in bench/archival_scale.py."""
RESULT = "RESULT "


def cpu_seconds() -> float:
    """User + system CPU time of this process so far, all threads (Chroma's included)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def commit_of(tree: Path) -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short=9", "HEAD"],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or "unknown"


def measure(tree: Path, passages_count: int, profile_lines: int) -> dict[str, Any]:
    """Insert into a fresh store with the code of `tree`; returns wall and CPU figures.

    `tree`'s memory_agent is imported before anything else, so the same script measures any
    commit whose `ArchivalMemory.insert_many` and bench/archival_scale.py vocabulary it shares.
    """
    sys.path.insert(0, str(tree))
    import memory_agent

    sys.path.insert(1, str(BENCH))
    from archival_scale import AGENT, HashedWords, PrecomputedEmbedding, synthetic_passages

    from memory_agent import MemoryManager, Settings
    from memory_agent.archival import ArchivalMemory, VectorConfig

    loaded_from = Path(memory_agent.__file__).resolve()
    assert loaded_from.is_relative_to(tree.resolve()), f"memory_agent came from {loaded_from}"
    passages = synthetic_passages(WARM_UP + passages_count)
    vectors = dict(zip([p.content for p in passages], HashedWords()([p.content for p in passages])))
    PrecomputedEmbedding.space = HashedWords.name()
    # CPU time, not wall clock, so that waiting for a core on a busy machine is left out.
    profiler = cProfile.Profile(cpu_seconds) if profile_lines else None
    with tempfile.TemporaryDirectory(prefix="archival-insert-cpu-") as scratch:
        storage = Path(scratch)
        settings = Settings(persist_directory=storage)
        with MemoryManager(agent_id=AGENT, settings=settings) as memory:
            archival = ArchivalMemory(
                memory.db, VectorConfig(path=storage / "chroma"), PrecomputedEmbedding(vectors)
            )
            archival.insert_many(AGENT, passages[:WARM_UP])
            load_before = load()
            wall, cpu = time.perf_counter(), cpu_seconds()
            if profiler is not None:
                profiler.enable()
            for start in range(WARM_UP, len(passages), CHUNK):
                archival.insert_many(AGENT, passages[start : start + CHUNK])
            if profiler is not None:
                profiler.disable()
            wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
            stored = archival.count(AGENT)
            archival.close()
    assert stored == len(passages), f"{stored} passages stored of {len(passages)}"
    if profiler is not None:
        stats = pstats.Stats(profiler, stream=sys.stderr)
        stats.sort_stats("cumulative").print_stats(profile_lines)
        stats.sort_stats("tottime").print_stats(profile_lines)
    return {
        "tree": str(tree),
        "commit": commit_of(tree),
        "passages": passages_count,
        "wall_s": wall,
        "cpu_s": cpu,
        "load_before": load_before,
        "load_after": load(),
    }


def line(result: dict[str, Any]) -> str:
    count = result["passages"]
    return (
        f"{result['commit']:<10} {count / result['wall_s']:>8.0f} {count / result['cpu_s']:>9.0f}"
        f" {result['cpu_s'] * 1000 / count:>9.3f}   {result['load_before']} -> "
        f"{result['load_after']}"
    )


HEADER = "commit     passages/s  per CPU-s  CPU ms/passage   load (1, 5, 15 min) before -> after"


def child(tree: Path, passages: int) -> dict[str, Any]:
    """One measurement in a fresh interpreter, so neither tree's modules or caches leak over."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", "--root", str(tree), "--passages", str(passages)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(tree)},
    )
    if done.returncode != 0:
        raise RuntimeError(f"measuring {tree} failed:\n{done.stderr[-3000:]}")
    found = [row for row in done.stdout.splitlines() if row.startswith(RESULT)]
    return dict(json.loads(found[-1][len(RESULT) :]))


def compare(trees: Sequence[Path], rounds: int, passages: int) -> None:
    """Runs A B A B ...; prints every run, then each tree's medians and B against A."""
    runs: list[list[dict[str, Any]]] = [[] for _ in trees]
    print(HEADER)
    for _ in range(rounds):
        for tree, results in zip(trees, runs):
            results.append(child(tree, passages))
            print(line(results[-1]), flush=True)
    medians = []
    for results in runs:
        cpu = statistics.median(r["cpu_s"] * 1000 / r["passages"] for r in results)
        rate = statistics.median(r["passages"] / r["wall_s"] for r in results)
        medians.append((cpu, rate))
        print(
            f"median {results[0]['commit']:<10} ({rounds} runs of {passages}): "
            f"{rate:.0f} passages/s, {cpu:.3f} CPU ms/passage"
        )
    (cpu_a, rate_a), (cpu_b, rate_b) = medians
    print(
        f"second against first: CPU per passage {100 * (cpu_b / cpu_a - 1):+.1f} %, "
        f"passages/s {100 * (rate_b / rate_a - 1):+.1f} %"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=20_000, help="timed passages per run")
    parser.add_argument(
        "--compare", nargs=2, type=Path, metavar=("A", "B"), help="two code trees, A first"
    )
    parser.add_argument("--rounds", type=int, default=2, help="A B pairs with --compare")
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="print cProfile's top N (CPU time) to stderr",
    )
    parser.add_argument("--root", type=Path, default=ROOT, help="code tree to measure")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="500 passages, one A/B round")
    args = parser.parse_args(argv)
    if args.child:
        print(RESULT + json.dumps(measure(args.root, args.passages, 0)))
        return 0
    if args.quick:
        args.passages, args.rounds, args.compare = 500, 1, [ROOT, ROOT]
    print(f"archival insert CPU: {args.passages} passages after {WARM_UP} untimed, load {load()}")
    if args.compare:
        compare([tree.resolve() for tree in args.compare], args.rounds, args.passages)
    else:
        print(HEADER)
        print(line(measure(args.root.resolve(), args.passages, args.profile)))
    return 0


if __name__ == "__main__":
    from record import run_recorded  # bench/record.py: a full run's output, for the docs

    raise SystemExit(run_recorded(main, __file__))
