"""A service's agent workers as threads: one shared MemoryManager against one manager per thread.

A manager holds one database connection and serialises its use with a lock, so threads sharing
a manager take turns on it; a manager per thread (what a connection pool would give) lets their
statements run on the server side by side. This measures whether that is worth having. Each
worker thread is an agent of its own with its own blocks and messages, in two workloads:

- reads, what the start of a turn does: render the agent's memory for the system prompt, load
  its recent messages and search its messages by keyword;
- writes: append to one of its blocks and store a message (two short write transactions; on
  both backends writes are serialised store-wide, by SQLite's lock or the advisory lock).

Operations per second over all threads, with 1, 4 and 8 threads, on SQLite and a throwaway
PostgreSQL cluster (or --database-url). The figures move with the machine's load: say so.

    python bench/thread_workers_bench.py [--quick] [--ops 200] [--threads 1 4 8] [--history 200]
    [--database-url URL]
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from backends_bench import BACKENDS, Databases  # noqa: E402

from memory_agent import MemoryManager, Settings  # noqa: E402
from memory_agent.testing.postgres_cluster import PostgresCluster  # noqa: E402

Workload = Callable[[MemoryManager, str, int], None]


def _reads(memory: MemoryManager, agent: str, number: int) -> None:
    memory.get_system_prompt_addition(agent_id=agent, mark_seen=False)
    memory.get_recent_messages(limit=20, agent_id=agent)
    memory.search_messages(f"topic {number % 50}", agent_id=agent, limit=5)


def _writes(memory: MemoryManager, agent: str, number: int) -> None:
    memory.core_memory_append("human", f"fact {number}", agent_id=agent)
    memory.store_message("user", f"{agent} says {number} about topic {number % 50}", agent_id=agent)


WORKLOADS: dict[str, Workload] = {"reads": _reads, "writes": _writes}


def _prepare(memory: MemoryManager, agents: list[str], history: int) -> None:
    """Each agent with `history` messages already (a conversation of some length)."""
    for agent in agents:
        memory.ensure_agent(agent)
        for number in range(history):
            memory.store_message(
                "user", f"earlier message {number} about topic {number % 50}", agent_id=agent
            )


def _manager(directory: str, url: str | None, agent_id: str) -> MemoryManager:
    return MemoryManager(
        agent_id=agent_id, settings=Settings(persist_directory=Path(directory)), database_url=url
    )


def run(
    url: str | None, threads: int, ops: int, workload: Workload, shared: bool, history: int
) -> float:
    """Operations per second over `threads` threads making `ops` operations each."""
    agents = [f"worker{n}" for n in range(threads)]
    with tempfile.TemporaryDirectory() as directory, ExitStack() as stack:
        owner = stack.enter_context(_manager(directory, url, "service"))
        _prepare(owner, agents, history)
        managers = [
            owner if shared else stack.enter_context(_manager(directory, url, agent))
            for agent in agents
        ]
        start = threading.Barrier(threads + 1)

        def work(memory: MemoryManager, agent: str) -> None:
            start.wait()
            for number in range(ops):
                workload(memory, agent, number)

        workers = [threading.Thread(target=work, args=(m, a)) for m, a in zip(managers, agents)]
        for worker in workers:
            worker.start()
        start.wait()
        began = time.perf_counter()
        for worker in workers:
            worker.join()
        return threads * ops / (time.perf_counter() - began)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="small sizes, seconds not minutes (for tests)"
    )
    parser.add_argument("--ops", type=int, default=200, help="operations per thread")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument(
        "--history", type=int, default=200, help="messages each agent has before the run"
    )
    parser.add_argument(
        "--database-url", help="an existing PostgreSQL database instead of a throwaway cluster"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.ops, args.threads, args.history = 5, [2], 10
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that `finally` stops the cluster
    cluster = None if args.database_url else PostgresCluster().start()
    try:
        databases = Databases(cluster, args.database_url)
        print(
            f"ops/s over all threads ({args.ops} per thread): one shared manager | a manager per "
            "thread"
        )
        print(f"{'':18}" + "".join(f"{b:>26}" for b in BACKENDS))
        for name, workload in WORKLOADS.items():
            for threads in args.threads:
                cells = []
                for backend in BACKENDS:
                    rates = [
                        run(
                            databases.fresh(backend),
                            threads,
                            args.ops,
                            workload,
                            shared,
                            args.history,
                        )
                        for shared in (True, False)
                    ]
                    cells.append(f"{rates[0]:8.0f} | {rates[1]:8.0f}")
                print(f"{name:7} {threads:2} thr." + "".join(f"{c:>26}" for c in cells), flush=True)
    finally:
        if cluster is not None:
            cluster.stop()
    return 0


if __name__ == "__main__":
    from record import (
        run_recorded,
    )  # bench/record.py: a full run's output, kept for docs/benchmarks.md

    raise SystemExit(run_recorded(main, __file__))
